import { CreateChatDocument, type ChatqlClient, type ChatSummary } from "@chatql/client";
import { useChatList } from "@chatql/client/react";
import { useEffect, useState } from "react";

import type { Place } from "../App";
import { SearchResults } from "./SearchResults";

const ASSISTANT_KEY = "chatql.assistant";

/** New chat, search (titles and message text), the live chat list and the trash. */
export function Sidebar({ client, place, onGo }: { client: ChatqlClient; place: Place; onGo: (place: Place) => void }) {
  const [search, setSearch] = useState("");
  const [keywords, setKeywords] = useState("");
  const [assistant, setAssistant] = useState(() => localStorage.getItem(ASSISTANT_KEY) ?? "demo");
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    const timer = setTimeout(() => setKeywords(search.trim()), 250);
    return () => clearTimeout(timer);
  }, [search]);
  const list = useChatList(client, { keywords });

  const newChat = async () => {
    setProblem(null);
    try {
      localStorage.setItem(ASSISTANT_KEY, assistant);
      const data = await client.request(CreateChatDocument, { input: { assistantId: assistant.trim() || "demo" } });
      onGo({ chatId: data.createChat.id, messageId: null, trash: false });
    } catch (error) {
      setProblem((error as Error).message);
    }
  };

  return (
    <nav className="sidebar" aria-label="Chats">
      <div className="new-chat">
        <button type="button" className="primary" onClick={() => void newChat()}>New chat</button>
        <label>Assistant <input value={assistant} onChange={(event) => setAssistant(event.target.value)} size={8} /></label>
      </div>
      {problem && <p role="alert">{problem}</p>}
      <input type="search" aria-label="Search chats and messages" placeholder="Search chats and messages" value={search}
        onChange={(event) => setSearch(event.target.value)} />
      {keywords && <SearchResults client={client} query={keywords} onGo={onGo} />}
      {list.error && <p role="alert">{list.error.message}</p>}
      {list.groups.map((group) => (
        <section key={group.key} aria-label={group.label}>
          <h2>{group.label}</h2>
          <ul>
            {group.chats.map((chat: ChatSummary) => (
              <li key={chat.id}>
                <button type="button" aria-current={chat.id === place.chatId && !place.trash ? "page" : undefined}
                  onClick={() => onGo({ chatId: chat.id, messageId: null, trash: false })}>
                  {chat.title || "Untitled chat"}
                  {list.typing.includes(chat.id) && <span className="typing"> · typing…</span>}
                </button>
              </li>
            ))}
          </ul>
        </section>
      ))}
      {!list.loading && list.groups.length === 0 && !list.error && <p className="empty">No chats.</p>}
      {list.hasMore && !list.loading && list.groups.length > 0 && (
        <button type="button" onClick={() => void list.loadMore()}>Load more chats</button>
      )}
      {list.loading && <p>Loading…</p>}
      <button type="button" className="trash-link" aria-current={place.trash ? "page" : undefined}
        onClick={() => onGo({ chatId: null, messageId: null, trash: true })}>Trash</button>
    </nav>
  );
}
