/**
 * React hooks over {@link ChatqlClient}: the grouped chat list (kept live by
 * `chatEvents`), the raw chat events, a chat's messages paged backwards, and a chat's
 * live stream. State lives in the stores; hooks only subscribe.
 */

import { useEffect, useMemo, useRef, useSyncExternalStore } from "react";

import {
  ChatListStore,
  MessagesStore,
  type ChatEventSource,
  type ChatListEvent,
  type ChatListOptions,
  type ChatListState,
  type ChatqlClient,
  type MessagesState,
} from "./client.js";
import type { FollowerOptions, FollowerState, StreamFollower } from "./follower.js";

export interface ChatList extends ChatListState {
  loadMore(): Promise<void>;
  reload(): Promise<void>;
}

export interface LiveChatListOptions extends ChatListOptions {
  /** Follow `chatEvents` to stay current (default true); false loads once. */
  readonly live?: boolean;
  /** Where live events come from (default: the client's socket). */
  readonly events?: ChatEventSource;
}

/**
 * The chats the caller may read, grouped by time; `loadMore()` fetches the next page.
 * The list follows `chatEvents` while mounted (no polling); `typing` names the chats
 * with a stream running.
 */
export function useChatList(client: ChatqlClient, options: LiveChatListOptions = {}): ChatList {
  const { keywords, pageSize, timezone, live = true, events } = options;
  const store = useMemo(
    () => new ChatListStore(client, { keywords, pageSize, timezone }),
    [client, keywords, pageSize, timezone],
  );
  useEffect(() => {
    void store.loadMore();
    return live ? store.live(events) : undefined;
  }, [store, live, events]);
  const state = useSyncExternalStore(store.subscribe, store.getState);
  return { ...state, loadMore: () => store.loadMore(), reload: () => store.reload() };
}

/**
 * Every `chatEvents` event for the caller's chats matching `filter`, handed to
 * `onEvent` while mounted (for a list of your own; `useChatList` already follows them).
 */
export function useChatEvents(
  client: ChatqlClient,
  filter: Readonly<Record<string, unknown>> | null,
  onEvent: (event: ChatListEvent) => void,
): void {
  const key = JSON.stringify(filter);
  const latest = useRef(onEvent);
  latest.current = onEvent;
  useEffect(() => {
    const parsed = JSON.parse(key) as Readonly<Record<string, unknown>> | null;
    return client.chatEvents().subscribe(parsed, {
      next: (event) => latest.current(event),
      error: () => undefined,
      complete: () => undefined,
    });
  }, [client, key]);
}

export interface ChatMessages extends MessagesState {
  loadOlder(): Promise<void>;
  reload(): Promise<void>;
}

/** A chat's stored messages (oldest first); `loadOlder()` pages backwards. */
export function useMessages(client: ChatqlClient, chatId: string | null, pageSize = 30): ChatMessages {
  const store = useMemo(
    () => (chatId === null ? null : new MessagesStore(client, chatId, pageSize)),
    [client, chatId, pageSize],
  );
  useEffect(() => {
    void store?.loadOlder();
  }, [store]);
  const state = useSyncExternalStore(
    store?.subscribe ?? noSubscribe,
    store?.getState ?? emptyMessages,
  );
  return {
    ...state,
    loadOlder: async () => store?.loadOlder(),
    reload: async () => store?.reload(),
  };
}

const EMPTY_MESSAGES: MessagesState = { messages: [], hasOlder: false, loading: false, error: null };
const emptyMessages = () => EMPTY_MESSAGES;
const noSubscribe = () => () => undefined;

export interface ChatStream {
  readonly state: FollowerState | null;
  readonly follower: StreamFollower | null;
}

/** The chat's live stream, followed while the component is mounted. */
export function useChatStream(client: ChatqlClient, chatId: string | null, options?: FollowerOptions): ChatStream {
  const follower = useMemo(
    () => (chatId === null ? null : client.follow(chatId, options)),
    // The options object is read once per chat.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [client, chatId],
  );
  useEffect(() => {
    follower?.start();
    return () => follower?.stop();
  }, [follower]);
  const state = useSyncExternalStore(
    follower ? (listener) => follower.subscribe(listener) : noSubscribe,
    follower ? () => follower.getState() : nullState,
  );
  return { state, follower };
}

const nullState = (): FollowerState | null => null;
