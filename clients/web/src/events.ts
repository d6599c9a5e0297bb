/**
 * The person's chat events (`chatEvents`), one subscription for the whole app: the chat
 * list, the Pinned section, the inbox and the open chat's interrupts all follow the same
 * events, so the server sends each event once instead of once per part of the page (and
 * has that much less to do while an answer starts).
 */
import type { ChatEventSink, ChatEventSource, ChatListEvent, ChatqlClient } from "@chatql/client";
import { useEffect, useRef } from "react";

const sources = new WeakMap<ChatqlClient, ChatEventSource>();

/** The client's `chatEvents`, the unfiltered subscription shared (a filtered one is its own). */
export function sharedChatEvents(client: ChatqlClient): ChatEventSource {
  const known = sources.get(client);
  if (known) return known;
  const sinks = new Set<ChatEventSink>();
  let unsubscribe: (() => void) | null = null;
  const end = (tell: (sink: ChatEventSink) => void) => {
    const ended = [...sinks];
    sinks.clear();
    unsubscribe = null;
    for (const sink of ended) tell(sink);
  };
  const source: ChatEventSource = {
    subscribe(filter, sink) {
      if (filter !== null) return client.chatEvents().subscribe(filter, sink);
      sinks.add(sink);
      if (!unsubscribe) {
        const stop = client.chatEvents().subscribe(null, {
          next: (event) => {
            for (const each of [...sinks]) each.next(event);
          },
          error: (error) => end((each) => each.error(error)),
          complete: () => end((each) => each.complete()),
        });
        // (Unless it ended at once.)
        if (sinks.size > 0) unsubscribe = stop;
      }
      return () => {
        if (!sinks.delete(sink) || sinks.size > 0 || !unsubscribe) return;
        const stop = unsubscribe;
        unsubscribe = null;
        stop();
      };
    },
  };
  sources.set(client, source);
  return source;
}

/**
 * `source`'s events handed on `ms` later, in order (its end too); nothing is handed on once
 * a subscriber has left.
 */
export function later(source: ChatEventSource, ms: number): ChatEventSource {
  return {
    subscribe(filter, sink) {
      const pending = new Set<ReturnType<typeof setTimeout>>();
      const after = (tell: () => void) => {
        const timer = setTimeout(() => {
          pending.delete(timer);
          tell();
        }, ms);
        pending.add(timer);
      };
      const stop = source.subscribe(filter, {
        next: (event) => after(() => sink.next(event)),
        error: (error) => after(() => sink.error(error)),
        complete: () => after(() => sink.complete()),
      });
      return () => {
        for (const timer of pending) clearTimeout(timer);
        pending.clear();
        stop();
      };
    },
  };
}

/** Every event of the person's chats, handed to `onEvent` while mounted (over the shared subscription). */
export function useSharedChatEvents(client: ChatqlClient, onEvent: (event: ChatListEvent) => void): void {
  const latest = useRef(onEvent);
  latest.current = onEvent;
  useEffect(() => sharedChatEvents(client).subscribe(null, {
    next: (event) => latest.current(event),
    error: () => undefined,
    complete: () => undefined,
  }), [client]);
}
