import type { ChatqlClient } from "@chatql/client";
import { useCallback, useEffect, useRef, useState } from "react";

import type { Place } from "../App";
import { run } from "../api";
import { RestoreChatDocument, TrashDocument, type TrashQuery } from "../generated/operations";

type Deleted = TrashQuery["chats"]["edges"][number]["node"];

/** The deleted chats the person may restore. */
export function TrashView({ client, onGo }: { client: ChatqlClient; onGo: (place: Place) => void }) {
  const [chats, setChats] = useState<readonly Deleted[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const load = useCallback(async () => {
    try {
      const data = await run(client, TrashDocument, { first: 100 });
      setChats(data.chats.edges.map((edge) => edge.node));
    } catch (error) {
      setProblem((error as Error).message);
    }
  }, [client]);
  useEffect(() => {
    void load();
    heading.current?.focus();
  }, [load]);
  const restore = async (id: string) => {
    try {
      await run(client, RestoreChatDocument, { id });
      onGo({ chatId: id, messageId: null, trash: false });
    } catch (error) {
      setProblem((error as Error).message);
    }
  };
  return (
    <section className="trash" aria-labelledby="trash-heading">
      <h1 id="trash-heading" tabIndex={-1} ref={heading}>Trash</h1>
      {problem && <p role="alert">{problem}</p>}
      {chats?.length === 0 && <p className="empty">The trash is empty.</p>}
      <ul>
        {chats?.map((chat) => (
          <li key={chat.id}>
            <span>{chat.title || "Untitled chat"}</span>
            <button type="button" onClick={() => void restore(chat.id)} aria-label={`Restore ${chat.title || "Untitled chat"}`}>Restore</button>
          </li>
        ))}
      </ul>
    </section>
  );
}
