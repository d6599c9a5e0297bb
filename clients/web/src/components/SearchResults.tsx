import type { ChatqlClient } from "@chatql/client";
import { useEffect, useState } from "react";

import type { Place } from "../App";
import { contentText, run } from "../api";
import { SearchMessagesDocument, type SearchMessagesQuery } from "../generated/operations";

type Hit = SearchMessagesQuery["searchMessages"][number];

/**
 * The server's message search: each hit opens its chat at the message. Read again when
 * the person's chats change (`revision`); a chat deleted here leaves at once.
 */
export function SearchResults({ client, query, onGo, deleted, revision }: {
  client: ChatqlClient;
  query: string;
  onGo: (place: Place) => void;
  deleted: ReadonlySet<string>;
  revision: number;
}) {
  const [hits, setHits] = useState<readonly Hit[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    setProblem(null);
    run(client, SearchMessagesDocument, { query, first: 20 })
      .then((data) => current && setHits(data.searchMessages))
      .catch((error: Error) => current && setProblem(error.message));
    return () => {
      current = false;
    };
  }, [client, query, revision]);
  useEffect(() => setHits(null), [query]);
  const shown = hits?.filter((hit) => !deleted.has(hit.chat.id));
  return (
    <section aria-label="Messages found" className="mb-2">
      <h2 className="px-2.5 pt-2 pb-1 text-xs font-medium text-zinc-600 dark:text-zinc-400">Messages</h2>
      {problem && <p role="alert" className="px-2.5 text-sm text-red-700 dark:text-red-300">{problem}</p>}
      {shown === undefined && !problem && <p className="px-2.5 text-sm">Searching…</p>}
      {shown?.length === 0 && <p className="px-2.5 text-sm text-zinc-600 dark:text-zinc-400">No messages match.</p>}
      <ul>
        {shown?.map((hit) => {
          const { before, match, after, cutStart, cutEnd } = snippet(contentText((hit.message.props as { content?: unknown } | null)?.content), query);
          return (
            <li key={hit.message.id}>
              <button type="button" onClick={() => onGo({ chatId: hit.chat.id, messageId: hit.message.id, trash: false })}
                className="w-full cursor-pointer rounded-lg px-2.5 py-1.5 text-left text-sm hover:bg-zinc-200/70 dark:hover:bg-zinc-800">
                <span className="line-clamp-3">
                  {cutStart && "…"}{before}
                  {match && <mark className="rounded-sm bg-amber-200 px-0.5 text-zinc-900 dark:bg-amber-300">{match}</mark>}
                  {after}{cutEnd && "…"}
                </span>
                <span className="mt-0.5 block truncate text-xs text-zinc-600 dark:text-zinc-400">in {hit.chat.title || "Untitled chat"}</span>
              </button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

const BEFORE = 40;
const AFTER = 80;

/**
 * About 120 characters of `text` around the first word of `query`, cut between words,
 * the matching word apart so it can be marked.
 */
export function snippet(text: string, query: string) {
  // Markdown marks (emphasis, table pipes and rules, code fences) read as noise here.
  const flat = text.replace(/[*_`#|>]+|-{3,}/g, " ").replace(/\s+/g, " ").trim();
  const word = query.split(/\s+/)[0]?.toLowerCase() ?? "";
  const found = word ? flat.toLowerCase().indexOf(word) : -1;
  const at = Math.max(0, found);
  const length = found < 0 ? 0 : word.length;
  let start = Math.max(0, at - BEFORE);
  // Start and end on a word boundary (a space), never inside a word.
  if (start > 0) {
    const space = flat.indexOf(" ", start - 1);
    start = space >= 0 && space < at ? space + 1 : at;
  }
  let end = Math.min(flat.length, at + length + AFTER);
  if (end < flat.length) {
    const space = flat.lastIndexOf(" ", end);
    end = space > at + length ? space : at + length;
  }
  return {
    before: flat.slice(start, at),
    match: flat.slice(at, at + length),
    after: flat.slice(at + length, end),
    cutStart: start > 0,
    cutEnd: end < flat.length,
  };
}
