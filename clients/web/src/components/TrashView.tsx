import type { ChatqlClient } from "@chatql/client";
import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";

import type { Place } from "../App";
import { run } from "../api";
import { RestoreChatDocument, TrashDocument, type TrashQuery } from "../generated/operations";
import { useToast } from "../toast";
import { Button } from "./controls";

type Deleted = TrashQuery["chats"]["edges"][number]["node"];

/** The deleted chats the person may restore. */
export function TrashView({ client, onGo, menu, onRestored }: {
  client: ChatqlClient;
  onGo: (place: Place) => void;
  menu: ReactNode;
  onRestored: (chatId: string) => void;
}) {
  const [chats, setChats] = useState<readonly Deleted[] | null>(null);
  const toast = useToast();
  const heading = useRef<HTMLHeadingElement>(null);
  const load = useCallback(async () => {
    try {
      const data = await run(client, TrashDocument, { first: 100 });
      setChats(data.chats.edges.map((edge) => edge.node));
    } catch (error) {
      toast.fail(error);
    }
  }, [client, toast]);
  useEffect(() => {
    void load();
    heading.current?.focus();
  }, [load]);
  const restore = async (id: string) => {
    try {
      await run(client, RestoreChatDocument, { id });
      onRestored(id);
      onGo({ chatId: id, messageId: null, trash: false });
    } catch (error) {
      toast.fail(error);
    }
  };
  return (
    <section aria-labelledby="trash-heading" className="flex min-h-0 flex-1 flex-col">
      <header className="flex h-14 shrink-0 items-center gap-2 border-b border-zinc-200 px-3 dark:border-zinc-800">
        {menu}
        <h1 id="trash-heading" tabIndex={-1} ref={heading} className="text-lg font-semibold">Trash</h1>
      </header>
      <div className="min-h-0 flex-1 overflow-y-auto">
        <div className="mx-auto w-full max-w-3xl px-4 py-4">
          {chats?.length === 0 && <p className="text-zinc-600 dark:text-zinc-400">The trash is empty.</p>}
          <ul className="divide-y divide-zinc-200 dark:divide-zinc-800">
            {chats?.map((chat) => (
              <li key={chat.id} className="flex items-center gap-3 py-2">
                <span className="min-w-0 flex-1 truncate">{chat.title || "Untitled chat"}</span>
                <Button onClick={() => void restore(chat.id)} aria-label={`Restore ${chat.title || "Untitled chat"}`}>Restore</Button>
              </li>
            ))}
          </ul>
        </div>
      </div>
    </section>
  );
}
