/**
 * The stream follower: one chat's live stream, kept continuous across dropped sockets.
 *
 * It subscribes to `chatStream`, applies every chunk with the reducer, and checks
 * continuity: each chunk's `fromSeq` must be the previous `seq` + 1 (snapshot chunks
 * excepted — they replace their messages and set the position). A gap, an error or a
 * completed subscription makes it subscribe again with `afterSeq` = the last `seq` it
 * applied, after a backoff that grows while attempts keep failing and resets once a
 * chunk arrives. Chunks it already applied (a transport that replays on its own) are
 * skipped, so nothing is shown twice.
 *
 * The transport sits behind {@link StreamSource}: {@link graphqlWsSource} for a
 * `graphql-ws` client; tests pass their own.
 */

import type { Client } from "graphql-ws";

import { ChatStreamDocument } from "./generated/operations.js";
import type { Chunk } from "./generated/schema.js";
import { EMPTY_VIEW, applyChunk, type JsonObject, type MessageState, type MessagesView } from "./reducer.js";

/** A chunk as `chatStream` delivers it (every field of the schema's `Chunk`). */
export type StreamChunk = Omit<Chunk, "__typename">;

/** The selection the follower asks for: the whole `Chunk`. */
export const CHAT_STREAM = String(ChatStreamDocument);

export interface StreamSink {
  next(chunk: StreamChunk): void;
  error(error: unknown): void;
  complete(): void;
}

/** Something that can run one `chatStream` subscription; returns how to cancel it. */
export interface StreamSource {
  subscribe(chatId: string, afterSeq: number | null, sink: StreamSink): () => void;
}

/** A {@link StreamSource} over a `graphql-ws` client. */
export function graphqlWsSource(client: Client): StreamSource {
  return {
    subscribe(chatId, afterSeq, sink) {
      return client.subscribe<{ chatStream: StreamChunk }>(
        { query: CHAT_STREAM, variables: { chatId, afterSeq } },
        {
          next(result) {
            if (result.errors && result.errors.length > 0) {
              sink.error(new StreamError(result.errors[0]?.message ?? "subscription error", result.errors));
            } else if (result.data) {
              sink.next(result.data.chatStream);
            }
          },
          error: (error) => sink.error(error),
          complete: () => sink.complete(),
        },
      );
    },
  };
}

/** GraphQL errors that ended a subscription (e.g. `NOT_FOUND`: the chat is not readable). */
export class StreamError extends Error {
  readonly errors: readonly unknown[];

  constructor(message: string, errors: readonly unknown[]) {
    super(message);
    this.name = "StreamError";
    this.errors = errors;
  }

  /** The first error's `extensions.code`, when it has one. */
  get code(): string | undefined {
    const first = this.errors[0] as { extensions?: { code?: unknown } } | undefined;
    const code = first?.extensions?.code;
    return typeof code === "string" ? code : undefined;
  }
}

export type StreamStatus = "idle" | "live" | "completed" | "interrupted" | "failed";

/** What a front end renders: the current (or last) stream of the chat. */
export interface FollowerState {
  readonly streamId: string | null;
  readonly requestId: string | null;
  /** The person's message that started the stream (from `stream_start`), if any. */
  readonly input: MessageState | null;
  readonly status: StreamStatus;
  /** What the agent said went wrong when it ended the stream as `failed` (null otherwise). */
  readonly failure: string | null;
  readonly messages: MessagesView;
  /** The last `seq` applied (0 before any). */
  readonly seq: number;
  /** False while re-subscribing after a drop or a gap. */
  readonly connected: boolean;
  /** Set when the service refused the subscription (it is not retried). */
  readonly error: StreamError | null;
}

export interface FollowerOptions {
  /** First retry delay in ms (doubled per failed attempt). */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Codes that end following instead of retrying. */
  readonly fatalCodes?: readonly string[];
  /** Timer functions (tests use fake ones). */
  readonly setTimeout?: (callback: () => void, ms: number) => unknown;
  readonly clearTimeout?: (handle: unknown) => void;
}

const INITIAL: FollowerState = {
  streamId: null, requestId: null, input: null, status: "idle", failure: null, messages: EMPTY_VIEW,
  seq: 0, connected: false, error: null,
};

/** The user's input message that `stream_start` carries in `props.input`. */
function inputOf(props: { input?: unknown } | null): MessageState | null {
  const input = props?.input as Partial<Record<keyof MessageState, unknown>> | null | undefined;
  if (!input || typeof input.id !== "string" || typeof input.type !== "string") return null;
  const body = input.props;
  return {
    id: input.id,
    type: input.type,
    role: typeof input.role === "string" ? input.role : "USER",
    props: typeof body === "object" && body !== null && !Array.isArray(body) ? (body as JsonObject) : {},
    blockId: typeof input.blockId === "string" ? input.blockId : null,
    threadId: typeof input.threadId === "string" ? input.threadId : null,
  };
}

function eventName(chunk: StreamChunk): string | undefined {
  const props = chunk.props as { event?: unknown } | null;
  return chunk.type === "event" && typeof props?.event === "string" ? props.event : undefined;
}

export class StreamFollower {
  readonly chatId: string;
  private readonly source: StreamSource;
  private readonly options: Required<Omit<FollowerOptions, "setTimeout" | "clearTimeout">>;
  private readonly schedule: (callback: () => void, ms: number) => unknown;
  private readonly unschedule: (handle: unknown) => void;
  private state: FollowerState = INITIAL;
  private listeners = new Set<(state: FollowerState) => void>();
  private cancel: (() => void) | null = null;
  private timer: unknown = null;
  private attempts = 0;
  private running = false;
  /** Bumped per subscription: callbacks of a cancelled one are ignored. */
  private generation = 0;

  constructor(chatId: string, source: StreamSource, options: FollowerOptions = {}) {
    this.chatId = chatId;
    this.source = source;
    this.options = {
      initialBackoffMs: options.initialBackoffMs ?? 250,
      maxBackoffMs: options.maxBackoffMs ?? 8000,
      fatalCodes: options.fatalCodes ?? ["NOT_FOUND", "FORBIDDEN", "UNAUTHENTICATED", "INVALID_ARGUMENT"],
    };
    this.schedule = options.setTimeout ?? ((callback, ms) => globalThis.setTimeout(callback, ms));
    this.unschedule = options.clearTimeout ?? ((handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>));
  }

  /** The current state (a new object after every change). */
  getState(): FollowerState {
    return this.state;
  }

  /** Calls `listener` after every change; returns how to stop. */
  subscribe(listener: (state: FollowerState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.open();
  }

  stop(): void {
    this.running = false;
    this.close();
    if (this.timer !== null) this.unschedule(this.timer);
    this.timer = null;
    this.set({ connected: false });
  }

  private set(change: Partial<FollowerState>): void {
    this.state = { ...this.state, ...change };
    for (const listener of this.listeners) listener(this.state);
  }

  private close(): void {
    this.generation += 1;
    const cancel = this.cancel;
    this.cancel = null;
    cancel?.();
  }

  private open(): void {
    const generation = ++this.generation;
    const afterSeq = this.state.streamId === null ? null : this.state.seq;
    const live = () => generation === this.generation;
    this.cancel = this.source.subscribe(this.chatId, afterSeq, {
      next: (chunk) => {
        if (live()) this.receive(chunk);
      },
      error: (error) => {
        if (live()) this.dropped(error);
      },
      complete: () => {
        if (live()) this.dropped(null);
      },
    });
    this.set({ connected: true });
  }

  private dropped(error: unknown): void {
    this.cancel = null;
    this.generation += 1;
    if (error instanceof StreamError && error.code && this.options.fatalCodes.includes(error.code)) {
      this.running = false;
      this.set({ connected: false, error });
      return;
    }
    this.set({ connected: false });
    this.retry();
  }

  private retry(): void {
    if (!this.running || this.timer !== null) return;
    const delay = Math.min(this.options.maxBackoffMs, this.options.initialBackoffMs * 2 ** this.attempts);
    this.attempts += 1;
    this.timer = this.schedule(() => {
      this.timer = null;
      if (this.running) this.open();
    }, delay);
  }

  /** A gap: the chunks between are lost to this subscription; ask again from `seq`. */
  private resync(): void {
    this.close();
    this.set({ connected: false });
    this.retry();
  }

  private receive(chunk: StreamChunk): void {
    this.attempts = 0;
    const current = this.state;
    const event = eventName(chunk);
    const sameStream = chunk.streamId === current.streamId;
    if (!sameStream) {
      // A stream this follower has not seen: its first chunk must be its stream_start
      // (seq 1) or the snapshot of a late join.
      if (!chunk.snapshot && chunk.fromSeq !== 1) {
        this.set({ streamId: chunk.streamId, seq: 0, messages: EMPTY_VIEW, status: "live", failure: null });
        this.resync();
        return;
      }
      this.state = { ...current, streamId: chunk.streamId, seq: 0, messages: EMPTY_VIEW, status: "live", failure: null, requestId: null, input: null };
    } else if (!chunk.snapshot) {
      if (chunk.seq <= current.seq) return; // already applied (a replay)
      if (chunk.fromSeq !== current.seq + 1) {
        this.resync();
        return;
      }
    }
    let { messages, status, failure, requestId, input } = this.state;
    if (event === "stream_start") {
      const props = chunk.props as { requestId?: unknown; input?: unknown } | null;
      requestId = typeof props?.requestId === "string" ? props.requestId : null;
      input = inputOf(props);
      status = "live";
      failure = null;
    } else if (event === "stream_end") {
      const props = chunk.props as { status?: unknown; error?: unknown } | null;
      const ended = props?.status;
      status = ended === "interrupted" || ended === "failed" ? ended : "completed";
      failure = status === "failed" && typeof props?.error === "string" && props.error ? props.error : null;
    } else {
      messages = applyChunk(messages, chunk);
    }
    this.set({ messages, status, failure, requestId, input, seq: Math.max(chunk.seq, sameStream ? current.seq : 0), connected: true, error: null });
  }
}
