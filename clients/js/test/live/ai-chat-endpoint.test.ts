// chatql's own POST /ai/chat and GET /ai/chat/{id}/stream, read by the AI SDK's
// DefaultChatTransport as useChat uses it (the SDK validates every chunk against its
// own schema), against a real chatql started by the Python suite.
import {
  AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, readUIMessageStream,
  type ChatInit, type ChatState, type UIMessage, type UIMessageChunk,
} from "ai";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { ChatqlClient } from "../../src/client.js";
import { ChatInterruptsDocument, MessagesDocument } from "../../src/generated/operations.js";
import { withStream } from "../../src/producer.js";
import { toUIMessages } from "../../src/ui-messages.js";
import { AGENT, base, gql, unique, until } from "./helpers.js";

const PERSON = { "X-User-Id": "alice", "X-Tenant-Id": "acme" };
const client = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket });
const transport = new DefaultChatTransport<UIMessage>({ api: `${base}/ai/chat`, headers: PERSON, body: { assistantId: "bot" } });

async function stored(chatId: string) {
  const data = await client.request(MessagesDocument, { chatId, last: 50 });
  return data.messages.edges.map((edge) => edge.node);
}

async function read(stream: ReadableStream<UIMessageChunk>) {
  const chunks: UIMessageChunk[] = [];
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({
    transform(chunk, controller) { chunks.push(chunk); controller.enqueue(chunk); },
  }));
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: tapped, terminateOnError: true })) message = m;
  return { message, chunks };
}

/** The agent: once the question is stored, answers it (thinking, a tool call, text). */
async function answer(chatId: string, questionId: string, requestId = questionId) {
  let found = false;
  await until(() => found, "the stored question", 10000, async () => {
    found = (await stored(chatId)).some((m) => m.id === questionId);
  });
  await withStream(client, { chatId, requestId, parentId: questionId, flushIntervalMs: 5 }, async (writer) => {
    writer.thinking("Checking.");
    writer.toolCall("call-1", "weather", '{"city":');
    writer.toolArguments("call-1", '"Oslo"}');
    await writer.flush();
    writer.toolResult("call-1", { temp: 3 });
    writer.text("It is ");
    await writer.flush();
    writer.text("3 °C.");
  });
}

/** The AI SDK's chat (what useChat wraps) with its messages kept in memory. */
class MemoryChat extends AbstractChat<UIMessage> {
  constructor(init: Omit<ChatInit<UIMessage>, "messages">) {
    const state: ChatState<UIMessage> = {
      status: "ready",
      error: undefined,
      messages: [],
      pushMessage: (message) => { state.messages = [...state.messages, message]; },
      popMessage: () => { state.messages = state.messages.slice(0, -1); },
      replaceMessage: (index, message) => { state.messages = state.messages.map((m, i) => (i === index ? message : m)); },
      snapshot: (thing) => structuredClone(thing),
    };
    super({ ...init, state });
  }
}

describe("POST /ai/chat with the AI SDK's DefaultChatTransport", () => {
  it("tool approvals with the SDK's own chat: addToolApprovalResponse decides in chatql and the resumed reply continues the message", async () => {
    const chatId = unique("approve");
    const chat = new MemoryChat({ id: chatId, transport, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    const questionId = unique("q");
    const asking = (async () => {
      let found = false;
      await until(() => found, "the stored question", 10000, async () => {
        // The chat is created by the send this waits beside: not there at first.
        found = (await stored(chatId).catch(() => [])).some((m) => m.id === questionId);
      });
      await withStream(client, { chatId, requestId: questionId, parentId: questionId, flushIntervalMs: 5 }, async (writer) => {
        writer.text("I need your approval.");
        writer.toolCall("call-mail", "send_email", '{"to":"ceo@acme.test"}', { needsApproval: true });
        writer.toolCall("call-pay", "pay", '{"eur":10}', { needsApproval: true });
      });
    })();
    await chat.sendMessage({ id: questionId, role: "user", parts: [{ type: "text", text: "Mail the CEO and pay" }] });
    await asking;
    expect(chat.error).toBeUndefined();
    const approvals = chat.lastMessage?.parts.flatMap((part) => {
      const tool = part as { state?: string; toolCallId?: string; approval?: { id: string } };
      return tool.state === "approval-requested" && tool.approval ? [[tool.toolCallId, tool.approval.id] as const] : [];
    }) ?? [];
    const interrupts = (await client.request(ChatInterruptsDocument, { id: chatId })).chat?.interrupts ?? [];
    expect(Object.fromEntries(approvals)).toEqual(Object.fromEntries(interrupts.map((i) => [i.toolCallId, i.id])));

    // The worker resumes once every approval is decided.
    const resuming = (async () => {
      let requestId: string | undefined;
      await until(() => requestId !== undefined, "the resumption", 15000, async () => {
        const data = await gql<{ chat: { resumption: { requestId: string } | null } }>("query($id: ID!) { chat(id: $id) { resumption { requestId } } }", { id: chatId });
        requestId = data.chat.resumption?.requestId;
      });
      await withStream(client, { chatId, requestId: requestId as string, flushIntervalMs: 5 }, async (writer) => {
        writer.toolResult("call-mail", "sent");
        writer.text("Mail sent; no payment.");
      });
    })();
    const [mail, pay] = [approvals.find(([call]) => call === "call-mail")?.[1], approvals.find(([call]) => call === "call-pay")?.[1]];
    await chat.addToolApprovalResponse({ id: mail as string, approved: true });
    await chat.addToolApprovalResponse({ id: pay as string, approved: false, reason: "not today" });
    await resuming;
    await until(() => chat.status === "ready" && chat.lastMessage?.parts.some((p) => p.type === "text" && p.text === "Mail sent; no payment.") === true, "the resumed reply", 15000);
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(2);
    expect(chat.lastMessage?.parts.filter((p) => p.type !== "step-start")).toMatchObject([
      { type: "text", text: "I need your approval." },
      { type: "tool-send_email", state: "output-available", output: "sent", approval: { id: mail, approved: true } },
      { type: "tool-pay", state: "output-denied", approval: { id: pay, approved: false, reason: "not today" } },
      { type: "text", text: "Mail sent; no payment." },
    ]);
    const decided = (await client.request(ChatInterruptsDocument, { id: chatId })).chat?.interrupts ?? [];
    expect(decided.map((i) => [i.toolCallId, i.state, i.decision?.approved])).toEqual([
      ["call-mail", "RESOLVED", true], ["call-pay", "RESOLVED", false]]);
    // A reload shows the same: the stored chat with its interrupts.
    const history = toUIMessages(await stored(chatId), { interrupts: decided });
    const parts = (m: UIMessage | undefined) => JSON.parse(JSON.stringify(m?.parts.filter((p) => p.type !== "step-start" && p.type !== "text").map((p) => ({ ...p, approval: { ...(p as { approval?: object }).approval } }))));
    expect(parts(history[1])).toEqual(parts(chat.lastMessage));
  });

  it("stores the question, streams the reply the SDK reads as toUIMessages of the stored chat, and regenerates", async () => {
    const chatId = unique("aichat");
    const q: UIMessage = { id: unique("q"), role: "user", parts: [{ type: "text", text: "Weather in Oslo?" }] };
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const [{ message, chunks }] = await Promise.all([read(stream), answer(chatId, q.id)]);
    expect(chunks[0]).toMatchObject({ type: "start" });
    expect(chunks.at(-1)).toEqual({ type: "finish" });
    expect(message?.parts.filter((p) => p.type !== "step-start").map((p) => p.type)).toEqual(["reasoning", "tool-weather", "text"]);
    const history = toUIMessages(await stored(chatId));
    expect(history[0]?.id).toBe(q.id);
    expect(message?.id).toBe(history[1]?.id);
    const parts = (m: UIMessage | undefined) => JSON.parse(JSON.stringify(m?.parts.filter((p) => p.type !== "step-start")));
    expect(parts(message)).toEqual(parts(history[1]));
    // Nothing is live now: a resume is null (HTTP 204).
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
    // regenerate(): the same question is answered again, beside the first answer.
    const again = await transport.sendMessages({ trigger: "regenerate-message", chatId, messageId: message?.id, messages: [q], abortSignal: undefined });
    const [second] = await Promise.all([read(again), answer(chatId, q.id, `${q.id}.1`)]);
    expect(second.message?.id).not.toBe(message?.id);
    const now = toUIMessages(await stored(chatId));
    expect(now[1]?.id).toBe(second.message?.id);
    expect(parts(second.message)).toEqual(parts(now[1]));
  });

  it("a bad body is a 400 with a message the SDK surfaces, and nothing is stored", async () => {
    const chatId = unique("aichat");
    const bad: UIMessage = { id: unique("q"), role: "user", parts: [] };
    await expect(transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [bad], abortSignal: undefined }))
      .rejects.toThrow(/no text or file parts/);
    const response = await fetch(`${base}/graphql`, {
      method: "POST", headers: { "content-type": "application/json", ...PERSON },
      body: JSON.stringify({ query: "query($id: ID!) { chat(id: $id) { id } }", variables: { id: chatId } }),
    });
    expect(((await response.json()) as { data: { chat: unknown } }).data.chat).toBeNull();
  });
});
