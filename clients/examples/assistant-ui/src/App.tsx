import {
  ActionBarPrimitive, AssistantRuntimeProvider, BranchPickerPrimitive, ComposerPrimitive, MessagePrimitive,
  ThreadListItemPrimitive, ThreadListPrimitive, ThreadPrimitive, type ToolCallMessagePartProps,
} from "@assistant-ui/react";
import type { ReactNode } from "react";

import { useChatqlRuntime } from "./runtime";

const Tool = ({ toolName, args, result }: ToolCallMessagePartProps) => (
  <pre>{toolName}({JSON.stringify(args)}){result === undefined ? " …" : ` → ${JSON.stringify(result)}`}</pre>
);

function Message({ who, actions }: { who: string; actions: ReactNode }) {
  return (
    <MessagePrimitive.Root aria-label={who}>
      <strong>{who}</strong>
      <MessagePrimitive.Parts components={{ Reasoning: ({ text }) => <p><em>Thinking: {text}</em></p>, tools: { Fallback: Tool } }} />
      <BranchPickerPrimitive.Root hideWhenSingleBranch>
        <BranchPickerPrimitive.Previous aria-label="Previous branch">‹</BranchPickerPrimitive.Previous>
        <BranchPickerPrimitive.Number /> / <BranchPickerPrimitive.Count />
        <BranchPickerPrimitive.Next aria-label="Next branch">›</BranchPickerPrimitive.Next>
      </BranchPickerPrimitive.Root>
      <ActionBarPrimitive.Root hideWhenRunning>{actions}</ActionBarPrimitive.Root>
    </MessagePrimitive.Root>
  );
}

// Edit writes the question again (chatql's editMessage, a new branch the agent answers);
// Regenerate asks the agent for another answer (chatql's regenerate, a sibling answer).
const UserMessage = () => <Message who="You" actions={<ActionBarPrimitive.Edit>Edit</ActionBarPrimitive.Edit>} />;
const AssistantMessage = () => <Message who="Agent" actions={<ActionBarPrimitive.Reload>Regenerate</ActionBarPrimitive.Reload>} />;
const EditComposer = () => (
  <ComposerPrimitive.Root aria-label="Edit message">
    <ComposerPrimitive.Input aria-label="Edited message" />
    <ComposerPrimitive.Cancel>Cancel</ComposerPrimitive.Cancel>
    <ComposerPrimitive.Send>Save</ComposerPrimitive.Send>
  </ComposerPrimitive.Root>
);

export function App() {
  const runtime = useChatqlRuntime();
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <div style={{ display: "flex", gap: "2rem", fontFamily: "system-ui", margin: "1rem" }}>
        <ThreadListPrimitive.Root aria-label="Chats">
          <ThreadListPrimitive.New>New chat</ThreadListPrimitive.New>
          <ThreadListPrimitive.Items components={{
            ThreadListItem: () => (
              <ThreadListItemPrimitive.Root>
                <ThreadListItemPrimitive.Trigger><ThreadListItemPrimitive.Title fallback="Untitled" /></ThreadListItemPrimitive.Trigger>
                <ThreadListItemPrimitive.Archive>Archive</ThreadListItemPrimitive.Archive>
              </ThreadListItemPrimitive.Root>
            ),
          }} />
        </ThreadListPrimitive.Root>
        <ThreadPrimitive.Root style={{ flex: 1, maxWidth: 720 }}>
          <ThreadPrimitive.Viewport>
            <ThreadPrimitive.Messages>
              {({ message }) => (message.composer.isEditing ? <EditComposer /> : message.role === "user" ? <UserMessage /> : <AssistantMessage />)}
            </ThreadPrimitive.Messages>
          </ThreadPrimitive.Viewport>
          <ComposerPrimitive.Root>
            <ComposerPrimitive.Input aria-label="Message" />
            <ThreadPrimitive.If running={false}><ComposerPrimitive.Send>Send</ComposerPrimitive.Send></ThreadPrimitive.If>
            <ThreadPrimitive.If running><ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel></ThreadPrimitive.If>
          </ComposerPrimitive.Root>
        </ThreadPrimitive.Root>
      </div>
    </AssistantRuntimeProvider>
  );
}
