// ChatqlChatTransport against a real chatql (the Python suite starts it): an agent's
// `file` message in a live reply is the AI SDK's file part at a signed address that serves the file's bytes — in the reply's order, as `toUIMessages` shows the
// stored reply — also when the agent uploaded the file under an identity of its own (the
// chunk makes it readable through the chat while the reply is live); a push naming a file
// the agent may not read is refused, and the reply fails showing no file.
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { ChatqlClient } from "../../src/client.js";
import { MessagesDocument } from "../../src/generated/operations.js";
import { withStream, type startStream } from "../../src/producer.js";
import { ChatqlChatTransport } from "../../src/transport.js";
import { toUIMessages } from "../../src/ui-messages.js";
import { AGENT, PNG, base, createChat, unique, until } from "./helpers.js";

const PERSON = { "X-User-Id": "alice", "X-Tenant-Id": "acme" };
const STRANGER = { "X-User-Id": "carol", "X-Tenant-Id": "acme" };
/** An agent runtime with an identity of its own: its uploads are not the person's. */
const WORKER = { "X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent" };
const person = new ChatqlClient({ url: `${base}/graphql`, headers: () => PERSON, webSocketImpl: WebSocket });
const agentClient = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket });
const stranger = new ChatqlClient({ url: `${base}/graphql`, headers: () => STRANGER, webSocketImpl: WebSocket });
const worker = new ChatqlClient({ url: `${base}/graphql`, headers: () => WORKER, webSocketImpl: WebSocket });

async function stored(chatId: string) {
  return (await person.request(MessagesDocument, { chatId, last: 50 })).messages.edges.map((edge) => edge.node);
}

/** A test agent: waits for the person's message, then answers it with the writer. */
async function answer(chatId: string, questionId: string, work: (writer: Awaited<ReturnType<typeof startStream>>) => Promise<void>, agent: ChatqlClient = agentClient) {
  let seen = false;
  await until(() => seen, "the appended question", 10000, async () => {
    seen = (await stored(chatId)).some((m) => m.id === questionId);
  });
  return withStream(agent, { chatId, requestId: questionId, parentId: questionId, flushIntervalMs: 5 }, work);
}

/** Reads the transport's chunks the way useChat does, keeping every chunk too (in `chunks`, as they come). */
async function read(stream: ReadableStream<UIMessageChunk>, chunks: UIMessageChunk[] = []) {
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({
    transform(chunk, controller) {
      chunks.push(chunk);
      controller.enqueue(chunk);
    },
  }));
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: tapped, terminateOnError: true })) message = m;
  return { message: message as UIMessage, chunks };
}

/** Parts as compared: a file part's address without its signature and expiry (each reading signs anew). */
function comparable(parts: readonly UIMessage["parts"][number][], dropFilename = false): unknown[] {
  return parts.map((part) => {
    const plain = JSON.parse(JSON.stringify(part)) as Record<string, unknown>;
    if (part.type === "file") {
      plain.url = new URL(part.url).pathname;
      if (dropFilename) delete plain.filename;
    }
    return plain;
  });
}

describe("ChatqlChatTransport: an agent's file in a live reply", () => {
  it("is the AI SDK's file part at a signed address serving its bytes, in order, as toUIMessages shows the stored reply", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(person);
    const q: UIMessage = { id: unique("q"), role: "user", parts: [{ type: "text", text: "Chart it" }] };
    const upload = await agentClient.upload(new Blob([PNG], { type: "image/png" }), { filename: "chart.png" });
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const replying = answer(chatId, q.id, async (writer) => {
      writer.text("Here is a chart.");
      await writer.flush();
      writer.message("file", { fileId: upload.id, mediaType: "image/png", filename: "chart.png" });
      writer.text("Anything else?");
    });
    const { message, chunks } = await read(stream);
    await replying;

    const at = chunks.findIndex((chunk) => chunk.type === "file");
    expect(chunks[at]).toEqual({ type: "file", url: expect.stringMatching(/\/files\/[^/?]+\?expires=\d+&signature=/), mediaType: "image/png" });
    expect(chunks.some((chunk) => chunk.type === "data-file")).toBe(false);
    expect(message.parts.map((part) => part.type)).toEqual(["text", "file", "text"]);
    const part = message.parts[1] as { url: string };
    expect(message.parts[1]).toEqual({ type: "file", mediaType: "image/png", url: part.url });
    // The signed address serves the file's bytes, with no credentials.
    const image = await fetch(part.url);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer()).equals(PNG)).toBe(true);

    // The stored reply, read back: the same parts in the same order (the AI SDK's file
    // chunk carries no filename; the address is signed anew).
    const [, reply] = toUIMessages(await stored(chatId));
    expect(reply?.id).toBe(message.id);
    expect(reply?.parts[1]).toMatchObject({ type: "file", mediaType: "image/png", filename: "chart.png" });
    expect(comparable(message.parts)).toEqual(comparable(reply?.parts ?? [], true));
  });

  it("is a file part while the reply is live when the agent uploaded the file under an identity of its own", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(person);
    const q: UIMessage = { id: unique("q"), role: "user", parts: [{ type: "text", text: "Send me the report" }] };
    // The worker's upload: the person may not read it until a chunk of the reply names it.
    const upload = await worker.upload(new Blob([PNG], { type: "image/png" }), { filename: "report.png" });
    expect(await person.request<{ file: unknown }>("query($id: ID!) { file(id: $id) { id } }", { id: upload.id })).toEqual({ file: null });
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const chunks: UIMessageChunk[] = [];
    const reading = read(stream, chunks);
    const replying = answer(chatId, q.id, async (writer) => {
      writer.text("Here it is.");
      writer.message("file", { fileId: upload.id, mediaType: "image/png", filename: "report.png" });
      await writer.flush();
      // The reply stays live until the person's transport has shown the file.
      await until(() => chunks.some((chunk) => chunk.type === "file" || chunk.type === "data-file"), "the file shown live");
      writer.text("Anything else?");
    }, worker);
    const { message } = await reading;
    await replying;

    expect(chunks.some((chunk) => chunk.type === "data-file")).toBe(false);
    expect(message.parts.map((part) => part.type)).toEqual(["text", "file", "text"]);
    const part = message.parts[1] as { url: string };
    expect(message.parts[1]).toEqual({ type: "file", mediaType: "image/png", url: expect.stringMatching(/\/files\/[^/?]+\?expires=\d+&signature=/) });
    const image = await fetch(part.url);
    expect(image.status).toBe(200);
    expect(Buffer.from(await image.arrayBuffer()).equals(PNG)).toBe(true);
    // Stored, the reply keeps it: the same parts as toUIMessages shows them.
    const [, reply] = toUIMessages(await stored(chatId));
    expect(comparable(message.parts)).toEqual(comparable(reply?.parts ?? [], true));
  });

  it("fails the reply, showing no file, when the agent names a file it may not read", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(person);
    const q: UIMessage = { id: unique("q"), role: "user", parts: [{ type: "text", text: "Show me carol's file" }] };
    // Carol's upload: neither the person nor the agent may read it.
    const secret = await stranger.upload(new Blob([PNG], { type: "image/png" }), { filename: "secret.png" });
    expect(await person.request<{ file: unknown }>("query($id: ID!) { file(id: $id) { id } }", { id: secret.id })).toEqual({ file: null });
    const props = { fileId: secret.id, mediaType: "image/png", filename: "secret.png" };
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const replying = answer(chatId, q.id, async (writer) => {
      writer.message("file", props);
      writer.text("That is all.");
    });
    const chunks: UIMessageChunk[] = [];
    const reader = stream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    // The push naming it is refused as an append naming it would be: NOT_FOUND.
    await expect(replying).rejects.toMatchObject({ code: "NOT_FOUND" });

    expect(chunks.some((chunk) => chunk.type === "file" || chunk.type === "data-file")).toBe(false);
    expect(chunks.find((chunk) => chunk.type === "error")).toMatchObject({ errorText: expect.stringContaining("not found") });
    expect(await person.request<{ file: unknown }>("query($id: ID!) { file(id: $id) { id } }", { id: secret.id })).toEqual({ file: null });
    const [, reply] = await stored(chatId);
    expect(reply?.type).toBe("error");
    expect(JSON.stringify(reply?.props)).not.toContain('"fileId"');
  });
});
