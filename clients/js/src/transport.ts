/**
 * `ChatqlChatTransport`: the AI SDK's `ChatTransport` over chatql's own WebSocket, so
 * `useChat({ id: chatId, transport })` talks to chatql with no server code of its own.
 *
 * Sending appends the person's newest message (its `UIMessage` id is the stored
 * message's id and the append id, so a retried send appends once; its file parts are kept
 * as references to chatql files — a data URL uploaded first) and then follows the
 * agent's reply: the first stream that starts in the chat after the append, read with
 * the stream follower (a dropped socket resumes with `afterSeq`) and turned into UI
 * message chunks by {@link UIChunkMapper}. Aborting (useChat's `stop()`) calls
 * `stopStream`, and the reply ends with `abort`. `reconnectToStream` joins a reply that is
 * live now (after a reload) and answers `null` when none is.
 *
 * Files: an agent's `file` message (props `{fileId, mediaType, filename}`) is the AI SDK's
 * `file` part `{type: "file", mediaType, url}` — `url` the signed address the `file(id)`
 * query answers, as `toUIMessages` shows the stored reply (which adds `filename`) — in the
 * reply's order: the chunks after it wait for the answer ({@link fileParts}). The chunk
 * that names a file makes it readable to whoever may read the chat from the moment the
 * service accepts it (the producer must itself be able to read the file, else its push is
 * refused `NOT_FOUND`), so a file the agent uploaded under an identity of its own is a
 * file part while the reply is live. A file the query still answers `null` for (one
 * deleted meanwhile, or a `fileId` that names no file) stays a `data-file` part.
 *
 * Tool approvals: a tool call the agent marks `needsApproval` shows as a part in state
 * `approval-requested` (its approval id is the interrupt's id). After
 * `addToolApprovalResponse`, `useChat` (with `sendAutomaticallyWhen:
 * lastAssistantMessageIsCompleteWithApprovalResponses`) sends the messages ending with
 * the assistant's; the transport then decides each answered approval with
 * `resolveInterrupt` (all ids are checked first: one the chat never issued decides
 * nothing and the send fails) and follows the stream that resumes the reply (the request
 * id `<asking request id>.resume.<N>`), continuing the same assistant message: denied
 * calls first as `tool-output-denied`.
 */

import type { ChatTransport, UIMessage, UIMessageChunk } from "ai";

import type { ChatqlClient } from "./client.js";
import { StreamFollower, graphqlWsSource, type FollowerOptions, type StreamChunk, type StreamSource } from "./follower.js";
import { AppendMessagesDocument, ChatInterruptsDocument, FileDocument, ResolveInterruptDocument, StopStreamDocument } from "./generated/operations.js";
import { UIChunkMapper, fileParts } from "./ui-chunks.js";
import { uiMessageContent, withUploadedFiles } from "./ui-messages.js";

export interface ChatqlChatTransportOptions {
  /** The message type a person's message is stored as (default `user_input`). */
  readonly inputType?: string;
  /** How long `reconnectToStream` waits for the chat's live stream to show (default 1500 ms). */
  readonly reconnectWaitMs?: number;
  /** Passed to the stream follower (backoff of re-subscriptions). */
  readonly follower?: FollowerOptions;
}

function eventOf(chunk: StreamChunk): string | undefined {
  const props = chunk.props as { event?: unknown } | null;
  return chunk.type === "event" && typeof props?.event === "string" ? props.event : undefined;
}

/** Which streams a reader should show: decided from the raw chunks before they are applied. */
type Accept = (chunk: StreamChunk) => boolean;

/** A person's answer to one approval request, as the AI SDK keeps it on the tool part. */
export interface ApprovalAnswer {
  readonly id: string;
  readonly approved: boolean;
  readonly reason?: string;
}

/** The approvals a UI message answers: its tool parts in state `approval-responded`. */
export function approvalAnswers(message: UIMessage): ApprovalAnswer[] {
  const answers: ApprovalAnswer[] = [];
  for (const part of message.parts) {
    const tool = part as { state?: unknown; approval?: { id?: unknown; approved?: unknown; reason?: unknown } };
    if (tool.state !== "approval-responded" || typeof tool.approval?.id !== "string" || typeof tool.approval.approved !== "boolean") continue;
    const reason = typeof tool.approval.reason === "string" ? tool.approval.reason : undefined;
    answers.push({ id: tool.approval.id, approved: tool.approval.approved, ...(reason === undefined ? {} : { reason }) });
  }
  return answers;
}

/** The request id of the stream that resumes after the decisions on a stream asked under `requestId`. */
export function resumeRequestId(requestId: string | null | undefined): string {
  const base = requestId ?? "";
  const match = /^(.*)\.resume\.(\d+)$/.exec(base);
  return match === null ? `${base}.resume.1` : `${match[1]}.resume.${Number(match[2]) + 1}`;
}

interface Resumed {
  readonly shownCalls: readonly string[];
  readonly deniedCalls: readonly string[];
}

export class ChatqlChatTransport<UI_MESSAGE extends UIMessage = UIMessage> implements ChatTransport<UI_MESSAGE> {
  private readonly inputType: string;
  private readonly reconnectWaitMs: number;

  constructor(private readonly client: ChatqlClient, private readonly options: ChatqlChatTransportOptions = {}) {
    this.inputType = options.inputType ?? "user_input";
    this.reconnectWaitMs = options.reconnectWaitMs ?? 1500;
  }

  async sendMessages(options: Parameters<ChatTransport<UI_MESSAGE>["sendMessages"]>[0]): Promise<ReadableStream<UIMessageChunk>> {
    const { chatId, messages, abortSignal } = options;
    const last = messages[messages.length - 1];
    const approvals = options.trigger === "submit-message" && last?.role === "assistant" ? approvalAnswers(last) : [];
    if (approvals.length > 0) return this.decide(chatId, approvals, abortSignal);
    if (options.trigger === "submit-message" && (last === undefined || last.role !== "user")) {
      throw new Error("sendMessages needs the person's message last (or the assistant's answering tool approvals)");
    }
    // Follow first, so a reply that starts before the append's answer arrives is not missed;
    // only streams that start from now on count (not the snapshot of an earlier reply) —
    // and a stream that names this question as its parent (as chatql's agent loop does)
    // counts even as a snapshot: on a slow socket the reply can begin, or end, before the
    // subscription is in place.
    const question = options.trigger === "submit-message" ? last?.id : undefined;
    const seenBefore = new Set<string>();
    const answering = new Set<string>();
    const accept: Accept = (chunk) => {
      if (chunk.snapshot && !answering.has(chunk.streamId) && !seenBefore.has(chunk.streamId)) {
        const parent = eventOf(chunk) === "stream_start" ? (chunk.props as { parentId?: unknown } | null)?.parentId : undefined;
        if (question !== undefined && parent === question) answering.add(chunk.streamId);
        else seenBefore.add(chunk.streamId);
      }
      return !seenBefore.has(chunk.streamId);
    };
    const reader = this.read(chatId, accept, abortSignal);
    try {
      if (options.trigger === "submit-message" && last !== undefined) {
        // Files at the service's addresses are kept by id; data URLs are uploaded first.
        const content = await withUploadedFiles(uiMessageContent(last),
          (blob, filename, mediaType) => this.client.upload(blob, { ...(filename === undefined ? {} : { filename }), mediaType }));
        await this.client.request(AppendMessagesDocument, {
          chatId,
          appendId: `ui:${last.id}`,
          messages: [{ id: last.id, role: "USER", type: this.inputType, props: { content } }],
        });
      }
    } catch (error) {
      reader.cancel();
      throw error;
    }
    return reader.stream;
  }

  async reconnectToStream(options: Parameters<ChatTransport<UI_MESSAGE>["reconnectToStream"]>[0]): Promise<ReadableStream<UIMessageChunk> | null> {
    // A late join starts with the snapshot of the chat's current (or just ended) stream:
    // live when the snapshot has no stream_end.
    let liveStream: string | null = null;
    let decided: ((live: boolean) => void) | null = null;
    const verdict = new Promise<boolean>((resolve) => {
      decided = resolve;
    });
    const ended = new Set<string>();
    let quiet: ReturnType<typeof setTimeout> | undefined;
    const accept: Accept = (chunk) => {
      if (chunk.snapshot && eventOf(chunk) === "stream_end") {
        ended.add(chunk.streamId);
        if (liveStream === chunk.streamId) decided?.(false);
      } else if (liveStream === null && !ended.has(chunk.streamId)) {
        liveStream = chunk.streamId;
        if (!chunk.snapshot) decided?.(true);
        // The snapshot's chunks come together; quiet after them means the stream is live.
        clearTimeout(quiet);
        quiet = setTimeout(() => decided?.(true), 150);
      } else if (chunk.streamId === liveStream && !chunk.snapshot) {
        decided?.(true);
      }
      if (chunk.snapshot && chunk.streamId === liveStream) {
        clearTimeout(quiet);
        quiet = setTimeout(() => decided?.(true), 150);
      }
      return chunk.streamId === liveStream && !ended.has(chunk.streamId);
    };
    const reader = this.read(options.chatId, accept, options.abortSignal);
    const timer = setTimeout(() => decided?.(false), this.reconnectWaitMs);
    const live = await verdict;
    clearTimeout(timer);
    clearTimeout(quiet);
    if (!live) {
      reader.cancel();
      return null;
    }
    return reader.stream;
  }

  /** Decides the answered approvals and follows the reply that resumes after them. */
  private async decide(chatId: string, answers: readonly ApprovalAnswer[], abortSignal: AbortSignal | undefined): Promise<ReadableStream<UIMessageChunk>> {
    const asked = (await this.client.request(ChatInterruptsDocument, { id: chatId })).chat?.interrupts ?? [];
    const byId = new Map(asked.map((interrupt) => [interrupt.id, interrupt]));
    for (const answer of answers) {
      if (byId.get(answer.id)?.kind !== "TOOL_APPROVAL") throw new Error(`approval ${answer.id} was never requested in chat ${chatId}`);
    }
    const callOf = (id: string): string => byId.get(id)?.toolCallId ?? id;
    const resumed: Resumed = {
      shownCalls: answers.map((answer) => callOf(answer.id)),
      deniedCalls: answers.filter((answer) => !answer.approved).map((answer) => callOf(answer.id)),
    };
    // Follow first: the resumed stream may start as soon as the last decision is made.
    const expected = resumeRequestId(byId.get(answers[0]?.id ?? "")?.requestId);
    const resuming = new Set<string>();
    const accept: Accept = (chunk) => {
      if (eventOf(chunk) === "stream_start" && (chunk.props as { requestId?: unknown } | null)?.requestId === expected) resuming.add(chunk.streamId);
      return resuming.has(chunk.streamId);
    };
    const reader = this.read(chatId, accept, abortSignal, resumed);
    try {
      for (const answer of answers) {
        await this.client.request(ResolveInterruptDocument, { id: answer.id, approved: answer.approved, reason: answer.reason ?? null });
      }
      const pending = (await this.client.request(ChatInterruptsDocument, { id: chatId, state: "PENDING" })).chat?.interrupts ?? [];
      if (pending.length > 0) {
        // Nothing resumes until every approval of the reply is decided.
        reader.cancel();
        const mapper = new UIChunkMapper();
        const chunks = [...mapper.resuming(resumed.shownCalls, resumed.deniedCalls), ...mapper.end("completed")];
        return new ReadableStream<UIMessageChunk>({
          start(controller) {
            for (const chunk of chunks) controller.enqueue(chunk);
            controller.close();
          },
        });
      }
    } catch (error) {
      reader.cancel();
      throw error;
    }
    return reader.stream;
  }

  /** Follows the chat and turns the first accepted stream into UI message chunks. */
  private read(chatId: string, accept: Accept, abortSignal: AbortSignal | undefined, resumed?: Resumed): { stream: ReadableStream<UIMessageChunk>; cancel: () => void } {
    const socketSource = graphqlWsSource(this.client.socket());
    let reply: string | null = null;
    const source: StreamSource = {
      subscribe: (id, afterSeq, sink) =>
        socketSource.subscribe(id, afterSeq, {
          next: (chunk) => {
            if (reply === null && accept(chunk)) reply = chunk.streamId;
            if (chunk.streamId === reply) sink.next(chunk);
          },
          error: (error) => sink.error(error),
          complete: () => sink.complete(),
        }),
    };
    const follower = new StreamFollower(chatId, source, this.options.follower);
    const mapper = new UIChunkMapper();
    let unsubscribe = (): void => undefined;
    let closed = false;
    const finish = (): void => {
      if (closed) return;
      closed = true;
      unsubscribe();
      follower.stop();
      abortSignal?.removeEventListener("abort", onAbort);
    };
    let controller: ReadableStreamDefaultController<UIMessageChunk> | null = null;
    const onAbort = (): void => {
      if (closed) return;
      void this.client.request(StopStreamDocument, { chatId }).catch(() => undefined);
      for (const chunk of mapper.end("interrupted")) controller?.enqueue(chunk);
      finish();
      controller?.close();
    };
    const stream = new ReadableStream<UIMessageChunk>({
      start: (c) => {
        controller = c;
        if (resumed !== undefined) for (const chunk of mapper.resuming(resumed.shownCalls, resumed.deniedCalls)) c.enqueue(chunk);
        unsubscribe = follower.subscribe((state) => {
          if (closed || state.streamId === null || state.streamId !== reply) return;
          if (state.error) {
            c.error(state.error);
            finish();
            return;
          }
          for (const chunk of mapper.update(state.messages)) c.enqueue(chunk);
          if (state.status !== "live" && state.status !== "idle") {
            // A failed reply says what the agent said went wrong, as /ai/chat does.
            for (const chunk of mapper.end(state.status, state.failure ?? undefined)) c.enqueue(chunk);
            finish();
            c.close();
          }
        });
        if (abortSignal?.aborted) onAbort();
        else abortSignal?.addEventListener("abort", onAbort);
      },
      cancel: () => finish(),
    });
    follower.start();
    // Agents' files at their signed addresses, in order (a file the person may not read stays a data part).
    const files = fileParts(async (id) => (await this.client.request(FileDocument, { id })).file);
    return { stream: stream.pipeThrough(files), cancel: finish };
  }
}
