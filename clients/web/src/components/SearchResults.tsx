import type { ChatqlClient } from "@chatql/client";
import { useEffect, useState } from "react";

import type { Place } from "../App";
import { run, textOf } from "../api";
import { SearchMessagesDocument, type SearchMessagesQuery } from "../generated/operations";

type Hit = SearchMessagesQuery["searchMessages"][number];

/** The server's message search: each hit opens its chat at the message. */
export function SearchResults({ client, query, onGo }: { client: ChatqlClient; query: string; onGo: (place: Place) => void }) {
  const [hits, setHits] = useState<readonly Hit[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    setHits(null);
    run(client, SearchMessagesDocument, { query, first: 20 })
      .then((data) => current && setHits(data.searchMessages))
      .catch((error: Error) => current && setProblem(error.message));
    return () => {
      current = false;
    };
  }, [client, query]);
  return (
    <section aria-label="Messages found" className="hits">
      <h2>Messages</h2>
      {problem && <p role="alert">{problem}</p>}
      {hits === null && !problem && <p>Searching…</p>}
      {hits?.length === 0 && <p className="empty">No messages match.</p>}
      <ul>
        {hits?.map((hit) => (
          <li key={hit.message.id}>
            <button type="button" onClick={() => onGo({ chatId: hit.chat.id, messageId: hit.message.id, trash: false })}>
              <span className="hit-text">{snippet(textOf((hit.message.props as { content?: unknown } | null)?.content), query)}</span>
              <span className="hit-chat"> in {hit.chat.title || "Untitled chat"}</span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** About 80 characters of `text` around the first word of `query`. */
function snippet(text: string, query: string): string {
  // Markdown marks (emphasis, table pipes and rules, code fences) read as noise here.
  const flat = text.replace(/[*_`#|>]+|-{3,}/g, " ").replace(/\s+/g, " ").trim();
  const word = query.split(/\s+/)[0]?.toLowerCase() ?? "";
  const at = Math.max(0, flat.toLowerCase().indexOf(word));
  const start = Math.max(0, at - 30);
  return `${start > 0 ? "…" : ""}${flat.slice(start, start + 80)}${start + 80 < flat.length ? "…" : ""}`;
}
