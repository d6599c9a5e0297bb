import type { Shown, MessageActions } from "./MessageView";
import { MessageView } from "./MessageView";

/** Consecutive messages of one block together; the thread named on each message. */
export function MessageList({ messages, actions, focusId }: { messages: readonly Shown[]; actions: MessageActions; focusId: string | null }) {
  const groups: { key: string; blockId: string | null; items: Shown[] }[] = [];
  for (const message of messages) {
    const last = groups[groups.length - 1];
    if (last && message.blockId !== null && last.blockId === message.blockId) last.items.push(message);
    else groups.push({ key: message.id, blockId: message.blockId, items: [message] });
  }
  const view = (message: Shown) => <MessageView key={message.id} message={message} actions={actions} focused={message.id === focusId} />;
  return (
    <>
      {groups.map((group) =>
        group.blockId === null ? (
          group.items.map(view)
        ) : (
          <section key={group.key} className="block" aria-label={`Block ${group.blockId}`}>
            {group.items.map(view)}
          </section>
        ),
      )}
    </>
  );
}
