/**
 * A chat's active branch as the app shows it: the stored messages (with their versions)
 * paged backwards, and the chat's details (title, pin, tags, usage). State lives in the
 * hooks' stores; components only read it and ask for a reload after a write.
 */
import type { ChatListEvent, ChatqlClient } from "@chatql/client";
import { startTransition, useCallback, useEffect, useRef, useState } from "react";

import { run } from "./api";
import { useSharedChatEvents } from "./events";

import { ChatDetailsDocument, PinnedChatsDocument, ThreadDocument, type ChatDetailsQuery, type PinnedChatsQuery, type ThreadMessageFragment } from "./generated/operations";

export type ThreadMessage = ThreadMessageFragment;
export type ChatDetails = NonNullable<ChatDetailsQuery["chat"]>;

export interface Thread {
  /** Oldest first, along the active branch. */
  readonly messages: readonly ThreadMessage[];
  readonly hasOlder: boolean;
  readonly loading: boolean;
  readonly error: Error | null;
}

const PAGE = 50;

/**
 * The messages read again, each one unchanged since the last read being the object read
 * then: the messages are memoised on them, so a read after an answer ends draws only what
 * changed (the answer), not the whole chat again.
 */
function sameAsBefore(read: readonly ThreadMessage[], before: readonly ThreadMessage[]): readonly ThreadMessage[] {
  const known = new Map(before.map((message) => [message.id, message]));
  return read.map((message) => {
    const old = known.get(message.id);
    return old && JSON.stringify(old) === JSON.stringify(message) ? old : message;
  });
}

export function useThread(client: ChatqlClient, chatId: string) {
  const [thread, setThread] = useState<Thread>({ messages: [], hasOlder: true, loading: true, error: null });
  const cursor = useRef<string | null>(null);
  const generation = useRef(0);
  const busy = useRef(false);
  const shown = useRef(false);

  const page = useCallback(async (fresh: boolean): Promise<readonly ThreadMessage[]> => {
    if (busy.current && !fresh) return [];
    busy.current = true;
    const mine = fresh ? ++generation.current : generation.current;
    setThread((state) => ({ ...state, loading: true }));
    try {
      const data = await run(client, ThreadDocument, { chatId, last: PAGE, before: fresh ? null : cursor.current });
      if (mine !== generation.current) return [];
      const nodes = data.messages.edges.map((edge) => edge.node);
      cursor.current = data.messages.pageInfo.startCursor ?? cursor.current;
      const show = () => setThread((state) => ({
        messages: fresh ? sameAsBefore(nodes, state.messages) : [...nodes, ...state.messages],
        hasOlder: data.messages.pageInfo.hasPreviousPage,
        loading: false,
        error: null,
      }));
      // A chat's first page of rendered markdown is a lot of work: as a transition, React
      // draws it in slices, so typing, scrolling and a live answer never wait on it.
      // Later reads (after an edit, a switch) apply at once: focus follows them.
      if (shown.current) show();
      else startTransition(show);
      shown.current = true;
      return nodes;
    } catch (error) {
      // No paging on after a failed read (a chat that is gone would be asked again and again).
      if (mine === generation.current) setThread((state) => ({ ...state, hasOlder: false, loading: false, error: error as Error }));
      return [];
    } finally {
      if (mine === generation.current) busy.current = false;
    }
  }, [client, chatId]);

  useEffect(() => {
    void page(true);
  }, [page]);

  const reload = useCallback(() => page(true), [page]);
  const loadOlder = useCallback(() => page(false), [page]);
  return { ...thread, reload, loadOlder };
}

/** The chat's details; `missing` once the server says there is no such chat (or it is in the trash). */
export function useChatDetails(client: ChatqlClient, chatId: string) {
  const [details, setDetails] = useState<ChatDetails | null>(null);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const reload = useCallback(async () => {
    try {
      const data = await run(client, ChatDetailsDocument, { id: chatId });
      if (data.chat === null) setMissing(true);
      else setDetails(data.chat);
    } catch (caught) {
      const code = (caught as { code?: string }).code;
      if (code === "NOT_FOUND" || code === "FORBIDDEN") setMissing(true);
      else setError(caught as Error);
    }
  }, [client, chatId]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { details, missing, error, reload };
}

export type PinnedChat = PinnedChatsQuery["chats"]["edges"][number]["node"];

const PINNED_PAGE = 50;

/**
 * Whether a `chatEvents` event may change the pinned chats shown (which, their titles, their
 * order). A stream starting or ending and an interrupt asked or decided change none of them
 * (the messages a stream's end stores come as MESSAGES); new messages change only a chat
 * in the list (its title, its place) — or one past a full page, which may move into it.
 */
export function mayChangePinned(event: ChatListEvent, pinned: readonly PinnedChat[]): boolean {
  switch (event.type) {
    case "STREAM_STARTED":
    case "STREAM_ENDED":
    case "INTERRUPT_REQUESTED":
    case "INTERRUPT_RESOLVED":
      return false;
    case "MESSAGES":
      return pinned.length >= PINNED_PAGE || pinned.some((chat) => chat.id === event.chatId);
    default:
      return true;
  }
}

/**
 * The pinned chats, read again on `revision` and on the changes to the person's chats
 * (`chatEvents`) that may change them (`mayChangePinned`): not while an answer in another
 * chat starts, streams and ends.
 */
export function usePinnedChats(client: ChatqlClient, revision: number): readonly PinnedChat[] {
  const [chats, setChats] = useState<readonly PinnedChat[]>([]);
  const [changes, setChanges] = useState(0);
  const shown = useRef(chats);
  shown.current = chats;
  useSharedChatEvents(client, (event) => {
    if (mayChangePinned(event, shown.current)) setChanges((count) => count + 1);
  });
  useEffect(() => {
    let current = true;
    // Several events at once (a chat renamed and its messages) read the list once.
    const timer = setTimeout(() => {
      run(client, PinnedChatsDocument, { first: PINNED_PAGE })
        .then((data) => current && setChats(data.chats.edges.map((edge) => edge.node)))
        .catch(() => undefined);
    }, changes === 0 ? 0 : 150);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [client, revision, changes]);
  return chats;
}
