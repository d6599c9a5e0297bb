/**
 * assistant-ui adapters over chatql.
 *
 * - {@link chatqlThreadListAdapter}: a `RemoteThreadListAdapter` — the caller's chats a
 *   page at a time (the page cursor is chatql's signed cursor), rename, archive, unarchive,
 *   delete (to the trash), and a new thread as a new chat.
 * - {@link chatqlHistoryAdapter}: a `ThreadHistoryAdapter` for one chat — `load` reads every
 *   branch and answers the messages with their `parentId`s and the active leaf as the head,
 *   so an edited question or a regenerated answer shows as assistant-ui branches; `append`
 *   stores a person's message after its parent. Replies are written by the agent's stream,
 *   so assistant messages are not appended from here. `withFormat` serves the AI SDK
 *   runtime (`useChatRuntime`) with `UIMessage`s. Beside the adapter's own methods, `edit`
 *   stores an edited question with chatql's `editMessage` and `regenerate` asks for a new
 *   answer to a question (`regenerate`), for a runtime that knows which message a person
 *   edited or reloaded.
 *
 * - {@link chatqlAttachmentAdapter}: an `AttachmentAdapter` that uploads each file to
 *   chatql (`POST /files`) as soon as it is added, reporting progress, so the message sent
 *   references the stored file by id.
 * - {@link chatqlFeedbackAdapter}: a `FeedbackAdapter` whose thumbs up and down are
 *   chatql's `rateMessage` on the message shown.
 *
 * A turn is what one UI message shows: a person's message, or the run of messages an agent
 * wrote in reply (its id is the run's first message id, its parent the turn before).
 */

import {
  ExportedMessageRepository,
  type AttachmentAdapter,
  type CompleteAttachment,
  type FeedbackAdapter,
  type PendingAttachment,
  type RemoteThreadListAdapter,
  type ThreadHistoryAdapter,
  type ThreadMessage,
  type ThreadUserMessagePart,
} from "@assistant-ui/react";
import type { UIMessage } from "ai";

import { ChatqlClient, ChatqlError, type FileLimits, type Headers, type UploadedFile } from "./client.js";
import {
  AppendMessagesDocument,
  ChatDocument,
  ChatPageDocument,
  CreateChatDocument,
  DeleteChatDocument,
  EditMessageDocument,
  FileDocument,
  MessageTreeDocument,
  RateMessageDocument,
  RegenerateDocument,
  UpdateChatDocument,
  type ChatSummaryFieldsFragment,
  type MessageFieldsFragment,
  type MessageTreeQuery,
} from "./generated/operations.js";
import {
  partsOf,
  storedContent,
  storedFilePart,
  uiMessageContent,
  uiRole,
  withUploadedFiles,
  type StoredPart,
} from "./ui-messages.js";

type ThreadMetadata = Awaited<ReturnType<RemoteThreadListAdapter["fetch"]>>;

function metadataOf(chat: ChatSummaryFieldsFragment): ThreadMetadata {
  return {
    remoteId: chat.id,
    externalId: undefined,
    status: chat.status === "ARCHIVED" ? "archived" : "regular",
    title: chat.title ?? undefined,
    ...(chat.lastMessageAt ? { lastMessageAt: new Date(chat.lastMessageAt) } : {}),
  };
}

export interface ThreadListOptions {
  /** The assistant new chats are created for (and, unless `allAssistants`, the list's filter). */
  readonly assistantId: string;
  readonly allAssistants?: boolean;
  readonly pageSize?: number;
}

/** A `RemoteThreadListAdapter` over the caller's chats. */
export function chatqlThreadListAdapter(client: ChatqlClient, options: ThreadListOptions): RemoteThreadListAdapter {
  const filter = options.allAssistants ? {} : { assistantId: options.assistantId };
  return {
    async list(params) {
      const data = await client.request(ChatPageDocument, { first: options.pageSize ?? 50, after: params?.after ?? null, filter });
      const page = data.chats;
      return {
        threads: page.edges.map((edge) => metadataOf(edge.node)),
        ...(page.pageInfo.hasNextPage && page.pageInfo.endCursor ? { nextCursor: page.pageInfo.endCursor } : {}),
      };
    },
    async rename(remoteId, newTitle) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { title: newTitle } });
    },
    async archive(remoteId) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { status: "ARCHIVED" } });
    },
    async unarchive(remoteId) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { status: "ACTIVE" } });
    },
    async delete(remoteId) {
      await client.request(DeleteChatDocument, { id: remoteId });
    },
    async initialize() {
      const data = await client.request(CreateChatDocument, { input: { assistantId: options.assistantId } });
      return { remoteId: data.createChat.id, externalId: undefined };
    },
    async generateTitle() {
      // chatql does not title chats itself: an empty stream leaves the title as it is.
      return new ReadableStream({ start: (controller) => controller.close() }) as Awaited<ReturnType<RemoteThreadListAdapter["generateTitle"]>>;
    },
    async fetch(threadId) {
      const data = await client.request(ChatDocument, { id: threadId });
      if (data.chat === null) throw new Error(`chat ${threadId} not found`);
      return metadataOf(data.chat);
    },
  };
}

/** One UI message of the tree: a turn, its parent turn, the chatql messages in it. */
export interface Turn {
  readonly id: string;
  readonly parentId: string | null;
  readonly messages: readonly MessageFieldsFragment[];
}

/** The turns of a chat's whole tree (every branch), parents before children. */
export function turnTree(messages: readonly MessageFieldsFragment[]): { turns: Turn[]; turnOf: Map<string, string> } {
  const byId = new Map(messages.map((m) => [m.id, m]));
  const firstChild = new Map<string, string>();
  for (const m of messages) if (m.parentId && !firstChild.has(m.parentId)) firstChild.set(m.parentId, m.id);
  const turnOf = new Map<string, string>();
  const turns = new Map<string, { id: string; parentId: string | null; messages: MessageFieldsFragment[] }>();
  for (const m of messages) {
    const parent = m.parentId ? byId.get(m.parentId) : undefined;
    const joins = parent !== undefined && uiRole(m.role) === "assistant" && uiRole(parent.role) === "assistant"
      && firstChild.get(parent.id) === m.id && turnOf.has(parent.id);
    if (joins) {
      const id = turnOf.get(parent.id) as string;
      turnOf.set(m.id, id);
      turns.get(id)?.messages.push(m);
    } else {
      turnOf.set(m.id, m.id);
      turns.set(m.id, { id: m.id, parentId: parent ? turnOf.get(parent.id) ?? null : null, messages: [m] });
    }
  }
  return { turns: [...turns.values()], turnOf };
}

/** A turn as the AI SDK's `UIMessage`. */
export function turnMessage(turn: Turn): UIMessage {
  return { id: turn.id, role: uiRole(turn.messages[0]?.role ?? "ASSISTANT"), parts: partsOf(turn.messages) };
}

export interface HistoryOptions {
  /** The message type a person's message is stored as (default `user_input`). */
  readonly inputType?: string;
}

type HistoryItem = Parameters<ThreadHistoryAdapter["append"]>[0];

/** A chat's history adapter with chatql's edit and regenerate (turn ids are assistant-ui's message ids). */
export interface ChatqlHistoryAdapter extends ThreadHistoryAdapter {
  /**
   * Stores a person's edited question: `item.message` (a new message, the same parent as
   * `sourceId`) becomes chatql's edited copy of the question `sourceId` (`editMessage`),
   * its sibling and the chat's active leaf, so the agent answers it. Its chatql id is
   * chatql's; later calls naming `item.message.id` are mapped to it.
   */
  edit(item: HistoryItem, sourceId: string): Promise<void>;
  /** Asks for a new answer to the person's message `turnId` (`regenerate`): the next reply becomes a sibling of the earlier ones. */
  regenerate(turnId: string): Promise<void>;
}

/**
 * A stored file reference for an assistant-ui image or file part (undefined for other
 * parts); `contentType` is the attachment's, for an image part (which names none).
 */
function fileOfPart(part: ThreadUserMessagePart, contentType?: string): StoredPart | undefined {
  if (part.type === "image") {
    const mediaType = mediaTypeOfUrl(part.image) ?? (contentType?.startsWith("image/") ? contentType : "image/*");
    return storedFilePart({ url: part.image, mediaType, ...(part.filename ? { filename: part.filename } : {}) });
  }
  if (part.type !== "file") return undefined;
  const named = part.filename ? { filename: part.filename } : {};
  if (part.sourceType === "id") return storedFilePart({ fileId: part.data, mediaType: part.mimeType, ...named });
  const url = part.sourceType === "url" || /^(https?:|data:|\/)/.test(part.data) ? part.data : `data:${part.mimeType};base64,${part.data}`;
  return storedFilePart({ url, mediaType: part.mimeType, ...named });
}

/** The media type a data URL declares. */
function mediaTypeOfUrl(url: string): string | undefined {
  return /^data:([^;,]+)/.exec(url)?.[1];
}

/** A person's message as stored content: its text, and its files (its parts' and its attachments'). */
function personContent(item: HistoryItem, what: string): string | StoredPart[] {
  const message = item.message;
  if (message.role !== "user") throw new Error(`${what} stores a person's message; this one's role is ${message.role}`);
  const parts: StoredPart[] = [];
  for (const part of message.content) {
    if (part.type === "text") parts.push({ type: "text", text: part.text });
    else parts.push(...[fileOfPart(part)].filter((file) => file !== undefined));
  }
  for (const attachment of message.attachments ?? []) {
    for (const part of attachment.content ?? []) {
      parts.push(...[fileOfPart(part, attachment.contentType)].filter((file) => file !== undefined));
    }
  }
  return storedContent(mergeText(parts));
}

/** Adjacent text parts joined (a person's text is one part, as `/ai/chat` stores it). */
function mergeText(parts: readonly StoredPart[]): StoredPart[] {
  const out: StoredPart[] = [];
  for (const part of parts) {
    const previous = out[out.length - 1];
    if (part.type === "text" && previous?.type === "text") out[out.length - 1] = { type: "text", text: previous.text + part.text };
    else out.push(part);
  }
  return out;
}

type LikeMessage = Parameters<typeof ExportedMessageRepository.fromBranchableArray>[0][number]["message"];
type LikePart = Exclude<LikeMessage["content"], string>[number];

/** An AI SDK part as assistant-ui message content. */
function threadPart(part: UIMessage["parts"][number]): LikePart {
  if (part.type === "text" || part.type === "reasoning") return { type: part.type, text: part.text };
  if (part.type === "file") {
    const named = part.filename === undefined ? {} : { filename: part.filename };
    return part.mediaType.startsWith("image/")
      ? { type: "image", image: part.url, ...named }
      : { type: "file", data: part.url, mimeType: part.mediaType, sourceType: "url", ...named };
  }
  if (part.type.startsWith("tool-") && "toolCallId" in part) {
    const tool = part as { toolCallId: string; input?: unknown; output?: unknown };
    return {
      type: "tool-call" as const, toolCallId: tool.toolCallId, toolName: part.type.slice(5),
      args: (typeof tool.input === "object" && tool.input !== null ? tool.input : {}) as Record<string, never>,
      ...(tool.output === undefined ? {} : { result: tool.output }),
    };
  }
  const data = part as { type: `data-${string}`; data: unknown };
  return { type: data.type, data: data.data };
}

/** A `ThreadHistoryAdapter` for one chat. */
export function chatqlHistoryAdapter(client: ChatqlClient, chatId: string, options: HistoryOptions = {}): ChatqlHistoryAdapter {
  // The last stored message of each turn: what a new message's chatql parent is (and, for
  // a person's message, its chatql id: an edited copy's id is chatql's own).
  const lastOfTurn = new Map<string, string>();

  async function loadTree(): Promise<{ turns: Turn[]; headId: string | null }> {
    const messages: MessageFieldsFragment[] = [];
    let after: string | null = null;
    for (;;) {
      const data: MessageTreeQuery = await client.request(MessageTreeDocument, { chatId, first: 200, after });
      const page = data.messages;
      messages.push(...page.edges.map((edge) => edge.node));
      if (!page.pageInfo.hasNextPage || !page.pageInfo.endCursor) break;
      after = page.pageInfo.endCursor;
    }
    const chat = (await client.request(ChatDocument, { id: chatId })).chat;
    const { turns, turnOf } = turnTree(messages);
    for (const turn of turns) lastOfTurn.set(turn.id, turn.messages[turn.messages.length - 1]?.id ?? turn.id);
    const leaf = chat?.activeLeafId ?? null;
    return { turns, headId: leaf === null ? null : turnOf.get(leaf) ?? null };
  }

  /** The content with its data-URL files uploaded (the record keeps file ids, never bytes). */
  function uploaded(content: string | StoredPart[]): Promise<string | StoredPart[]> {
    return withUploadedFiles(content, (blob, filename, mediaType) => client.upload(blob, { ...(filename === undefined ? {} : { filename }), mediaType }));
  }

  async function appendPerson(id: string, parentTurn: string | null, given: string | StoredPart[]): Promise<void> {
    const content = await uploaded(given);
    await client.request(AppendMessagesDocument, {
      chatId,
      appendId: `ui:${id}`,
      messages: [{ id, role: "USER", type: options.inputType ?? "user_input", props: { content } }],
      parentId: parentTurn === null ? null : lastOfTurn.get(parentTurn) ?? parentTurn,
    });
    lastOfTurn.set(id, id);
  }

  return {
    async load() {
      const { turns, headId } = await loadTree();
      return ExportedMessageRepository.fromBranchableArray(
        turns.map((turn) => {
          const message = turnMessage(turn);
          return {
            parentId: turn.parentId,
            message: {
              id: turn.id,
              role: message.role,
              createdAt: new Date(turn.messages[0]?.createdAt ?? Date.now()),
              content: message.parts.map(threadPart),
            },
          };
        }),
        { headId },
      );
    },
    async append(item) {
      if (item.message.role !== "user") return;
      await appendPerson(item.message.id, item.parentId, personContent(item, "append"));
    },
    async edit(item, sourceId) {
      const content = await uploaded(personContent(item, "edit"));
      const data = await client.request(EditMessageDocument, {
        id: lastOfTurn.get(sourceId) ?? sourceId,
        input: { props: { content } },
        appendId: `ui:${item.message.id}`,
      });
      lastOfTurn.set(item.message.id, data.editMessage.id);
    },
    async regenerate(turnId) {
      await client.request(RegenerateDocument, { messageId: lastOfTurn.get(turnId) ?? turnId });
    },
    withFormat(format) {
      return {
        async load() {
          const { turns, headId } = await loadTree();
          return {
            headId,
            messages: turns.map((turn) => {
              const { id, ...content } = turnMessage(turn);
              return format.decode({ id, parent_id: turn.parentId, format: format.format, content: content as never });
            }),
          };
        },
        async append(item) {
          const message = item.message as unknown as UIMessage;
          if (message.role !== "user") return;
          await appendPerson(format.getId(item.message), item.parentId, uiMessageContent(message));
        },
      };
    },
  };
}

/** Where uploads go and who makes them: a client, or the service's address and identity. */
export type AttachmentOptions = (
  | {
    /** The client whose address and identity headers uploads use. */
    readonly client: ChatqlClient;
  }
  | {
    /** The service's base address, e.g. `https://chat.example.com` (`/graphql` and `/files` below it). */
    readonly baseUrl: string;
    /** Identity headers (dev mode's `X-User-Id` …), or a function read per request. */
    readonly headers?: Headers | (() => Headers);
    /** A bearer token (jwt mode), or a function read per request. */
    readonly token?: string | (() => string);
  }
) & {
  /**
   * The files the composer offers, as an `<input accept>` string. By default the media
   * types the service accepts (`fileLimits`, once read; `*` until then), so a picker
   * offers what the service takes; a refused type still shows as the upload's error.
   */
  readonly accept?: string;
};

function clientOf(options: AttachmentOptions): ChatqlClient {
  if ("client" in options) return options.client;
  const { baseUrl, headers, token } = options;
  return new ChatqlClient({
    url: `${baseUrl.replace(/\/$/, "")}/graphql`,
    headers: () => {
      const given = typeof headers === "function" ? headers() : headers ?? {};
      const bearer = typeof token === "function" ? token() : token;
      return bearer ? { ...given, Authorization: `Bearer ${bearer}` } : given;
    },
  });
}

function attachmentType(mediaType: string): "image" | "document" | "file" {
  if (mediaType.startsWith("image/")) return "image";
  if (mediaType.startsWith("text/") || mediaType === "application/pdf") return "document";
  return "file";
}

/** Progress reports turned into an async iteration (the generator form of `add` yields them). */
class ProgressQueue {
  private values: number[] = [];
  private done = false;
  private wake: (() => void) | null = null;

  push(value: number): void {
    this.values.push(value);
    this.wake?.();
  }

  close(): void {
    this.done = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<number> {
    for (;;) {
      if (this.values.length > 0) {
        // Only the latest: a slow consumer skips the steps it missed.
        const latest = this.values[this.values.length - 1] as number;
        this.values = [];
        yield latest;
        continue;
      }
      if (this.done) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }
}

interface Upload {
  readonly controller: AbortController;
  file?: UploadedFile;
  error?: unknown;
}

/**
 * An assistant-ui `AttachmentAdapter` that stores attachments in chatql.
 *
 * `add` uploads the file at once (`POST /files`) and yields its states: `running` with
 * `progress` (the fraction sent, 0 to 1) as the bytes go out, then `requires-action`
 * (ready to send) — or `incomplete` with reason `error` and the service's message when
 * the upload is refused (`PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`,
 * `QUOTA_EXCEEDED`) or fails. A file larger than the service takes (`fileLimits`, read
 * once) is refused so before a byte is sent, with the service's own message; `accept`
 * offers the media types the service accepts unless given. `send` answers the complete attachment, whose content is
 * an image part (images) or a file part (anything else) at the file's signed address:
 * chatql keeps it as `{type: "file", fileId, mediaType, filename}` — by `/ai/chat`
 * (the AI SDK runtime), {@link chatqlHistoryAdapter}'s `append`, or
 * `ChatqlChatTransport`. `remove` cancels an upload still running; a stored file no
 * message references is deleted by the service after `CHATQL_FILE_ORPHAN_TTL`.
 *
 * ```ts
 * const runtime = useChatRuntime({
 *   transport: new DefaultChatTransport({ api: "/ai/chat" }),
 *   adapters: { attachments: chatqlAttachmentAdapter({ client }) },
 * });
 * ```
 */
export function chatqlAttachmentAdapter(options: AttachmentOptions): AttachmentAdapter {
  const client = clientOf(options);
  const uploads = new Map<string, Upload>();
  // The service's limits, read once (null: it did not say, e.g. an older service).
  let limits: Promise<FileLimits | null> | undefined;
  let known: FileLimits | null = null;
  const readLimits = (): Promise<FileLimits | null> => {
    limits ??= client.fileLimits().then((read) => (known = read), () => null);
    return limits;
  };

  return {
    get accept(): string {
      if (options.accept !== undefined) return options.accept;
      void readLimits();
      return known === null ? "*" : known.mediaTypes.join(",");
    },

    async *add({ file }) {
      const id = `chatql-upload-${globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`}`;
      const contentType = file.type || "application/octet-stream";
      const base = { id, type: attachmentType(contentType), name: file.name, contentType, file };
      const upload: Upload = { controller: new AbortController() };
      uploads.set(id, upload);
      yield { ...base, status: { type: "running", reason: "uploading", progress: 0 } } satisfies PendingAttachment;
      const maxBytes = (await readLimits())?.maxBytes;
      if (maxBytes !== undefined && file.size > maxBytes) {
        // Refused as the service would refuse it, without sending a byte.
        const refused = new ChatqlError([{ message: `the file is larger than ${maxBytes} bytes`,
          extensions: { code: "PAYLOAD_TOO_LARGE" } }]);
        upload.error = refused;
        yield { ...base, status: { type: "incomplete", reason: "error", message: refused.message } } satisfies PendingAttachment;
        return;
      }
      const progress = new ProgressQueue();
      const done = client.upload(file, {
        filename: file.name,
        mediaType: contentType,
        signal: upload.controller.signal,
        onProgress: (sent, total) => progress.push(total > 0 ? Math.min(sent / total, 1) : 0),
      }).then(
        (stored) => {
          upload.file = stored;
        },
        (error: unknown) => {
          upload.error = error;
        },
      ).finally(() => progress.close());
      let shown = 0;
      for await (const fraction of progress) {
        // Whole percents: enough for a progress bar, few enough re-renders.
        if (fraction < 1 && Math.floor(fraction * 100) === Math.floor(shown * 100)) continue;
        shown = fraction;
        yield { ...base, status: { type: "running", reason: "uploading", progress: fraction } } satisfies PendingAttachment;
      }
      await done;
      if (upload.controller.signal.aborted) return;
      if (upload.file === undefined) {
        const message = upload.error instanceof Error ? upload.error.message : String(upload.error ?? "the upload failed");
        yield { ...base, status: { type: "incomplete", reason: "error", message } } satisfies PendingAttachment;
        return;
      }
      yield { ...base, status: { type: "requires-action", reason: "composer-send" } } satisfies PendingAttachment;
    },

    async remove(attachment) {
      const upload = uploads.get(attachment.id);
      uploads.delete(attachment.id);
      if (upload !== undefined && upload.file === undefined) upload.controller.abort();
    },

    async send(attachment): Promise<CompleteAttachment> {
      const upload = uploads.get(attachment.id);
      const stored = upload?.file;
      if (stored === undefined) {
        const error = upload?.error;
        throw error instanceof Error ? error : new Error(`attachment ${attachment.name} was not uploaded`);
      }
      uploads.delete(attachment.id);
      // The file's signed address shows it; chatql keeps only its id (the address names it).
      const signed = (await client.request(FileDocument, { id: stored.id }).catch(() => null))?.file?.url;
      const url = signed ?? `${client.filesUrl}/${encodeURIComponent(stored.id)}`;
      const content: ThreadUserMessagePart[] = stored.mediaType.startsWith("image/")
        ? [{ type: "image", image: url, filename: stored.filename }]
        : [{ type: "file", data: url, mimeType: stored.mediaType, filename: stored.filename, sourceType: "url" }];
      return { ...attachment, contentType: stored.mediaType, status: { type: "complete" }, content };
    },
  };
}

/** Options of {@link chatqlFeedbackAdapter}. */
export interface FeedbackOptions {
  /**
   * The chatql message a rated assistant-ui message names (default its id: the id of
   * its reply's first stored message, as {@link chatqlHistoryAdapter}, `toUIMessages`,
   * `/ai/chat` and `ChatqlChatTransport` give it).
   */
  readonly messageId?: (message: ThreadMessage) => string;
  /** Tags stored with every rating (`rateMessage`'s `tags`). */
  readonly tags?: readonly string[];
  /** Called when a rating is refused or fails (by default the returned promise rejects). */
  readonly onError?: (error: unknown) => void;
}

/**
 * An assistant-ui `FeedbackAdapter` over chatql's `rateMessage`: `positive` is `UP`,
 * `negative` is `DOWN`, with the person's comment when the UI asks for one. One rating
 * per person and message: rating again replaces it (`Message.myFeedback` reads it back).
 *
 * ```ts
 * const runtime = useLocalRuntime(model, { adapters: { feedback: chatqlFeedbackAdapter(client) } });
 * ```
 */
export function chatqlFeedbackAdapter(client: ChatqlClient, options: FeedbackOptions = {}): FeedbackAdapter & {
  submit(feedback: Parameters<FeedbackAdapter["submit"]>[0]): Promise<void>;
} {
  return {
    async submit({ message, type, comment }) {
      try {
        await client.request(RateMessageDocument, {
          messageId: options.messageId?.(message) ?? message.id,
          rating: type === "positive" ? "UP" : "DOWN",
          comment: comment ?? null,
          tags: options.tags ? [...options.tags] : null,
        });
      } catch (error) {
        if (options.onError === undefined) throw error;
        options.onError(error);
      }
    },
  };
}
