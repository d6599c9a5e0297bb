/**
 * A live reply as the AI SDK's UI message chunks.
 *
 * {@link UIChunkMapper} is fed the reducer's state of one stream after every change and
 * answers the chunks that take a UI message from what was shown to what is there now:
 * `start` (with the id of the reply's first message, the id the stored reply has), then
 * per message `text-start`/`text-delta`, `reasoning-start`/`reasoning-delta`,
 * `tool-input-start`/`tool-input-delta`, `tool-input-available` and
 * `tool-output-available` once the call's result arrives, and `data-<type>` (same id, so a
 * changed message replaces its part). When the stream ends, open parts are ended and the
 * reply closes with `finish`, `abort` (stopped) or `error` then `finish` (failed).
 *
 * A tool call that asks for approval (props `needsApproval: true`) is followed, once its
 * input is available, by `tool-approval-request` whose `approvalId` is the interrupt's id
 * (the tool call message's id). A reply that resumes after the person's decisions
 * ({@link UIChunkMapper.resuming}) continues the assistant message the client shows: its
 * `start` names no id, denied calls come first as `tool-output-denied`, and results of
 * calls shown before are `tool-output-available` on those parts.
 *
 * Because it works from the reduced state, not from raw chunks, a late join (a snapshot)
 * and a resume give the same parts as having watched from the start.
 *
 * An agent's `file` message (props `{fileId, mediaType, filename}`) is a `data-file` part
 * here: the mapper knows no addresses. {@link fileParts} (which `ChatqlChatTransport`
 * puts after it) makes it the AI SDK's `file` chunk at the file's signed address.
 */

import type { UIMessageChunk } from "ai";

import type { MessageState, MessagesView } from "./reducer.js";
import { isToolResult, parseArguments, resultCallId, textOf, toolCallOf } from "./ui-messages.js";

type Shown =
  | { readonly kind: "text" | "reasoning"; sent: string; open: boolean }
  | { readonly kind: "tool"; readonly toolCallId: string; readonly toolName: string; sent: string; available: boolean; answered: boolean; approval?: string }
  | { readonly kind: "result" }
  | { readonly kind: "data"; sent: string };

export type ReplyEnd = "completed" | "interrupted" | "failed";

export class UIChunkMapper {
  private started = false;
  private ended = false;
  private readonly shown = new Map<string, Shown>();
  private readonly tools = new Map<string, Shown & { kind: "tool" }>();

  /** Tool calls the client shows from before this reply (a resumption's). */
  private readonly shownBefore = new Set<string>();

  /**
   * Starts a reply that resumes after the person's decisions: it continues the assistant
   * message the client shows (which holds `shownCalls`); `deniedCalls` were denied.
   */
  resuming(shownCalls: readonly string[], deniedCalls: readonly string[]): UIMessageChunk[] {
    for (const call of shownCalls) this.shownBefore.add(call);
    this.started = true;
    return [{ type: "start" }, ...deniedCalls.map((toolCallId) => ({ type: "tool-output-denied" as const, toolCallId }))];
  }

  /** Whether `start` was sent (a message of the reply has been seen). */
  get hasStarted(): boolean {
    return this.started;
  }

  /** The chunks that bring the UI message up to `messages`. */
  update(messages: MessagesView): UIMessageChunk[] {
    if (this.ended) return [];
    const out: UIMessageChunk[] = [];
    for (const message of messages.values()) {
      if (message.role === "USER") continue;
      if (!this.started) {
        this.started = true;
        out.push({ type: "start", messageId: message.id });
      }
      this.message(message, out);
    }
    return out;
  }

  /** The closing chunks (idempotent: a second call answers nothing). */
  end(how: ReplyEnd, error?: string): UIMessageChunk[] {
    if (this.ended) return [];
    this.ended = true;
    const out: UIMessageChunk[] = [];
    if (!this.started) out.push({ type: "start" });
    for (const [id, shown] of this.shown) {
      if ((shown.kind === "text" || shown.kind === "reasoning") && shown.open) {
        shown.open = false;
        out.push({ type: shown.kind === "text" ? "text-end" : "reasoning-end", id });
      } else if (shown.kind === "tool" && !shown.available && how === "completed") {
        this.available(shown, out);
      }
    }
    if (how === "interrupted") out.push({ type: "abort" });
    else {
      if (how === "failed") out.push({ type: "error", errorText: error ?? "the reply failed" });
      out.push({ type: "finish" });
    }
    return out;
  }

  private available(tool: Shown & { kind: "tool" }, out: UIMessageChunk[]): void {
    tool.available = true;
    out.push({ type: "tool-input-available", toolCallId: tool.toolCallId, toolName: tool.toolName, input: parseArguments(tool.sent), providerExecuted: true });
    if (tool.approval !== undefined) out.push({ type: "tool-approval-request", approvalId: tool.approval, toolCallId: tool.toolCallId });
  }

  private message(message: MessageState, out: UIMessageChunk[]): void {
    const shown = this.shown.get(message.id);
    if (message.type === "text" || message.type === "thinking") {
      const kind = message.type === "text" ? "text" : "reasoning";
      const text = textOf(message);
      if (shown === undefined) {
        this.shown.set(message.id, { kind, sent: "", open: true });
        out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id: message.id });
        return this.message(message, out);
      }
      if (shown.kind !== kind || !shown.open) return;
      // Appends grow the text; anything else (a replaced text) cannot be said as a delta.
      if (text.length > shown.sent.length && text.startsWith(shown.sent)) {
        out.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id: message.id, delta: text.slice(shown.sent.length) });
        shown.sent = text;
      }
    } else if (message.type === "tool_call") {
      const call = toolCallOf(message);
      if (shown === undefined) {
        const tool = { kind: "tool" as const, toolCallId: call.toolCallId, toolName: call.toolName, sent: "", available: false, answered: false };
        this.shown.set(message.id, tool);
        this.tools.set(call.toolCallId, tool);
        // The agent ran the tool (providerExecuted): the browser's onToolCall is not asked to.
        out.push({ type: "tool-input-start", toolCallId: call.toolCallId, toolName: call.toolName, providerExecuted: true });
        return this.message(message, out);
      }
      if (shown.kind !== "tool" || shown.available) return;
      if ((message.props as { needsApproval?: unknown } | null)?.needsApproval === true) shown.approval = message.id;
      if (call.arguments.length > shown.sent.length && call.arguments.startsWith(shown.sent)) {
        out.push({ type: "tool-input-delta", toolCallId: shown.toolCallId, inputTextDelta: call.arguments.slice(shown.sent.length) });
        shown.sent = call.arguments;
      }
    } else if (isToolResult(message) && this.shownBefore.has(resultCallId(message) ?? "") && !this.tools.has(resultCallId(message) ?? "")) {
      // The result of a call the client shows from before the decisions: its part takes it.
      if (shown !== undefined) return;
      this.shown.set(message.id, { kind: "result" });
      const props = message.props;
      out.push({ type: "tool-output-available", toolCallId: resultCallId(message) as string, output: props.content ?? props });
    } else if (isToolResult(message) && this.tools.has(resultCallId(message) ?? "")) {
      if (shown !== undefined) return;
      const tool = this.tools.get(resultCallId(message) ?? "") as Shown & { kind: "tool" };
      this.shown.set(message.id, { kind: "result" });
      if (!tool.available) this.available(tool, out);
      tool.answered = true;
      const props = message.props;
      out.push({ type: "tool-output-available", toolCallId: tool.toolCallId, output: props.content ?? props });
    } else {
      const data = JSON.stringify(message.props);
      if (shown !== undefined && (shown.kind !== "data" || shown.sent === data)) return;
      this.shown.set(message.id, { kind: "data", sent: data });
      out.push({ type: `data-${message.type}`, id: message.id, data: message.props });
    }
  }
}

/** A file as {@link fileParts} shows it (`File.url`, a signed address, and `File.mediaType`). */
export interface ReadableFile {
  readonly url: string;
  readonly mediaType: string;
}

/**
 * Turns the `data-file` part of an agent's `file` message (props `{fileId, mediaType,
 * filename}`) into the AI SDK's `file` chunk `{type: "file", url, mediaType}`, `url` the
 * signed address `readFile` answers (as the `file(id)` query gives it) — the part
 * `toUIMessages` makes of the stored message, except `filename`, which the AI SDK's `file`
 * chunk does not carry. Chunks after it wait for the answer, so the parts keep the
 * reply's order. A file named by a live reply is readable to whoever may read the chat
 * once its chunk is accepted, so `readFile` finds it while the reply is live. A file
 * `readFile` answers `null` for (the reader may not read it: deleted meanwhile, or no
 * file), or fails to read, stays the `data-file` part (and its changes replace it, as for
 * any data part); once shown as a file part, later changes of the message are not sent
 * (the AI SDK adds a part for each `file` chunk).
 */
export function fileParts(readFile: (fileId: string) => Promise<ReadableFile | null | undefined>): TransformStream<UIMessageChunk, UIMessageChunk> {
  /** Per message id: whether it was shown as a file part (else it stays a data part). */
  const decided = new Map<string, boolean>();
  const asked = new Map<string, Promise<ReadableFile | null>>();
  const read = (fileId: string): Promise<ReadableFile | null> => {
    let answer = asked.get(fileId);
    if (answer === undefined) {
      answer = readFile(fileId).then((file) => file ?? null, () => null);
      asked.set(fileId, answer);
    }
    return answer;
  };
  return new TransformStream<UIMessageChunk, UIMessageChunk>({
    async transform(chunk, controller) {
      const data = chunk as { type: string; id?: string; data?: unknown };
      if (data.type === "data-file" && data.id !== undefined) {
        const asFile = decided.get(data.id);
        if (asFile === true) return;
        if (asFile === undefined) {
          const props = (typeof data.data === "object" && data.data !== null ? data.data : {}) as { fileId?: unknown; mediaType?: unknown };
          const file = typeof props.fileId === "string" ? await read(props.fileId) : null;
          decided.set(data.id, file !== null);
          if (file !== null) {
            const mediaType = typeof props.mediaType === "string" && props.mediaType ? props.mediaType : file.mediaType || "application/octet-stream";
            controller.enqueue({ type: "file", url: file.url, mediaType });
            return;
          }
        }
      }
      controller.enqueue(chunk);
    },
  });
}
