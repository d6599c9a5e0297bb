import { createContext, memo, useContext, useState, type ReactNode } from "react";

import { contentText, fileParts, textOf } from "../api";
import type { DecisionInput, InterruptInfo } from "../interrupts";
import { MessageFiles, type MessageFile, type ShownFile } from "./Attachments";
import { ActionButton, Button } from "./controls";
import { CopyIcon, EditIcon } from "./icons";
import { InterruptPanel } from "./InterruptPanel";
import { Markdown } from "./Markdown";
import { VersionSwitcher } from "./VersionSwitcher";

export type Rating = "UP" | "DOWN";

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
  /** The person's own rating of this message. */
  readonly feedback: Rating | null;
  /** The files it references, with their addresses (stored messages). */
  readonly files?: readonly MessageFile[];
}

/** A message's files: the stored ones (with addresses), else those its content names. */
export function filesOf(message: Shown): ShownFile[] {
  if (message.files && message.files.length > 0) return [...message.files];
  const parts = fileParts(message.props.content);
  if (message.type === "file" && typeof message.props.fileId === "string") {
    parts.push({ type: "file", fileId: message.props.fileId, mediaType: String(message.props.mediaType ?? ""), filename: String(message.props.filename ?? "file") });
  }
  return parts.map((part) => ({ id: part.fileId, filename: part.filename, mediaType: part.mediaType ?? "" }));
}

export interface MessageActions {
  /** A write is under way (or an answer streams): what would write waits. Unless a `Busy` context says it. */
  readonly busy?: boolean;
  /** A share link's page: only Copy. */
  readonly readOnly?: boolean;
  readonly assistant: string;
  edit(message: Shown, content: string): Promise<boolean>;
  pickVersion(message: Shown, index: number): void;
  /** Asks the agent to answer the question `message` answers again (a new version). */
  regenerate(message: Shown): void;
  copy(text: string): void;
  rate(message: Shown, rating: Rating | null): void;
  share(message: Shown): void;
  /** What the chat's streams asked a person, by the id of the message that asked. */
  readonly interrupts?: ReadonlyMap<string, InterruptInfo>;
  /** Decides an interrupt (absent: read-only). */
  decide?(interrupt: InterruptInfo, decision: DecisionInput): Promise<boolean>;
}

/**
 * Whether writes wait (a write under way, an answer streaming), over `MessageActions.busy`:
 * read by the buttons it disables alone, so when it changes (as an answer starts and ends)
 * only they are drawn again, not every message of the chat.
 */
export const Busy = createContext<boolean | null>(null);

/** `children` with whether writes wait (the `Busy` context, else `busy`). */
export function WhenBusy({ busy, children }: { busy: boolean | undefined; children: (busy: boolean) => ReactNode }) {
  return children(useContext(Busy) ?? busy ?? false);
}

export const MEMORY_NOTE = "Started over: the agent no longer reads the messages above. Its memory is kept.";

export function sender(message: Shown, assistant: string): string {
  switch (message.role) {
    case "USER": return "You";
    case "ASSISTANT": return assistant;
    case "TOOL": return `Tool${typeof message.props.name === "string" ? ` ${message.props.name}` : ""}`;
    default: return "System";
  }
}

const clock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function Time({ at }: { at: string | null }) {
  if (!at) return null;
  return <time dateTime={at} className="text-xs text-zinc-600 dark:text-zinc-400">{clock.format(new Date(at))}</time>;
}

function statusOf(message: Shown): string | null {
  return message.status === "INTERRUPTED" ? "interrupted" : message.status === "FAILED" ? "failed" : null;
}

function StatusBadge({ message }: { message: Shown }) {
  const status = statusOf(message);
  if (!status) return null;
  return (
    <span className="rounded-full bg-amber-100 px-2 py-0.5 text-xs font-medium text-amber-900 dark:bg-amber-900 dark:text-amber-100">{status}</span>
  );
}

/** Shown on hover and on keyboard focus (always on touch screens, and on the latest message). */
export const revealClass = (always: boolean) =>
  always ? "" : "opacity-0 group-hover/message:opacity-100 group-focus-within/message:opacity-100 [@media(hover:none)]:opacity-100";

const chevron = (
  <svg viewBox="0 0 24 24" aria-hidden="true" className="size-3.5 shrink-0 group-open/fold:rotate-90" fill="none" stroke="currentColor" strokeWidth={2}>
    <path d="m9 6 6 6-6 6" />
  </svg>
);

function Fold({ open, summary, children }: { open: boolean; summary: ReactNode; children: ReactNode }) {
  return (
    <details open={open} className="group/fold">
      <summary className="flex cursor-pointer list-none items-center gap-1.5 rounded-md py-0.5 text-sm text-zinc-700 select-none hover:text-zinc-900 dark:text-zinc-300 dark:hover:text-zinc-100 [&::-webkit-details-marker]:hidden">
        {chevron}{summary}
      </summary>
      <div className="mt-1 ml-1.5 border-l-2 border-zinc-200 pl-3 dark:border-zinc-700">{children}</div>
    </details>
  );
}

const preClass = "overflow-x-auto rounded-md bg-zinc-50 p-2 text-xs whitespace-pre-wrap dark:bg-zinc-950";

/** One part of an answer (thinking, a tool call, its result, text, an error note), without a header of its own. */
export function Part({ message, assistant, focused, interrupt, decide }: {
  message: Shown; assistant: string; focused: boolean;
  interrupt?: InterruptInfo | undefined;
  decide?: ((interrupt: InterruptInfo, decision: DecisionInput) => Promise<boolean>) | undefined;
}) {
  const { props } = message;
  const content = contentText(props.content);
  const waiting = interrupt?.state === "PENDING";
  const live = message.createdAt === null;
  let body: ReactNode;
  switch (message.type) {
    case "thinking":
      // Open while it streams, folded once stored.
      body = (
        <Fold open={live} summary="Thinking">
          <p className="text-sm whitespace-pre-wrap text-zinc-700 dark:text-zinc-300">{content}</p>
        </Fold>
      );
      break;
    case "tool_call":
      body = (
        <>
          <Fold open={live || waiting} summary={<>Tool call: <code className="font-mono text-xs">{textOf(props.name)}</code>
            <span className="text-xs text-zinc-600 dark:text-zinc-400">
              {waiting ? " · waiting for you" : interrupt ? ` · ${interrupt.state === "RESOLVED" && interrupt.decision?.approved ? "approved" : interrupt.state === "RESOLVED" ? "denied" : interrupt.state.toLowerCase()}` : live ? " · running…" : " · called"}
            </span></>}>
            <pre aria-label="Arguments" className={preClass}>{textOf(props.arguments)}</pre>
          </Fold>
          {interrupt && <InterruptPanel interrupt={interrupt} decide={decide} />}
        </>
      );
      break;
    case "question":
      body = (
        <div>
          <p className="text-sm"><span className="font-medium">Question: </span>{textOf(props.prompt)}</p>
          {interrupt && <InterruptPanel interrupt={interrupt} decide={decide} />}
        </div>
      );
      break;
    case "file":
      body = <MessageFiles files={filesOf(message)} />;
      break;
    case "tool_result":
      body = (
        <Fold open={false} summary="Tool result">
          <pre aria-label="Result" className={preClass}>{content}</pre>
        </Fold>
      );
      break;
    case "text":
      body = <Markdown text={content} />;
      break;
    case "error":
      // Shown to the person, never read by the model (a failed or empty reply's note).
      body = <p className="rounded-lg border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-200">{content}</p>;
      break;
    default:
      body = <pre className={preClass}>{message.type}: {textOf(props)}</pre>;
  }
  return (
    <article id={`message-${message.id}`} tabIndex={-1} aria-label={`${sender(message, assistant)}, ${message.type.replace("_", " ")}`}
      className={`scroll-mt-16 rounded-lg ${focused ? "bg-amber-50 ring-2 ring-amber-400 dark:bg-amber-950/40" : ""}`}>
      {(message.threadId || statusOf(message)) && (
        <div className="mb-1 flex items-center gap-2 text-xs text-zinc-600 dark:text-zinc-400">
          {message.threadId && <span>thread {message.threadId}</span>}
          <StatusBadge message={message} />
        </div>
      )}
      {body}
    </article>
  );
}

/** The person's message: a bubble on the right, with its time, versions, copy and edit. */
export const UserMessage = memo(function UserMessage({ message, actions, focused, last }: { message: Shown; actions: MessageActions; focused: boolean; last: boolean }) {
  const [editing, setEditing] = useState(false);
  const content = contentText(message.props.content);
  const files = filesOf(message);
  const versions = message.siblings && message.siblings.count > 1;
  return (
    <article id={`message-${message.id}`} tabIndex={-1} aria-label="You, user input"
      className={`group/message flex scroll-mt-16 flex-col items-end gap-1 rounded-lg ${focused ? "ring-2 ring-amber-400" : ""}`}>
      <div className="flex items-center gap-2">
        <span className="text-xs font-medium text-zinc-700 dark:text-zinc-300">You</span>
        <Time at={message.createdAt} />
        <StatusBadge message={message} />
      </div>
      {editing ? (
        <EditForm initial={content} onCancel={() => setEditing(false)} onSave={async (value) => {
          const saved = await actions.edit(message, value);
          if (saved) setEditing(false);
        }} />
      ) : (
        content && <p className="max-w-[85%] rounded-2xl bg-zinc-100 px-4 py-2 whitespace-pre-wrap break-words dark:bg-zinc-800">{content}</p>
      )}
      <MessageFiles files={files} align="end" />
      {!editing && (
        <div className="-mt-1 flex h-8 items-center gap-1">
          {versions && message.siblings && (
            <WhenBusy busy={actions.busy}>{(busy) => message.siblings && (
              <VersionSwitcher of={message.id} index={message.siblings.index} count={message.siblings.count} disabled={busy}
                onPick={(index) => actions.pickVersion(message, index)} />
            )}</WhenBusy>
          )}
          <div className={`flex items-center gap-0.5 ${revealClass(last)}`}>
            <ActionButton label="Copy" onClick={() => actions.copy(content)}><CopyIcon /></ActionButton>
            {message.createdAt && !message.sending && !actions.readOnly && (
              <WhenBusy busy={actions.busy}>{(busy) => (
                <ActionButton label={`Edit “${content.slice(0, 40)}”`} tooltip="Edit" disabled={busy} onClick={() => setEditing(true)}>
                  <EditIcon />
                </ActionButton>
              )}</WhenBusy>
            )}
          </div>
        </div>
      )}
    </article>
  );
});

function EditForm({ initial, onSave, onCancel }: { initial: string; onSave: (value: string) => Promise<void>; onCancel: () => void }) {
  const [value, setValue] = useState(initial);
  return (
    <form className="flex w-full flex-col gap-2 rounded-2xl border border-zinc-300 bg-white p-2 dark:border-zinc-600 dark:bg-zinc-800" onSubmit={(event) => {
      event.preventDefault();
      if (value.trim()) void onSave(value.trim());
    }}>
      <textarea aria-label="Edit your message" value={value} autoFocus rows={3}
        className="resize-y bg-transparent p-2 focus-visible:outline-none"
        onChange={(event) => setValue(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Escape") onCancel();
          if (event.key === "Enter" && !event.shiftKey) {
            event.preventDefault();
            if (value.trim()) void onSave(value.trim());
          }
        }} />
      <div className="flex justify-end gap-2">
        <Button onClick={onCancel}>Cancel</Button>
        <Button look="primary" type="submit">Save and send</Button>
      </div>
    </form>
  );
}
