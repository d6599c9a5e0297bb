/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** The edited content; fields left out are copied from the original. */
export type EditMessageInput = {
  metadata?: unknown;
  props?: unknown;
};

/** What an interrupt asks: TOOL_APPROVAL (may this tool call run, with these arguments?) or INPUT (a question with an answer to give). */
export type InterruptKind =
  | 'INPUT'
  | 'TOOL_APPROVAL';

/** PENDING until decided; RESOLVED once decided; EXPIRED when its expiresAt passed first (it counts as denied); CANCELLED when the stream was stopped. */
export type InterruptState =
  | 'CANCELLED'
  | 'EXPIRED'
  | 'PENDING'
  | 'RESOLVED';

export type MessageStatus =
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED';

/** A person's rating of an assistant's message. */
export type Rating =
  | 'DOWN'
  | 'UP';

export type Role =
  | 'ASSISTANT'
  | 'SYSTEM'
  | 'TOOL'
  | 'USER';

export type ThreadMessageFragment = { id: string, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, status: MessageStatus, createdAt: string, parentId: string | null, siblings: { index: number, count: number, ids: Array<string> }, myFeedback: { rating: Rating } | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, url: string, width: number | null, height: number | null }> };

export type MessageFileFragment = { id: string, filename: string, mediaType: string, size: number, url: string, width: number | null, height: number | null };

export type InterruptFieldsFragment = { id: string, chatId: string, messageId: string, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, requestedAt: string, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string, decidedAt: string } | null };

export type ChatInterruptsQueryVariables = Exact<{
  chatId: string;
}>;


export type ChatInterruptsQuery = { chat: { id: string, interrupts: Array<{ id: string, chatId: string, messageId: string, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, requestedAt: string, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string, decidedAt: string } | null }> } | null };

export type InboxQueryVariables = Exact<{
  first?: number | null | undefined;
}>;


export type InboxQuery = { interrupts: { edges: Array<{ node: { id: string, chatId: string, messageId: string, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, requestedAt: string, expiresAt: string | null, chat: { id: string, title: string | null } | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string, decidedAt: string } | null } }> } };

export type ResolveInterruptMutationVariables = Exact<{
  id: string;
  approved?: boolean | null | undefined;
  editedArguments?: unknown;
  response?: unknown;
  reason?: string | null | undefined;
  decisionId?: string | null | undefined;
}>;


export type ResolveInterruptMutation = { resolveInterrupt: { id: string, chatId: string, messageId: string, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, requestedAt: string, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string, decidedAt: string } | null } };

export type ForkSharedChatMutationVariables = Exact<{
  token: string;
}>;


export type ForkSharedChatMutation = { forkChat: { id: string } };

export type ChatDetailsQueryVariables = Exact<{
  id: string;
}>;


export type ChatDetailsQuery = { chat: { id: string, title: string | null, assistantId: string, pinned: boolean, tags: Array<string>, activeLeafId: string | null, usage: { promptTokens: number, completionTokens: number, messageTokens: number } } | null };

export type ThreadQueryVariables = Exact<{
  chatId: string;
  last?: number | null | undefined;
  before?: string | null | undefined;
}>;


export type ThreadQuery = { messages: { pageInfo: { hasPreviousPage: boolean, startCursor: string | null }, edges: Array<{ node: { id: string, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, status: MessageStatus, createdAt: string, parentId: string | null, siblings: { index: number, count: number, ids: Array<string> }, myFeedback: { rating: Rating } | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, url: string, width: number | null, height: number | null }> } }> } };

export type TrashQueryVariables = Exact<{
  first?: number | null | undefined;
}>;


export type TrashQuery = { chats: { edges: Array<{ node: { id: string, title: string | null, lastMessageAt: string | null } }> } };

export type SearchMessagesQueryVariables = Exact<{
  query: string;
  first?: number | null | undefined;
}>;


export type SearchMessagesQuery = { searchMessages: Array<{ message: { id: string, chatId: string, props: unknown, type: string }, chat: { id: string, title: string | null } }> };

export type RestoreChatMutationVariables = Exact<{
  id: string;
}>;


export type RestoreChatMutation = { restoreChat: { id: string } };

export type EditMessageMutationVariables = Exact<{
  id: string;
  input: EditMessageInput;
  appendId: string;
}>;


export type EditMessageMutation = { editMessage: { id: string } };

export type SwitchBranchMutationVariables = Exact<{
  chatId: string;
  leafId: string;
}>;


export type SwitchBranchMutation = { switchBranch: { id: string, activeLeafId: string | null } };

export type StartOverMutationVariables = Exact<{
  chatId: string;
}>;


export type StartOverMutation = { startOver: { id: string } };

export type RegenerateMutationVariables = Exact<{
  messageId: string;
}>;


export type RegenerateMutation = { regenerate: { id: string, activeLeafId: string | null } };

export type PinnedChatsQueryVariables = Exact<{
  first?: number | null | undefined;
}>;


export type PinnedChatsQuery = { chats: { edges: Array<{ node: { id: string, title: string | null } }> } };

export type RateMessageMutationVariables = Exact<{
  messageId: string;
  rating?: Rating | null | undefined;
}>;


export type RateMessageMutation = { rateMessage: { id: string, rating: Rating } | null };

export type ShareChatMutationVariables = Exact<{
  chatId: string;
  messageId?: string | null | undefined;
}>;


export type ShareChatMutation = { shareChat: { id: string, url: string | null } };

export type SharedChatQueryVariables = Exact<{
  token: string;
}>;


export type SharedChatQuery = { sharedChat: { title: string | null, createdAt: string, messages: Array<{ id: string, role: Role, type: string, props: unknown, createdAt: string, assistantId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, url: string, width: number | null, height: number | null }> }> } | null };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const MessageFileFragmentDoc = new TypedDocumentString(`
    fragment MessageFile on File {
  id
  filename
  mediaType
  size
  url
  width
  height
}
    `, {"fragmentName":"MessageFile"}) as unknown as TypedDocumentString<MessageFileFragment, unknown>;
export const ThreadMessageFragmentDoc = new TypedDocumentString(`
    fragment ThreadMessage on Message {
  id
  role
  type
  props
  blockId
  threadId
  status
  createdAt
  parentId
  siblings {
    index
    count
    ids
  }
  myFeedback {
    rating
  }
  files {
    ...MessageFile
  }
}
    fragment MessageFile on File {
  id
  filename
  mediaType
  size
  url
  width
  height
}`, {"fragmentName":"ThreadMessage"}) as unknown as TypedDocumentString<ThreadMessageFragment, unknown>;
export const InterruptFieldsFragmentDoc = new TypedDocumentString(`
    fragment InterruptFields on Interrupt {
  id
  chatId
  messageId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  requestedAt
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
    decidedAt
  }
}
    `, {"fragmentName":"InterruptFields"}) as unknown as TypedDocumentString<InterruptFieldsFragment, unknown>;
export const ChatInterruptsDocument = new TypedDocumentString(`
    query ChatInterrupts($chatId: ID!) {
  chat(id: $chatId) {
    id
    interrupts {
      ...InterruptFields
    }
  }
}
    fragment InterruptFields on Interrupt {
  id
  chatId
  messageId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  requestedAt
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
    decidedAt
  }
}`) as unknown as TypedDocumentString<ChatInterruptsQuery, ChatInterruptsQueryVariables>;
export const InboxDocument = new TypedDocumentString(`
    query Inbox($first: Int) {
  interrupts(first: $first) {
    edges {
      node {
        ...InterruptFields
        chat {
          id
          title
        }
      }
    }
  }
}
    fragment InterruptFields on Interrupt {
  id
  chatId
  messageId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  requestedAt
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
    decidedAt
  }
}`) as unknown as TypedDocumentString<InboxQuery, InboxQueryVariables>;
export const ResolveInterruptDocument = new TypedDocumentString(`
    mutation ResolveInterrupt($id: ID!, $approved: Boolean, $editedArguments: JSON, $response: JSON, $reason: String, $decisionId: ID) {
  resolveInterrupt(
    id: $id
    approved: $approved
    editedArguments: $editedArguments
    response: $response
    reason: $reason
    decisionId: $decisionId
  ) {
    ...InterruptFields
  }
}
    fragment InterruptFields on Interrupt {
  id
  chatId
  messageId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  requestedAt
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
    decidedAt
  }
}`) as unknown as TypedDocumentString<ResolveInterruptMutation, ResolveInterruptMutationVariables>;
export const ForkSharedChatDocument = new TypedDocumentString(`
    mutation ForkSharedChat($token: String!) {
  forkChat(fromShare: $token) {
    id
  }
}
    `) as unknown as TypedDocumentString<ForkSharedChatMutation, ForkSharedChatMutationVariables>;
export const ChatDetailsDocument = new TypedDocumentString(`
    query ChatDetails($id: ID!) {
  chat(id: $id) {
    id
    title
    assistantId
    pinned
    tags
    activeLeafId
    usage {
      promptTokens
      completionTokens
      messageTokens
    }
  }
}
    `) as unknown as TypedDocumentString<ChatDetailsQuery, ChatDetailsQueryVariables>;
export const ThreadDocument = new TypedDocumentString(`
    query Thread($chatId: ID!, $last: Int, $before: String) {
  messages(chatId: $chatId, last: $last, before: $before) {
    pageInfo {
      hasPreviousPage
      startCursor
    }
    edges {
      node {
        ...ThreadMessage
      }
    }
  }
}
    fragment ThreadMessage on Message {
  id
  role
  type
  props
  blockId
  threadId
  status
  createdAt
  parentId
  siblings {
    index
    count
    ids
  }
  myFeedback {
    rating
  }
  files {
    ...MessageFile
  }
}
fragment MessageFile on File {
  id
  filename
  mediaType
  size
  url
  width
  height
}`) as unknown as TypedDocumentString<ThreadQuery, ThreadQueryVariables>;
export const TrashDocument = new TypedDocumentString(`
    query Trash($first: Int) {
  chats(first: $first, filter: {deleted: true}) {
    edges {
      node {
        id
        title
        lastMessageAt
      }
    }
  }
}
    `) as unknown as TypedDocumentString<TrashQuery, TrashQueryVariables>;
export const SearchMessagesDocument = new TypedDocumentString(`
    query SearchMessages($query: String!, $first: Int) {
  searchMessages(query: $query, first: $first, window: 0) {
    message {
      id
      chatId
      props
      type
    }
    chat {
      id
      title
    }
  }
}
    `) as unknown as TypedDocumentString<SearchMessagesQuery, SearchMessagesQueryVariables>;
export const RestoreChatDocument = new TypedDocumentString(`
    mutation RestoreChat($id: ID!) {
  restoreChat(id: $id) {
    id
  }
}
    `) as unknown as TypedDocumentString<RestoreChatMutation, RestoreChatMutationVariables>;
export const EditMessageDocument = new TypedDocumentString(`
    mutation EditMessage($id: ID!, $input: EditMessageInput!, $appendId: String!) {
  editMessage(id: $id, input: $input, appendId: $appendId) {
    id
  }
}
    `) as unknown as TypedDocumentString<EditMessageMutation, EditMessageMutationVariables>;
export const SwitchBranchDocument = new TypedDocumentString(`
    mutation SwitchBranch($chatId: ID!, $leafId: ID!) {
  switchBranch(chatId: $chatId, leafId: $leafId) {
    id
    activeLeafId
  }
}
    `) as unknown as TypedDocumentString<SwitchBranchMutation, SwitchBranchMutationVariables>;
export const StartOverDocument = new TypedDocumentString(`
    mutation StartOver($chatId: ID!) {
  startOver(chatId: $chatId) {
    id
  }
}
    `) as unknown as TypedDocumentString<StartOverMutation, StartOverMutationVariables>;
export const RegenerateDocument = new TypedDocumentString(`
    mutation Regenerate($messageId: ID!) {
  regenerate(messageId: $messageId) {
    id
    activeLeafId
  }
}
    `) as unknown as TypedDocumentString<RegenerateMutation, RegenerateMutationVariables>;
export const PinnedChatsDocument = new TypedDocumentString(`
    query PinnedChats($first: Int) {
  chats(first: $first, filter: {pinned: true}) {
    edges {
      node {
        id
        title
      }
    }
  }
}
    `) as unknown as TypedDocumentString<PinnedChatsQuery, PinnedChatsQueryVariables>;
export const RateMessageDocument = new TypedDocumentString(`
    mutation RateMessage($messageId: ID!, $rating: Rating) {
  rateMessage(messageId: $messageId, rating: $rating) {
    id
    rating
  }
}
    `) as unknown as TypedDocumentString<RateMessageMutation, RateMessageMutationVariables>;
export const ShareChatDocument = new TypedDocumentString(`
    mutation ShareChat($chatId: ID!, $messageId: ID) {
  shareChat(chatId: $chatId, messageId: $messageId) {
    id
    url
  }
}
    `) as unknown as TypedDocumentString<ShareChatMutation, ShareChatMutationVariables>;
export const SharedChatDocument = new TypedDocumentString(`
    query SharedChat($token: String!) {
  sharedChat(token: $token) {
    title
    createdAt
    messages {
      id
      role
      type
      props
      createdAt
      assistantId
      files {
        ...MessageFile
      }
    }
  }
}
    fragment MessageFile on File {
  id
  filename
  mediaType
  size
  url
  width
  height
}`) as unknown as TypedDocumentString<SharedChatQuery, SharedChatQueryVariables>;