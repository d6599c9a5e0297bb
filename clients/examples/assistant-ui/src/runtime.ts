import { useAui, useLocalRuntime, useRemoteThreadListRuntime, type ChatModelAdapter, type ThreadAssistantMessagePart, type ThreadHistoryAdapter } from "@assistant-ui/react";
import { ChatqlClient } from "@chatql/client";
import { ChatqlChatTransport } from "@chatql/client/ai-sdk";
import { chatqlHistoryAdapter, chatqlThreadListAdapter, type ChatqlHistoryAdapter } from "@chatql/client/assistant-ui";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { useMemo } from "react";

const user = new URLSearchParams(location.search).get("user") ?? "alice";
const client = new ChatqlClient({ url: new URL("/graphql", location.href).href, headers: () => ({ "X-User-Id": user }) });
const transport = new ChatqlChatTransport(client);
// The chat list: the person's chats with the demo agent, new threads as new chats.
const threadList = chatqlThreadListAdapter(client, { assistantId: "demo" });

type Aui = ReturnType<typeof useAui>;

// A run follows the chat's stream before the agent is asked to answer, so the reply's
// start reaches the page live: a subscription made after the reply began would get it as
// a snapshot, which the transport takes for an earlier reply. `connected()` resolves once
// chatql's WebSocket is up (or has failed, which the run's follower then reports).
let socketUp = false;
const waiting = new Set<() => void>();
const settle = () => {
  for (const resolve of waiting) resolve();
  waiting.clear();
};
client.socket().on("connected", () => {
  socketUp = true;
  settle();
});
client.socket().on("closed", () => {
  socketUp = false;
  settle();
});
const connected = () => (socketUp ? Promise.resolve() : new Promise<void>((resolve) => waiting.add(resolve)));

/**
 * Each open thread's history: every branch of its chat. A person's message is stored with
 * its parent, an edited one as chatql's edit of the question it replaces (`editMessage`);
 * `ask` is what a run does once it follows the chat.
 */
function historyOf(aui: Aui) {
  const adapters = new Map<string, ChatqlHistoryAdapter>();
  const known = new Set<string>(); // ids chatql has (loaded or stored from here)
  // Questions from this page: stored once their run follows the chat (`release`).
  const asked = new Map<string, { release: () => void; write: Promise<void> }>();
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
      let release!: () => void;
      const followed = new Promise<void>((resolve) => {
        release = resolve;
      });
      const write = (async () => {
        await followed;
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
      asked.set(item.message.id, { release, write });
      return write;
    },
  };

  /**
   * Once a run follows the chat, asks for the answer to the person's message
   * `questionId`: a question from this page is stored now (the agent answers a new
   * question), any other (Regenerate) is asked again with `regenerate`.
   */
  async function ask(chatId: string, questionId: string): Promise<void> {
    const question = asked.get(questionId);
    asked.delete(questionId);
    if (question === undefined) return forChat(chatId).regenerate(questionId);
    question.release();
    return question.write;
  }

  /** Stores a question from this page even when its run could not follow the chat (a later Regenerate then asks again). */
  function release(questionId: string): void {
    const question = asked.get(questionId);
    asked.delete(questionId);
    question?.release();
  }

  return { history, ask, release };
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
  const { history, ask, release } = useMemo(() => historyOf(aui), [aui]);
  const model = useMemo<ChatModelAdapter>(() => ({
    async *run({ messages, abortSignal }) {
      const question = messages.at(-1)?.role === "user" ? messages.at(-1)?.id : undefined;
      let stream: ReadableStream<UIMessageChunk>;
      try {
        const { remoteId } = await aui.threadListItem().initialize();
        // Follow first, then ask the agent: the transport reads the reply that starts
        // next (Stop aborts it, which stops the agent's stream).
        stream = await transport.sendMessages({ trigger: "regenerate-message", chatId: remoteId, messageId: undefined, messages: [], abortSignal });
        await connected();
        if (question !== undefined) await ask(remoteId, question);
      } finally {
        if (question !== undefined) release(question);
      }
      for await (const message of readUIMessageStream({ stream })) yield { content: contentOf(message) };
    },
  }), [aui, ask, release]);
  return useLocalRuntime(model, { adapters: { history } });
}

export function useChatqlRuntime() {
  return useRemoteThreadListRuntime({ adapter: threadList, runtimeHook: useChatqlThread });
}
