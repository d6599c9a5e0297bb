// Both mappers of a live reply to AI SDK UI message chunks — the service's (POST /ai/chat,
// recorded in conformance/ui/cases.json by its generator) and this client's
// (UIChunkMapper, as ChatqlChatTransport drives it) — must give the same final message.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";

import { applyChunk, type MessagesView } from "../src/reducer.js";
import { UIChunkMapper, type ReplyEnd } from "../src/ui-chunks.js";
import type { StreamChunk } from "../src/follower.js";

interface Case {
  name: string;
  chunks: StreamChunk[];
  python: UIMessageChunk[];
  parts: unknown[];
}

const file = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "ui", "cases.json");
const cases = (JSON.parse(readFileSync(file, "utf8")) as { cases: Case[] }).cases;

/** The client's chunks for a reply, fed the way the transport feeds its mapper. */
function clientChunks(chunks: readonly StreamChunk[]): UIMessageChunk[] {
  const mapper = new UIChunkMapper();
  let view: MessagesView = new Map();
  const out: UIMessageChunk[] = [];
  for (const chunk of chunks) {
    const props = chunk.props as { event?: string; status?: string; error?: string } | null;
    if (chunk.type === "event" && props?.event === "stream_end") {
      const status = props.status === "interrupted" || props.status === "failed" ? props.status : "completed";
      // As the transport does: its follower keeps the end's status, not the error text.
      out.push(...mapper.update(view), ...mapper.end(status as ReplyEnd));
      break;
    }
    view = applyChunk(view, chunk);
    out.push(...mapper.update(view));
  }
  return out;
}

async function finalMessage(chunks: readonly UIMessageChunk[]): Promise<{ message: UIMessage | undefined; errors: string[] }> {
  const errors: string[] = [];
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, onError: (error) => errors.push(String((error as Error).message ?? error)) })) message = m;
  return { message, errors };
}

/** The parts to compare: no step boundaries, no unset fields, no ids of text and
 * reasoning parts (each mapper names them its own way; data parts keep theirs). */
function parts(message: UIMessage | undefined): unknown[] {
  return (message?.parts ?? [])
    .filter((part) => part.type !== "step-start")
    .map((part) => {
      const plain = JSON.parse(JSON.stringify(part)) as Record<string, unknown>;
      if (part.type === "text" || part.type === "reasoning") delete plain.id;
      return plain;
    });
}

it("the recorded suite has its cases", () => {
  expect(cases.length).toBeGreaterThanOrEqual(5);
});

describe("conformance/ui/cases.json", () => {
  for (const testCase of cases) {
    it(testCase.name, async () => {
      const ours = await finalMessage(clientChunks(testCase.chunks));
      const theirs = await finalMessage(testCase.python);
      expect(parts(theirs.message)).toEqual(testCase.parts);
      expect(parts(ours.message)).toEqual(testCase.parts);
      expect(ours.message?.id).toBe(theirs.message?.id);
      // Both report a failure; the texts differ (the service sends the agent's words).
      expect(ours.errors.length).toBe(theirs.errors.length);
    });
  }
});
