import { memo } from "react";

import { contentText } from "../api";
import { ActionButton } from "./controls";
import { CopyIcon, RegenerateIcon, ShareIcon, ThumbDownIcon, ThumbUpIcon } from "./icons";
import { MEMORY_NOTE, Part, revealClass, Time, UserMessage, WhenBusy, type MessageActions, type Shown } from "./MessageView";
import { VersionSwitcher } from "./VersionSwitcher";

type Item =
  | { readonly kind: "user"; readonly message: Shown }
  | { readonly kind: "note"; readonly message: Shown }
  | { readonly kind: "turn"; readonly messages: Shown[] };

/**
 * The conversation: the person's messages, and each answer as one turn (the sender and
 * time once; its thinking, tool calls, results and text as parts, consecutive parts of
 * one block together) with its actions below.
 */
export function MessageList({ messages, actions, focusId }: { messages: readonly Shown[]; actions: MessageActions; focusId: string | null }) {
  const items: Item[] = [];
  for (const message of messages) {
    const last = items[items.length - 1];
    if (message.type === "boundary") items.push({ kind: "note", message });
    else if (message.role === "USER") items.push({ kind: "user", message });
    else if (last?.kind === "turn" && !message.answerStart) last.messages.push(message);
    else items.push({ kind: "turn", messages: [message] });
  }
  return (
    <>
      {items.map((item, index) => {
        const last = index === items.length - 1;
        switch (item.kind) {
          case "note":
            return (
              <div key={item.message.id} id={`message-${item.message.id}`} role="note"
                className="my-2 rounded-lg border border-dashed border-zinc-300 px-3 py-2 text-center text-sm text-zinc-700 dark:border-zinc-600 dark:text-zinc-300">
                {MEMORY_NOTE}
              </div>
            );
          case "user":
            return <UserMessage key={item.message.id} message={item.message} actions={actions} focused={item.message.id === focusId} last={last} />;
          case "turn":
            return <Turn key={item.messages[0]?.id} parts={item.messages} actions={actions} focusId={focusId} last={last} />;
        }
      })}
    </>
  );
}

interface TurnProps {
  parts: readonly Shown[];
  actions: MessageActions;
  focusId: string | null;
  last: boolean;
}

const sameTurn = (a: TurnProps, b: TurnProps) =>
  a.actions === b.actions && a.focusId === b.focusId && a.last === b.last
  && a.parts.length === b.parts.length && a.parts.every((part, index) => part === b.parts[index]);

/** An answer; drawn again only when one of its parts (or the actions) change. */
const Turn = memo(function Turn({ parts, actions, focusId, last }: TurnProps) {
  const start = parts.find((part) => part.answerStart) ?? parts[0];
  const stored = parts.every((part) => part.createdAt !== null);
  const texts = parts.filter((part) => part.type === "text");
  const rated = texts[texts.length - 1] ?? parts[parts.length - 1];
  const blocks: { key: string; blockId: string | null; parts: Shown[] }[] = [];
  for (const part of parts) {
    const block = blocks[blocks.length - 1];
    if (block && part.blockId !== null && block.blockId === part.blockId) block.parts.push(part);
    else blocks.push({ key: part.id, blockId: part.blockId, parts: [part] });
  }
  const view = (part: Shown) => (
    <Part key={part.id} message={part} assistant={actions.assistant} focused={part.id === focusId}
      interrupt={actions.interrupts?.get(part.id)} decide={actions.decide} />
  );
  const feedback = rated?.feedback ?? null;
  return (
    <section aria-label={`Answer from ${actions.assistant}`} className="group/message flex flex-col gap-2">
      <div className="flex items-center gap-2">
        <span className="text-sm font-semibold">{actions.assistant}</span>
        {stored && <Time at={parts[0]?.createdAt ?? null} />}
      </div>
      {blocks.map((block) =>
        block.blockId === null ? (
          block.parts.map(view)
        ) : (
          <section key={block.key} aria-label={`Block ${block.blockId}`} className="flex flex-col gap-2">
            {block.parts.map(view)}
          </section>
        ),
      )}
      {stored && start && (
        <div className="flex flex-wrap items-center gap-1">
          {start.siblings && start.siblings.count > 1 && (
            <WhenBusy busy={actions.busy}>{(busy) => start.siblings && (
              <VersionSwitcher of={start.id} index={start.siblings.index} count={start.siblings.count} disabled={busy}
                onPick={(index) => actions.pickVersion(start, index)} />
            )}</WhenBusy>
          )}
          <div className={`flex items-center gap-0.5 ${revealClass(last)}`}>
            {texts.length > 0 && (
              <ActionButton label="Copy" onClick={() => actions.copy(texts.map((part) => contentText(part.props.content)).join("\n\n"))}><CopyIcon /></ActionButton>
            )}
            {start.answerStart && start.parentId && !actions.readOnly && (
              <WhenBusy busy={actions.busy}>{(busy) => (
                <ActionButton label="Regenerate" disabled={busy} onClick={() => actions.regenerate(start)}><RegenerateIcon /></ActionButton>
              )}</WhenBusy>
            )}
            {rated && !actions.readOnly && (
              <>
                <ActionButton label="Good answer" aria-pressed={feedback === "UP"} onClick={() => actions.rate(rated, feedback === "UP" ? null : "UP")}
                  className="aria-pressed:text-emerald-700 dark:aria-pressed:text-emerald-300"><ThumbUpIcon /></ActionButton>
                <ActionButton label="Bad answer" aria-pressed={feedback === "DOWN"} onClick={() => actions.rate(rated, feedback === "DOWN" ? null : "DOWN")}
                  className="aria-pressed:text-red-700 dark:aria-pressed:text-red-300"><ThumbDownIcon /></ActionButton>
                <ActionButton label="Share" onClick={() => actions.share(rated)}><ShareIcon /></ActionButton>
              </>
            )}
          </div>
        </div>
      )}
    </section>
  );
}, sameTurn);
