import { UpdateChatDocument, type ChatqlClient } from "@chatql/client";
import { useRef, useState, type FormEvent } from "react";

import type { ChatDetails } from "../thread";

/** The chat's title (editable), pin, tags, usage, export, start over and delete. */
export function ChatHeader({ client, chat, streaming, onChanged, onStartOver, onExport, onDelete }: {
  client: ChatqlClient;
  chat: ChatDetails;
  streaming: boolean;
  onChanged: () => Promise<void>;
  onStartOver: () => Promise<void>;
  onExport: () => Promise<void>;
  onDelete: () => Promise<void>;
}) {
  const [renaming, setRenaming] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const renameButton = useRef<HTMLButtonElement>(null);
  const title = chat.title || "Untitled chat";
  const update = async (input: { title?: string; pinned?: boolean; tags?: string[] }) => {
    setProblem(null);
    try {
      await client.request(UpdateChatDocument, { id: chat.id, input });
      await onChanged();
      return true;
    } catch (error) {
      setProblem((error as Error).message);
      return false;
    }
  };
  const rename = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget).get("title") ?? "").trim();
    if (value && (await update({ title: value }))) {
      setRenaming(false);
      setTimeout(() => renameButton.current?.focus());
    }
  };
  const addTag = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const value = String(new FormData(form).get("tag") ?? "").trim();
    if (value && !chat.tags.includes(value) && (await update({ tags: [...chat.tags, value] }))) form.reset();
  };
  const { usage } = chat;
  return (
    <header className="chat-header">
      <div className="title-row">
        {renaming ? (
          <form onSubmit={(event) => void rename(event)} className="rename">
            <input name="title" aria-label="Chat title" defaultValue={chat.title ?? ""} autoFocus
              onKeyDown={(event) => event.key === "Escape" && setRenaming(false)} />
            <button type="submit">Save title</button>
            <button type="button" onClick={() => setRenaming(false)}>Cancel</button>
          </form>
        ) : (
          <>
            <h1>{title}</h1>
            <button type="button" ref={renameButton} onClick={() => setRenaming(true)}>Rename</button>
          </>
        )}
        <button type="button" aria-pressed={chat.pinned} onClick={() => void update({ pinned: !chat.pinned })}>
          {chat.pinned ? "Pinned" : "Pin"}
        </button>
        {streaming && <span className="badge" role="status">Streaming…</span>}
        <span className="spacer" />
        <button type="button" onClick={() => void onStartOver()} disabled={streaming}>Start over</button>
        <button type="button" onClick={() => void onExport()}>Export</button>
        <button type="button" className="danger" onClick={() => void onDelete()}>Delete</button>
      </div>
      <div className="detail-row">
        <ul className="tags" aria-label="Tags">
          {chat.tags.map((tag) => (
            <li key={tag}>
              {tag}
              <button type="button" className="link" aria-label={`Remove tag ${tag}`}
                onClick={() => void update({ tags: chat.tags.filter((t) => t !== tag) })}>×</button>
            </li>
          ))}
        </ul>
        <form onSubmit={(event) => void addTag(event)} className="add-tag">
          <input name="tag" aria-label="New tag" placeholder="Add a tag" size={10} />
          <button type="submit">Add tag</button>
        </form>
        <span className="usage" aria-label="Usage">
          Usage: {usage.promptTokens} prompt + {usage.completionTokens} completion tokens
        </span>
      </div>
      {problem && <p role="alert">{problem}</p>}
    </header>
  );
}
