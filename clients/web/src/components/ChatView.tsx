import { AppendMessagesDocument, DeleteChatDocument, StopStreamDocument, type ChatqlClient, type MessageState } from "@chatql/client";
import { useChatStream } from "@chatql/client/react";
import { useEffect, useLayoutEffect, useRef, useState } from "react";

import type { Place } from "../App";
import { run, writeId } from "../api";
import { downloadExport } from "../export";
import { EditMessageDocument, RegenerateDocument, StartOverDocument, SwitchBranchDocument } from "../generated/operations";
import { useChatDetails, useThread, type ThreadMessage } from "../thread";
import { ChatHeader } from "./ChatHeader";
import { Composer } from "./Composer";
import { MessageList } from "./MessageList";
import type { MessageActions, Shown } from "./MessageView";

function fromStored(message: ThreadMessage, roles: ReadonlyMap<string, string>): Shown {
  return {
    ...message,
    props: (message.props ?? {}) as Record<string, unknown>,
    answerStart: message.role !== "USER" && message.parentId !== null && roles.get(message.parentId) === "USER",
  };
}

function fromLive(message: MessageState, streamStatus: string): Shown {
  // Until the stored copy is read back, an ended stream's messages carry its status.
  const status = streamStatus === "interrupted" ? "INTERRUPTED" : streamStatus === "failed" ? "FAILED" : null;
  return { ...message, status, createdAt: null, siblings: null, answerStart: false };
}

/** One chat: its header, the conversation along the active branch with the live answer, the composer. */
export function ChatView({ client, chatId, focusMessageId, headers, onGo }: {
  client: ChatqlClient;
  chatId: string;
  focusMessageId: string | null;
  headers: Readonly<Record<string, string>>;
  onGo: (place: Place) => void;
}) {
  const chat = useChatDetails(client, chatId);
  const thread = useThread(client, chatId);
  const { state: live } = useChatStream(client, chatId);
  const [stopping, setStopping] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [sent, setSent] = useState<Shown | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const composer = useRef<HTMLTextAreaElement>(null);
  const streaming = live?.status === "live" && live.streamId !== null;

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
      return;
    }
    const timer = setTimeout(() => {
      setPendingReload(pendingReload - 1);
      void thread.reload();
    }, pendingReload === 5 ? 0 : 300);
    return () => clearTimeout(timer);
  }, [pendingReload, thread, live]);

  const roles = new Map(thread.messages.map((m) => [m.id, m.role]));
  const storedIds = new Set(roles.keys());
  const shown: Shown[] = thread.messages.map((m) => fromStored(m, roles));
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
  useEffect(() => {
    if (!focusId || jumped.current || thread.loading) return;
    const element = document.getElementById(`message-${focusId}`);
    if (element) {
      jumped.current = true;
      element.scrollIntoView({ block: "center" });
      element.focus();
      return;
    }
    if (thread.hasOlder) {
      void thread.loadOlder();
    } else if (thread.messages.length > 0) {
      jumped.current = true;
      void (async () => {
        try {
          await run(client, SwitchBranchDocument, { chatId, leafId: focusId });
          jumped.current = false;
          await thread.reload();
        } catch (error) {
          setProblem((error as Error).message);
        }
      })();
    }
  }, [focusId, thread, client, chatId]);

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
    setProblem(null);
    setBusy(true);
    try {
      await work();
      return true;
    } catch (error) {
      setProblem((error as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  };

  const send = (content: string) => attempt(async () => {
    const data = await client.request(AppendMessagesDocument, {
      chatId, appendId: writeId(),
      messages: [{ role: "USER", type: "user_input", props: { content } }],
    });
    const id = data.appendMessages.messageIds[0] ?? writeId();
    setSent({ id, type: "user_input", role: "USER", props: { content }, blockId: null, threadId: null, status: null,
      createdAt: new Date().toISOString(), siblings: null, answerStart: false, sending: true });
    setFocusId(null);
    atBottom.current = true;
    setNaming(content);
  });
  // The service names an untitled chat from its first message (and an agent may name it
  // better): once the answer's first words are on screen (or soon, when none comes), the
  // chat's details are read again so the header shows that name.
  const [naming, setNaming] = useState<string | null>(null);
  const answering = live !== null && live.messages.size > 0;
  const details = useRef(chat);
  details.current = chat;
  useEffect(() => {
    if (naming === null) return;
    const name = () => {
      setNaming(null);
      void details.current.reload().catch((error: unknown) => setProblem((error as Error).message));
    };
    if (answering) {
      name();
      return;
    }
    const timer = setTimeout(name, 1000);
    return () => clearTimeout(timer);
  }, [naming, answering]);
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

  const actions: MessageActions = {
    busy: busy || streaming,
    assistant: chat.details?.assistantId ?? "Assistant",
    edit: (message, content) => attempt(async () => {
      await run(client, EditMessageDocument, { id: message.id, input: { props: { ...message.props, content } }, appendId: writeId() });
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
        setTimeout(() => document.querySelector<HTMLElement>(`#message-${CSS.escape(target)} [aria-label="Versions"] button:not([disabled])`)?.focus());
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
  };

  const startOver = () => attempt(async () => {
    await run(client, StartOverDocument, { chatId });
    await thread.reload();
  }).then(() => undefined);
  const remove = () => attempt(async () => {
    await client.request(DeleteChatDocument, { id: chatId });
    onGo({ chatId: null, messageId: null, trash: false });
  }).then(() => undefined);
  const exportChat = () => attempt(() => downloadExport(chatId, headers)).then(() => undefined);

  useEffect(() => {
    if (!focusMessageId) composer.current?.focus();
  }, [focusMessageId]);

  return (
    <>
      {chat.details && (
        <ChatHeader client={client} chat={chat.details} streaming={streaming} onChanged={chat.reload}
          onStartOver={startOver} onExport={exportChat} onDelete={remove} />
      )}
      {chat.error && <p role="alert">{chat.error.message}</p>}
      {problem && <p role="alert">{problem}</p>}
      {thread.error && <p role="alert">{thread.error.message}</p>}
      {live?.error && <p role="alert">{live.error.message}</p>}
      <div className="messages" ref={scroller} onScroll={() => { trackBottom(); onScroll(); }} aria-label="Messages" role="log" tabIndex={0}>
        {thread.loading && <p className="loading">Loading messages…</p>}
        {!thread.hasOlder && thread.messages.length > 0 && <p className="start">Start of the conversation</p>}
        <MessageList messages={shown} actions={actions} focusId={focusId} />
        {awaiting && <p className="waiting" role="status">Waiting for {actions.assistant} to answer…</p>}
      </div>
      <Composer ref={composer} streaming={streaming} stopping={stopping} onSend={send} onStop={() => void stop()} />
    </>
  );
}
