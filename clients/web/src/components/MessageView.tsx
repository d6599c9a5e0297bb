import { useState } from "react";

import { textOf } from "../api";
import { Markdown } from "./Markdown";
import { VersionSwitcher } from "./VersionSwitcher";

/** A message as shown: stored (with time and versions) or still streaming. */
export interface Shown {
  readonly id: string;
  readonly type: string;
  readonly role: string;
  readonly props: Record<string, unknown>;
  readonly blockId: string | null;
  readonly threadId: string | null;
  readonly status: string | null;
  readonly createdAt: string | null;
  readonly siblings: { readonly index: number; readonly count: number; readonly ids: readonly string[] } | null;
  /** The message this one answers or follows (null for the first, unknown while streaming). */
  readonly parentId?: string | null;
  /** True for the first message of an answer (its parent is the person's question). */
  readonly answerStart: boolean;
  /** The person's message as sent, not read back yet (no edit until it is). */
  readonly sending?: boolean;
}

export interface MessageActions {
  readonly busy: boolean;
  readonly assistant: string;
  edit(message: Shown, content: string): Promise<boolean>;
  pickVersion(message: Shown, index: number): void;
  /** Asks the agent to answer the question `message` answers again (a new version). */
  regenerate(message: Shown): void;
}

export const MEMORY_NOTE = "Started over: the agent no longer reads the messages above. Its memory is kept.";

function sender(message: Shown, assistant: string): string {
  switch (message.role) {
    case "USER": return "You";
    case "ASSISTANT": return assistant;
    case "TOOL": return `Tool${typeof message.props.name === "string" ? ` ${message.props.name}` : ""}`;
    default: return "System";
  }
}

const clock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function MessageView({ message, actions, focused }: { message: Shown; actions: MessageActions; focused: boolean }) {
  const { props } = message;
  const [editing, setEditing] = useState(false);
  if (message.type === "boundary") {
    return <div id={`message-${message.id}`} className="boundary" role="note">{MEMORY_NOTE}</div>;
  }
  const content = textOf(props.content);
  let body;
  switch (message.type) {
    case "user_input":
      body = editing ? (
        <EditForm initial={content} onCancel={() => setEditing(false)} onSave={async (value) => {
          const saved = await actions.edit(message, value);
          if (saved) setEditing(false);
        }} />
      ) : (
        <p className="user">{content}</p>
      );
      break;
    case "thinking":
      body = (
        // Open while it streams, folded once stored.
        <details className="thinking" open={message.createdAt === null}>
          <summary>Thinking</summary>
          <p>{content}</p>
        </details>
      );
      break;
    case "tool_call":
      body = (
        <div className="tool">
          <div>Tool call: <code>{textOf(props.name)}</code></div>
          <pre aria-label="Arguments">{textOf(props.arguments)}</pre>
        </div>
      );
      break;
    case "tool_result":
      body = (
        <div className="tool">
          <div>Tool result</div>
          <pre aria-label="Result">{content}</pre>
        </div>
      );
      break;
    case "text":
      body = <Markdown text={content} />;
      break;
    case "error":
      // Shown to the person, never read by the model (a failed or empty reply's note).
      body = <p className="error-note">{content}</p>;
      break;
    default:
      body = <pre>{message.type}: {textOf(props)}</pre>;
  }
  const who = sender(message, actions.assistant);
  const status = message.status === "INTERRUPTED" ? "interrupted" : message.status === "FAILED" ? "failed" : null;
  return (
    <article id={`message-${message.id}`} tabIndex={-1} className={`message ${message.role.toLowerCase()}${focused ? " hit" : ""}`}
      aria-label={`${who}, ${message.type.replace("_", " ")}`}>
      <div className="meta">
        <span className="sender">{who}</span>
        {message.createdAt && <time dateTime={message.createdAt}>{clock.format(new Date(message.createdAt))}</time>}
        {message.threadId && <span className="thread">thread {message.threadId}</span>}
        {status && <span className="status">{status}</span>}
        {message.siblings && message.siblings.count > 1 && (
          <VersionSwitcher index={message.siblings.index} count={message.siblings.count} disabled={actions.busy}
            onPick={(index) => actions.pickVersion(message, index)} />
        )}
        {message.type === "user_input" && message.createdAt && !message.sending && !editing && (
          <button type="button" className="link" disabled={actions.busy} onClick={() => setEditing(true)}
            aria-label={`Edit “${content.slice(0, 40)}”`}>Edit</button>
        )}
        {message.answerStart && message.createdAt && message.parentId && (
          <button type="button" className="link" disabled={actions.busy} onClick={() => actions.regenerate(message)}>Regenerate</button>
        )}
      </div>
      {body}
    </article>
  );
}

function EditForm({ initial, onSave, onCancel }: { initial: string; onSave: (value: string) => Promise<void>; onCancel: () => void }) {
  const [value, setValue] = useState(initial);
  return (
    <form className="edit" onSubmit={(event) => {
      event.preventDefault();
      if (value.trim()) void onSave(value.trim());
    }}>
      <textarea aria-label="Edit your message" value={value} autoFocus rows={3}
        onChange={(event) => setValue(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Escape") onCancel();
          if (event.key === "Enter" && !event.shiftKey) {
            event.preventDefault();
            if (value.trim()) void onSave(value.trim());
          }
        }} />
      <button type="submit">Save and send</button>
      <button type="button" onClick={onCancel}>Cancel</button>
    </form>
  );
}
