import { useAui, useLocalRuntime, useRemoteThreadListRuntime, type ChatModelAdapter, type ThreadAssistantMessagePart, type ThreadHistoryAdapter } from "@assistant-ui/react";
import { ChatqlClient } from "@chatql/client";
import { ChatqlChatTransport } from "@chatql/client/ai-sdk";
import { chatqlHistoryAdapter, chatqlThreadListAdapter } from "@chatql/client/assistant-ui";
import { readUIMessageStream, type UIMessage } from "ai";
import { useMemo } from "react";

const user = new URLSearchParams(location.search).get("user") ?? "alice";
const client = new ChatqlClient({ url: new URL("/graphql", location.href).href, headers: () => ({ "X-User-Id": user }) });
const transport = new ChatqlChatTransport(client);
// The chat list: the person's chats with the demo agent, new threads as new chats.
const threadList = chatqlThreadListAdapter(client, { assistantId: "demo" });

type Aui = ReturnType<typeof useAui>;

/** Each open thread's history: every branch of its chat; a person's message is stored with its parent. */
function historyOf(aui: Aui): ThreadHistoryAdapter {
  const adapters = new Map<string, ThreadHistoryAdapter>();
  const known = new Set<string>(); // ids chatql has (loaded or stored from here)
  const forChat = (chatId: string) => adapters.get(chatId) ?? adapters.set(chatId, chatqlHistoryAdapter(client, chatId)).get(chatId)!;
  return {
    async load() {
      const chatId = aui.threadListItem().getState().remoteId;
      if (chatId === undefined) return { messages: [] };
      const repository = await forChat(chatId).load();
      for (const item of repository.messages) known.add(item.message.id);
      return repository;
    },
    async append(item) {
      const { remoteId } = await aui.threadListItem().initialize();
      // A reply streamed into this page has a local id; chatql's active leaf is its end.
      const parentId = item.parentId !== null && known.has(item.parentId) ? item.parentId : null;
      await forChat(remoteId).append({ ...item, parentId });
      known.add(item.message.id);
    },
  };
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
  const history = useMemo(() => historyOf(aui), [aui]);
  const model = useMemo<ChatModelAdapter>(() => ({
    async *run({ abortSignal }) {
      const { remoteId } = await aui.threadListItem().initialize();
      // The history adapter stores the person's message; the transport only follows the
      // reply that starts next (Stop aborts it, which stops the agent's stream).
      const stream = await transport.sendMessages({ trigger: "regenerate-message", chatId: remoteId, messageId: undefined, messages: [], abortSignal });
      for await (const message of readUIMessageStream({ stream })) yield { content: contentOf(message) };
    },
  }), [aui]);
  return useLocalRuntime(model, { adapters: { history } });
}

export function useChatqlRuntime() {
  return useRemoteThreadListRuntime({ adapter: threadList, runtimeHook: useChatqlThread });
}
