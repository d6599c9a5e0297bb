// The AI SDK mapping, checked with the real `ai` package: the chunks the mapper emits while
// a reply streams are read by the AI SDK's own `readUIMessageStream` (what useChat runs),
// and the UIMessage it builds equals `toUIMessages` of the persisted messages.
import { readUIMessageStream, uiMessageChunkSchema, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";

import { EMPTY_VIEW, applyChunk, type ChunkFields, type MessagesView } from "../src/reducer.js";
import { UIChunkMapper, type ReplyEnd } from "../src/ui-chunks.js";
import { toUIMessages } from "../src/ui-messages.js";

const text = (messageId: string, content: string): ChunkFields => ({ type: "text", messageId, role: "ASSISTANT", props: { content }, delta: true });
const REPLY: ChunkFields[] = [
  { type: "thinking", messageId: "r", role: "ASSISTANT", props: { content: "Let me " }, delta: true },
  { type: "thinking", messageId: "r", props: { content: "look." }, delta: true },
  { type: "tool_call", messageId: "c", role: "ASSISTANT", props: { id: "call-1", name: "weather", arguments: '{"city":' } },
  { type: "tool_call", messageId: "c", props: { arguments: '"Oslo"}' }, delta: true, deltaPath: "arguments" },
  { type: "tool_result", messageId: "res", role: "TOOL", props: { tool_call_id: "call-1", content: { temp: 3 } } },
  { type: "chart", messageId: "d", role: "ASSISTANT", props: { points: [1] } },
  { type: "chart", messageId: "d", role: "ASSISTANT", props: { points: [1, 2] } },
  text("t", "It is "),
  text("t", "3 °C."),
];

/** The chunks the mapper emits when the reply arrives chunk by chunk (or in one go). */
function chunksOf(reply: readonly ChunkFields[], end: ReplyEnd, step = 1): UIMessageChunk[] {
  const mapper = new UIChunkMapper();
  const out: UIMessageChunk[] = [];
  let view: MessagesView = EMPTY_VIEW;
  reply.forEach((chunk, i) => {
    view = applyChunk(view, chunk);
    if ((i + 1) % step === 0) out.push(...mapper.update(view));
  });
  out.push(...mapper.update(view), ...mapper.end(end));
  return out;
}

async function uiMessage(chunks: readonly UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) last = message;
  if (last === undefined) throw new Error("no message");
  return last;
}

const persisted = (view: MessagesView) => [...view.values()].map((m) => ({ id: m.id, role: m.role, type: m.type, props: m.props }));

describe("UIChunkMapper", () => {
  it("emits chunks the AI SDK's own schema accepts", async () => {
    const validate = uiMessageChunkSchema().validate;
    expect(validate).toBeDefined();
    for (const chunk of chunksOf(REPLY, "completed")) {
      expect((await validate?.(chunk))?.success, JSON.stringify(chunk)).toBe(true);
    }
  });

  it("streams a reply the AI SDK builds into the same UIMessage toUIMessages makes of the stored reply", async () => {
    const final = REPLY.reduce(applyChunk, EMPTY_VIEW);
    const [expected] = toUIMessages(persisted(final));
    const message = await uiMessage(chunksOf(REPLY, "completed"));
    // (the AI SDK writes optional fields as undefined)
    expect(JSON.parse(JSON.stringify(message.parts))).toEqual(expected?.parts);
    expect(message.id).toBe("r");
    expect(message.parts.map((part) => part.type)).toEqual(["reasoning", "tool-weather", "data-chart", "text"]);
    expect(message.parts[1]).toMatchObject({ state: "output-available", input: { city: "Oslo" }, output: { temp: 3 } });
  });

  it("gives the same parts whether the reply was watched chunk by chunk or joined late (a snapshot)", async () => {
    const live = await uiMessage(chunksOf(REPLY, "completed", 1));
    const late = await uiMessage(chunksOf(REPLY, "completed", REPLY.length));
    expect(late.parts).toEqual(live.parts);
  });

  it("sends text as deltas: every text-delta is the new suffix", () => {
    const deltas = chunksOf(REPLY, "completed").filter((c) => c.type === "text-delta").map((c) => (c as { delta: string }).delta);
    expect(deltas).toEqual(["It is ", "3 °C."]);
  });

  it("ends a stopped reply with abort and a failed one with error then finish", () => {
    expect(chunksOf([text("t", "Hel")], "interrupted").slice(-2)).toEqual([{ type: "text-end", id: "t" }, { type: "abort" }]);
    expect(chunksOf([text("t", "Hel")], "failed").slice(-2)).toEqual([{ type: "error", errorText: "the reply failed" }, { type: "finish" }]);
  });
});

describe("toUIMessages", () => {
  it("makes a person's message a user message and the reply after it one assistant message", () => {
    const messages = toUIMessages([
      { id: "q", role: "USER", type: "user_input", props: { content: "Weather?" } },
      { id: "a1", role: "ASSISTANT", type: "text", props: { content: "Sunny." } },
      { id: "x", role: "SYSTEM", type: "boundary", props: {} },
      { id: "q2", role: "USER", type: "user_input", props: { content: "Thanks" } },
    ]);
    expect(messages).toEqual([
      { id: "q", role: "user", parts: [{ type: "text", text: "Weather?", state: "done" }] },
      { id: "a1", role: "assistant", parts: [{ type: "text", text: "Sunny.", state: "done" }] },
      { id: "x", role: "system", parts: [{ type: "data-boundary", id: "x", data: {} }] },
      { id: "q2", role: "user", parts: [{ type: "text", text: "Thanks", state: "done" }] },
    ]);
  });
});
