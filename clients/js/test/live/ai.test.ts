// The AI SDK transport, the assistant-ui adapters and the stream writer against a real
// chatql (both databases, both stream brokers: the Python suite starts the server).
import { readUIMessageStream, validateUIMessages, type TextStreamPart, type ToolSet, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { chatqlHistoryAdapter, chatqlThreadListAdapter } from "../../src/assistant-ui.js";
import { ChatqlClient } from "../../src/client.js";
import { ChatInterruptsDocument, MessagesDocument } from "../../src/generated/operations.js";
import { StreamStopped, startStream, withStream } from "../../src/producer.js";
import { feedStreamText } from "../../src/stream-text.js";
import { ChatqlChatTransport, resumeRequestId } from "../../src/transport.js";
import { toUIMessages } from "../../src/ui-messages.js";
import { AGENT, base, createChat, gql, unique, until } from "./helpers.js";

const client = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket });

async function stored(chatId: string) {
  const data = await client.request(MessagesDocument, { chatId, last: 50 });
  return data.messages.edges.map((edge) => edge.node);
}

/** Reads a transport's chunk stream the way useChat does, keeping every chunk too. */
async function read(stream: ReadableStream<UIMessageChunk>, onChunk: (chunk: UIMessageChunk) => void = () => undefined) {
  const chunks: UIMessageChunk[] = [];
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({
    transform(chunk, controller) {
      chunks.push(chunk);
      onChunk(chunk);
      controller.enqueue(chunk);
    },
  }));
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: tapped, terminateOnError: true })) message = m;
  return { message, chunks };
}

const question = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });

/** A test agent: waits for the person's message, then answers it with the writer. */
async function agent(chatId: string, questionId: string, work: (writer: Awaited<ReturnType<typeof startStream>>) => Promise<void>) {
  await until(() => seen.has(questionId), "the appended question", 10000, async () => {
    if ((await stored(chatId)).some((m) => m.id === questionId)) seen.add(questionId);
  });
  return withStream(client, { chatId, requestId: questionId, parentId: questionId, flushIntervalMs: 5 }, work);
}
const seen = new Set<string>();

describe("ChatqlChatTransport", () => {
  it("sends: appends the person's message once (by its UIMessage id) and streams the agent's reply", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(client);
    const q = question(unique("q"), "Weather in Oslo?");
    const send = () => transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const stream = await send();
    const replying = agent(chatId, q.id, async (writer) => {
      writer.thinking("Checking.");
      writer.toolCall("call-1", "weather", '{"city":');
      writer.toolArguments("call-1", '"Oslo"}');
      await writer.flush();
      writer.toolResult("call-1", { temp: 3 });
      writer.text("It is ");
      await writer.flush();
      writer.text("3 °C.");
    });
    const { message, chunks } = await read(stream);
    await replying;
    expect(chunks[0]).toMatchObject({ type: "start" });
    expect(chunks.at(-1)).toEqual({ type: "finish" });
    expect(message?.parts.map((p) => p.type)).toEqual(["reasoning", "tool-weather", "text"]);
    expect(message?.parts[1]).toMatchObject({ toolCallId: "call-1", state: "output-available", input: { city: "Oslo" }, output: { temp: 3 } });
    expect(message?.parts[2]).toMatchObject({ type: "text", text: "It is 3 °C." });
    // The stored chat, read back with toUIMessages, is what the stream showed.
    const history = toUIMessages(await stored(chatId));
    expect(history[0]).toEqual({ id: q.id, role: "user", parts: [{ type: "text", text: "Weather in Oslo?", state: "done" }] });
    expect(JSON.parse(JSON.stringify(message?.parts))).toEqual(history[1]?.parts);
    expect(message?.id).toBe(history[1]?.id);
    // Sending the same message again (a retry) appends nothing.
    const again = await send();
    await again.cancel();
    expect((await stored(chatId)).filter((m) => m.role === "USER")).toHaveLength(1);
  });

  it("tool approvals: requested in the reply, answered with addToolApprovalResponse's message, resumed in the same UI message", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(client);
    const q = question(unique("q"), "Mail the CEO and pay the invoice");
    const asking = agent(chatId, q.id, async (writer) => {
      writer.text("I need your approval.");
      writer.toolCall("call-mail", "send_email", '{"to":"ceo@acme.test"}', { needsApproval: true, reason: "sends mail outside" });
      writer.toolCall("call-pay", "pay", '{"eur":10}', { needsApproval: true, expiresIn: 600 });
    });
    const first = await read(await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined }));
    await asking;
    const asked = first.message as UIMessage;
    const interrupts = (await client.request(ChatInterruptsDocument, { id: chatId })).chat?.interrupts ?? [];
    const idOf = (call: string) => interrupts.find((i) => i.toolCallId === call)?.id;
    expect(asked.parts.filter((p) => p.type.startsWith("tool-"))).toMatchObject([
      { type: "tool-send_email", state: "approval-requested", approval: { id: idOf("call-mail") } },
      { type: "tool-pay", state: "approval-requested", approval: { id: idOf("call-pay") } },
    ]);
    // What the SDK's addToolApprovalResponse leaves on the parts: approve the mail, deny the payment.
    const answered: UIMessage = {
      ...asked,
      parts: asked.parts.map((part) => {
        const tool = part as { toolCallId?: string; approval?: { id: string } };
        if (tool.approval === undefined) return part;
        const approved = tool.toolCallId === "call-mail";
        return { ...part, state: "approval-responded", approval: { id: tool.approval.id, approved, ...(approved ? {} : { reason: "not today" }) } } as UIMessage["parts"][number];
      }),
    };
    // A forged approval id decides nothing.
    const forged = { ...answered, parts: [...answered.parts, { type: "tool-x", toolCallId: "x", state: "approval-responded", input: {}, approval: { id: "forged", approved: true } } as UIMessage["parts"][number]] };
    await expect(transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q, forged], abortSignal: undefined })).rejects.toThrow(/never requested/);
    expect((await client.request(ChatInterruptsDocument, { id: chatId, state: "PENDING" })).chat?.interrupts).toHaveLength(2);

    const resumedStream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q, answered], abortSignal: undefined });
    // The worker claims the resumption (the request id the transport follows) and reports.
    const resuming = (async () => {
      let requestId: string | undefined;
      await until(() => requestId !== undefined, "the resumption", 10000, async () => {
        const data = await gql<{ chat: { resumption: { requestId: string } | null } }>("query($id: ID!) { chat(id: $id) { resumption { requestId } } }", { id: chatId });
        requestId = data.chat.resumption?.requestId;
      });
      expect(requestId).toBe(resumeRequestId(q.id));
      await withStream(client, { chatId, requestId: requestId as string, flushIntervalMs: 5 }, async (writer) => {
        writer.toolResult("call-mail", "sent");
        writer.text("Mail sent; no payment.");
      });
    })();
    const chunks: UIMessageChunk[] = [];
    let message: UIMessage | undefined;
    const tapped = resumedStream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({ transform(chunk, c) { chunks.push(chunk); c.enqueue(chunk); } }));
    for await (const m of readUIMessageStream({ message: answered, stream: tapped, terminateOnError: true })) message = m;
    await resuming;
    expect(chunks[0]).toEqual({ type: "start" });
    expect(message?.id).toBe(asked.id);
    expect(message?.parts.filter((p) => p.type !== "step-start")).toMatchObject([
      { type: "text", text: "I need your approval." },
      { type: "tool-send_email", state: "output-available", output: "sent", approval: { approved: true } },
      { type: "tool-pay", state: "output-denied", approval: { approved: false, reason: "not today" } },
      { type: "text", text: "Mail sent; no payment." },
    ]);
    // The stored chat with its interrupts reads back the same states.
    const stored_ = await stored(chatId);
    const decided = (await client.request(ChatInterruptsDocument, { id: chatId })).chat?.interrupts ?? [];
    const history = toUIMessages(stored_, { interrupts: decided });
    expect(history).toHaveLength(2);
    expect(history[1]?.parts).toMatchObject([
      { type: "text", text: "I need your approval." },
      { type: "tool-send_email", state: "output-available", output: "sent", approval: { id: idOf("call-mail"), approved: true } },
      { type: "tool-pay", state: "output-denied", approval: { id: idOf("call-pay"), approved: false, reason: "not today" } },
      { type: "text", text: "Mail sent; no payment." },
    ]);
    // The AI SDK accepts the history as UI messages.
    await expect(validateUIMessages({ messages: history })).resolves.toHaveLength(2);
  });

  it("on a slow socket, a reply that began before the subscription is still the answer", async () => {
    // Every frame the page sends reaches chatql 400 ms late: the agent answers first.
    class SlowSend extends WebSocket {
      override send(data: unknown, ...rest: unknown[]): void {
        setTimeout(() => (super.send as (...a: unknown[]) => void)(data, ...rest), 400);
      }
    }
    const slow = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: SlowSend as unknown as typeof WebSocket });
    const chatId = await createChat();
    const q = question(unique("q"), "Quick one?");
    const stream = await new ChatqlChatTransport(slow).sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const replying = agent(chatId, q.id, async (writer) => {
      writer.text("Started before you listened, ");
      await writer.flush();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      writer.text("finished after.");
    });
    const { message } = await read(stream);
    await replying;
    expect(message?.parts).toMatchObject([{ type: "text", text: "Started before you listened, finished after." }]);
    await slow.reset();
  });

  it("abort stops the agent's stream (stopStream): the reply ends with abort and the writer sees StreamStopped", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(client);
    const q = question(unique("q"), "Tell me a long story");
    const abort = new AbortController();
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: abort.signal });
    let stoppedSignal = false;
    const replying = agent(chatId, q.id, async (writer) => {
      writer.text("Once upon a time");
      await writer.flush();
      for (let i = 0; i < 200 && !writer.signal.aborted; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        writer.text(".");
        await writer.flush().catch(() => undefined);
      }
      stoppedSignal = writer.signal.aborted;
      await writer.flush();
    }).catch((error: unknown) => error);
    const { message, chunks } = await read(stream, (chunk) => {
      if (chunk.type === "text-delta") abort.abort();
    });
    const outcome = await replying;
    expect(chunks.at(-1)).toEqual({ type: "abort" });
    expect(message?.parts[0]).toMatchObject({ type: "text" });
    expect(outcome).toBeInstanceOf(StreamStopped);
    expect(stoppedSignal).toBe(true);
    // The stopped stream is persisted as it stood, INTERRUPTED.
    let status: string | undefined;
    await until(() => status === "INTERRUPTED", "the interrupted reply to be stored", 10000, async () => {
      status = (await stored(chatId)).find((m) => m.type === "text")?.status;
    });
  });

  it("a failed reply ends with the agent's own error text, as /ai/chat says it", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(client);
    const q = question(unique("q"), "Weather on Mars?");
    const stream = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, messages: [q], abortSignal: undefined });
    const replying = agent(chatId, q.id, async (writer) => {
      writer.text("Checking ");
      await writer.flush();
      throw new Error("the weather service is down");
    }).catch((error: unknown) => error);
    const chunks: UIMessageChunk[] = [];
    const reader = stream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    expect(await replying).toBeInstanceOf(Error);
    expect(chunks.slice(-2)).toEqual([{ type: "error", errorText: "the weather service is down" }, { type: "finish" }]);
  });

  it("reconnectToStream joins a live reply (late join) and answers null when nothing is live", async () => {
    const chatId = await createChat();
    const transport = new ChatqlChatTransport(client);
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
    const writer = await startStream(client, { chatId, requestId: "r1", flushIntervalMs: 5 });
    writer.text("Hello ");
    await writer.flush();
    const stream = await transport.reconnectToStream({ chatId });
    expect(stream).not.toBeNull();
    const reading = read(stream as ReadableStream<UIMessageChunk>);
    writer.text("world");
    await writer.end();
    const { message } = await reading;
    expect(message?.parts).toEqual([expect.objectContaining({ type: "text", text: "Hello world" })]);
    // Once the reply ended, there is nothing to resume.
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
  });
});

describe("assistant-ui adapters", () => {
  it("the history loads every branch with parentIds and the active leaf as head; append stores a person's message", async () => {
    const chatId = await createChat();
    await gql(`mutation($c: ID!) { appendMessages(chatId: $c, appendId: "a1", messages: [{id: "${chatId}-q1", role: USER, type: "user_input", props: {content: "Hi"}}]) { lastSequence } }`, { c: chatId });
    await withStream(client, { chatId, parentId: `${chatId}-q1` }, async (w) => w.text("Hello!"));
    const edited = await gql<{ editMessage: { id: string } }>(
      `mutation($id: ID!) { editMessage(id: $id, appendId: "e1", input: {props: {content: "Hi there"}}) { id } }`, { id: `${chatId}-q1` });
    const q2 = edited.editMessage.id;
    await withStream(client, { chatId, parentId: q2 }, async (w) => {
      w.thinking("Greeting.");
      w.text("Hello again!");
    });
    const history = chatqlHistoryAdapter(client, chatId);
    const repo = await history.load();
    const shown = repo.messages.map((item) => ({
      parentId: item.parentId, role: item.message.role,
      text: item.message.content.map((part) => ("text" in part ? part.text : "")).join("|"),
    }));
    expect(shown).toEqual([
      { parentId: null, role: "user", text: "Hi" },
      { parentId: `${chatId}-q1`, role: "assistant", text: "Hello!" },
      { parentId: null, role: "user", text: "Hi there" },
      { parentId: q2, role: "assistant", text: "Greeting.|Hello again!" },
    ]);
    const head = repo.messages[3]?.message.id;
    expect(repo.headId).toBe(head);
    // The AI SDK runtime's format: UIMessages with the same tree.
    const generic = history.withFormat?.({
      format: "ai-sdk/v5",
      encode: ({ message: { id: _id, ...rest } }: { message: UIMessage }) => rest,
      decode: (stored) => ({ parentId: stored.parent_id, message: { id: stored.id, ...(stored.content as Omit<UIMessage, "id">) } }),
      getId: (message: UIMessage) => message.id,
    });
    const asUI = await generic?.load();
    expect(asUI?.headId).toBe(head);
    expect(asUI?.messages.map((item) => [item.parentId, item.message.role])).toEqual([
      [null, "user"], [`${chatId}-q1`, "assistant"], [null, "user"], [q2, "assistant"],
    ]);
    // A follow-up on the shown branch is stored after the branch's last message.
    const next = unique("q3");
    await generic?.append({ parentId: head ?? null, message: question(next, "And tomorrow?") });
    const branch = await stored(chatId);
    expect(branch.at(-1)).toMatchObject({ id: next, role: "USER", props: { content: "And tomorrow?" } });
    expect(branch.at(-1)?.parentId).toBe(branch.at(-2)?.id);
  });

  it("edit stores chatql's edited copy of a question and regenerate asks again, both by assistant-ui's ids", async () => {
    const chatId = await createChat();
    const history = chatqlHistoryAdapter(client, chatId);
    const person = (id: string, text: string) => ({
      id, role: "user" as const, createdAt: new Date(), content: [{ type: "text" as const, text }], attachments: [], metadata: { custom: {} },
    });
    const q1 = unique("q1");
    await history.append({ parentId: null, message: person(q1, "Hi") });
    await withStream(client, { chatId, parentId: q1 }, async (w) => w.text("Hello!"));
    // The page's new message has its own id; chatql's copy gets chatql's.
    const local = unique("local");
    await history.edit({ parentId: null, message: person(local, "Hi there") }, q1);
    const branch = await stored(chatId);
    expect(branch).toHaveLength(1);
    const copy = branch[0];
    expect(copy).toMatchObject({ role: "USER", type: "user_input", props: { content: "Hi there" }, parentId: null });
    expect(copy?.id).not.toBe(local);
    const leaf = async () => (await gql<{ chat: { activeLeafId: string } }>("query($id: ID!) { chat(id: $id) { activeLeafId } }", { id: chatId })).chat.activeLeafId;
    expect(await leaf()).toBe(copy?.id);
    // A retried edit writes nothing more.
    await history.edit({ parentId: null, message: person(local, "Hi there") }, q1);
    expect((await history.load()).messages.map((item) => item.message.role)).toEqual(["user", "assistant", "user"]);
    // Answered, then regenerated by the page's id: the copy is the active leaf again.
    await withStream(client, { chatId, parentId: String(copy?.id) }, async (w) => w.text("Hi again!"));
    expect(await leaf()).not.toBe(copy?.id);
    await history.regenerate(local);
    expect(await leaf()).toBe(copy?.id);
    // A follow-up after the edited question (named by the page's id) hangs below chatql's copy.
    const q3 = unique("q3");
    await history.append({ parentId: local, message: person(q3, "And you?") });
    expect((await stored(chatId)).map((m) => [m.id, m.parentId])).toEqual([[copy?.id, null], [q3, copy?.id]]);
    // Only a person's message is edited; an assistant message is refused before any request.
    await expect(history.edit({ parentId: null, message: { ...person(unique("x"), "no"), role: "assistant" } as never }, q1))
      .rejects.toThrow("edit stores a person's message; this one's role is assistant");
    await expect(history.regenerate(`${chatId}-missing`)).rejects.toThrow(/not found/);
  });

  it("the thread list pages with cursors, renames, archives and deletes", async () => {
    const assistantId = unique("helper");
    const ids = [await createChat(assistantId), await createChat(assistantId), await createChat(assistantId)];
    const threads = chatqlThreadListAdapter(client, { assistantId, pageSize: 2 });
    const first = await threads.list();
    expect(first.threads).toHaveLength(2);
    expect(first.nextCursor).toBeTruthy();
    const second = await threads.list({ after: first.nextCursor });
    expect(second.nextCursor).toBeUndefined();
    expect([...first.threads, ...second.threads].map((t) => t.remoteId).sort()).toEqual([...ids].sort());
    await threads.rename(ids[0] as string, "Trip plans");
    expect((await threads.fetch(ids[0] as string)).title).toBe("Trip plans");
    await threads.archive(ids[1] as string);
    expect((await threads.fetch(ids[1] as string)).status).toBe("archived");
    await threads.unarchive?.(ids[1] as string);
    expect((await threads.fetch(ids[1] as string)).status).toBe("regular");
    await threads.delete(ids[2] as string);
    const after = [...(await threads.list()).threads, ...(await threads.list({ after: (await threads.list()).nextCursor })).threads];
    expect(after.map((t) => t.remoteId)).not.toContain(ids[2]);
    const created = await threads.initialize("local-1");
    expect((await threads.fetch(created.remoteId)).remoteId).toBe(created.remoteId);
  });
});

describe("the stream writer and streamText", () => {
  it("feeds a streamText fullStream into stored text, thinking, tool call, tool result and usage", async () => {
    const chatId = await createChat();
    const parts: TextStreamPart<ToolSet>[] = [
      { type: "start" },
      { type: "start-step", request: {}, warnings: [] },
      { type: "reasoning-start", id: "r0" },
      { type: "reasoning-delta", id: "r0", text: "Need the " },
      { type: "reasoning-delta", id: "r0", text: "weather." },
      { type: "tool-input-start", id: "call-9", toolName: "weather" },
      { type: "tool-input-delta", id: "call-9", delta: '{"city":' },
      { type: "tool-input-delta", id: "call-9", delta: '"Oslo"}' },
      { type: "tool-call", toolCallId: "call-9", toolName: "weather", input: { city: "Oslo" }, dynamic: true },
      { type: "tool-result", toolCallId: "call-9", toolName: "weather", input: { city: "Oslo" }, output: { temp: 3 }, dynamic: true },
      { type: "start-step", request: {}, warnings: [] },
      { type: "text-start", id: "t0" },
      { type: "text-delta", id: "t0", text: "It is " },
      { type: "text-delta", id: "t0", text: "3 °C." },
      { type: "finish", finishReason: "stop", rawFinishReason: "stop", totalUsage: { inputTokens: 12, inputTokenDetails: { noCacheTokens: 12, cacheReadTokens: undefined, cacheWriteTokens: undefined }, outputTokens: 7, outputTokenDetails: { textTokens: 7, reasoningTokens: undefined }, totalTokens: 19 } },
    ];
    async function* fullStream() {
      for (const part of parts) yield part;
    }
    let messages: { type: string; role: string; props: unknown }[] = [];
    const writer = await startStream(client, { chatId, requestId: "r1" });
    expect(writer.heartbeatInterval).toBeGreaterThan(0);
    await feedStreamText(writer, fullStream());
    messages = await writer.end();
    expect(messages.map((m) => [m.role, m.type, m.props])).toEqual([
      ["ASSISTANT", "thinking", { content: "Need the weather." }],
      ["ASSISTANT", "tool_call", { id: "call-9", name: "weather", arguments: '{"city":"Oslo"}' }],
      ["TOOL", "tool_result", { tool_call_id: "call-9", content: { temp: 3 } }],
      ["ASSISTANT", "text", { content: "It is 3 °C." }],
    ]);
    const usage = await gql<{ chat: { usage: { promptTokens: number; completionTokens: number } } }>(
      "query($id: ID!) { chat(id: $id) { usage { promptTokens completionTokens } } }", { id: chatId });
    expect(usage.chat.usage).toMatchObject({ promptTokens: 12, completionTokens: 7 });
  });

  it("an error part ends the stream FAILED with its text", async () => {
    const chatId = await createChat();
    async function* fullStream(): AsyncGenerator<TextStreamPart<ToolSet>> {
      yield { type: "text-delta", id: "t", text: "Partial" };
      yield { type: "error", error: new Error("model overloaded") };
    }
    await expect(withStream(client, { chatId }, (writer) => feedStreamText(writer, fullStream()))).rejects.toThrow("model overloaded");
    const [reply] = await stored(chatId);
    expect(reply).toMatchObject({ type: "text", status: "FAILED", props: { content: "Partial" } });
  });

  it("a retried push after a lost answer is not applied twice (deterministic chunk ids)", async () => {
    const chatId = await createChat();
    let lose = true;
    const lossy = new ChatqlClient({
      url: `${base}/graphql`, headers: () => AGENT,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (lose && String(init?.body).includes("pushChunks")) {
          lose = false;
          throw new TypeError("fetch failed (answer lost)");
        }
        return response;
      },
    });
    const writer = await startStream(lossy, { chatId, retries: 3 });
    writer.text("once");
    const [reply] = await writer.end();
    expect(lose).toBe(false);
    expect(reply?.props).toEqual({ content: "once" });
  });
});
