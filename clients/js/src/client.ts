/**
 * `ChatqlClient`: queries and mutations over HTTP, subscriptions over `graphql-ws`, and
 * the stores the React hooks read (state lives here; hooks only subscribe to it).
 */

import { createClient, type Client } from "graphql-ws";

import { StreamFollower, graphqlWsSource, type FollowerOptions } from "./follower.js";
import {
  ChatEventsDocument,
  ChatsDocument,
  FileLimitsDocument,
  MessagesDocument,
  type ChatSummaryFieldsFragment,
  type ChatsQuery,
  type FileLimitsQuery,
  type MessageFieldsFragment,
  type MessagesQuery,
  type TypedDocumentString,
} from "./generated/operations.js";
import type { ChatEventType } from "./generated/schema.js";
import { findWebSocket } from "./websocket.js";

export type Headers = Readonly<Record<string, string>>;

export interface ChatqlClientOptions {
  /** The GraphQL endpoint, e.g. `http://127.0.0.1:8000/graphql` or `/graphql`. */
  readonly url: string;
  /** The WebSocket endpoint; derived from `url` (and the page's location) when left out. */
  readonly wsUrl?: string;
  /** The upload endpoint (`POST /files`); `url` with `/graphql` replaced by `/files` when left out. */
  readonly filesUrl?: string;
  /** Identity headers (`X-User-Id` … in dev mode, `Authorization` in jwt mode), read per request. */
  readonly headers?: () => Headers;
  readonly fetch?: typeof fetch;
  /**
   * A WebSocket implementation. Left out, the runtime's own is used (browsers, Node 22+),
   * else the `ws` package when it is installed.
   */
  readonly webSocketImpl?: unknown;
}

/** A GraphQL error answer; `code` is its `extensions.code`. */
export class ChatqlError extends Error {
  readonly code: string | undefined;
  readonly errors: readonly unknown[];

  constructor(errors: readonly { message?: string; extensions?: { code?: string } }[]) {
    super(errors[0]?.message ?? "request failed");
    this.name = "ChatqlError";
    this.code = errors[0]?.extensions?.code;
    this.errors = errors;
  }
}

/**
 * What an upload may be (the `fileLimits` query): the largest file and the quota in bytes,
 * the media types accepted, and the bytes the caller's tenant uses (null without a quota).
 */
export type FileLimits = FileLimitsQuery["fileLimits"];

/** A stored file, as `POST /files` answers it. */
export interface UploadedFile {
  readonly id: string;
  readonly filename: string;
  readonly mediaType: string;
  /** In bytes. */
  readonly size: number;
  /** The SHA-256 of its bytes, in hex. */
  readonly sha256: string;
  readonly width?: number | null;
  readonly height?: number | null;
  readonly createdAt?: string;
}

/** Options of {@link ChatqlClient.upload}. */
export interface UploadOptions {
  /** The file's name (default: a `File`'s own name, else `file`). */
  readonly filename?: string;
  /** Its media type (default: the blob's type, else `application/octet-stream`). */
  readonly mediaType?: string;
  /** Called as the bytes go out: bytes sent so far and in all. */
  readonly onProgress?: (sent: number, total: number) => void;
  readonly signal?: AbortSignal;
}

function filesUrlOf(url: string): string {
  return /\/graphql\/?$/.test(url) ? url.replace(/\/graphql\/?$/, "/files") : `${url.replace(/\/$/, "")}/files`;
}

/** The error an HTTP answer in the GraphQL error shape (`{errors: [{message, extensions: {code}}]}`) carries. */
function httpError(status: number, text: string): ChatqlError {
  try {
    const body = JSON.parse(text) as { errors?: { message?: string; extensions?: { code?: string } }[] };
    if (Array.isArray(body.errors) && body.errors.length > 0) return new ChatqlError(body.errors);
  } catch {
    // not JSON: the status says it
  }
  return new ChatqlError([{ message: `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ""}` }]);
}

/** Bytes handed to `fetch` at a time (progress moves in steps this big at most). */
const UPLOAD_SLICE = 64 * 1024;

/** The blob's bytes as a stream, a slice at a time, that reports what has been read of it. */
function counted(body: Blob, onProgress: (sent: number, total: number) => void): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= body.size) {
        controller.close();
        return;
      }
      const slice = new Uint8Array(await body.slice(sent, sent + UPLOAD_SLICE).arrayBuffer());
      sent += slice.byteLength;
      controller.enqueue(slice);
      onProgress(sent, body.size);
    },
  }, { highWaterMark: 0 });
}

function webSocketUrl(url: string): string {
  const base = typeof location === "undefined" ? "http://localhost/" : location.href;
  const absolute = new URL(url, base);
  absolute.protocol = absolute.protocol === "https:" ? "wss:" : "ws:";
  return absolute.toString();
}

export class ChatqlClient {
  readonly url: string;
  /** Where files are uploaded (`POST /files`). */
  readonly filesUrl: string;
  private readonly headers: () => Headers;
  private readonly fetcher: typeof fetch;
  /** Whether a `fetch` was given (uploads then go through it, never `XMLHttpRequest`). */
  private readonly ownFetch: boolean;
  private readonly wsUrl: string;
  private readonly webSocketImpl: unknown;
  private ws: Client | null = null;

  constructor(options: ChatqlClientOptions) {
    this.url = options.url;
    this.filesUrl = options.filesUrl ?? filesUrlOf(options.url);
    this.headers = options.headers ?? (() => ({}));
    this.fetcher = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.ownFetch = options.fetch !== undefined;
    this.wsUrl = options.wsUrl ?? webSocketUrl(options.url);
    this.webSocketImpl = options.webSocketImpl;
  }

  /**
   * Run a query or mutation; resolves to `data`, rejects with {@link ChatqlError}. Given
   * a generated typed document, the variables and the result are typed by it.
   */
  request<TResult, TVariables>(
    document: TypedDocumentString<TResult, TVariables>,
    variables: NoInfer<TVariables>,
  ): Promise<TResult>;
  request<T>(query: string, variables?: Record<string, unknown>): Promise<T>;
  async request<T>(query: string | TypedDocumentString<T, unknown>, variables: unknown = {}): Promise<T> {
    const response = await this.fetcher(this.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...this.headers() },
      body: JSON.stringify({ query: String(query), variables: variables ?? {} }),
    });
    const body = (await response.json()) as { data?: T; errors?: { message?: string; extensions?: { code?: string } }[] };
    if (body.errors && body.errors.length > 0) throw new ChatqlError(body.errors);
    if (body.data === undefined) throw new ChatqlError([{ message: `HTTP ${response.status}` }]);
    return body.data;
  }

  /**
   * What an upload may be here (`fileLimits`): check a file's size against `maxBytes`
   * before sending it, and offer `mediaTypes` in a file picker.
   */
  async fileLimits(): Promise<FileLimits> {
    return (await this.request(FileLimitsDocument, {})).fileLimits;
  }

  /**
   * Upload a file (`POST /files`, the bytes as the body): resolves to the stored file,
   * rejects with {@link ChatqlError} (`PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`,
   * `QUOTA_EXCEEDED`, … with the service's message). `onProgress` follows the bytes out:
   * in a browser through `XMLHttpRequest`'s upload events, elsewhere (or with a `fetch`
   * of one's own) as `fetch` reads the body. A message references the file by its id:
   * `{type: "file", fileId, mediaType, filename}` in `props.content`.
   */
  async upload(body: Blob, options: UploadOptions = {}): Promise<UploadedFile> {
    const filename = options.filename ?? (typeof (body as { name?: unknown }).name === "string" && (body as File).name ? (body as File).name : "file");
    const mediaType = options.mediaType ?? (body.type || "application/octet-stream");
    const target = `${this.filesUrl}?filename=${encodeURIComponent(filename)}`;
    const headers = { "content-type": mediaType, accept: "application/json", ...this.headers() };
    const onProgress = options.onProgress;
    if (onProgress && this.ownFetch === false && typeof XMLHttpRequest !== "undefined") {
      return this.uploadWithXhr(target, headers, body, onProgress, options.signal);
    }
    const init: RequestInit & { duplex?: "half" } = { method: "POST", headers, signal: options.signal ?? null };
    if (onProgress && typeof body.stream === "function") {
      onProgress(0, body.size);
      init.body = counted(body, onProgress);
      init.duplex = "half";
    } else {
      init.body = body;
    }
    const response = await this.fetcher(target, init);
    const text = await response.text();
    if (!response.ok) throw httpError(response.status, text);
    if (!init.duplex) onProgress?.(body.size, body.size);
    return JSON.parse(text) as UploadedFile;
  }

  private uploadWithXhr(target: string, headers: Headers, body: Blob, onProgress: (sent: number, total: number) => void,
    signal: AbortSignal | undefined): Promise<UploadedFile> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", target);
      for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
      xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : body.size);
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) resolve(JSON.parse(xhr.responseText) as UploadedFile);
        else reject(httpError(xhr.status, xhr.responseText));
      };
      xhr.onerror = () => reject(new ChatqlError([{ message: "the upload failed (network error)" }]));
      xhr.onabort = () => reject(signal?.reason instanceof Error ? signal.reason : new DOMException("The upload was aborted", "AbortError"));
      if (signal?.aborted) {
        xhr.abort();
        return;
      }
      signal?.addEventListener("abort", () => xhr.abort(), { once: true });
      onProgress(0, body.size);
      xhr.send(body);
    });
  }

  /** The shared `graphql-ws` client (one socket for every subscription). */
  socket(): Client {
    if (this.ws === null) {
      this.ws = createClient({
        url: this.wsUrl,
        connectionParams: () => ({ ...this.headers() }),
        // The follower re-subscribes itself (with afterSeq); the socket reconnects lazily.
        retryAttempts: 0,
        lazy: true,
        webSocketImpl: this.webSocketImpl ?? findWebSocket(),
      });
    }
    return this.ws;
  }

  /** A follower of the chat's live stream (call `start()`; `stop()` when done). */
  follow(chatId: string, options?: FollowerOptions): StreamFollower {
    return new StreamFollower(chatId, graphqlWsSource(this.socket()), options);
  }

  /** The live chat list (`chatEvents`) over the shared socket. */
  chatEvents(): ChatEventSource {
    return graphqlWsChatEvents(this.socket());
  }

  /** Forget the socket (after switching identity, the next subscription opens a new one). */
  async reset(): Promise<void> {
    const ws = this.ws;
    this.ws = null;
    await ws?.dispose();
  }
}

/** A tiny observable state holder that the hooks subscribe to. */
export class Store<S> {
  private state: S;
  private listeners = new Set<() => void>();

  constructor(initial: S) {
    this.state = initial;
  }

  getState = (): S => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  protected set(change: Partial<S>): void {
    this.state = { ...this.state, ...change };
    for (const listener of this.listeners) listener();
  }
}

export type ChatSummary = ChatSummaryFieldsFragment;
export type MessageRecord = MessageFieldsFragment;

export interface ChatGroupView {
  readonly key: string;
  readonly label: string;
  readonly totalCount: number;
  readonly chats: readonly ChatSummary[];
}

export interface ChatListState {
  readonly groups: readonly ChatGroupView[];
  readonly hasMore: boolean;
  readonly loading: boolean;
  readonly error: Error | null;
  /** Chats with a stream running (an agent is typing), from `chatEvents`. */
  readonly typing: readonly string[];
}

/** One `chatEvents` event; `chat` is null for DELETED, PURGED and RESYNC. */
export interface ChatListEvent {
  readonly type: ChatEventType;
  readonly chatId: string;
  readonly at: string;
  readonly chat: ChatSummary | null;
}

export const CHAT_EVENTS = String(ChatEventsDocument);

export interface ChatEventSink {
  next(event: ChatListEvent): void;
  error(error: unknown): void;
  complete(): void;
}

/** Where a chat list's live events come from (tests pass their own). */
export interface ChatEventSource {
  subscribe(filter: Readonly<Record<string, unknown>> | null, sink: ChatEventSink): () => void;
}

/** `chatEvents` over a `graphql-ws` client. */
export function graphqlWsChatEvents(client: Client): ChatEventSource {
  return {
    subscribe(filter, sink) {
      return client.subscribe<{ chatEvents: ChatListEvent }>(
        { query: CHAT_EVENTS, variables: { filter } },
        {
          next(result) {
            if (result.errors && result.errors.length > 0) sink.error(new ChatqlError(result.errors));
            else if (result.data) sink.next(result.data.chatEvents);
          },
          error: (error) => sink.error(error),
          complete: () => sink.complete(),
        },
      );
    },
  };
}

type ChatsData = ChatsQuery;

export interface ChatListOptions {
  readonly keywords?: string;
  readonly pageSize?: number;
  readonly timezone?: string;
}

function groupView(group: ChatsData["chats"]["groups"][number]): ChatGroupView {
  return { key: group.key, label: group.label, totalCount: group.totalCount, chats: group.chats };
}

/** The chats the caller may read, grouped by time (Today, Yesterday …), a page at a time. */
export class ChatListStore extends Store<ChatListState> {
  private cursor: string | null = null;
  private generation = 0;

  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;

  constructor(private readonly client: ChatqlClient, private readonly options: ChatListOptions = {}) {
    super({ groups: [], hasMore: true, loading: false, error: null, typing: [] });
  }

  /**
   * Keep the list current from `chatEvents` (same filter) instead of polling: a chat
   * that is gone is dropped at once, typing is tracked, and anything that can move a
   * chat between groups (created, renamed, new messages, RESYNC) refetches the loaded
   * pages' first page in place — several events at once cost one refetch; new messages
   * in the chat already first in Today only swap its summary in. Returns the
   * function that stops following.
   */
  live(source: ChatEventSource = this.client.chatEvents()): () => void {
    const keywords = this.options.keywords?.trim();
    return source.subscribe(keywords ? { keywords } : null, {
      next: (event) => this.apply(event),
      error: (error) => this.set({ error: error instanceof Error ? error : new Error(String(error)) }),
      complete: () => undefined,
    });
  }

  /** Apply one `chatEvents` event to the list. */
  apply(event: ChatListEvent): void {
    const typing = new Set(this.getState().typing);
    switch (event.type) {
      case "STREAM_STARTED":
        typing.add(event.chatId);
        this.set({ typing: [...typing] });
        return;
      case "STREAM_ENDED":
        typing.delete(event.chatId);
        this.set({ typing: [...typing] });
        return;
      case "DELETED":
      case "PURGED":
        typing.delete(event.chatId);
        this.set({
          typing: [...typing],
          groups: this.getState().groups
            .map((group) => ({ ...group, chats: group.chats.filter((chat) => chat.id !== event.chatId) }))
            .filter((group) => group.chats.length > 0),
        });
        return;
      case "MESSAGES": {
        // New messages in the chat already at the top of Today: it stays there, so its
        // summary is swapped in without a refetch (the common case — the person talking
        // in their newest chat — costs the server nothing while the agent answers).
        const [first] = this.getState().groups;
        if (event.chat !== null && first?.key === "today" && first.chats[0]?.id === event.chatId) {
          const chat = event.chat;
          this.set({ groups: [{ ...first, chats: [chat, ...first.chats.slice(1)] }, ...this.getState().groups.slice(1)] });
          return;
        }
        void this.refresh();
        return;
      }
      default:
        void this.refresh();
    }
  }

  /** Fetch the first page again and swap it in (no flash of an empty list). */
  async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const data = await this.fetchPage(null);
          this.generation += 1;
          this.cursor = data.chats.pageInfo.endCursor ?? null;
          this.set({ groups: data.chats.groups.map(groupView), hasMore: data.chats.pageInfo.hasNextPage, error: null });
        } catch (error) {
          this.set({ error: error as Error });
        }
      } while (this.refreshAgain);
      this.refreshing = null;
    })();
    return this.refreshing;
  }

  private fetchPage(after: string | null): Promise<ChatsData> {
    const keywords = this.options.keywords?.trim();
    return this.client.request(ChatsDocument, {
      first: this.options.pageSize ?? 30,
      after,
      filter: keywords ? { keywords } : null,
      timezone: this.options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    });
  }

  /** Load the first page again (after a change, or a new search). */
  async reload(): Promise<void> {
    this.cursor = null;
    this.generation += 1;
    this.set({ groups: [], hasMore: true });
    await this.loadMore();
  }

  async loadMore(): Promise<void> {
    const state = this.getState();
    if (state.loading || !state.hasMore) return;
    const generation = this.generation;
    this.set({ loading: true, error: null });
    try {
      const data = await this.fetchPage(this.cursor);
      if (generation !== this.generation) return;
      const groups = [...this.getState().groups];
      for (const group of data.chats.groups) {
        const at = groups.findIndex((g) => g.key === group.key);
        if (at >= 0) {
          const existing = groups[at] as ChatGroupView;
          groups[at] = { ...existing, chats: [...existing.chats, ...group.chats] };
        } else {
          groups.push(groupView(group));
        }
      }
      this.cursor = data.chats.pageInfo.endCursor ?? null;
      this.set({ groups, hasMore: data.chats.pageInfo.hasNextPage, loading: false });
    } catch (error) {
      if (generation === this.generation) this.set({ loading: false, error: error as Error });
    }
  }
}

export interface MessagesState {
  /** Oldest first. */
  readonly messages: readonly MessageRecord[];
  readonly hasOlder: boolean;
  readonly loading: boolean;
  readonly error: Error | null;
}


/** A chat's stored messages, newest page first, older pages prepended on demand. */
export class MessagesStore extends Store<MessagesState> {
  private cursor: string | null = null;
  private generation = 0;

  constructor(private readonly client: ChatqlClient, readonly chatId: string, private readonly pageSize = 30) {
    super({ messages: [], hasOlder: true, loading: false, error: null });
  }

  /** The newest page again (after a stream was persisted). */
  async reload(): Promise<void> {
    this.cursor = null;
    this.generation += 1;
    this.set({ messages: [], hasOlder: true, loading: false });
    await this.loadOlder();
  }

  async loadOlder(): Promise<void> {
    const state = this.getState();
    if (state.loading || !state.hasOlder) return;
    const generation = this.generation;
    this.set({ loading: true, error: null });
    try {
      const data: MessagesQuery = await this.client.request(MessagesDocument, {
        chatId: this.chatId, last: this.pageSize, before: this.cursor,
      });
      if (generation !== this.generation) return;
      const page = data.messages.edges.map((edge) => edge.node);
      this.cursor = data.messages.pageInfo.startCursor ?? this.cursor;
      this.set({
        messages: [...page, ...this.getState().messages],
        hasOlder: data.messages.pageInfo.hasPreviousPage,
        loading: false,
      });
    } catch (error) {
      if (generation === this.generation) this.set({ loading: false, error: error as Error });
    }
  }
}
