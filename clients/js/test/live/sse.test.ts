// The npm graphql-sse client (distinct connections) receives a live chatStream with afterSeq.
import { createClient } from "graphql-sse";
import { expect, it } from "vitest";

import { applyChunk, type MessagesView } from "../../src/reducer.js";
import type { StreamChunk } from "../../src/follower.js";
import { AGENT, base, endStream, push, startStream, text, until } from "./helpers.js";

it("graphql-sse receives the chunks after afterSeq, then live ones, continuous by fromSeq", async () => {
  const chatId = `sse-${Date.now()}`;
  const streamId = await startStream(chatId);
  await push(streamId, [text("a", "Hel"), text("a", "lo"), text("b", "Hmm", { type: "thinking" })]);
  const client = createClient({ url: `${base}/graphql`, singleConnection: false, headers: AGENT, retryAttempts: 0 });
  const received: StreamChunk[] = [];
  let done: Promise<void> | null = null;
  const ended = new Promise<void>((resolve, reject) => {
    const cancel = client.subscribe<{ chatStream: StreamChunk }>(
      {
        query: `subscription($chatId: ID!, $afterSeq: Int) { chatStream(chatId: $chatId, afterSeq: $afterSeq) {
          streamId seq fromSeq snapshot chunkId messageId blockId threadId type role props delta deltaPath deltaAction } }`,
        variables: { chatId, afterSeq: 2 },
      },
      {
        next: (result) => {
          if (result.errors) reject(new Error(JSON.stringify(result.errors)));
          const chunk = result.data?.chatStream;
          if (!chunk) return;
          received.push(chunk);
          const props = chunk.props as { event?: string } | null;
          if (props?.event === "stream_end") {
            cancel();
            resolve();
          }
        },
        error: reject,
        complete: () => undefined,
      },
    );
  });
  await until(() => received.length >= 2, "the replayed chunks");
  await push(streamId, [text("a", ", world"), text("b", " ok", { type: "thinking" })]);
  done = endStream(streamId).then(() => undefined);
  await ended;
  await done;
  expect(received.map((c) => c.seq)).toEqual([3, 4, 5, 6, 7]);
  let previous = 2;
  for (const chunk of received) {
    expect(chunk.snapshot).toBe(false);
    expect(chunk.fromSeq).toBe(previous + 1);
    previous = chunk.seq;
  }
  // On top of what the client held at seq 2 ("Hel"), the chunks give the persisted text.
  const first = received[0] as StreamChunk;
  let view: MessagesView = new Map([[first.messageId as string, {
    id: first.messageId as string, type: "text", role: "ASSISTANT", props: { content: "Hel" }, blockId: null, threadId: null,
  }]]);
  for (const chunk of received) view = applyChunk(view, chunk);
  expect(view.get(first.messageId as string)?.props).toEqual({ content: "Hello, world" });
});
