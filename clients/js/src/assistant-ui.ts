/**
 * assistant-ui adapters over chatql.
 *
 * - {@link chatqlThreadListAdapter}: a `RemoteThreadListAdapter` — the caller's chats a
 *   page at a time (the page cursor is chatql's signed cursor), rename, archive, unarchive,
 *   delete (to the trash), and a new thread as a new chat.
 * - {@link chatqlHistoryAdapter}: a `ThreadHistoryAdapter` for one chat — `load` reads every
 *   branch and answers the messages with their `parentId`s and the active leaf as the head,
 *   so an edited question or a regenerated answer shows as assistant-ui branches; `append`
 *   stores a person's message after its parent. Replies are written by the agent's stream,
 *   so assistant messages are not appended from here. `withFormat` serves the AI SDK
 *   runtime (`useChatRuntime`) with `UIMessage`s. Beside the adapter's own methods, `edit`
 *   stores an edited question with chatql's `editMessage` and `regenerate` asks for a new
 *   answer to a question (`regenerate`), for a runtime that knows which message a person
 *   edited or reloaded.
 *
 * A turn is what one UI message shows: a person's message, or the run of messages an agent
 * wrote in reply (its id is the run's first message id, its parent the turn before).
 */

import { ExportedMessageRepository, type RemoteThreadListAdapter, type ThreadHistoryAdapter } from "@assistant-ui/react";
import type { UIMessage } from "ai";

import type { ChatqlClient } from "./client.js";
import {
  AppendMessagesDocument,
  ChatDocument,
  ChatPageDocument,
  CreateChatDocument,
  DeleteChatDocument,
  EditMessageDocument,
  MessageTreeDocument,
  RegenerateDocument,
  UpdateChatDocument,
  type ChatSummaryFieldsFragment,
  type MessageFieldsFragment,
  type MessageTreeQuery,
} from "./generated/operations.js";
import { partsOf, uiRole } from "./ui-messages.js";

type ThreadMetadata = Awaited<ReturnType<RemoteThreadListAdapter["fetch"]>>;

function metadataOf(chat: ChatSummaryFieldsFragment): ThreadMetadata {
  return {
    remoteId: chat.id,
    externalId: undefined,
    status: chat.status === "ARCHIVED" ? "archived" : "regular",
    title: chat.title ?? undefined,
    ...(chat.lastMessageAt ? { lastMessageAt: new Date(chat.lastMessageAt) } : {}),
  };
}

export interface ThreadListOptions {
  /** The assistant new chats are created for (and, unless `allAssistants`, the list's filter). */
  readonly assistantId: string;
  readonly allAssistants?: boolean;
  readonly pageSize?: number;
}

/** A `RemoteThreadListAdapter` over the caller's chats. */
export function chatqlThreadListAdapter(client: ChatqlClient, options: ThreadListOptions): RemoteThreadListAdapter {
  const filter = options.allAssistants ? {} : { assistantId: options.assistantId };
  return {
    async list(params) {
      const data = await client.request(ChatPageDocument, { first: options.pageSize ?? 50, after: params?.after ?? null, filter });
      const page = data.chats;
      return {
        threads: page.edges.map((edge) => metadataOf(edge.node)),
        ...(page.pageInfo.hasNextPage && page.pageInfo.endCursor ? { nextCursor: page.pageInfo.endCursor } : {}),
      };
    },
    async rename(remoteId, newTitle) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { title: newTitle } });
    },
    async archive(remoteId) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { status: "ARCHIVED" } });
    },
    async unarchive(remoteId) {
      await client.request(UpdateChatDocument, { id: remoteId, input: { status: "ACTIVE" } });
    },
    async delete(remoteId) {
      await client.request(DeleteChatDocument, { id: remoteId });
    },
    async initialize() {
      const data = await client.request(CreateChatDocument, { input: { assistantId: options.assistantId } });
      return { remoteId: data.createChat.id, externalId: undefined };
    },
    async generateTitle() {
      // chatql does not title chats itself: an empty stream leaves the title as it is.
      return new ReadableStream({ start: (controller) => controller.close() }) as Awaited<ReturnType<RemoteThreadListAdapter["generateTitle"]>>;
    },
    async fetch(threadId) {
      const data = await client.request(ChatDocument, { id: threadId });
      if (data.chat === null) throw new Error(`chat ${threadId} not found`);
      return metadataOf(data.chat);
    },
  };
}

/** One UI message of the tree: a turn, its parent turn, the chatql messages in it. */
export interface Turn {
  readonly id: string;
  readonly parentId: string | null;
  readonly messages: readonly MessageFieldsFragment[];
}

/** The turns of a chat's whole tree (every branch), parents before children. */
export function turnTree(messages: readonly MessageFieldsFragment[]): { turns: Turn[]; turnOf: Map<string, string> } {
  const byId = new Map(messages.map((m) => [m.id, m]));
  const firstChild = new Map<string, string>();
  for (const m of messages) if (m.parentId && !firstChild.has(m.parentId)) firstChild.set(m.parentId, m.id);
  const turnOf = new Map<string, string>();
  const turns = new Map<string, { id: string; parentId: string | null; messages: MessageFieldsFragment[] }>();
  for (const m of messages) {
    const parent = m.parentId ? byId.get(m.parentId) : undefined;
    const joins = parent !== undefined && uiRole(m.role) === "assistant" && uiRole(parent.role) === "assistant"
      && firstChild.get(parent.id) === m.id && turnOf.has(parent.id);
    if (joins) {
      const id = turnOf.get(parent.id) as string;
      turnOf.set(m.id, id);
      turns.get(id)?.messages.push(m);
    } else {
      turnOf.set(m.id, m.id);
      turns.set(m.id, { id: m.id, parentId: parent ? turnOf.get(parent.id) ?? null : null, messages: [m] });
    }
  }
  return { turns: [...turns.values()], turnOf };
}

/** A turn as the AI SDK's `UIMessage`. */
export function turnMessage(turn: Turn): UIMessage {
  return { id: turn.id, role: uiRole(turn.messages[0]?.role ?? "ASSISTANT"), parts: partsOf(turn.messages) };
}

export interface HistoryOptions {
  /** The message type a person's message is stored as (default `user_input`). */
  readonly inputType?: string;
}

type HistoryItem = Parameters<ThreadHistoryAdapter["append"]>[0];

/** A chat's history adapter with chatql's edit and regenerate (turn ids are assistant-ui's message ids). */
export interface ChatqlHistoryAdapter extends ThreadHistoryAdapter {
  /**
   * Stores a person's edited question: `item.message` (a new message, the same parent as
   * `sourceId`) becomes chatql's edited copy of the question `sourceId` (`editMessage`),
   * its sibling and the chat's active leaf, so the agent answers it. Its chatql id is
   * chatql's; later calls naming `item.message.id` are mapped to it.
   */
  edit(item: HistoryItem, sourceId: string): Promise<void>;
  /** Asks for a new answer to the person's message `turnId` (`regenerate`): the next reply becomes a sibling of the earlier ones. */
  regenerate(turnId: string): Promise<void>;
}

function personText(item: HistoryItem, what: string): string {
  if (item.message.role !== "user") throw new Error(`${what} stores a person's message; this one's role is ${item.message.role}`);
  return item.message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** A `ThreadHistoryAdapter` for one chat. */
export function chatqlHistoryAdapter(client: ChatqlClient, chatId: string, options: HistoryOptions = {}): ChatqlHistoryAdapter {
  // The last stored message of each turn: what a new message's chatql parent is (and, for
  // a person's message, its chatql id: an edited copy's id is chatql's own).
  const lastOfTurn = new Map<string, string>();

  async function loadTree(): Promise<{ turns: Turn[]; headId: string | null }> {
    const messages: MessageFieldsFragment[] = [];
    let after: string | null = null;
    for (;;) {
      const data: MessageTreeQuery = await client.request(MessageTreeDocument, { chatId, first: 200, after });
      const page = data.messages;
      messages.push(...page.edges.map((edge) => edge.node));
      if (!page.pageInfo.hasNextPage || !page.pageInfo.endCursor) break;
      after = page.pageInfo.endCursor;
    }
    const chat = (await client.request(ChatDocument, { id: chatId })).chat;
    const { turns, turnOf } = turnTree(messages);
    for (const turn of turns) lastOfTurn.set(turn.id, turn.messages[turn.messages.length - 1]?.id ?? turn.id);
    const leaf = chat?.activeLeafId ?? null;
    return { turns, headId: leaf === null ? null : turnOf.get(leaf) ?? null };
  }

  async function appendPerson(id: string, parentTurn: string | null, text: string): Promise<void> {
    await client.request(AppendMessagesDocument, {
      chatId,
      appendId: `ui:${id}`,
      messages: [{ id, role: "USER", type: options.inputType ?? "user_input", props: { content: text } }],
      parentId: parentTurn === null ? null : lastOfTurn.get(parentTurn) ?? parentTurn,
    });
    lastOfTurn.set(id, id);
  }

  return {
    async load() {
      const { turns, headId } = await loadTree();
      return ExportedMessageRepository.fromBranchableArray(
        turns.map((turn) => {
          const message = turnMessage(turn);
          return {
            parentId: turn.parentId,
            message: {
              id: turn.id,
              role: message.role,
              createdAt: new Date(turn.messages[0]?.createdAt ?? Date.now()),
              content: message.parts.map((part) => {
                if (part.type === "text" || part.type === "reasoning") return { type: part.type, text: part.text };
                if (part.type.startsWith("tool-") && "toolCallId" in part) {
                  const tool = part as { toolCallId: string; input?: unknown; output?: unknown };
                  return {
                    type: "tool-call" as const, toolCallId: tool.toolCallId, toolName: part.type.slice(5),
                    args: (typeof tool.input === "object" && tool.input !== null ? tool.input : {}) as Record<string, never>,
                    ...(tool.output === undefined ? {} : { result: tool.output }),
                  };
                }
                const data = part as { type: `data-${string}`; data: unknown };
                return { type: data.type, data: data.data };
              }),
            },
          };
        }),
        { headId },
      );
    },
    async append(item) {
      if (item.message.role !== "user") return;
      await appendPerson(item.message.id, item.parentId, personText(item, "append"));
    },
    async edit(item, sourceId) {
      const text = personText(item, "edit");
      const data = await client.request(EditMessageDocument, {
        id: lastOfTurn.get(sourceId) ?? sourceId,
        input: { props: { content: text } },
        appendId: `ui:${item.message.id}`,
      });
      lastOfTurn.set(item.message.id, data.editMessage.id);
    },
    async regenerate(turnId) {
      await client.request(RegenerateDocument, { messageId: lastOfTurn.get(turnId) ?? turnId });
    },
    withFormat(format) {
      return {
        async load() {
          const { turns, headId } = await loadTree();
          return {
            headId,
            messages: turns.map((turn) => {
              const { id, ...content } = turnMessage(turn);
              return format.decode({ id, parent_id: turn.parentId, format: format.format, content: content as never });
            }),
          };
        },
        async append(item) {
          const message = item.message as unknown as UIMessage;
          if (message.role !== "user") return;
          const text = message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
          await appendPerson(format.getId(item.message), item.parentId, text);
        },
      };
    },
  };
}
