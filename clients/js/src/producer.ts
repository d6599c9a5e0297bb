/**
 * The stream writer: how an agent running in Node streams its reply into a chat.
 *
 * `startStream` opens a stream and answers a {@link StreamWriter}. Its calls queue chunks
 * that are pushed in batches (after `flushIntervalMs`, default 20 ms, or at `maxBatch`
 * calls, default 256), one push at a time; a run of appends to one place (text tokens,
 * one call's argument pieces) waits as one chunk whose delta grows. Every chunk gets a chunk id numbered within
 * the stream, so a push retried after a lost answer (transport failures are retried with
 * backoff) is deduplicated by the server. When the person pressed Stop the server answers
 * `STREAM_CLOSED`: the writer's `signal` aborts (hand it to the model call) and its calls
 * throw {@link StreamStopped}. While the agent is quiet the writer sends heartbeats, a
 * push with no chunks, at a third of the stream's idle timeout (20 s when the server does
 * not say), so the timeout measures a vanished producer, not a slow tool.
 *
 * `withStream` wraps a function: the stream ends `COMPLETED` when it returns, `FAILED`
 * with the error's text when it throws. Both take the person's message the stream answers
 * as `input`: a `MessageInput`, or a string (a `USER` `user_input` with that content).
 */

import { ChatqlError, type ChatqlClient } from "./client.js";
import {
  ChatInterruptsDocument,
  EndStreamDocument,
  InterruptDocument,
  PushChunksDocument,
  StartStreamDocument,
  type ChunkInput,
  type EndStreamMutation,
  type InterruptFieldsFragment,
  type MessageInput,
  type StartStreamMutation,
} from "./generated/operations.js";

/** The person pressed Stop: the stream is closed and the agent should stop its work. */
export class StreamStopped extends Error {
  constructor(readonly streamId: string) {
    super(`stream ${streamId} was stopped`);
    this.name = "StreamStopped";
  }
}

export interface StartStreamOptions {
  readonly chatId: string;
  readonly requestId?: string;
  readonly assistantId?: string;
  /** The message the reply answers (default: the chat's active leaf). */
  readonly parentId?: string;
  /**
   * The person's message the stream answers, stored with the stream's start: a
   * {@link MessageInput}, or a string, which becomes a `USER` `user_input` message with
   * props `{ content }` (as in the Python kit).
   */
  readonly input?: string | MessageInput;
  readonly flushIntervalMs?: number;
  readonly maxBatch?: number;
  /** Attempts for one push on transport failures (default 5). */
  readonly retries?: number;
  /** The heartbeat interval when the server does not tell its idle timeout (default 20 s). */
  readonly heartbeatMs?: number;
}

export interface MessageOptions {
  readonly messageId?: string;
  readonly blockId?: string;
  readonly threadId?: string;
}

export interface Usage {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  readonly model?: string;
}

type Stream = StartStreamMutation["startStream"] & { readonly idleTimeout?: number | null };

// Asks for the server's idle timeout too; a server without the field refuses the document
// before running anything, and the writer asks again without it.
const START_WITH_IDLE_TIMEOUT = `mutation StartStream($input: StartStreamInput!) {
  startStream(input: $input) { id chatId requestId status idleTimeout }
}`;

async function openStream(client: ChatqlClient, input: Record<string, unknown>): Promise<Stream> {
  try {
    const data = await client.request<{ startStream: Stream }>(START_WITH_IDLE_TIMEOUT, { input });
    return data.startStream;
  } catch (error) {
    if (!(error instanceof ChatqlError) || !error.message.includes("idleTimeout")) throw error;
  }
  const data = await client.request(StartStreamDocument, { input: input as never });
  return data.startStream;
}

/** The stream's input message: a string is the person's `user_input` with that content. */
function inputMessage(value: string | MessageInput): MessageInput {
  return typeof value === "string" ? { role: "USER", type: "user_input", props: { content: value } } : value;
}

/** Open a stream in a chat and answer its writer. */
export async function startStream(client: ChatqlClient, options: StartStreamOptions): Promise<StreamWriter> {
  const input: Record<string, unknown> = { chatId: options.chatId };
  for (const key of ["requestId", "assistantId", "parentId"] as const) {
    if (options[key] !== undefined) input[key] = options[key];
  }
  if (options.input !== undefined) input.input = inputMessage(options.input);
  const stream = await openStream(client, input);
  const idle = typeof stream.idleTimeout === "number" && stream.idleTimeout > 0 ? stream.idleTimeout : null;
  return new StreamWriter(client, stream.id, {
    ...options,
    heartbeatMs: idle === null ? options.heartbeatMs ?? 20_000 : (idle * 1000) / 3,
  }, stream.chatId);
}

/**
 * Run `work` with a new stream's writer: `COMPLETED` when it returns, `FAILED` when it
 * throws (the error is thrown on); a stop ends the stream on the server's side.
 * `options.input`, the person's message the stream answers, may be a string: it becomes
 * a `USER` `user_input` message with props `{ content }`, as in the Python kit.
 */
export async function withStream<T>(client: ChatqlClient, options: StartStreamOptions, work: (writer: StreamWriter) => Promise<T>): Promise<T> {
  const writer = await startStream(client, options);
  try {
    const result = await work(writer);
    await writer.end();
    return result;
  } catch (error) {
    if (!(error instanceof StreamStopped)) await writer.fail(error).catch(() => undefined);
    else writer.close();
    throw error;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * How often an inline ask reads its interrupt besides the reads the chat's events prompt:
 * the safety net for a subscription that dropped.
 */
const DECISION_FALLBACK_MS = 5_000;
/** The wait before listening again after the subscription failed (doubling, at most the fallback). */
const DECISION_RECONNECT_MS = 500;
/** The chat events that make an inline ask read its interrupt again. */
const DECISION_EVENTS: ReadonlySet<string> = new Set(["INTERRUPT_RESOLVED", "INTERRUPT_REQUESTED", "DELETED", "PURGED"]);

/** A flag an inline ask sleeps on: set by an event (or a failure), taken by the wait. */
class Wake {
  private pending = false;
  private resolve: (() => void) | null = null;

  set(): void {
    this.pending = true;
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.();
  }

  /** Until set (at once if it was) or `ms` passed; clears it. */
  async wait(ms: number): Promise<void> {
    if (!this.pending) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.resolve = resolve;
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
      this.resolve = null;
    }
    this.pending = false;
  }
}

/** How an agent asks a person (a tool call needing approval, a question). */
export interface AskingOptions {
  /** Why the agent asks, shown to the person. */
  readonly reason?: string;
  /** Seconds the person has to decide. */
  readonly expiresIn?: number;
}

function asking(options: AskingOptions): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  if (options.reason !== undefined) props.reason = options.reason;
  if (options.expiresIn !== undefined) {
    if (!(options.expiresIn > 0)) throw new RangeError("expiresIn must be a positive number of seconds");
    props.expiresIn = options.expiresIn;
  }
  return props;
}

export class StreamWriter {
  readonly streamId: string;
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly retries: number;
  private readonly heartbeatMs: number;
  private readonly abort = new AbortController();
  private queue: ChunkInput[] = [];
  /** Writer calls queued (a run of deltas shares one queued chunk). */
  private waiting = 0;
  /** The last queued chunk that further appends to the same place join, with its place. */
  private tail: { readonly place: string; readonly grows: string; readonly props: Record<string, string> } | null = null;
  private counter = 0;
  private ids = 0;
  private sending: Promise<void> = Promise.resolve();
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeatTimer: ReturnType<typeof setTimeout> | null = null;
  private failure: unknown = null;
  private closed = false;
  private textId: string | null = null;
  private thinkingId: string | null = null;
  private usageInput: Usage | null = null;
  /** The inline asks waiting: woken when the stream fails (a stop) so they end at once. */
  private readonly wakes = new Set<Wake>();
  /** The calls this stream started: what an inline approval writes again. */
  private readonly calls = new Map<string, { name: string; arguments: string; options: MessageOptions }>();

  constructor(private readonly client: ChatqlClient, streamId: string, options: Omit<StartStreamOptions, "chatId"> = {}, readonly chatId: string | null = null) {
    this.streamId = streamId;
    this.flushIntervalMs = options.flushIntervalMs ?? 20;
    this.maxBatch = options.maxBatch ?? 256;
    this.retries = options.retries ?? 5;
    this.heartbeatMs = options.heartbeatMs ?? 20_000;
    this.armHeartbeat();
  }

  /** Aborted when the person stopped the stream (pass it to the model call). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get stopped(): boolean {
    return this.failure instanceof StreamStopped;
  }

  /** The interval between heartbeats, in ms. */
  get heartbeatInterval(): number {
    return this.heartbeatMs;
  }

  /** Text of the reply; consecutive calls grow one `text` message. */
  text(delta: string, options: MessageOptions = {}): void {
    const messageId = options.messageId ?? (this.textId ??= this.nextId("text"));
    this.thinkingId = null;
    this.push({ ...this.placement(options), type: "text", messageId, role: "ASSISTANT", props: { content: delta }, delta: true }, "content");
  }

  /** Reasoning; consecutive calls grow one `thinking` message. */
  thinking(delta: string, options: MessageOptions = {}): void {
    const messageId = options.messageId ?? (this.thinkingId ??= this.nextId("thinking"));
    this.textId = null;
    this.push({ ...this.placement(options), type: "thinking", messageId, role: "ASSISTANT", props: { content: delta }, delta: true }, "content");
  }

  /**
   * A tool call (`tool_call` with props `{id, name, arguments}`); arguments grow with {@link toolArguments}.
   *
   * `needsApproval`: a person must approve the call before it runs. The stream then ends
   * `AWAITING_INPUT` and the service keeps the call as an interrupt; once it is decided,
   * chatql's agent loop answers again with the decisions. `reason` says why the agent
   * asks; `expiresIn` (seconds) is how long the person has (an expired call counts as
   * denied).
   */
  toolCall(callId: string, name: string, argumentsDelta = "", options: Omit<MessageOptions, "messageId"> & AskingOptions & { readonly needsApproval?: boolean } = {}): void {
    this.textId = this.thinkingId = null;
    const props: Record<string, unknown> = { id: callId, name, arguments: argumentsDelta };
    if (options.needsApproval) Object.assign(props, asking(options), { needsApproval: true });
    this.push({ ...this.placement(options), type: "tool_call", messageId: `call:${callId}`, role: "ASSISTANT", props });
    this.calls.set(callId, { name, arguments: argumentsDelta, options: { blockId: options.blockId, threadId: options.threadId } });
  }

  /**
   * The inline form of an approval: asks the person to approve the call `callId` (one
   * this stream started with {@link toolCall}, or a new one when `name` is given) and
   * waits here, in the open stream — heartbeats keep it alive — for the decision, which
   * it hears through the chat's `chatEvents` on the client's socket (no polling).
   * Resolves to the decided interrupt: `RESOLVED` with its `decision` (`approved`,
   * `editedArguments`, `reason`, `decidedBy`), `EXPIRED` (count it as denied) or
   * `CANCELLED`; rejects with a `TimeoutError` after `timeoutMs`.
   */
  async askApproval(callId: string, options: AskingOptions & { readonly name?: string; readonly arguments?: string | Readonly<Record<string, unknown>>; readonly timeoutMs?: number } = {}): Promise<InterruptFieldsFragment> {
    const started = this.calls.get(callId);
    const name = options.name ?? started?.name;
    if (name === undefined) throw new Error(`askApproval for ${callId}, a call this stream has not started: give its name`);
    const given = options.arguments;
    const args = given === undefined ? started?.arguments ?? "" : typeof given === "string" ? given : JSON.stringify(given);
    const placement = started?.options ?? {};
    this.calls.set(callId, { name, arguments: args, options: placement });
    // Written whole: a started call's message is replaced, now asking.
    this.message("tool_call", { id: callId, name, arguments: args, ...asking(options), needsApproval: true, inline: true },
      { ...placement, messageId: `call:${callId}` });
    return this.waitForDecision(callId, options.timeoutMs);
  }

  /**
   * The inline form of a question: asks `prompt` and waits here, in the open stream, for
   * the answer. Resolves to the decided interrupt as {@link askApproval} does (the answer
   * in `decision.response`; `approved: false` when the person declined).
   */
  async askAndWait(prompt: string, options: MessageOptions & AskingOptions & { readonly responseSchema?: Readonly<Record<string, unknown>>; readonly timeoutMs?: number } = {}): Promise<InterruptFieldsFragment> {
    const messageId = options.messageId ?? this.nextId("question");
    const props: Record<string, unknown> = { id: messageId, prompt, ...asking(options), inline: true };
    if (options.responseSchema !== undefined) props.responseSchema = options.responseSchema;
    this.message("question", props, { ...options, messageId });
    return this.waitForDecision(messageId, options.timeoutMs);
  }

  /**
   * Waits for the interrupt of `askedId` by listening, not polling: finds it (one read of
   * the chat's interrupts), follows the chat's `chatEvents` over the client's shared socket
   * and reads it again (`interrupt(id:)`) when an event says an interrupt of the chat was
   * resolved — and once the subscription is established (a decision made before it is not
   * missed), and every {@link DECISION_FALLBACK_MS} as a safety net.
   */
  private async waitForDecision(askedId: string, timeoutMs?: number): Promise<InterruptFieldsFragment> {
    const chatId = this.chatId;
    if (chatId === null) throw new Error("an inline ask needs the stream's chat: open it with startStream or withStream");
    await this.flush();
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    const find = async () => {
      const data = await this.client.request(ChatInterruptsDocument, { id: chatId });
      const found = (data.chat?.interrupts ?? []).find((interrupt) => interrupt.streamId === this.streamId && interrupt.toolCallId === askedId);
      return { assistantId: data.chat?.assistantId ?? null, found };
    };
    const first = await find();
    let found = first.found;
    const wake = new Wake();
    const stopListening = this.listenForDecisions(chatId, first.assistantId, wake);
    this.wakes.add(wake);
    try {
      for (;;) {
        this.check();
        if (found !== undefined && found.state !== "PENDING") return found;
        const left = deadline - Date.now();
        if (left <= 0) {
          const error = new Error(`no decision on ${askedId} within ${timeoutMs} ms`);
          error.name = "TimeoutError";
          throw error;
        }
        await wake.wait(Math.min(DECISION_FALLBACK_MS, left));
        this.check();
        found = found === undefined ? (await find()).found : (await this.client.request(InterruptDocument, { id: found.id })).interrupt;
      }
    } finally {
      this.wakes.delete(wake);
      stopListening();
    }
  }

  /**
   * Follow the events of the chats of `assistantId` (this chat among them) on the client's
   * socket, setting `wake` on one that may have decided an interrupt of `chatId`, and when
   * the subscription starts; subscribes again, with backoff, after an error. Answers the
   * function that stops it.
   */
  private listenForDecisions(chatId: string, assistantId: string | null, wake: Wake): () => void {
    const filter: Record<string, unknown> = { includeSubagents: true };
    if (assistantId) filter.assistantId = assistantId;
    let stopped = false;
    let unsubscribe: (() => void) | null = null;
    let retry: ReturnType<typeof setTimeout> | null = null;
    let delay = DECISION_RECONNECT_MS;
    const socket = this.client.socket();
    // The socket acknowledged (it was not open yet, or it reconnected): the subscription is
    // sent now, so what was decided before is read.
    const unlisten = socket.on("connected", () => setTimeout(() => {
      if (!stopped) wake.set();
    }, 0));
    const again = () => {
      unsubscribe = null;
      if (stopped || retry !== null) return;
      retry = setTimeout(() => {
        retry = null;
        subscribe();
      }, delay);
      delay = Math.min(delay * 2, DECISION_FALLBACK_MS);
    };
    const subscribe = () => {
      if (stopped) return;
      unsubscribe = this.client.chatEvents().subscribe(filter, {
        next: (event) => {
          delay = DECISION_RECONNECT_MS;
          if (event.type === "RESYNC" || (event.chatId === chatId && DECISION_EVENTS.has(event.type))) wake.set();
        },
        error: again,
        complete: again,
      });
      // On a socket already open the subscription goes out at once: read now.
      wake.set();
    };
    subscribe();
    return () => {
      stopped = true;
      unlisten();
      if (retry !== null) clearTimeout(retry);
      const stop = unsubscribe;
      unsubscribe = null;
      stop?.();
    };
  }

  /**
   * Asks the person a question (a `question` message; `responseSchema`, a JSON Schema,
   * is what the answer must match). The stream ends `AWAITING_INPUT`; the answer comes
   * back with the resumption. Answers the message id (the interrupt's id once stored).
   */
  ask(prompt: string, options: MessageOptions & AskingOptions & { readonly responseSchema?: Readonly<Record<string, unknown>> } = {}): string {
    const props: Record<string, unknown> = { prompt, ...asking(options) };
    if (options.responseSchema !== undefined) props.responseSchema = options.responseSchema;
    const messageId = options.messageId ?? this.nextId("question");
    this.message("question", props, { ...options, messageId });
    return messageId;
  }

  toolArguments(callId: string, delta: string): void {
    const started = this.calls.get(callId);
    if (started !== undefined) started.arguments += delta;
    this.push({ type: "tool_call", messageId: `call:${callId}`, props: { arguments: delta }, delta: true, deltaPath: "arguments" }, "arguments");
  }

  /** A tool's result (`TOOL` `tool_result` with props `{tool_call_id, content}`). */
  toolResult(callId: string, content: unknown, extra: Readonly<Record<string, unknown>> = {}): void {
    this.textId = this.thinkingId = null;
    this.push({ type: "tool_result", messageId: `result:${callId}`, role: "TOOL", props: { ...extra, tool_call_id: callId, content } });
  }

  /** Any typed message (replaced whole when sent again with the same `messageId`). */
  message(type: string, props: unknown, options: MessageOptions & { readonly role?: ChunkInput["role"] } = {}): void {
    this.textId = this.thinkingId = null;
    const messageId = options.messageId ?? this.nextId(type);
    this.push({ ...this.placement(options), type, messageId, role: options.role ?? "ASSISTANT", props });
  }

  /** A producer event (never a message). */
  event(name: string, props: Readonly<Record<string, unknown>> = {}): void {
    this.push({ type: "event", props: { ...props, event: name } });
  }

  /** Token usage recorded with the stream's end. */
  usage(usage: Usage): void {
    this.usageInput = usage;
  }

  /** Push everything queued; throws {@link StreamStopped} or the push's error. */
  async flush(): Promise<void> {
    this.check();
    this.send();
    await this.sending;
    this.check();
  }

  /** Flush and end the stream `COMPLETED`; answers the persisted messages. */
  async end(): Promise<EndStreamMutation["endStream"]["messages"]> {
    await this.flush();
    return this.finish("COMPLETED", null);
  }

  /** Flush what can be and end the stream `FAILED` with the error's text. */
  async fail(error: unknown): Promise<EndStreamMutation["endStream"]["messages"]> {
    this.send();
    await this.sending.catch(() => undefined);
    return this.finish("FAILED", error instanceof Error ? error.message : String(error));
  }

  /** Stop the timers without ending the stream (it was stopped or ended elsewhere). */
  close(): void {
    this.closed = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    if (this.heartbeatTimer !== null) clearTimeout(this.heartbeatTimer);
    this.flushTimer = this.heartbeatTimer = null;
  }

  private async finish(status: "COMPLETED" | "FAILED", error: string | null): Promise<EndStreamMutation["endStream"]["messages"]> {
    this.close();
    const usage = this.usageInput;
    const data = await this.client.request(EndStreamDocument, {
      streamId: this.streamId, status, error,
      usage: usage === null ? null : {
        promptTokens: usage.promptTokens ?? 0, completionTokens: usage.completionTokens ?? 0, model: usage.model ?? null,
      },
    });
    return data.endStream.messages;
  }

  private placement(options: MessageOptions): Pick<ChunkInput, "blockId" | "threadId"> {
    return {
      ...(options.blockId === undefined ? {} : { blockId: options.blockId }),
      ...(options.threadId === undefined ? {} : { threadId: options.threadId }),
    };
  }

  private nextId(kind: string): string {
    this.ids += 1;
    return `${kind}:${this.ids}`;
  }

  private check(): void {
    if (this.failure !== null) throw this.failure;
  }

  /**
   * Queue `chunk`. An append delta (`grows` names the prop it appends to) to the place
   * the last queued delta appends to joins that chunk: a run of tokens goes out as one
   * chunk of the batch, one change for the service to apply, publish and store.
   */
  private push(chunk: ChunkInput, grows?: string): void {
    this.check();
    if (this.closed) throw new Error("the stream writer is closed");
    this.counter += 1;
    this.waiting += 1;
    const place = grows === undefined ? null
      : JSON.stringify([chunk.messageId, chunk.type, chunk.deltaPath ?? null, chunk.blockId ?? null, chunk.threadId ?? null]);
    const tail = this.tail;
    const piece = grows === undefined ? undefined : (chunk.props as Record<string, string>)[grows];
    if (tail !== null && place === tail.place && grows === tail.grows && piece !== undefined) {
      tail.props[grows] += piece;
    } else {
      const props = grows === undefined ? chunk.props : { ...(chunk.props as Record<string, string>) };
      this.queue.push({ ...chunk, props, chunkId: `${this.counter}` });
      this.tail = place === null || grows === undefined ? null : { place, grows, props: props as Record<string, string> };
    }
    if (this.waiting >= this.maxBatch) this.send();
    else this.flushTimer ??= setTimeout(() => this.send(), this.flushIntervalMs);
  }

  /** Hand the queue to the sender (pushes run one after another, in order). */
  private send(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    // Cut: what is handed over is never grown again.
    this.tail = null;
    this.waiting = 0;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.sending = this.sending.then(() => this.pushBatch(batch));
    }
  }

  private armHeartbeat(): void {
    if (this.heartbeatTimer !== null) clearTimeout(this.heartbeatTimer);
    if (this.closed) return;
    this.heartbeatTimer = setTimeout(() => {
      this.sending = this.sending.then(() => this.pushBatch([]));
    }, this.heartbeatMs);
  }

  /** The stream failed: the inline asks waiting throw it now. */
  private wakeAsks(): void {
    for (const wake of this.wakes) wake.set();
  }

  private async pushBatch(chunks: ChunkInput[]): Promise<void> {
    if (this.failure !== null) return;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.client.request(PushChunksDocument, { streamId: this.streamId, chunks });
        this.armHeartbeat();
        return;
      } catch (error) {
        if (error instanceof ChatqlError) {
          this.failure = error.code === "STREAM_CLOSED" ? new StreamStopped(this.streamId) : error;
          if (error.code === "STREAM_CLOSED") this.abort.abort(this.failure);
          this.close();
          this.wakeAsks();
          return;
        }
        if (attempt + 1 >= this.retries) {
          this.failure = error;
          this.close();
          this.wakeAsks();
          return;
        }
        await sleep(Math.min(2000, 100 * 2 ** attempt));
      }
    }
  }
}
