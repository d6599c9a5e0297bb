import { ChatqlClient } from "@chatql/client";
import { useCallback, useEffect, useMemo, useState } from "react";

import { ChatView } from "./components/ChatView";
import { IdentityBar } from "./components/IdentityBar";
import { Sidebar } from "./components/Sidebar";
import { TrashView } from "./components/TrashView";
import { pageConfig } from "./config";
import { headersOf, initialIdentity, saveIdentity, type Identity } from "./identity";

const config = pageConfig();

/** Where the person is: a chat (optionally at one message), the trash, or nothing chosen. */
export interface Place {
  readonly chatId: string | null;
  readonly messageId: string | null;
  readonly trash: boolean;
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

export function App() {
  const [identity, setIdentity] = useState<Identity>(() => initialIdentity(config));
  const client = useMemo(() => {
    const headers = headersOf(identity);
    return new ChatqlClient({ url: "/graphql", headers: () => headers });
  }, [identity]);
  useEffect(() => () => void client.reset(), [client]);
  const [place, setPlace] = useState<Place>(placeFromUrl);
  const go = useCallback((next: Place) => {
    setPlace(next);
    history.replaceState(null, "", urlOf(next));
  }, []);
  const signedIn = config.auth === "dev" || Boolean(identity.Authorization);
  const change = (next: Identity) => {
    saveIdentity(config, next);
    setIdentity(next);
  };
  const identityKey = JSON.stringify(identity);
  return (
    <div className="layout">
      <header className="topbar">
        <strong>chatql</strong>
        <IdentityBar auth={config.auth} identity={identity} onChange={change} />
        <a href="/graphql">Playground</a>
      </header>
      {signedIn ? (
        <div className="panes">
          <Sidebar client={client} place={place} onGo={go} />
          <main className="chat" aria-label="Chat">
            {place.trash ? (
              <TrashView key={identityKey} client={client} onGo={go} />
            ) : place.chatId ? (
              <ChatView key={`${place.chatId}|${identityKey}`} client={client} chatId={place.chatId}
                focusMessageId={place.messageId} headers={headersOf(identity)} onGo={go} />
            ) : (
              <p className="empty">Choose a chat, or start a new one.</p>
            )}
          </main>
        </div>
      ) : (
        <p className="empty">Paste a token to sign in.</p>
      )}
    </div>
  );
}
