// An agent's `file` message in a live reply: `fileParts` (after the UIChunkMapper, as
// ChatqlChatTransport runs it) makes it the AI SDK's `file` chunk at the address the
// reader is given, in the reply's order, and the AI SDK builds the part `toUIMessages`
// makes of the stored reply; a file the reader may not read stays a `data-file` part.
import { readUIMessageStream, uiMessageChunkSchema, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";

import { EMPTY_VIEW, applyChunk, type ChunkFields, type MessagesView } from "../src/reducer.js";
import { UIChunkMapper, fileParts, type ReadableFile } from "../src/ui-chunks.js";
import { toUIMessages, type StoredFile } from "../src/ui-messages.js";

const FILES: Record<string, StoredFile> = {
  png: { id: "png", filename: "chart.png", mediaType: "image/png", url: "https://chatql.test/files/png?expires=1&signature=x" },
};
const text = (messageId: string, content: string): ChunkFields => ({ type: "text", messageId, role: "ASSISTANT", props: { content }, delta: true });
const file = (messageId: string, fileId: string, extra: Record<string, unknown> = {}): ChunkFields =>
  ({ type: "file", messageId, role: "ASSISTANT", props: { fileId, mediaType: "image/png", filename: "chart.png", ...extra } });

/** The mapper's chunks for a reply fed chunk by chunk, then its end. */
function mapped(reply: readonly ChunkFields[]): { chunks: UIMessageChunk[]; view: MessagesView } {
  const mapper = new UIChunkMapper();
  const chunks: UIMessageChunk[] = [];
  let view: MessagesView = EMPTY_VIEW;
  for (const chunk of reply) {
    view = applyChunk(view, chunk);
    chunks.push(...mapper.update(view));
  }
  chunks.push(...mapper.end("completed"));
  return { chunks, view };
}

/** The chunks through `fileParts` (each answer late, so later chunks must wait), read as useChat does. */
async function shown(chunks: readonly UIMessageChunk[], readable: (id: string) => StoredFile | null = (id) => FILES[id] ?? null) {
  const asked: string[] = [];
  const readFile = async (id: string): Promise<ReadableFile | null> => {
    asked.push(id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    return readable(id);
  };
  const out: UIMessageChunk[] = [];
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  }).pipeThrough(fileParts(readFile)).pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({
    transform(chunk, controller) {
      out.push(chunk);
      controller.enqueue(chunk);
    },
  }));
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, terminateOnError: true })) message = m;
  return { message: message as UIMessage, chunks: out, asked };
}

const stored = (view: MessagesView, files: (id: string) => StoredFile | undefined) => [...view.values()].map((m) => {
  const fileId = (m.props as { fileId?: string } | null)?.fileId;
  const held = fileId === undefined ? undefined : files(fileId);
  return { id: m.id, role: m.role, type: m.type, props: m.props, files: held === undefined ? [] : [held] };
});

describe("fileParts", () => {
  it("makes an agent's file message the AI SDK's file chunk, in order: the part toUIMessages gives the stored reply (but filename)", async () => {
    const { chunks, view } = mapped([text("t1", "Here is "), text("t1", "a chart."), file("f", "png"), text("t2", "Anything else?")]);
    expect(chunks.filter((chunk) => chunk.type === "data-file")).toHaveLength(1);
    const live = await shown(chunks);
    const at = live.chunks.findIndex((chunk) => chunk.type === "file");
    expect(live.chunks[at]).toEqual({ type: "file", url: FILES.png?.url, mediaType: "image/png" });
    expect((await uiMessageChunkSchema().validate?.(live.chunks[at]))?.success).toBe(true);
    // The text after the file waited for its address.
    expect(live.chunks.findIndex((chunk) => chunk.type === "text-start" && chunk.id === "t2")).toBeGreaterThan(at);
    expect(live.chunks.some((chunk) => chunk.type === "data-file")).toBe(false);
    expect(live.asked).toEqual(["png"]);

    const [reply] = toUIMessages(stored(view, (id) => FILES[id]));
    expect(reply?.parts).toEqual([
      { type: "text", text: "Here is a chart.", state: "done" },
      { type: "file", mediaType: "image/png", filename: "chart.png", url: FILES.png?.url },
      { type: "text", text: "Anything else?", state: "done" },
    ]);
    // The AI SDK's file chunk carries no filename; all else is the reload's.
    const withoutName = reply?.parts.map((part) => {
      if (part.type !== "file") return part;
      const { filename: _filename, ...rest } = part;
      return rest;
    });
    expect(JSON.parse(JSON.stringify(live.message.parts))).toEqual(withoutName);
  });

  it("keeps a file the reader may not read (or cannot be asked about) a data-file part, whose changes replace it", async () => {
    const { chunks, view } = mapped([file("f", "secret"), file("f", "secret", { note: "changed" }), text("t", "Done.")]);
    const live = await shown(chunks, () => null);
    expect(live.message.parts).toEqual([
      { type: "data-file", id: "f", data: { fileId: "secret", mediaType: "image/png", filename: "chart.png", note: "changed" } },
      { type: "text", text: "Done.", state: "done" },
    ]);
    expect(live.asked).toEqual(["secret"]); // decided once per message
    // As toUIMessages shows the stored reply when its files do not hold the file.
    expect(JSON.parse(JSON.stringify(live.message.parts))).toEqual(toUIMessages(stored(view, () => undefined))[0]?.parts);

    const failing = new ReadableStream<UIMessageChunk>({
      start(controller) {
        for (const chunk of mapped([file("g", "png")]).chunks) controller.enqueue(chunk);
        controller.close();
      },
    }).pipeThrough(fileParts(() => Promise.reject(new Error("offline"))));
    let message: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream: failing, terminateOnError: true })) message = m;
    expect(message?.parts.map((part) => part.type)).toEqual(["data-file"]);
  });

  it("shows a file once: a file message changed after its file part sends nothing more", async () => {
    const { chunks } = mapped([file("f", "png"), file("f", "png", { mediaType: "image/x-png" })]);
    expect(chunks.filter((chunk) => chunk.type === "data-file")).toHaveLength(2);
    const live = await shown(chunks);
    expect(live.message.parts).toEqual([{ type: "file", mediaType: "image/png", url: FILES.png?.url }]);
    expect(live.asked).toEqual(["png"]);
  });
});
