// Files and feedback without a server: file parts in toUIMessages and in what a person's
// message stores, uploads through ChatqlClient.upload, the assistant-ui attachment and
// feedback adapters against a recording fetch. (test/live/files.test.ts runs them against
// a real chatql.)
import type { PendingAttachment } from "@assistant-ui/react";
import { uiMessageChunkSchema } from "ai";
import { describe, expect, it } from "vitest";

import { chatqlAttachmentAdapter, chatqlFeedbackAdapter, chatqlHistoryAdapter } from "../src/assistant-ui.js";
import { ChatqlClient, ChatqlError } from "../src/client.js";
import { fileIdOfUrl, toUIMessages, uiMessageContent, withUploadedFiles } from "../src/ui-messages.js";

const SIGNED = "http://chat.test/files/f1?expires=9&signature=s";
const FILE = { id: "f1", filename: "dot.png", mediaType: "image/png", url: SIGNED };

describe("file parts in toUIMessages", () => {
  it("gives a person's text and files, and an agent's file message, as AI SDK file parts at the signed address", () => {
    const messages = toUIMessages([
      {
        id: "q", role: "USER", type: "user_input", files: [FILE],
        props: { content: [{ type: "text", text: "What is this?" }, { type: "file", fileId: "f1", mediaType: "image/png", filename: "dot.png" }] },
      },
      { id: "a", role: "ASSISTANT", type: "text", props: { content: "A chart:" } },
      {
        id: "f", role: "ASSISTANT", type: "file", files: [{ id: "f2", filename: "chart.pdf", mediaType: "application/pdf", url: "http://chat.test/files/f2?s" }],
        props: { fileId: "f2", mediaType: "application/pdf", filename: "chart.pdf" },
      },
    ]);
    expect(messages).toEqual([
      {
        id: "q", role: "user", parts: [
          { type: "text", text: "What is this?", state: "done" },
          { type: "file", mediaType: "image/png", filename: "dot.png", url: SIGNED },
        ],
      },
      {
        id: "a", role: "assistant", parts: [
          { type: "text", text: "A chart:", state: "done" },
          { type: "file", mediaType: "application/pdf", filename: "chart.pdf", url: "http://chat.test/files/f2?s" },
        ],
      },
    ]);
  });

  it("keeps a file it has no address for out of the parts (a file message stays a data part)", () => {
    const [question, reply] = toUIMessages([
      { id: "q", role: "USER", type: "user_input", props: { content: [{ type: "text", text: "Hi" }, { type: "file", fileId: "gone", mediaType: "image/png" }] } },
      { id: "f", role: "ASSISTANT", type: "file", props: { fileId: "gone", mediaType: "image/png" } },
    ]);
    expect(question?.parts).toEqual([{ type: "text", text: "Hi", state: "done" }]);
    expect(reply?.parts).toEqual([{ type: "data-file", id: "f", data: { fileId: "gone", mediaType: "image/png" } }]);
  });

  it("accepts the /ai/chat file chunk as the AI SDK's own schema has it", async () => {
    const parsed = await uiMessageChunkSchema().validate?.({ type: "file", url: SIGNED, mediaType: "image/png" });
    expect(parsed?.success).toBe(true);
  });
});

describe("a person's files as stored", () => {
  it("names a file at one of the service's addresses by its id, signed or not", () => {
    expect(fileIdOfUrl(SIGNED)).toBe("f1");
    expect(fileIdOfUrl("/files/f1")).toBe("f1");
    expect(fileIdOfUrl("https://elsewhere.test/pic.png")).toBeUndefined();
    expect(fileIdOfUrl("data:image/png;base64,AAAA")).toBeUndefined();
    expect(uiMessageContent({ parts: [{ type: "text", text: "Hi" }] })).toBe("Hi");
    expect(uiMessageContent({
      parts: [{ type: "text", text: "Look" }, { type: "file", mediaType: "image/png", filename: "dot.png", url: SIGNED }],
    })).toEqual([{ type: "text", text: "Look" }, { type: "file", fileId: "f1", mediaType: "image/png", filename: "dot.png" }]);
  });

  it("uploads a data URL and keeps the stored file's id instead of its bytes", async () => {
    const blobs: Blob[] = [];
    const content = await withUploadedFiles(
      [{ type: "text", text: "Hi" }, { type: "file", url: "data:text/plain;base64,aGk=", mediaType: "text/plain", filename: "hi.txt" }],
      async (blob, filename, mediaType) => {
        blobs.push(blob);
        return { id: "f9", filename: filename ?? "file", mediaType };
      },
    );
    expect(await blobs[0]?.text()).toBe("hi");
    expect(content).toEqual([{ type: "text", text: "Hi" }, { type: "file", fileId: "f9", mediaType: "text/plain", filename: "hi.txt" }]);
  });
});

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records requests (reading streamed bodies) and answers from `answer`. */
function recordingFetch(answer: (sent: Sent) => Response): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    let body: unknown = init?.body;
    if (body instanceof ReadableStream) {
      const reader = body.getReader();
      let size = 0;
      for (let part = await reader.read(); !part.done; part = await reader.read()) size += part.value.byteLength;
      body = { streamed: size };
    } else if (typeof body === "string") body = JSON.parse(body);
    const record = { url: String(input), headers: { ...(init?.headers as Record<string, string>) }, body };
    sent.push(record);
    return answer(record);
  }) as typeof fetch;
  return { fetch: fetcher, sent };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const LIMITS = { maxBytes: 1_000_000, mediaTypes: ["image/png", "text/plain"], quotaBytes: null, usedBytes: null };

/** `answer`, except that a `fileLimits` query gets `limits` (an older service: an error). */
function withLimits(answer: (sent: Sent) => Response, limits: unknown = LIMITS): (sent: Sent) => Response {
  return (request) => String((request.body as { query?: string } | undefined)?.query ?? "").includes("fileLimits")
    ? (limits === null ? json(400, { errors: [{ message: "Cannot query field 'fileLimits' on type 'Query'." }] }) : json(200, { data: { fileLimits: limits } }))
    : answer(request);
}

/** The requests that were uploads. */
const uploadsOf = (sent: Sent[]) => sent.filter((request) => request.url.includes("/files?"));

async function states(adapter: ReturnType<typeof chatqlAttachmentAdapter>, file: File): Promise<PendingAttachment[]> {
  const out: PendingAttachment[] = [];
  const added = adapter.add({ file });
  if (!(Symbol.asyncIterator in added)) throw new Error("add is not a generator");
  for await (const state of added) out.push(state);
  return out;
}

describe("chatqlAttachmentAdapter", () => {
  it("uploads as the file is added, reports progress, and sends a part at the file's signed address", async () => {
    const { fetch, sent } = recordingFetch(withLimits((request) => request.url.endsWith("/graphql")
      ? json(200, { data: { file: { ...FILE, size: 3, width: 1, height: 1 } } })
      : json(201, { id: "f1", filename: "dot.png", mediaType: "image/png", size: 200000, sha256: "00" })));
    const client = new ChatqlClient({ url: "http://chat.test/graphql", fetch, headers: () => ({ "X-User-Id": "alice" }) });
    const adapter = chatqlAttachmentAdapter({ client });
    const shown = await states(adapter, new File([new Uint8Array(200000)], "dot.png", { type: "image/png" }));
    const [upload] = uploadsOf(sent);
    expect(upload?.url).toBe("http://chat.test/files?filename=dot.png");
    expect(upload?.headers).toMatchObject({ "content-type": "image/png", "X-User-Id": "alice" });
    expect(upload?.body).toEqual({ streamed: 200000 });
    // Read once, the service's media types are what the composer offers.
    expect(adapter.accept).toBe("image/png,text/plain");
    const progress = shown.flatMap((state) => (state.status.type === "running" ? [state.status.progress] : []));
    expect(progress[0]).toBe(0);
    expect(progress[progress.length - 1]).toBe(1);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(shown[shown.length - 1]?.status).toEqual({ type: "requires-action", reason: "composer-send" });
    expect(new Set(shown.map((state) => state.id)).size).toBe(1);

    const complete = await adapter.send(shown[shown.length - 1] as PendingAttachment);
    expect(complete.status).toEqual({ type: "complete" });
    expect(complete.content).toEqual([{ type: "image", image: SIGNED, filename: "dot.png" }]);
  });

  it("shows a refused upload as an error with the service's message", async () => {
    const { fetch } = recordingFetch(withLimits(() => json(413, { errors: [{ message: "the file is larger than 1000000 bytes", extensions: { code: "PAYLOAD_TOO_LARGE" } }] }), null));
    const adapter = chatqlAttachmentAdapter({ client: new ChatqlClient({ url: "http://chat.test/graphql", fetch }) });
    const shown = await states(adapter, new File(["x".repeat(10)], "big.bin", { type: "application/octet-stream" }));
    expect(shown[shown.length - 1]?.status).toEqual({ type: "incomplete", reason: "error", message: "the file is larger than 1000000 bytes" });
    await expect(adapter.send(shown[shown.length - 1] as PendingAttachment)).rejects.toThrow(/larger than/);
    // A service that does not say its limits: the composer offers anything.
    expect(adapter.accept).toBe("*");
  });

  it("refuses a file larger than the service takes before sending a byte", async () => {
    const { fetch, sent } = recordingFetch(withLimits(() => json(500, {})));
    const adapter = chatqlAttachmentAdapter({ client: new ChatqlClient({ url: "http://chat.test/graphql", fetch }) });
    const shown = await states(adapter, new File([new Uint8Array(1_000_001)], "big.png", { type: "image/png" }));
    expect(shown[shown.length - 1]?.status).toEqual({ type: "incomplete", reason: "error", message: "the file is larger than 1000000 bytes" });
    await expect(adapter.send(shown[shown.length - 1] as PendingAttachment)).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(uploadsOf(sent)).toEqual([]);
    // The limits are read once for every file the adapter adds.
    await states(adapter, new File([new Uint8Array(1_000_001)], "again.png", { type: "image/png" }));
    expect(sent.filter((request) => request.url.endsWith("/graphql"))).toHaveLength(1);
  });

  it("takes a base address and a token instead of a client", async () => {
    const { fetch, sent } = recordingFetch(withLimits(() => json(201, { id: "f3", filename: "a.txt", mediaType: "text/plain", size: 1, sha256: "00" })));
    const original = globalThis.fetch;
    globalThis.fetch = fetch;
    try {
      const adapter = chatqlAttachmentAdapter({ baseUrl: "http://chat.test/", token: () => "t0k", accept: "text/*" });
      expect(adapter.accept).toBe("text/*");
      await states(adapter, new File(["a"], "a.txt", { type: "text/plain" }));
    } finally {
      globalThis.fetch = original;
    }
    const [upload] = uploadsOf(sent);
    expect(upload?.url).toBe("http://chat.test/files?filename=a.txt");
    expect(upload?.headers.Authorization).toBe("Bearer t0k");
    expect(sent[0]?.headers.Authorization).toBe("Bearer t0k"); // the limits, read as the caller
  });
});

describe("chatqlHistoryAdapter with attachments", () => {
  it("stores a sent attachment as a reference to the chatql file, with the attachment's media type", async () => {
    const { fetch, sent } = recordingFetch(() => json(200, { data: { appendMessages: { messageIds: ["q1"], lastSequence: 1 } } }));
    const history = chatqlHistoryAdapter(new ChatqlClient({ url: "http://chat.test/graphql", fetch }), "c1");
    await history.append({
      parentId: null,
      message: {
        id: "q1", role: "user", createdAt: new Date(), metadata: { custom: {} },
        content: [{ type: "text", text: "Look" }],
        attachments: [{ id: "a1", type: "image", name: "dot.png", contentType: "image/png", status: { type: "complete" }, content: [{ type: "image", image: SIGNED, filename: "dot.png" }] }],
      },
    });
    const variables = (sent[0]?.body as { variables: { messages: { props: unknown }[] } }).variables;
    expect(variables.messages[0]?.props).toEqual({ content: [
      { type: "text", text: "Look" },
      { type: "file", fileId: "f1", mediaType: "image/png", filename: "dot.png" },
    ] });
  });
});

describe("ChatqlClient.upload", () => {
  it("rejects with the service's error code", async () => {
    const { fetch } = recordingFetch(() => json(415, { errors: [{ message: "not a PNG", extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } }] }));
    const client = new ChatqlClient({ url: "http://chat.test/graphql", fetch });
    const error = await client.upload(new Blob(["x"], { type: "image/png" }), { filename: "x.png" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChatqlError);
    expect((error as ChatqlError).code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });
});

describe("chatqlFeedbackAdapter", () => {
  it("rates the message up or down with rateMessage", async () => {
    const { fetch, sent } = recordingFetch(() => json(200, { data: { rateMessage: { id: "fb", messageId: "m1", rating: "UP", comment: null, tags: [], updatedAt: "" } } }));
    const adapter = chatqlFeedbackAdapter(new ChatqlClient({ url: "http://chat.test/graphql", fetch }), { tags: ["ui"] });
    const message = { id: "m1", role: "assistant" } as Parameters<typeof adapter.submit>[0]["message"];
    await adapter.submit({ message, type: "positive" });
    await adapter.submit({ message, type: "negative", comment: "wrong city" });
    const variables = sent.map((request) => (request.body as { variables: unknown }).variables);
    expect(variables).toEqual([
      { messageId: "m1", rating: "UP", comment: null, tags: ["ui"] },
      { messageId: "m1", rating: "DOWN", comment: "wrong city", tags: ["ui"] },
    ]);
  });

  it("hands a refusal to onError when given", async () => {
    const { fetch } = recordingFetch(() => json(200, { errors: [{ message: "message 'm9' not found", extensions: { code: "NOT_FOUND" } }] }));
    const errors: unknown[] = [];
    const adapter = chatqlFeedbackAdapter(new ChatqlClient({ url: "http://chat.test/graphql", fetch }), { onError: (e) => errors.push(e) });
    await adapter.submit({ message: { id: "m9" } as Parameters<typeof adapter.submit>[0]["message"], type: "negative" });
    expect((errors[0] as ChatqlError).code).toBe("NOT_FOUND");
  });
});
