/**
 * Feeding a stream writer from the AI SDK's `streamText(...).fullStream`.
 *
 * Text parts become `text` messages and reasoning parts `thinking` messages (one per part
 * id and step), a tool call a `tool_call` message whose `arguments` grow with the input
 * deltas, a tool result (or error) a `TOOL` `tool_result` keeping the call's id, and the
 * final usage the stream's usage. An `error` part is thrown, so `withStream` ends the
 * stream `FAILED`; a stop throws {@link StreamStopped} out of the loop.
 */

import type { TextStreamPart, ToolSet } from "ai";

import type { StreamWriter } from "./producer.js";

export async function feedStreamText<TOOLS extends ToolSet>(
  writer: StreamWriter,
  fullStream: AsyncIterable<TextStreamPart<TOOLS>>,
): Promise<void> {
  let step = 0;
  const argumentsSent = new Map<string, number>();
  for await (const part of fullStream) {
    switch (part.type) {
      case "start-step":
        step += 1;
        break;
      case "text-delta":
        writer.text(part.text, { messageId: `text:${step}:${part.id}` });
        break;
      case "reasoning-delta":
        writer.thinking(part.text, { messageId: `thinking:${step}:${part.id}` });
        break;
      case "tool-input-start":
        writer.toolCall(part.id, part.toolName);
        argumentsSent.set(part.id, 0);
        break;
      case "tool-input-delta":
        writer.toolArguments(part.id, part.delta);
        argumentsSent.set(part.id, (argumentsSent.get(part.id) ?? 0) + part.delta.length);
        break;
      case "tool-call": {
        // Providers that do not stream a call's input send it whole here.
        const sent = argumentsSent.get(part.toolCallId);
        const input = JSON.stringify(part.input ?? {});
        if (sent === undefined) writer.toolCall(part.toolCallId, part.toolName, input);
        else if (sent === 0) writer.toolArguments(part.toolCallId, input);
        argumentsSent.set(part.toolCallId, Math.max(sent ?? 0, input.length));
        break;
      }
      case "tool-result":
        writer.toolResult(part.toolCallId, part.output as unknown);
        break;
      case "tool-error":
        writer.toolResult(part.toolCallId, part.error instanceof Error ? part.error.message : String(part.error), { isError: true });
        break;
      case "finish":
        writer.usage({ promptTokens: part.totalUsage.inputTokens ?? 0, completionTokens: part.totalUsage.outputTokens ?? 0 });
        break;
      case "error":
        throw part.error instanceof Error ? part.error : new Error(String(part.error));
      default:
        break;
    }
  }
  await writer.flush();
}
