import { AppendMessagesDocument, DeleteChatDocument, StopStreamDocument, type ChatqlClient, type MessageState } from "@chatql/client";
import { useDeferredValue, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";

import type { Place } from "../App";
import type { FilesConfig } from "../config";
import { composeContent, contentText, run, uploader, withText, writeId, type UploadedFile } from "../api";
import { downloadExport } from "../export";
import { useChatInterrupts, type DecisionInput, type InterruptInfo } from "../interrupts";
import { useShownStream } from "../live";
import { EditMessageDocument, RateMessageDocument, ResolveInterruptDocument, RegenerateDocument, ShareChatDocument, StartOverDocument, SwitchBranchDocument } from "../generated/operations";
import { useChatDetails, useThread, type ChatDetails, type ThreadMessage } from "../thread";
import { useToast } from "../toast";
import { ChatHeader } from "./ChatHeader";
import { Composer } from "./Composer";
import { copyText } from "./Markdown";
import { MessageList } from "./MessageList";
import { Busy, type MessageActions, type Rating, type Shown } from "./MessageView";

export const MISSING_CHAT = "This chat does not exist or was deleted.";

function fromStored(message: ThreadMessage, roles: ReadonlyMap<string, string>): Shown {
  return {
    ...message,
    props: (message.props ?? {}) as Record<string, unknown>,
    answerStart: message.role !== "USER" && message.parentId !== null && roles.get(message.parentId) === "USER",
    feedback: message.myFeedback?.rating ?? null,
  };
}

function fromLive(message: MessageState, streamStatus: string): Shown {
  // Until the stored copy is read back, an ended stream's messages carry its status.
  const status = streamStatus === "interrupted" ? "INTERRUPTED" : streamStatus === "failed" ? "FAILED" : null;
  return { ...message, status, createdAt: null, siblings: null, answerStart: false, feedback: null };
}

interface ChatViewProps {
  client: ChatqlClient;
  chatId: string;
  focusMessageId: string | null;
  headers: Readonly<Record<string, string>>;
  /** What files the server takes (its page config). */
  filesConfig: FilesConfig;
  onGo: (place: Place) => void;
  /** The menu button that opens the chat list (narrow screens). */
  menu: ReactNode;
  /** The first message, just sent from the new-chat view (shown until it is read back). */
  first: Shown | null;
  onPinned: () => void;
  onDeleted: (chatId: string) => void;
  /** An interrupt of the chat was decided here (the inbox reads itself again). */
  onDecided?: () => void;
}

/**
 * One chat: its header, the conversation along the active branch with the live answer, the
 * composer. A chat that does not exist (or is in the trash) is said so once, and nothing
 * more is asked of the server for it.
 */
export function ChatView(props: ChatViewProps) {
  const chat = useChatDetails(props.client, props.chatId);
  if (chat.missing) {
    return (
      <>
        <header className="flex h-14 shrink-0 items-center gap-2 px-3">{props.menu}</header>
        <div className="flex flex-1 flex-col items-center justify-center gap-3 px-4 text-center">
          <p role="alert" className="text-lg font-medium">{MISSING_CHAT}</p>
          <button type="button" className="cursor-pointer text-blue-700 underline underline-offset-2 dark:text-blue-300"
            onClick={() => props.onGo({ chatId: null, messageId: null, trash: false })}>Start a new chat</button>
        </div>
      </>
    );
  }
  return <ChatBody {...props} chat={chat} />;
}

function ChatBody({ client, chatId, focusMessageId, headers, filesConfig, onGo, menu, first, onPinned, onDeleted, onDecided, chat }: ChatViewProps & {
  chat: { details: ChatDetails | null; error: Error | null; reload: () => Promise<void> };
}) {
  const thread = useThread(client, chatId);
  // A stream's start is drawn with its first words when they follow at once (../live.ts).
  const live = useShownStream(client, chatId);
  const toast = useToast();
  const [stopping, setStopping] = useState(false);
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState<Shown | null>(first);
  const scroller = useRef<HTMLDivElement>(null);
  const composer = useRef<HTMLTextAreaElement>(null);
  // The answer's words first, then (a render of lower priority, right after) Stop in the
  // composer and the buttons the stream makes busy: its first words are not drawn behind them.
  const streaming = useDeferredValue(live.status === "live" && live.streamId !== null);
  const upload = useMemo(() => uploader(headers, filesConfig), [headers, filesConfig]);
  // What the chat's streams asked a person: read with the thread, when a stream ends, when
  // a streamed message asks (a tool call needing approval, a question), and on the chat's
  // interrupt events (not when a stream starts: nothing has asked yet, and the read would
  // delay the answer's first words on the server).
  const asking = live ? [...live.messages.values()].filter((m) => m.type === "question" || m.props.needsApproval === true).map((m) => m.id).join(",") : "";
  const ended = useRef("");
  if (live && live.status !== "live" && live.status !== "idle") ended.current = `${live.streamId ?? ""}:${live.status}`;
  const interrupts = useChatInterrupts(client, chatId, `${thread.messages.length}|${thread.messages[thread.messages.length - 1]?.id ?? ""}|${ended.current}|${asking}`);

  // When a stream ends its messages are in the database: read them from there (again,
  // briefly, while the write that ended the stream is not visible yet).
  const lastStatus = useRef(live?.status);
  const [pendingReload, setPendingReload] = useState(0);
  useEffect(() => {
    const before = lastStatus.current;
    lastStatus.current = live?.status;
    if (before === "live" && live?.status !== "live") {
      setStopping(false);
      setPendingReload(5);
      void chat.reload();
    }
  }, [live?.status, chat]);
  useEffect(() => {
    if (pendingReload === 0 || thread.loading || !live) return;
    const have = new Set(thread.messages.map((m) => m.id));
    const missing = [...live.messages.keys()].some((id) => !have.has(id));
    if (!missing && pendingReload < 5) {
      setPendingReload(0);
      // The answer is stored now, and its usage with it.
      void chat.reload();
      return;
    }
    const timer = setTimeout(() => {
      setPendingReload(pendingReload - 1);
      void thread.reload();
    }, pendingReload === 5 ? 0 : 300);
    return () => clearTimeout(timer);
  }, [pendingReload, thread, live, chat]);

  const [ratings, setRatings] = useState<ReadonlyMap<string, Rating | null>>(() => new Map());
  // The stored messages as shown, made once per read (not on every streamed delta), so
  // the messages above a streaming answer are not drawn again; a message read again
  // unchanged (the same object) is shown as the same object too.
  const made = useRef(new WeakMap<ThreadMessage, Shown>());
  const storedShown = useMemo(() => {
    const roles = new Map(thread.messages.map((m) => [m.id, m.role]));
    return thread.messages.map((m) => {
      let message = fromStored(m, roles);
      if (ratings.has(m.id)) message = { ...message, feedback: ratings.get(m.id) ?? null };
      const before = made.current.get(m);
      if (before && before.answerStart === message.answerStart && before.feedback === message.feedback) return before;
      made.current.set(m, message);
      return message;
    });
  }, [thread.messages, ratings]);
  const storedIds = new Set(storedShown.map((m) => m.id));
  const shown: Shown[] = [...storedShown];
  const shownBeforeLive = shown.length;
  // The live answer until its stored copy is read back (another branch shown later never
  // shows an old stream's messages).
  if (live && (live.status === "live" || pendingReload > 0)) {
    // The person's question rides in stream_start when a producer sends it: shown at once.
    if (live.input && !storedIds.has(live.input.id)) shown.push(fromLive(live.input, live.status));
    for (const message of live.messages.values()) if (!storedIds.has(message.id)) shown.push(fromLive(message, live.status));
  }
  // The person's message as sent, until the stored thread has it: the thread is read again
  // once the answer ends (or soon, when none starts), so the send itself costs one write —
  // the agent's answer does not queue behind a re-read.
  if (sent && !storedIds.has(sent.id)) shown.splice(shownBeforeLive, 0, sent);
  const leaf = thread.messages[thread.messages.length - 1];
  const awaiting = !streaming && (leaf?.role === "USER" || (sent !== null && !storedIds.has(sent.id))) && pendingReload === 0;

  // A search hit: page back until it is on screen; a hit on another branch switches to it.
  const [focusId, setFocusId] = useState<string | null>(focusMessageId);
  const jumped = useRef(false);
  // Another message of this chat asked for (an inbox entry): jump to it.
  const askedFocus = useRef(focusMessageId);
  useEffect(() => {
    if (focusMessageId === askedFocus.current) return;
    askedFocus.current = focusMessageId;
    if (focusMessageId) {
      jumped.current = false;
      setFocusId(focusMessageId);
    }
  }, [focusMessageId]);
  useEffect(() => {
    if (!focusId || jumped.current || thread.loading) return;
    const element = document.getElementById(`message-${focusId}`);
    if (element) {
      jumped.current = true;
      element.scrollIntoView({ block: "center" });
      element.focus();
      return;
    }
    if (thread.error) {
      jumped.current = true;
    } else if (thread.hasOlder) {
      void thread.loadOlder();
    } else if (thread.messages.length > 0) {
      jumped.current = true;
      void (async () => {
        try {
          await run(client, SwitchBranchDocument, { chatId, leafId: focusId });
          jumped.current = false;
          await thread.reload();
        } catch (error) {
          toast.fail(error);
        }
      })();
    }
  }, [focusId, thread, client, chatId, toast]);

  // History paged back on scroll, keeping the messages in view where they were.
  const keep = useRef<{ height: number; top: number } | null>(null);
  const onScroll = () => {
    const element = scroller.current;
    if (!element || thread.loading || !thread.hasOlder) return;
    if (element.scrollTop < 40) {
      keep.current = { height: element.scrollHeight, top: element.scrollTop };
      void thread.loadOlder();
    }
  };
  const atBottom = useRef(true);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    if (keep.current) {
      element.scrollTop = element.scrollHeight - keep.current.height + keep.current.top;
      keep.current = null;
    } else if (atBottom.current && !focusId && pinning.current === 0) {
      // Kept at the bottom just before the next frame is drawn: setting it here would
      // make the browser lay the page out on every streamed delta.
      pinning.current = requestAnimationFrame(() => {
        pinning.current = 0;
        if (atBottom.current) element.scrollTop = element.scrollHeight;
      });
    }
  });
  const pinning = useRef(0);
  useEffect(() => () => cancelAnimationFrame(pinning.current), []);
  const trackBottom = () => {
    const element = scroller.current;
    if (element) atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
  };

  const attempt = async (work: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    try {
      await work();
      return true;
    } catch (error) {
      toast.fail(error);
      return false;
    } finally {
      setBusy(false);
    }
  };

  // The question is on screen in the frame that answers Enter, under an id made here, and
  // its append goes out in the same task; its reply changes nothing on screen (a failed
  // one takes the question back). So nothing is drawn between Enter and the answer's
  // start but what the answer itself brings: the page does not compete with the server
  // and the agent for the CPU while they start the answer.
  const send = async (text: string, files: readonly UploadedFile[]): Promise<boolean> => {
    const content = composeContent(text, files);
    const id = writeId();
    const message: Shown = { id, type: "user_input", role: "USER", props: { content }, blockId: null, threadId: null, status: null,
      createdAt: new Date().toISOString(), siblings: null, answerStart: false, sending: true, feedback: null };
    const appended = client.request(AppendMessagesDocument, {
      chatId, appendId: writeId(), messages: [{ id, role: "USER", type: "user_input", props: { content } }],
    });
    setSent(message);
    setFocusId(null);
    atBottom.current = true;
    setNaming(text);
    try {
      await appended;
      return true;
    } catch (error) {
      setSent((shown) => (shown === message ? null : shown));
      setNaming(null);
      toast.fail(error);
      return false;
    }
  };
  // The service names an untitled chat from its first message (and an agent may name it
  // better): once the answer's first words are on screen (or soon, when none comes), the
  // chat's details are read again so the header shows that name.
  const [naming, setNaming] = useState<string | null>(first ? textOfFirst(first) : null);
  const answering = live !== null && live.messages.size > 0;
  const details = useRef(chat);
  details.current = chat;
  useEffect(() => {
    if (naming === null) return;
    const name = () => {
      setNaming(null);
      void details.current.reload().catch((error: unknown) => toast.fail(error));
    };
    if (answering) {
      // Just after the task that put the first words on screen, not in it.
      const timer = setTimeout(name);
      return () => clearTimeout(timer);
    }
    const timer = setTimeout(name, 1000);
    return () => clearTimeout(timer);
  }, [naming, answering, toast]);
  // No answer started soon after a send: read the thread anyway (the question, stored).
  useEffect(() => {
    if (!sent || storedIds.has(sent.id) || streaming || pendingReload > 0) return;
    const timer = setTimeout(() => void thread.reload(), 1500);
    return () => clearTimeout(timer);
  });

  const stop = async () => {
    setStopping(true);
    if (!(await attempt(() => client.request(StopStreamDocument, { chatId })))) setStopping(false);
  };

  const handlers: Omit<MessageActions, "busy" | "assistant" | "interrupts" | "decide"> & {
    decide(interrupt: InterruptInfo, decision: DecisionInput): Promise<boolean>;
  } = {
    edit: (message, content) => attempt(async () => {
      await run(client, EditMessageDocument, { id: message.id, input: { props: { ...message.props, content: withText(message.props.content, content) } }, appendId: writeId() });
      setFocusId(null);
      await thread.reload();
      composer.current?.focus();
    }),
    pickVersion: (message, index) => {
      const target = message.siblings?.ids[index];
      if (!target) return;
      void attempt(async () => {
        await run(client, SwitchBranchDocument, { chatId, leafId: target });
        // Another branch: an ended answer is no longer awaited on screen.
        setPendingReload(0);
        setFocusId(null);
        await thread.reload();
        // Focus stays on the switcher of the version now shown.
        setTimeout(() => document.querySelector<HTMLElement>(`[data-versions-of="${CSS.escape(target)}"] button:not([disabled])`)?.focus());
      });
    },
    regenerate: (message) => {
      const question = message.parentId;
      if (!question) return;
      void attempt(async () => {
        // The question becomes the active leaf again: the agent answers it anew, and the
        // new answer is a sibling of this one (‹ › between them once it is stored).
        await run(client, RegenerateDocument, { messageId: question });
        setPendingReload(0);
        setFocusId(null);
        atBottom.current = true;
        await thread.reload();
        composer.current?.focus();
      });
    },
    copy: (text) => void copyText(text, toast.notify),
    rate: (message, rating) => {
      setRatings((current) => new Map(current).set(message.id, rating));
      void run(client, RateMessageDocument, { messageId: message.id, rating }).catch((error: unknown) => {
        setRatings((current) => {
          const next = new Map(current);
          next.delete(message.id);
          return next;
        });
        toast.fail(error);
      });
    },
    share: (message) => void share(message.id),
    decide: (interrupt, decision) => attempt(async () => {
      const data = await run(client, ResolveInterruptDocument, { id: interrupt.id, decisionId: writeId(), ...decision });
      interrupts.update(data.resolveInterrupt);
      onDecided?.();
    }),
  };
  // A streamed message that asks is matched to its interrupt by its id, or (while its
  // stored copy is not read yet) by the tool call's id or the question's prompt.
  const liveAsking = shown.filter((m) => m.createdAt === null && (m.type === "question" || m.props.needsApproval === true));
  const liveKey = liveAsking.map((m) => m.id).join(",");
  const shownInterrupts = useMemo(() => {
    const missing = liveAsking.filter((m) => !interrupts.byMessage.has(m.id));
    if (missing.length === 0) return interrupts.byMessage;
    const all = new Map(interrupts.byMessage);
    const candidates = [...interrupts.byMessage.values()].filter((i) => !storedIds.has(i.messageId));
    for (const message of missing) {
      const found = candidates.find((i) => message.type === "question"
        ? i.kind === "INPUT" && i.prompt === message.props.prompt
        : i.kind === "TOOL_APPROVAL" && i.toolCallId === message.props.id);
      if (found) all.set(message.id, found);
    }
    return all;
  }, [interrupts.byMessage, liveKey, thread.messages]);
  // One actions object while the chat is not renamed: the messages, memoised on it, are not
  // drawn again for every streamed delta, nor as an answer starts and ends (whether writes
  // wait is the `Busy` context, read by the buttons it disables); each call goes to this
  // render's handlers.
  const latest = useRef(handlers);
  latest.current = handlers;
  const disabled = busy || streaming;
  const assistant = chat.details?.assistantId ?? "Assistant";
  const actions = useMemo<MessageActions>(() => ({
    assistant,
    edit: (message, content) => latest.current.edit(message, content),
    pickVersion: (message, index) => latest.current.pickVersion(message, index),
    regenerate: (message) => latest.current.regenerate(message),
    copy: (text) => latest.current.copy(text),
    rate: (message, rating) => latest.current.rate(message, rating),
    share: (message) => latest.current.share(message),
    interrupts: shownInterrupts,
    decide: (interrupt: InterruptInfo, decision: DecisionInput) => latest.current.decide(interrupt, decision),
  }), [assistant, shownInterrupts]);

  const startOver = () => attempt(async () => {
    await run(client, StartOverDocument, { chatId });
    await thread.reload();
  }).then(() => undefined);
  const remove = () => attempt(async () => {
    await client.request(DeleteChatDocument, { id: chatId });
    onDeleted(chatId);
    toast.notify("Moved to the trash.");
    onGo({ chatId: null, messageId: null, trash: false });
  }).then(() => undefined);
  const share = (messageId: string | null) => attempt(async () => {
    const data = await run(client, ShareChatDocument, { chatId, messageId });
    const url = new URL(data.shareChat.url ?? "", location.href).toString();
    try {
      await navigator.clipboard.writeText(url);
      toast.notify(`Share link copied: ${url}`);
    } catch {
      toast.notify(`Share link: ${url}`);
    }
  }).then(() => undefined);
  const exportChat = () => attempt(() => downloadExport(chatId, headers)).then(() => undefined);

  useEffect(() => {
    if (!focusMessageId) composer.current?.focus();
  }, [focusMessageId]);

  // The header's and the composer's callbacks, the same functions from render to render
  // (each calls this render's): with them memoised, a streamed delta draws neither again.
  const current = useRef({ startOver, remove, share, exportChat, send, stop });
  current.current = { startOver, remove, share, exportChat, send, stop };
  const stable = useMemo(() => ({
    startOver: () => current.current.startOver(),
    remove: () => current.current.remove(),
    shareChat: () => current.current.share(null),
    exportChat: () => current.current.exportChat(),
    send: (text: string, files: readonly UploadedFile[]) => current.current.send(text, files),
    stop: () => void current.current.stop(),
  }), []);

  return (
    <>
      {chat.details ? (
        <ChatHeader client={client} chat={chat.details} menu={menu} streaming={streaming} onChanged={chat.reload} onPinned={onPinned}
          onStartOver={stable.startOver} onExport={stable.exportChat} onShare={stable.shareChat} onDelete={stable.remove} />
      ) : (
        <header className="flex h-14 shrink-0 items-center gap-2 border-b border-zinc-200 px-3 dark:border-zinc-800">{menu}</header>
      )}
      {chat.error && <p role="alert" className="px-4 py-2 text-sm text-red-700 dark:text-red-300">{chat.error.message}</p>}
      {thread.error && <p role="alert" className="px-4 py-2 text-sm text-red-700 dark:text-red-300">{thread.error.message}</p>}
      {live?.error && <p role="alert" className="px-4 py-2 text-sm text-red-700 dark:text-red-300">{live.error.message}</p>}
      <div ref={scroller} onScroll={() => { trackBottom(); onScroll(); }} aria-label="Messages" role="log" tabIndex={0}
        className="min-h-0 flex-1 overflow-y-auto focus-visible:outline-none">
        <div className="mx-auto flex w-full max-w-3xl flex-col gap-5 px-4 py-6">
          {thread.loading && <p className="text-center text-sm text-zinc-600 dark:text-zinc-400">Loading messages…</p>}
          {!thread.hasOlder && thread.messages.length > 0 && (
            <p className="text-center text-xs text-zinc-600 dark:text-zinc-400">Start of the conversation</p>
          )}
          <Busy value={disabled}>
            <MessageList messages={shown} actions={actions} focusId={focusId} />
          </Busy>
          {awaiting && <p className="text-sm text-zinc-600 dark:text-zinc-400" role="status">Waiting for {actions.assistant} to answer…</p>}
        </div>
      </div>
      <Composer ref={composer} streaming={streaming} stopping={stopping} onSend={stable.send} onStop={stable.stop} upload={upload} />
    </>
  );
}

function textOfFirst(message: Shown): string {
  return contentText(message.props.content);
}
