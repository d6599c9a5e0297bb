import { useAui, useLocalRuntime, useRemoteThreadListRuntime, type ChatModelAdapter, type ThreadAssistantMessagePart, type ThreadHistoryAdapter } from "@assistant-ui/react";
import { ChatqlClient } from "@chatql/client";
import { ChatqlChatTransport } from "@chatql/client/ai-sdk";
import { chatqlHistoryAdapter, chatqlThreadListAdapter, type ChatqlHistoryAdapter } from "@chatql/client/assistant-ui";
import { readUIMessageStream, type UIMessage } from "ai";
import { useMemo } from "react";

const user = new URLSearchParams(location.search).get("user") ?? "alice";
const client = new ChatqlClient({ url: new URL("/graphql", location.href).href, headers: () => ({ "X-User-Id": user }) });
const transport = new ChatqlChatTransport(client);
// The chat list: the person's chats with the demo agent, new threads as new chats.
const threadList = chatqlThreadListAdapter(client, { assistantId: "demo" });

type Aui = ReturnType<typeof useAui>;

/**
 * Each open thread's history: every branch of its chat. A person's message is stored with
 * its parent, an edited one as chatql's edit of the question it replaces (`editMessage`);
 * `ask` is what a run does before following the reply.
 */
function historyOf(aui: Aui) {
  const adapters = new Map<string, ChatqlHistoryAdapter>();
  const known = new Set<string>(); // ids chatql has (loaded or stored from here)
  const asked = new Map<string, Promise<void>>(); // questions stored from here, not yet answered by a run
  const forChat = (chatId: string) => adapters.get(chatId) ?? adapters.set(chatId, chatqlHistoryAdapter(client, chatId)).get(chatId)!;

  /** The question an edit replaces: the thread still shows it where the new message goes. */
  function editedQuestion(parentId: string | null, id: string): string | undefined {
    const shown = aui.thread().getState().messages;
    const at = parentId === null ? 0 : shown.findIndex((message) => message.id === parentId) + 1;
    const there = at === 0 && parentId !== null ? undefined : shown[at];
    return there !== undefined && there.role === "user" && there.id !== id ? there.id : undefined;
  }

  const history: ThreadHistoryAdapter = {
    async load() {
      const chatId = aui.threadListItem().getState().remoteId;
      if (chatId === undefined) return { messages: [] };
      const repository = await forChat(chatId).load();
      for (const item of repository.messages) known.add(item.message.id);
      return repository;
    },
    append(item) {
      if (item.message.role !== "user") return Promise.resolve(); // replies are the agent's stream
      const source = editedQuestion(item.parentId, item.message.id);
      const write = (async () => {
        const { remoteId } = await aui.threadListItem().initialize();
        if (source !== undefined) {
          await forChat(remoteId).edit(item, source);
        } else {
          // A reply streamed into this page has a local id; chatql's active leaf is its end.
          const parentId = item.parentId !== null && known.has(item.parentId) ? item.parentId : null;
          await forChat(remoteId).append({ ...item, parentId });
        }
        known.add(item.message.id);
      })();
      asked.set(item.message.id, write);
      return write;
    },
  };

  /**
   * Before a run answers the person's message `questionId`: a question just stored from
   * here already awaits its answer; any other (Regenerate) is asked again (`regenerate`).
   */
  async function ask(chatId: string, questionId: string): Promise<void> {
    const stored = asked.get(questionId);
    asked.delete(questionId);
    await (stored ?? forChat(chatId).regenerate(questionId));
  }

  return { history, ask };
}

/** UI message parts as assistant-ui message parts. */
function contentOf(message: UIMessage): ThreadAssistantMessagePart[] {
  return message.parts.flatMap((part): ThreadAssistantMessagePart[] => {
    if (part.type === "text" || part.type === "reasoning") return [{ type: part.type, text: part.text }];
    if (part.type.startsWith("tool-") && "toolCallId" in part) {
      const args = (typeof part.input === "object" && part.input !== null ? part.input : {}) as Record<string, never>;
      return [{ type: "tool-call", toolCallId: part.toolCallId, toolName: part.type.slice(5), args, argsText: JSON.stringify(args), result: part.output }];
    }
    if (part.type.startsWith("data-") && "data" in part) return [{ type: "data", name: part.type.slice(5), data: part.data }];
    return [];
  });
}

/** One thread: history from chatql; a run reads the agent's reply over chatql's WebSocket. */
function useChatqlThread() {
  const aui = useAui();
  const { history, ask } = useMemo(() => historyOf(aui), [aui]);
  const model = useMemo<ChatModelAdapter>(() => ({
    async *run({ messages, abortSignal }) {
      const { remoteId } = await aui.threadListItem().initialize();
      // Follow first, then make sure the agent is asked: the transport reads the reply
      // that starts next (Stop aborts it, which stops the agent's stream).
      const stream = await transport.sendMessages({ trigger: "regenerate-message", chatId: remoteId, messageId: undefined, messages: [], abortSignal });
      const question = messages.at(-1);
      if (question?.role === "user") await ask(remoteId, question.id);
      for await (const message of readUIMessageStream({ stream })) yield { content: contentOf(message) };
    },
  }), [aui, ask]);
  return useLocalRuntime(model, { adapters: { history } });
}

export function useChatqlRuntime() {
  return useRemoteThreadListRuntime({ adapter: threadList, runtimeHook: useChatqlThread });
}
