/**
 * A chat's active branch as the app shows it: the stored messages (with their versions)
 * paged backwards, and the chat's details (title, pin, tags, usage). State lives in the
 * hooks' stores; components only read it and ask for a reload after a write.
 */
import type { ChatqlClient } from "@chatql/client";
import { useCallback, useEffect, useRef, useState } from "react";

import { run } from "./api";
import { ChatDetailsDocument, ThreadDocument, type ChatDetailsQuery, type ThreadMessageFragment } from "./generated/operations";

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

export function useThread(client: ChatqlClient, chatId: string) {
  const [thread, setThread] = useState<Thread>({ messages: [], hasOlder: true, loading: true, error: null });
  const cursor = useRef<string | null>(null);
  const generation = useRef(0);
  const busy = useRef(false);

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
      setThread((state) => ({
        messages: fresh ? nodes : [...nodes, ...state.messages],
        hasOlder: data.messages.pageInfo.hasPreviousPage,
        loading: false,
        error: null,
      }));
      return nodes;
    } catch (error) {
      if (mine === generation.current) setThread((state) => ({ ...state, loading: false, error: error as Error }));
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

export function useChatDetails(client: ChatqlClient, chatId: string) {
  const [details, setDetails] = useState<ChatDetails | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const reload = useCallback(async () => {
    try {
      const data = await run(client, ChatDetailsDocument, { id: chatId });
      if (data.chat === null) setError(new Error("This chat does not exist or is not yours to read."));
      setDetails(data.chat);
    } catch (caught) {
      setError(caught as Error);
    }
  }, [client, chatId]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { details, error, reload };
}
