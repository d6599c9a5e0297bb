/**
 * What the chats' streams asked a person (approvals, questions): a chat's interrupts by
 * the message that asked, and the inbox of those waiting across chats. Both are read
 * again when `chatEvents` says an interrupt was requested or resolved.
 */
import type { ChatqlClient } from "@chatql/client";
import { useCallback, useEffect, useRef, useState } from "react";

import { run } from "./api";
import { useSharedChatEvents } from "./events";
import { ChatInterruptsDocument, InboxDocument, type InboxQuery, type InterruptFieldsFragment } from "./generated/operations";

export type InterruptInfo = InterruptFieldsFragment;
export type InboxEntry = InboxQuery["interrupts"]["edges"][number]["node"];

/** How a person decides: approve (maybe with edited arguments), deny (maybe why), or answer a question. */
export interface DecisionInput {
  readonly approved?: boolean;
  readonly editedArguments?: unknown;
  readonly response?: unknown;
  readonly reason?: string;
}

const isInterruptEvent = (type: string) => type === "INTERRUPT_REQUESTED" || type === "INTERRUPT_RESOLVED";

function sameInterrupts(a: ReadonlyMap<string, InterruptInfo>, b: ReadonlyMap<string, InterruptInfo>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, interrupt] of b) if (JSON.stringify(a.get(id)) !== JSON.stringify(interrupt)) return false;
  return true;
}

/** The chat's interrupts by the id of the message that asked; read again on `key` and on the chat's interrupt events. */
export function useChatInterrupts(client: ChatqlClient, chatId: string, key: unknown) {
  const [byMessage, setByMessage] = useState<ReadonlyMap<string, InterruptInfo>>(() => new Map());
  const reload = useCallback(async () => {
    try {
      const data = await run(client, ChatInterruptsDocument, { chatId });
      const read = new Map((data.chat?.interrupts ?? []).map((interrupt) => [interrupt.messageId, interrupt]));
      // The same interrupts read again keep the map the messages were drawn with (they are
      // memoised on it: a chat's messages are not all drawn again when nothing changed).
      setByMessage((current) => sameInterrupts(current, read) ? current : read);
    } catch {
      // The chat's own view says what went wrong with it.
    }
  }, [client, chatId]);
  useEffect(() => {
    void reload();
  }, [reload, key]);
  useSharedChatEvents(client, (event) => {
    if (event.chatId === chatId && isInterruptEvent(String(event.type))) void reload();
  });
  const update = useCallback((interrupt: InterruptInfo) => {
    setByMessage((current) => new Map(current).set(interrupt.messageId, interrupt));
  }, []);
  return { byMessage, reload, update };
}

/** The pending interrupts the person may decide, across chats (newest first). */
export function useInbox(client: ChatqlClient, revision: number): readonly InboxEntry[] {
  const [entries, setEntries] = useState<readonly InboxEntry[]>([]);
  const [changes, setChanges] = useState(0);
  const first = useRef(true);
  useSharedChatEvents(client, (event) => {
    if (isInterruptEvent(String(event.type)) || event.type === "DELETED") setChanges((count) => count + 1);
  });
  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      run(client, InboxDocument, { first: 50 })
        .then((data) => current && setEntries(data.interrupts.edges.map((edge) => edge.node)))
        .catch(() => undefined);
    }, first.current ? 0 : 150);
    first.current = false;
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [client, revision, changes]);
  return entries;
}
