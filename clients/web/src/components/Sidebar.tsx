import type { ChatqlClient, ChatSummary } from "@chatql/client";
import { useChatList } from "@chatql/client/react";
import { memo, useEffect, useMemo, useState } from "react";

import type { Place } from "../App";
import { later, sharedChatEvents } from "../events";
import type { Identity } from "../identity";
import { useInbox, type InboxEntry } from "../interrupts";
import { usePinnedChats } from "../thread";
import { Button, IconButton, inputClass } from "./controls";
import { GearIcon, MoonIcon, PlusIcon, SunIcon, TrashIcon } from "./icons";
import { SearchResults } from "./SearchResults";

const LIST_LAG_MS = 150;

/**
 * New chat, search (titles and message text), the Pinned chats, the live chat list by time, the trash and settings.
 * `onWaiting` hears how many interrupts wait for the person (the menu button's badge on narrow screens).
 */
export function Sidebar({ client, place, onGo, onNewChat, deleted, revision, identity, auth, dark, onToggleTheme, onSettings, onWaiting }: {
  client: ChatqlClient;
  place: Place;
  onGo: (place: Place) => void;
  onNewChat: () => void;
  deleted: ReadonlySet<string>;
  revision: number;
  identity: Identity;
  auth: "dev" | "jwt";
  dark: boolean;
  onToggleTheme: () => void;
  onSettings: () => void;
  onWaiting?: (count: number) => void;
}) {
  const [search, setSearch] = useState("");
  const [keywords, setKeywords] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setKeywords(search.trim()), 250);
    return () => clearTimeout(timer);
  }, [search]);
  // The list follows the person's chat events a moment late: a send's new messages and its
  // answer's start ("typing…") are drawn after the answer's first words, not just as they
  // arrive in the open chat and compete with them for the browser's time.
  const events = useMemo(() => later(sharedChatEvents(client), LIST_LAG_MS), [client]);
  const list = useChatList(client, { keywords, events });
  const pinned = usePinnedChats(client, revision).filter((chat) => !deleted.has(chat.id));
  const inbox = useInbox(client, revision).filter((entry) => !deleted.has(entry.chatId));
  const [inboxOpen, setInboxOpen] = useState(true);
  useEffect(() => onWaiting?.(inbox.length), [inbox.length, onWaiting]);
  const pinnedIds = new Set(pinned.map((chat) => chat.id));
  const groups = list.groups
    .map((group) => ({ ...group, chats: group.chats.filter((chat) => !pinnedIds.has(chat.id) && !deleted.has(chat.id)) }))
    .filter((group) => group.chats.length > 0);
  const shownPinned = keywords ? pinned.filter((chat) => (chat.title ?? "").toLowerCase().includes(keywords.toLowerCase())) : pinned;

  const link = (chat: { id: string; title?: string | null }) => (
    <ChatLink key={chat.id} id={chat.id} title={chat.title ?? null} current={chat.id === place.chatId && !place.trash}
      typing={list.typing.includes(chat.id)} onGo={onGo} />
  );
  const heading = "px-2.5 pt-4 pb-1 text-xs font-medium text-zinc-600 dark:text-zinc-400";
  const who = auth === "jwt" ? "Signed in with a token" : `${identity["X-User-Id"] || "dev"} · ${identity["X-Tenant-Id"] || "default"}`;

  return (
    <nav aria-label="Chats" className="flex min-h-0 flex-1 flex-col">
      <div className="flex flex-col gap-2 p-3">
        <Button look="primary" className="w-full justify-start" onClick={onNewChat}><PlusIcon />New chat</Button>
        <input type="search" aria-label="Search chats and messages" placeholder="Search chats and messages" value={search}
          onChange={(event) => setSearch(event.target.value)} className={`${inputClass} w-full`} />
      </div>
      <div className="min-h-0 flex-1 overflow-y-auto px-2 pb-2">
        {keywords && <SearchResults client={client} query={keywords} onGo={onGo} deleted={deleted} revision={revision} />}
        {inbox.length > 0 && (
          <section aria-label="Waiting for you" className="pt-2">
            <h2>
              <button type="button" aria-expanded={inboxOpen} onClick={() => setInboxOpen(!inboxOpen)}
                className="flex w-full cursor-pointer items-center gap-2 rounded-lg px-2.5 py-1.5 text-left text-sm font-medium hover:bg-zinc-200/70 dark:hover:bg-zinc-800">
                <span className="flex-1">Waiting for you</span>
                <span className="rounded-full bg-amber-200 px-2 py-0.5 text-xs font-semibold text-amber-950 dark:bg-amber-800 dark:text-amber-50">{inbox.length}</span>
              </button>
            </h2>
            {inboxOpen && (
              <ul>
                {inbox.map((entry) => (
                  <li key={entry.id}>
                    <button type="button" onClick={() => onGo({ chatId: entry.chatId, messageId: entry.messageId, trash: false })}
                      className="flex w-full cursor-pointer flex-col rounded-lg px-2.5 py-1.5 text-left text-sm hover:bg-zinc-200/70 dark:hover:bg-zinc-800">
                      <span className="truncate">{askOf(entry)}</span>
                      <span className="truncate text-xs text-zinc-600 dark:text-zinc-400">{entry.chat?.title || "Untitled chat"}</span>
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </section>
        )}
        {shownPinned.length > 0 && (
          <section aria-label="Pinned">
            <h2 className={heading}>Pinned</h2>
            <ul>{shownPinned.map(link)}</ul>
          </section>
        )}
        {list.error && <p role="alert" className="px-2.5 text-sm text-red-700 dark:text-red-300">{list.error.message}</p>}
        {groups.map((group) => (
          <section key={group.key} aria-label={group.label}>
            <h2 className={heading}>{group.label}</h2>
            <ul>{group.chats.map((chat: ChatSummary) => link(chat))}</ul>
          </section>
        ))}
        {!list.loading && groups.length === 0 && shownPinned.length === 0 && !list.error && (
          <p className="px-2.5 pt-4 text-sm text-zinc-600 dark:text-zinc-400">No chats yet.</p>
        )}
        {list.hasMore && !list.loading && list.groups.length > 0 && (
          <Button look="quiet" className="mt-2 w-full" onClick={() => void list.loadMore()}>Load more chats</Button>
        )}
        {list.loading && <p className="px-2.5 pt-4 text-sm text-zinc-600 dark:text-zinc-400">Loading…</p>}
      </div>
      <SidebarFooter trash={place.trash} onGo={onGo} who={who} dark={dark} onToggleTheme={onToggleTheme} onSettings={onSettings} />
    </nav>
  );
}

/**
 * One chat in the list. Drawn again only when its own title, place or typing changes: the
 * list's live events (a chat's new messages, a stream starting) arrive while an answer
 * starts, and redrawing every row then took CPU from the answer.
 */
const ChatLink = memo(function ChatLink({ id, title, current, typing, onGo }: {
  id: string;
  title: string | null;
  current: boolean;
  typing: boolean;
  onGo: (place: Place) => void;
}) {
  return (
    <li>
      <button type="button" aria-current={current ? "page" : undefined}
        onClick={() => onGo({ chatId: id, messageId: null, trash: false })}
        className="w-full cursor-pointer truncate rounded-lg px-2.5 py-1.5 text-left text-sm hover:bg-zinc-200/70 aria-[current=page]:bg-zinc-200 dark:hover:bg-zinc-800 dark:aria-[current=page]:bg-zinc-800">
        {title || "Untitled chat"}
        {typing && <span className="text-zinc-600 dark:text-zinc-400"> · typing…</span>}
      </button>
    </li>
  );
});

/** The trash, who is signed in, the theme, settings and the playground (not redrawn with the list). */
const SidebarFooter = memo(function SidebarFooter({ trash, onGo, who, dark, onToggleTheme, onSettings }: {
  trash: boolean;
  onGo: (place: Place) => void;
  who: string;
  dark: boolean;
  onToggleTheme: () => void;
  onSettings: () => void;
}) {
  return (
    <div className="flex flex-col gap-1 border-t border-zinc-200 p-2 dark:border-zinc-800">
      <button type="button" aria-current={trash ? "page" : undefined}
        onClick={() => onGo({ chatId: null, messageId: null, trash: true })}
        className="flex w-full cursor-pointer items-center gap-2 rounded-lg px-2.5 py-1.5 text-left text-sm hover:bg-zinc-200/70 aria-[current=page]:bg-zinc-200 dark:hover:bg-zinc-800 dark:aria-[current=page]:bg-zinc-800">
        <TrashIcon />Trash
      </button>
      <div className="flex items-center gap-1 px-1">
        <span className="min-w-0 flex-1 truncate text-sm text-zinc-700 dark:text-zinc-300" title={who}>{who}</span>
        <IconButton label={dark ? "Light theme" : "Dark theme"} onClick={onToggleTheme}>{dark ? <SunIcon /> : <MoonIcon />}</IconButton>
        <IconButton label="Settings" onClick={onSettings}><GearIcon /></IconButton>
        <a href="/graphql" className="rounded-lg px-2 py-1 text-sm text-blue-700 underline-offset-2 hover:underline dark:text-blue-300">Playground</a>
      </div>
    </div>
  );
});

/** What an interrupt asks, in a few words. */
function askOf(entry: InboxEntry): string {
  if (entry.kind === "INPUT") return `Question: ${entry.prompt ?? ""}`;
  return `Approve ${entry.toolName ?? "a tool call"}`;
}
