// The producer's inline asks against a real chatql (both databases, both stream brokers:
// the Python suite starts the server): the writer waits inside its open stream for the
// person's decision, made over GraphQL, and goes on with it. The wait listens to the chat's
// events rather than polling: the decision arrives at once with a read or two of the
// interrupt, and one made before the subscription was established is read right after it.
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { ChatqlClient } from "../../src/client.js";
import { ChatInterruptsDocument, InterruptDocument, MessagesDocument, ResolveInterruptDocument } from "../../src/generated/operations.js";
import { withStream } from "../../src/producer.js";
import { AGENT, base, gql, until } from "./helpers.js";

const client = new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket });
const unique = (name: string) => `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

async function createChat(): Promise<string> {
  const id = unique("inline");
  await gql('mutation($id: ID!) { createChat(input: {id: $id, assistantId: "bot"}) { id } }', { id });
  return id;
}

/** The person: waits until something of `kind` is pending in the chat, then decides it. */
async function decide(chatId: string, kind: "TOOL_APPROVAL" | "INPUT", decision: Record<string, unknown>): Promise<void> {
  let id: string | undefined;
  await until(() => id !== undefined, `a pending ${kind}`, 15000, async () => {
    const data = await client.request(ChatInterruptsDocument, { id: chatId, state: "PENDING" });
    id = data.chat?.interrupts.find((interrupt) => interrupt.kind === kind)?.id;
    if (id === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
  });
  await client.request(ResolveInterruptDocument, { id: id as string, ...decision });
}

describe("StreamWriter inline asks", () => {
  it("askApproval waits in the open stream for the decision, edited arguments included", async () => {
    const chatId = await createChat();
    const person = decide(chatId, "TOOL_APPROVAL", { approved: true, editedArguments: { to: "cfo@acme.test" } });
    const decided = await withStream(client, { chatId, requestId: unique("r"), input: "Mail the report", flushIntervalMs: 5 }, async (writer) => {
      writer.text("I will mail it.");
      writer.toolCall("call-mail", "send_email", '{"to":');
      writer.toolArguments("call-mail", '"ceo@acme.test"}');
      const outcome = await writer.askApproval("call-mail", { reason: "it leaves the company" });
      writer.toolResult("call-mail", `sent to ${JSON.stringify(outcome.decision?.editedArguments)}`);
      writer.text("Done.");
      return outcome;
    });
    await person;
    expect(decided).toMatchObject({ kind: "TOOL_APPROVAL", state: "RESOLVED", toolCallId: "call-mail", toolName: "send_email",
      decision: { approved: true, editedArguments: { to: "cfo@acme.test" } } });
    // One stream, completed, with the call, its result and the rest of the answer.
    const stored = (await client.request(MessagesDocument, { chatId, last: 20 })).messages.edges.map((edge) => edge.node);
    expect(stored.map((m) => [m.type, m.status])).toEqual([
      ["user_input", "COMPLETED"], ["text", "COMPLETED"], ["tool_call", "COMPLETED"], ["tool_result", "COMPLETED"], ["text", "COMPLETED"]]);
    const after = await client.request(ChatInterruptsDocument, { id: chatId, state: "PENDING" });
    expect(after.chat?.interrupts).toEqual([]);
  });

  it("askAndWait returns the person's answer; a timeout rejects", async () => {
    const chatId = await createChat();
    const person = decide(chatId, "INPUT", { response: "Lisbon" });
    const answer = await withStream(client, { chatId, requestId: unique("r"), input: "Plan a trip", flushIntervalMs: 5 }, async (writer) => {
      const outcome = await writer.askAndWait("Which city?", { responseSchema: { type: "string" } });
      writer.text(`Going to ${String(outcome.decision?.response)}.`);
      return outcome;
    });
    await person;
    expect(answer).toMatchObject({ kind: "INPUT", state: "RESOLVED", prompt: "Which city?", decision: { response: "Lisbon" } });

    const other = await createChat();
    await expect(withStream(client, { chatId: other, requestId: unique("r"), input: "Anyone?", flushIntervalMs: 5 },
      (writer) => writer.askAndWait("Still there?", { timeoutMs: 300 }))).rejects.toThrow(/no decision/);
  });

  it("askApproval hears the decision at once, without polling", async () => {
    const chatId = await createChat();
    const agent = watching();
    let decidedAt = 0;
    const person = (async () => {
      let ids: string[] = [];
      await until(() => ids.length > 0, "a pending approval", 15000, async () => {
        ids = await pendingIds(chatId);
      });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const [id] = await pendingIds(chatId);
      decidedAt = Date.now();
      await client.request(ResolveInterruptDocument, { id: id as string, approved: true });
    })();
    const [outcome, heardAt] = await withStream(agent.client, { chatId, requestId: unique("r"), input: "Mail it", flushIntervalMs: 5 }, async (writer) => {
      writer.toolCall("call-1", "send_email", '{"to":"ceo@acme.test"}');
      const decided = await writer.askApproval("call-1", { timeoutMs: 20000 });
      return [decided, Date.now()] as const;
    });
    await person;
    expect(outcome).toMatchObject({ state: "RESOLVED", decision: { approved: true } });
    // The fallback read would come 5 s after subscribing, ~3 s after the decision.
    expect(heardAt - decidedAt).toBeLessThan(1500);
    // Polling every 250 ms read it about 8 times in those 2 s.
    expect(agent.sent.get("ChatInterrupts")).toBe(1);
    expect(agent.sent.get("Interrupt") ?? 0).toBeLessThanOrEqual(3);
    await agent.client.reset();
  });

  it("a decision made before the wait listens is read right after subscribing", async () => {
    const chatId = await createChat();
    let decided = false;
    const agent = watching(async (name) => {
      if (name !== "ChatInterrupts" || decided) return;
      decided = true;
      const [id] = await pendingIds(chatId);
      await client.request(ResolveInterruptDocument, { id: id as string, response: "Lisbon" });
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const started = Date.now();
    const outcome = await withStream(agent.client, { chatId, requestId: unique("r"), input: "Plan a trip", flushIntervalMs: 5 },
      (writer) => writer.askAndWait("Which city?", { responseSchema: { type: "string" }, timeoutMs: 20000 }));
    expect(decided).toBe(true);
    expect(outcome).toMatchObject({ state: "RESOLVED", decision: { response: "Lisbon" } });
    expect(Date.now() - started).toBeLessThan(3000);
    await agent.client.reset();
  });
});

async function pendingIds(chatId: string): Promise<string[]> {
  const data = await client.request(ChatInterruptsDocument, { id: chatId, state: "PENDING" });
  return (data.chat?.interrupts ?? []).map((interrupt) => interrupt.id);
}

/** A client of its own counting its requests by operation name; `after` runs once each is answered. */
function watching(after?: (name: string) => Promise<void>): { client: ChatqlClient; sent: Map<string, number> } {
  const sent = new Map<string, number>();
  const interrupt = String(InterruptDocument);
  const chatInterrupts = String(ChatInterruptsDocument);
  const counted: typeof fetch = async (input, init) => {
    const query = typeof init?.body === "string" ? (JSON.parse(init.body) as { query?: string }).query : undefined;
    const name = query === interrupt ? "Interrupt" : query === chatInterrupts ? "ChatInterrupts" : "other";
    const response = await fetch(input, init);
    sent.set(name, (sent.get(name) ?? 0) + 1);
    await after?.(name);
    return response;
  };
  return { client: new ChatqlClient({ url: `${base}/graphql`, headers: () => AGENT, webSocketImpl: WebSocket, fetch: counted }), sent };
}
