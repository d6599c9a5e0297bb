import { ChatqlClient } from "@chatql/client";
import * as Tooltip from "@radix-ui/react-tooltip";
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from "react";

import { ChatView } from "./components/ChatView";
import { IconButton } from "./components/controls";
import { MenuIcon } from "./components/icons";
import type { Shown } from "./components/MessageView";
import { NewChatView } from "./components/NewChatView";
import { SettingsDialog } from "./components/SettingsDialog";
import { SharedView } from "./components/SharedView";
import { Sidebar } from "./components/Sidebar";
import { TrashView } from "./components/TrashView";
import { pageConfig } from "./config";
import { headersOf, initialIdentity, saveIdentity, type Identity } from "./identity";
import { useTheme } from "./theme";
import { ToastProvider } from "./toast";

const config = pageConfig();

/** Where the person is: a chat (optionally at one message), the trash, or a new chat (nothing chosen). */
export interface Place {
  readonly chatId: string | null;
  readonly messageId: string | null;
  readonly trash: boolean;
}

/** A chat the new-chat view just created with its first message (shown at once by the chat's view). */
export interface FirstMessage {
  readonly chatId: string;
  readonly message: Shown;
}

function placeFromUrl(): Place {
  const query = new URLSearchParams(location.search);
  return { chatId: query.get("chat"), messageId: query.get("message"), trash: query.has("trash") };
}

function urlOf(place: Place): string {
  const query = new URLSearchParams();
  if (place.trash) query.set("trash", "");
  if (place.chatId) query.set("chat", place.chatId);
  if (place.messageId) query.set("message", place.messageId);
  const text = query.toString().replace(/=$/, "").replace(/=&/g, "&");
  return text ? `?${text}` : location.pathname;
}

function useWide(): boolean {
  const query = "(min-width: 768px)";
  const [wide, setWide] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const media = window.matchMedia(query);
    const update = () => setWide(media.matches);
    media.addEventListener("change", update);
    return () => media.removeEventListener("change", update);
  }, []);
  return wide;
}

const sharePath = /^\/s\/([^/]+)$/.exec(location.pathname);

export function App() {
  return (
    <ToastProvider>
      <Tooltip.Provider delayDuration={400}>
        {sharePath?.[1] ? <SharedPage token={decodeURIComponent(sharePath[1])} /> : <Shell />}
      </Tooltip.Provider>
    </ToastProvider>
  );
}

function SharedPage({ token }: { token: string }) {
  const client = useMemo(() => new ChatqlClient({ url: "/graphql", headers: () => headersOf(initialIdentity(config)) }), []);
  useTheme();
  const signedIn = config.auth === "dev" || Boolean(initialIdentity(config).Authorization);
  return <SharedView client={client} token={token} signedIn={signedIn} />;
}

function Shell() {
  const [identity, setIdentity] = useState<Identity>(() => initialIdentity(config));
  const client = useMemo(() => {
    const headers = headersOf(identity);
    return new ChatqlClient({ url: "/graphql", headers: () => headers });
  }, [identity]);
  useEffect(() => () => void client.reset(), [client]);
  const [place, setPlace] = useState<Place>(placeFromUrl);
  const [drawer, setDrawer] = useState(false);
  const [settings, setSettings] = useState(false);
  // Chats deleted here, and a count that moves on every change to the list's membership
  // (pin, delete, restore): search results and the Pinned section follow them.
  const [deleted, setDeleted] = useState<ReadonlySet<string>>(() => new Set());
  const [revision, setRevision] = useState(0);
  const [first, setFirst] = useState<FirstMessage | null>(null);
  // Moves on every New chat, so the composer of a new chat takes the focus again.
  const [fresh, setFresh] = useState(0);
  // Interrupts waiting for the person (the Sidebar's inbox): the menu button's badge.
  const [waiting, setWaiting] = useState(0);
  const menuButton = useRef<HTMLButtonElement>(null);
  const drawerRef = useRef<HTMLElement>(null);
  const theme = useTheme();
  const wide = useWide();
  // A drawer left open does not come back when the window narrows again.
  useEffect(() => {
    if (wide) setDrawer(false);
  }, [wide]);
  const signedIn = config.auth === "dev" || Boolean(identity.Authorization);
  // The drawer (narrow screens) is open.
  const drawn = signedIn && !wide && drawer;
  // The open drawer takes the focus (its first control, New chat).
  useEffect(() => {
    if (drawn) drawerRef.current?.querySelector<HTMLElement>("button, input, a[href]")?.focus();
  }, [drawn]);
  const closeDrawer = () => {
    setDrawer(false);
    setTimeout(() => menuButton.current?.focus());
  };
  const onDrawerKey = (event: KeyboardEvent) => {
    if (drawn && event.key === "Escape" && !event.defaultPrevented) {
      event.preventDefault();
      closeDrawer();
    }
  };

  const go = useCallback((next: Place) => {
    setPlace(next);
    setDrawer(false);
    history.replaceState(null, "", urlOf(next));
  }, []);
  const changed = useCallback((chatId: string, gone: boolean) => {
    setDeleted((current) => {
      const next = new Set(current);
      if (gone) next.add(chatId);
      else next.delete(chatId);
      return next;
    });
    setRevision((count) => count + 1);
  }, []);
  const newChat = useCallback(() => {
    go({ chatId: null, messageId: null, trash: false });
    setFresh((count) => count + 1);
  }, [go]);
  const change = (next: Identity) => {
    saveIdentity(config, next);
    setIdentity(next);
  };
  const identityKey = JSON.stringify(identity);
  const headers = useMemo(() => headersOf(identity), [identity]);

  const sidebar = (
    <Sidebar client={client} place={place} onGo={go} onNewChat={newChat} deleted={deleted} revision={revision}
      identity={identity} auth={config.auth} dark={theme.dark}
      onToggleTheme={() => theme.choose(theme.dark ? "light" : "dark")} onSettings={() => setSettings(true)}
      onWaiting={setWaiting} />
  );
  const menu = wide || !signedIn ? null : (
    <IconButton ref={menuButton} label={waiting > 0 ? `Open the chat list, ${waiting} waiting for you` : "Open the chat list"}
      aria-haspopup="dialog" aria-expanded={drawer} className="relative" onClick={() => setDrawer(true)}>
      <MenuIcon />
      {waiting > 0 && (
        <span aria-hidden="true"
          className="absolute -top-1 -right-1 min-w-4 rounded-full bg-amber-200 px-1 text-center text-[0.625rem] leading-4 font-semibold text-amber-950 dark:bg-amber-800 dark:text-amber-50">
          {waiting > 99 ? "99+" : waiting}
        </span>
      )}
    </IconButton>
  );

  let view: ReactNode;
  if (!signedIn) {
    view = (
      <div className="flex flex-1 flex-col items-center justify-center gap-3 p-6 text-center">
        <h1 className="text-2xl font-semibold">chatql</h1>
        <p>Paste a token to sign in.</p>
        <button type="button" onClick={() => setSettings(true)}
          className="cursor-pointer rounded-lg bg-zinc-900 px-4 py-2 text-white dark:bg-zinc-100 dark:text-zinc-900">Sign in</button>
      </div>
    );
  } else if (place.trash) {
    view = <TrashView key={identityKey} client={client} onGo={go} menu={menu} onRestored={(id) => changed(id, false)} />;
  } else if (place.chatId) {
    view = (
      <ChatView key={`${place.chatId}|${identityKey}`} client={client} chatId={place.chatId}
        focusMessageId={place.messageId} headers={headers} filesConfig={config.files} onGo={go} menu={menu}
        onDecided={() => setRevision((count) => count + 1)}
        first={first?.chatId === place.chatId ? first.message : null}
        onPinned={() => setRevision((count) => count + 1)} onDeleted={(id) => changed(id, true)} />
    );
  } else {
    view = (
      <NewChatView key={`${fresh}|${identityKey}`} client={client} menu={menu} headers={headers} filesConfig={config.files}
        onStarted={(chatId, message) => {
          setFirst({ chatId, message });
          go({ chatId, messageId: null, trash: false });
        }} />
    );
  }

  return (
    <div className="flex h-dvh overflow-hidden">
      {/* One sidebar, mounted once, whatever the width: a column from 768 px, below it a
          modal drawer behind the menu button (hidden, not unmounted, while closed), so
          its search text, scroll and open sections survive the window crossing 768 px. */}
      {signedIn && (
        <aside ref={drawerRef} role={wide ? undefined : "dialog"} aria-modal={drawn || undefined}
          aria-label={wide ? undefined : "Chats"} onKeyDown={onDrawerKey}
          className={wide
            ? "flex w-72 shrink-0 flex-col border-r border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-950"
            : `fixed inset-y-0 left-0 z-50 flex w-[85vw] max-w-xs flex-col bg-zinc-50 shadow-xl outline-none dark:bg-zinc-950 ${drawn ? "" : "invisible -translate-x-full"}`}>
          {sidebar}
        </aside>
      )}
      {drawn && <div aria-hidden="true" className="fixed inset-0 z-40 bg-black/40" onClick={closeDrawer} />}
      <main aria-label="Chat" inert={drawn} className="flex min-w-0 flex-1 flex-col">
        {view}
      </main>
      <SettingsDialog open={settings} onOpenChange={setSettings} auth={config.auth} identity={identity}
        onChange={change} theme={theme.choice} onTheme={theme.choose} />
    </div>
  );
}
