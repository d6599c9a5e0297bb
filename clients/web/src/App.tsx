import { ChatqlClient, type ChatSummary, type MessageRecord, type MessageState } from "@chatql/client";
import { useChatList, useChatStream, useMessages } from "@chatql/client/react";
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent } from "react";

import { pageConfig } from "./config";
import { headersOf, initialIdentity, saveIdentity, type Identity } from "./identity";

const config = pageConfig();

export function App() {
  const [identity, setIdentity] = useState<Identity>(() => initialIdentity(config));
  const client = useMemo(() => {
    const headers = headersOf(identity);
    return new ChatqlClient({ url: "/graphql", headers: () => headers });
  }, [identity]);
  useEffect(() => () => void client.reset(), [client]);
  const [chatId, setChatId] = useState<string | null>(() => new URLSearchParams(location.search).get("chat"));
  const choose = (id: string) => {
    setChatId(id);
    history.replaceState(null, "", `?chat=${encodeURIComponent(id)}`);
  };
  const signedIn = config.auth === "dev" || Boolean(identity.Authorization);
  const change = (next: Identity) => {
    saveIdentity(config, next);
    setIdentity(next);
  };
  return (
    <div className="layout">
      <header className="topbar">
        <strong>chatql</strong>
        <IdentityBar identity={identity} onChange={change} />
        <a href="/graphql">Playground</a>
      </header>
      {signedIn ? (
        <div className="panes">
          <ChatList client={client} selected={chatId} onSelect={choose} />
          <main className="chat">
            {chatId ? <ChatView key={`${chatId}|${JSON.stringify(identity)}`} client={client} chatId={chatId} /> : <p className="empty">Choose a chat.</p>}
          </main>
        </div>
      ) : (
        <p className="empty">Paste a token to sign in.</p>
      )}
    </div>
  );
}

function IdentityBar({ identity, onChange }: { identity: Identity; onChange: (identity: Identity) => void }) {
  const [editing, setEditing] = useState(false);
  if (config.auth === "jwt") {
    return (
      <form className="identity" onSubmit={(event: FormEvent<HTMLFormElement>) => {
        event.preventDefault();
        const token = String(new FormData(event.currentTarget).get("token") ?? "").trim();
        onChange(token ? { Authorization: `Bearer ${token}` } : {});
      }}>
        <label>Token <input name="token" type="password" defaultValue={(identity.Authorization ?? "").replace(/^Bearer\s+/i, "")} /></label>
        <button type="submit">Sign in</button>
      </form>
    );
  }
  const user = identity["X-User-Id"] || "dev";
  const tenant = identity["X-Tenant-Id"] || "default";
  if (!editing) {
    return (
      <span className="identity">
        Signed in as <strong>{user}</strong> in {tenant}
        <button type="button" onClick={() => setEditing(true)}>Switch user</button>
      </span>
    );
  }
  return (
    <form className="identity" onSubmit={(event: FormEvent<HTMLFormElement>) => {
      event.preventDefault();
      const form = new FormData(event.currentTarget);
      const value = (name: string) => String(form.get(name) ?? "").trim();
      onChange({ "X-User-Id": value("user"), "X-Tenant-Id": value("tenant"), "X-Team-Id": value("team"), "X-Roles": value("roles") });
      setEditing(false);
    }}>
      <label>User <input name="user" defaultValue={identity["X-User-Id"] ?? ""} /></label>
      <label>Tenant <input name="tenant" defaultValue={identity["X-Tenant-Id"] ?? ""} /></label>
      <label>Team <input name="team" defaultValue={identity["X-Team-Id"] ?? ""} /></label>
      <label>Roles <input name="roles" defaultValue={identity["X-Roles"] ?? ""} /></label>
      <button type="submit">Use this identity</button>
    </form>
  );
}

function ChatList({ client, selected, onSelect }: { client: ChatqlClient; selected: string | null; onSelect: (id: string) => void }) {
  const [search, setSearch] = useState("");
  const [keywords, setKeywords] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setKeywords(search), 250);
    return () => clearTimeout(timer);
  }, [search]);
  const list = useChatList(client, { keywords });
  return (
    <nav className="sidebar" aria-label="Chats">
      <input type="search" aria-label="Search chats" placeholder="Search chats" value={search} onChange={(event) => setSearch(event.target.value)} />
      {list.error && <p role="alert">{list.error.message}</p>}
      {list.groups.map((group) => (
        <section key={group.key} aria-label={group.label}>
          <h2>{group.label}</h2>
          <ul>
            {group.chats.map((chat: ChatSummary) => (
              <li key={chat.id}>
                <button type="button" aria-current={chat.id === selected ? "page" : undefined} onClick={() => onSelect(chat.id)}>
                  {chat.title || chat.id}
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
    </nav>
  );
}

interface Shown {
  readonly id: string;
  readonly type: string;
  readonly role: string;
  readonly props: Record<string, unknown>;
  readonly blockId: string | null;
  readonly threadId: string | null;
  readonly status: string | null;
}

function fromRecord(message: MessageRecord): Shown {
  return { ...message, props: (message.props ?? {}) as Record<string, unknown>, status: message.status };
}

function fromLive(message: MessageState, streamStatus: string): Shown {
  // Until the stored copy is read back, an ended stream's messages carry its status.
  const status = streamStatus === "interrupted" ? "INTERRUPTED" : streamStatus === "failed" ? "FAILED" : null;
  return { ...message, status };
}

function ChatView({ client, chatId }: { client: ChatqlClient; chatId: string }) {
  const stored = useMessages(client, chatId, 30);
  const { state: live } = useChatStream(client, chatId);
  const [stopping, setStopping] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const streaming = live?.status === "live" && live.streamId !== null;
  // When a stream ends, its messages are in the database: read them from there (again,
  // briefly, while the write that ended the stream is not visible yet).
  const lastStatus = useRef(live?.status);
  const [pendingReload, setPendingReload] = useState(0);
  useEffect(() => {
    const before = lastStatus.current;
    lastStatus.current = live?.status;
    if (before === "live" && live?.status !== "live") {
      setStopping(false);
      setPendingReload(5);
    }
  }, [live?.status]);
  useEffect(() => {
    if (pendingReload === 0 || stored.loading || !live) return;
    const have = new Set(stored.messages.map((m) => m.id));
    const missing = [...live.messages.keys()].some((id) => !have.has(id));
    if (!missing && pendingReload < 5) {
      setPendingReload(0);
      return;
    }
    const timer = setTimeout(() => {
      setPendingReload(pendingReload - 1);
      void stored.reload();
    }, pendingReload === 5 ? 0 : 300);
    return () => clearTimeout(timer);
  }, [pendingReload, stored, live]);

  const storedIds = new Set(stored.messages.map((m) => m.id));
  const shown: Shown[] = stored.messages.map(fromRecord);
  if (live) {
    // The person's question rides in stream_start: shown at once, until it is stored.
    if (live.input && !storedIds.has(live.input.id)) shown.push(fromLive(live.input, live.status));
    for (const message of live.messages.values()) if (!storedIds.has(message.id)) shown.push(fromLive(message, live.status));
  }

  // History paged back on scroll: reaching the top loads the previous page, keeping
  // the messages in view where they were.
  const keep = useRef<{ height: number; top: number } | null>(null);
  const onScroll = () => {
    const element = scroller.current;
    if (!element || stored.loading || !stored.hasOlder) return;
    if (element.scrollTop < 40) {
      keep.current = { height: element.scrollHeight, top: element.scrollTop };
      void stored.loadOlder();
    }
  };
  const count = shown.length;
  const atBottom = useRef(true);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    if (keep.current) {
      element.scrollTop = element.scrollHeight - keep.current.height + keep.current.top;
      keep.current = null;
    } else if (atBottom.current) {
      element.scrollTop = element.scrollHeight;
    }
  });
  useEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const track = () => {
      atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
    };
    element.addEventListener("scroll", track);
    return () => element.removeEventListener("scroll", track);
  }, [count]);

  const stop = async () => {
    setStopping(true);
    try {
      await client.request("mutation($chatId: ID!) { stopStream(chatId: $chatId) }", { chatId });
    } catch (error) {
      setProblem((error as Error).message);
      setStopping(false);
    }
  };

  return (
    <>
      <div className="chat-header">
        <h1>{chatId}</h1>
        {streaming && <span className="badge" role="status">Streaming…</span>}
        {streaming && (
          <button type="button" onClick={() => void stop()} disabled={stopping}>Stop</button>
        )}
      </div>
      {problem && <p role="alert">{problem}</p>}
      {stored.error && <p role="alert">{stored.error.message}</p>}
      {live?.error && <p role="alert">{live.error.message}</p>}
      <div className="messages" ref={scroller} onScroll={onScroll} aria-label="Messages" role="log">
        {stored.loading && <p className="loading">Loading earlier messages…</p>}
        {!stored.hasOlder && stored.messages.length > 0 && <p className="start">Start of the conversation</p>}
        <Blocks messages={shown} />
      </div>
    </>
  );
}

/** Consecutive messages of one block together; the thread named on each message. */
function Blocks({ messages }: { messages: readonly Shown[] }) {
  const groups: { key: string; blockId: string | null; items: Shown[] }[] = [];
  for (const message of messages) {
    const last = groups[groups.length - 1];
    if (last && message.blockId !== null && last.blockId === message.blockId) last.items.push(message);
    else groups.push({ key: message.id, blockId: message.blockId, items: [message] });
  }
  return (
    <>
      {groups.map((group) =>
        group.blockId === null ? (
          group.items.map((message) => <MessageView key={message.id} message={message} />)
        ) : (
          <section key={group.key} className="block" aria-label={`Block ${group.blockId}`}>
            {group.items.map((message) => <MessageView key={message.id} message={message} />)}
          </section>
        ),
      )}
    </>
  );
}

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value, null, 2);
}

function MessageView({ message }: { message: Shown }) {
  const { props } = message;
  const thread = message.threadId ? <span className="thread">thread {message.threadId}</span> : null;
  const interrupted = message.status === "INTERRUPTED" ? <span className="status">interrupted</span> : message.status === "FAILED" ? <span className="status">failed</span> : null;
  let body;
  switch (message.type) {
    case "user_input":
      body = <p className="user">{text(props.content)}</p>;
      break;
    case "thinking":
      body = (
        <details open className="thinking">
          <summary>Thinking</summary>
          <p>{text(props.content)}</p>
        </details>
      );
      break;
    case "tool_call":
      body = (
        <div className="tool">
          <div>Tool call: <code>{text(props.name)}</code></div>
          <pre aria-label="Arguments">{text(props.arguments)}</pre>
        </div>
      );
      break;
    case "text":
      body = <p>{text(props.content)}</p>;
      break;
    default:
      body = <pre>{message.type}: {text(props)}</pre>;
  }
  return (
    <article className={`message ${message.role.toLowerCase()}`} aria-label={`${message.role.toLowerCase()} ${message.type}`}>
      {(thread || interrupted) && <div className="meta">{thread}{interrupted}</div>}
      {body}
    </article>
  );
}
