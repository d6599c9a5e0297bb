// The stream writer's protocol decisions, over a fake GraphQL endpoint: batching, chunk
// ids, heartbeats at a third of the server's idle timeout (20 s when it does not say),
// and a stop (STREAM_CLOSED) surfacing as StreamStopped and an aborted signal.
import { afterEach, beforeEach, expect, it, vi } from "vitest";

import { ChatqlClient } from "../src/client.js";
import { StreamStopped, startStream, withStream } from "../src/producer.js";

interface Call { query: string; variables: Record<string, unknown> }

function fakeServer(options: { idleTimeout?: number; closed?: () => boolean } = {}) {
  const calls: Call[] = [];
  const fetcher = async (_input: unknown, init?: RequestInit) => {
    const call = JSON.parse(String(init?.body)) as Call;
    calls.push(call);
    const answer = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
    if (call.query.includes("startStream")) {
      if (call.query.includes("idleTimeout") && options.idleTimeout === undefined) {
        return answer({ errors: [{ message: "Cannot query field 'idleTimeout' on type 'Stream'." }] });
      }
      return answer({ data: { startStream: { id: "s1", chatId: "c1", requestId: null, status: "active", idleTimeout: options.idleTimeout } } });
    }
    if (call.query.includes("pushChunks")) {
      if (options.closed?.()) return answer({ errors: [{ message: "stream closed", extensions: { code: "STREAM_CLOSED" } }] });
      const chunks = call.variables.chunks as unknown[];
      return answer({ data: { pushChunks: { accepted: chunks.length, duplicates: 0, lastSeq: 1 } } });
    }
    return answer({ data: { endStream: { messages: [] } } });
  };
  const client = new ChatqlClient({ url: "http://chatql.test/graphql", fetch: fetcher as typeof fetch });
  const pushes = () => calls.filter((c) => c.query.includes("pushChunks")).map((c) => c.variables.chunks as { chunkId: string }[]);
  return { client, calls, pushes };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

it("heartbeats with an empty push at a third of the server's idle timeout", async () => {
  const server = fakeServer({ idleTimeout: 60 });
  const writer = await startStream(server.client, { chatId: "c1" });
  expect(writer.heartbeatInterval).toBe(20_000);
  await vi.advanceTimersByTimeAsync(19_000);
  expect(server.pushes()).toEqual([]);
  await vi.advanceTimersByTimeAsync(1_500);
  expect(server.pushes()).toEqual([[]]);
  writer.close();
});

it("heartbeats every 20 s when the server does not tell its idle timeout", async () => {
  const server = fakeServer({ idleTimeout: 9 });
  expect((await startStream(server.client, { chatId: "c1" })).heartbeatInterval).toBe(3_000);
  const old = fakeServer();
  const writer = await startStream(old.client, { chatId: "c1" });
  expect(writer.heartbeatInterval).toBe(20_000);
  // It asked again without the field, and the stream opened.
  expect(old.calls.filter((c) => c.query.includes("startStream"))).toHaveLength(2);
  writer.close();
});

it("batches after the flush interval or at maxBatch, with chunk ids numbered in the stream", async () => {
  const server = fakeServer({ idleTimeout: 60 });
  const writer = await startStream(server.client, { chatId: "c1", maxBatch: 3 });
  for (const n of [1, 2, 3, 4]) writer.message("card", { n });
  await vi.advanceTimersByTimeAsync(0);
  expect(server.pushes().map((batch) => batch.map((chunk) => chunk.chunkId))).toEqual([["1", "2", "3"]]);
  await vi.advanceTimersByTimeAsync(25);
  expect(server.pushes().map((batch) => batch.map((chunk) => chunk.chunkId))).toEqual([["1", "2", "3"], ["4"]]);
  writer.close();
});

it("a run of appends to one place waits as one chunk; a sent chunk is never grown again", async () => {
  const server = fakeServer({ idleTimeout: 60 });
  const writer = await startStream(server.client, { chatId: "c1", maxBatch: 10 });
  for (const token of ["Sun", "ny", " and"]) writer.text(token);
  writer.toolCall("k", "lookup", "{");
  for (const piece of ['"q"', ": 1", "}"]) writer.toolArguments("k", piece);
  writer.text("A", { threadId: "side" });
  writer.text("B");
  writer.text("C");
  await writer.flush();
  writer.text("D");
  await writer.flush();
  const sent = server.pushes().flat().map((c) => {
    const { chunkId, type, props, threadId } = c as { chunkId: string; type: string; props: unknown; threadId?: string };
    return [chunkId, type, threadId ?? null, props];
  });
  expect(sent).toEqual([
    ["1", "text", null, { content: "Sunny and" }],
    ["4", "tool_call", null, { id: "k", name: "lookup", arguments: "{" }],
    ["5", "tool_call", null, { arguments: '"q": 1}' }],
    ["8", "text", "side", { content: "A" }],
    ["9", "text", null, { content: "BC" }],
    ["11", "text", null, { content: "D" }],
  ]);
  // Ten calls reach maxBatch whether or not their chunks joined.
  for (let i = 0; i < 10; i += 1) writer.text(`${i}`);
  await vi.advanceTimersByTimeAsync(0);
  expect(server.pushes().at(-1)).toEqual([expect.objectContaining({ props: { content: "0123456789" } })]);
  writer.close();
});

it("a stop (STREAM_CLOSED) aborts the writer's signal and its calls throw StreamStopped", async () => {
  let closed = false;
  const server = fakeServer({ idleTimeout: 60, closed: () => closed });
  const writer = await startStream(server.client, { chatId: "c1" });
  writer.text("Hello");
  await writer.flush();
  closed = true;
  writer.text(" world");
  await expect(writer.flush()).rejects.toBeInstanceOf(StreamStopped);
  expect(writer.signal.aborted).toBe(true);
  expect(() => writer.text("more")).toThrow(StreamStopped);
});

it("withStream takes a string input as the person's user_input, as the Python kit does", async () => {
  const server = fakeServer({ idleTimeout: 60 });
  await withStream(server.client, { chatId: "c1", input: "What's the weather?" }, async (writer) => writer.text("Sunny"));
  const message = { role: "USER" as const, type: "user_input", props: { content: "What's the weather?" } };
  const starts = () => server.calls.filter((c) => c.query.includes("startStream")).map((c) => c.variables.input);
  expect(starts()).toEqual([{ chatId: "c1", input: message }]);
  // A MessageInput is sent as given.
  await withStream(server.client, { chatId: "c1", input: { ...message, id: "q1" } }, async () => undefined);
  expect(starts().at(-1)).toEqual({ chatId: "c1", input: { ...message, id: "q1" } });
});
