// Files and feedback against a real chatql (the Python suite starts it with
// CHATQL_FILE_MAX_BYTES at 1,000,000): the assistant-ui attachment adapter uploads with
// progress and its message stores a file reference, `toUIMessages` shows people's and
// agents' files at their signed addresses, refusals surface with the service's message,
// and the feedback adapter's ratings read back as `myFeedback`.
import type { PendingAttachment } from "@assistant-ui/react";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { chatqlAttachmentAdapter, chatqlFeedbackAdapter, chatqlHistoryAdapter } from "../../src/assistant-ui.js";
import { ChatqlClient } from "../../src/client.js";
import { MessagesDocument } from "../../src/generated/operations.js";
import { withStream } from "../../src/producer.js";
import { fileIdOfUrl, toUIMessages } from "../../src/ui-messages.js";
import { AGENT, PNG, base, createChat, gql, unique } from "./helpers.js";

const PERSON = { "X-User-Id": "alice", "X-Tenant-Id": "acme" };
const person = new ChatqlClient({ url: `${base}/graphql`, headers: () => PERSON, webSocketImpl: WebSocket });
const agent = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket });

async function stored(client: ChatqlClient, chatId: string) {
  return (await client.request(MessagesDocument, { chatId, last: 50 })).messages.edges.map((edge) => edge.node);
}

async function added(adapter: ReturnType<typeof chatqlAttachmentAdapter>, file: File): Promise<PendingAttachment[]> {
  const states: PendingAttachment[] = [];
  const add = adapter.add({ file });
  if (!(Symbol.asyncIterator in add)) throw new Error("add is not a generator");
  for await (const state of add) states.push(state);
  return states;
}

describe("chatqlAttachmentAdapter", () => {
  it("uploads with progress; the message sent references the file, and toUIMessages shows it at a signed address", async () => {
    const adapter = chatqlAttachmentAdapter({ client: person });
    const text = "a line of notes\n".repeat(40000); // 640,000 bytes
    const states = await added(adapter, new File([text], "notes.txt", { type: "text/plain" }));
    const progress = states.flatMap((state) => (state.status.type === "running" ? [state.status.progress] : []));
    expect(progress[0]).toBe(0);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress[progress.length - 1]).toBe(1);
    const ready = states[states.length - 1] as PendingAttachment;
    expect(ready.status).toEqual({ type: "requires-action", reason: "composer-send" });

    const complete = await adapter.send(ready);
    const [part] = complete.content;
    if (part?.type !== "file") throw new Error(`not a file part: ${JSON.stringify(part)}`);
    expect(part).toMatchObject({ mimeType: "text/plain", filename: "notes.txt", sourceType: "url" });
    expect(await (await fetch(part.data)).text()).toBe(text);
    const fileId = fileIdOfUrl(part.data);

    // The history adapter stores the person's message with the attachment as a reference.
    const chatId = await createChat();
    const history = chatqlHistoryAdapter(person, chatId);
    await history.load();
    const questionId = unique("q");
    await history.append({
      parentId: null,
      message: {
        id: questionId, role: "user", createdAt: new Date(), content: [{ type: "text", text: "Summarise these" }],
        attachments: [complete], metadata: { custom: {} },
      },
    });
    const [question] = await stored(person, chatId);
    expect(question?.props).toEqual({ content: [
      { type: "text", text: "Summarise these" },
      { type: "file", fileId, mediaType: "text/plain", filename: "notes.txt" },
    ] });
    expect(question?.files.map((file) => file.id)).toEqual([fileId]);

    // An agent answers with a file of its own (a `file` message).
    const upload = await agent.upload(new Blob([PNG], { type: "image/png" }), { filename: "chart.png" });
    await withStream(agent, { chatId, requestId: questionId, parentId: questionId, flushIntervalMs: 5 }, async (writer) => {
      writer.text("Here is a chart.");
      writer.message("file", { fileId: upload.id, mediaType: "image/png", filename: "chart.png" });
    });
    const [shownQuestion, reply] = toUIMessages(await stored(person, chatId));
    expect(shownQuestion?.parts).toMatchObject([
      { type: "text", text: "Summarise these" },
      { type: "file", mediaType: "text/plain", filename: "notes.txt" },
    ]);
    expect(reply?.parts).toMatchObject([
      { type: "text", text: "Here is a chart." },
      { type: "file", mediaType: "image/png", filename: "chart.png" },
    ]);
    const questionFile = shownQuestion?.parts[1] as { url: string };
    const replyFile = reply?.parts[1] as { url: string };
    expect(questionFile.url).toMatch(/\?expires=\d+&signature=/);
    // Signed addresses: readable without credentials.
    expect(await (await fetch(questionFile.url)).text()).toBe(text);
    const image = await fetch(replyFile.url);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer()).equals(PNG)).toBe(true);
  });

  it("refuses a file over the size limit before sending it, and one of the wrong type with the service's message", async () => {
    // A client counting what it sends: a file over the limit is refused before any byte.
    const requested: string[] = [];
    const counting = new ChatqlClient({
      url: `${base}/graphql`, headers: () => PERSON, webSocketImpl: WebSocket,
      fetch: (input, init) => {
        requested.push(String(input));
        return globalThis.fetch(input, init);
      },
    });
    const adapter = chatqlAttachmentAdapter({ client: counting, accept: "image/*,text/plain" });
    const bigFile = new File([new Uint8Array(1_200_000)], "big.txt", { type: "text/plain" });
    const big = await added(adapter, bigFile);
    const tooLarge = big[big.length - 1]?.status;
    expect(tooLarge).toMatchObject({ type: "incomplete", reason: "error" });
    expect(requested.filter((url) => url.includes("/files"))).toEqual([]);
    await expect(adapter.send(big[big.length - 1] as PendingAttachment)).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    // The message is the one the service gives when the bytes are sent anyway.
    const sentAnyway = await person.upload(bigFile).catch((e: unknown) => e);
    expect(sentAnyway).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect((tooLarge as { message: string }).message).toBe((sentAnyway as Error).message);
    expect(await counting.fileLimits()).toMatchObject({ maxBytes: 1_000_000, quotaBytes: null, usedBytes: null });

    const fake = await added(adapter, new File(["not a picture"], "fake.png", { type: "image/png" }));
    const refused = fake[fake.length - 1]?.status;
    expect(refused).toMatchObject({ type: "incomplete", reason: "error" });
    const error = await person.upload(new Blob(["not a picture"], { type: "image/png" }), { filename: "fake.png" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
    expect((refused as { message: string }).message).toBe((error as Error).message);
  });
});

describe("chatqlFeedbackAdapter", () => {
  it("rates the assistant's message up, then down with a comment, as myFeedback reads back", async () => {
    const chatId = await createChat();
    const questionId = unique("q");
    const history = chatqlHistoryAdapter(person, chatId);
    await history.load();
    await history.append({
      parentId: null,
      message: { id: questionId, role: "user", createdAt: new Date(), content: [{ type: "text", text: "Weather?" }], attachments: [], metadata: { custom: {} } },
    });
    await withStream(agent, { chatId, requestId: questionId, parentId: questionId, flushIntervalMs: 5 }, async (writer) => {
      writer.text("Sunny.");
    });
    // The assistant-ui message as the history adapter loads it: its id is the reply's.
    const repository = await history.load();
    const reply = repository.messages.find((item) => item.message.role === "assistant")?.message;
    if (reply === undefined) throw new Error("no reply loaded");

    const feedback = chatqlFeedbackAdapter(person);
    const mine = async () => {
      const data = await person.request<{ messages: { edges: { node: { id: string; myFeedback: { rating: string; comment: string | null } | null; feedbackSummary: { up: number; down: number } } }[] } }>(
        "query($c: ID!) { messages(chatId: $c, last: 10) { edges { node { id myFeedback { rating comment } feedbackSummary { up down } } } } }", { c: chatId });
      return data.messages.edges.map((edge) => edge.node).find((node) => node.id === reply.id);
    };
    await feedback.submit({ message: reply, type: "positive" });
    expect(await mine()).toMatchObject({ myFeedback: { rating: "UP", comment: null }, feedbackSummary: { up: 1, down: 0 } });
    await feedback.submit({ message: reply, type: "negative", comment: "It is raining." });
    expect(await mine()).toMatchObject({ myFeedback: { rating: "DOWN", comment: "It is raining." }, feedbackSummary: { up: 0, down: 1 } });

    // A message the person may not read is refused (NOT_FOUND), through onError when given.
    const errors: unknown[] = [];
    await chatqlFeedbackAdapter(person, { onError: (e) => errors.push(e) }).submit({ message: { ...reply, id: unique("nope") }, type: "positive" });
    expect(errors[0]).toMatchObject({ code: "NOT_FOUND" });
  });
});
