/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** What happened to a chat in the caller's list. INTERRUPT_REQUESTED: a stream of the chat ended asking a person (an approval, a question); INTERRUPT_RESOLVED: an interrupt of the chat was decided, expired or cancelled. */
export type ChatEventType =
  | 'CREATED'
  | 'DELETED'
  | 'INTERRUPT_REQUESTED'
  | 'INTERRUPT_RESOLVED'
  | 'MESSAGES'
  | 'PURGED'
  | 'RESTORED'
  | 'RESYNC'
  | 'STREAM_ENDED'
  | 'STREAM_STARTED'
  | 'UPDATED';

/** Narrows a chat list; every field given must match. */
export type ChatFilter = {
  assistantId?: string | null | undefined;
  /** true: only chats with an interrupt waiting for a person's decision (a tool call to approve, a question to answer); false: the others. */
  awaitingDecision?: boolean | null | undefined;
  /** true: only chats with no live stream whose active leaf is a USER message (a question waiting for an agent) or whose interrupts are all decided and not yet resumed; false: the others. With assistantId, what an agent worker lists and follows. */
  awaitingReply?: boolean | null | undefined;
  /** true: only chats with no live stream whose active leaf is a reply the service ended INTERRUPTED because its producer went away (its heartbeats stopped, or the service shut down), as the step the producer had running records; false: the others. A reply a person stopped is not one. With assistantId, what an agent worker lists to answer cut-off replies again. */
  awaitingRetry?: boolean | null | undefined;
  /** Only chats of this channel (api, widget, telegram …). */
  channel?: string | null | undefined;
  createdBy?: string | null | undefined;
  /** true: the trash, the deleted chats the caller may restore. */
  deleted?: boolean | null | undefined;
  /** Exclusive upper bound on timeField. */
  endTime?: string | null | undefined;
  /** Also list chats whose mode is subagent. */
  includeSubagents?: boolean | null | undefined;
  /** Case-insensitive match anywhere in the title. */
  keywords?: string | null | undefined;
  /** Only chats of this mode (naming subagent lists them). */
  mode?: string | null | undefined;
  pinned?: boolean | null | undefined;
  /** Inclusive lower bound on timeField. */
  startTime?: string | null | undefined;
  status?: ChatStatus | null | undefined;
  /** Only chats carrying every one of these tags. */
  tags?: Array<string> | null | undefined;
  teamId?: string | null | undefined;
  timeField?: TimeField | null | undefined;
};

export type ChatShare =
  | 'PRIVATE'
  | 'TEAM';

export type ChatStatus =
  | 'ACTIVE'
  | 'ARCHIVED';

/** A chunk as a producer pushes it (by the merging rules). */
export type ChunkInput = {
  blockId?: string | null | undefined;
  chunkId?: string | null | undefined;
  delta?: boolean | null | undefined;
  deltaAction?: string | null | undefined;
  deltaPath?: string | null | undefined;
  messageId?: string | null | undefined;
  props?: unknown;
  role?: Role | null | undefined;
  threadId?: string | null | undefined;
  /** Sets the message's token count (last value wins; left out: unchanged). */
  tokens?: number | null | undefined;
  type: string;
};

export type CreateChatInput = {
  assistantId: string;
  /** Where the conversation happens, 1-64 characters. */
  channel?: string;
  /** Purge the chat for good at this moment. */
  expiresAt?: string | null | undefined;
  id?: string | null | undefined;
  metadata?: unknown;
  mode?: string;
  pinned?: boolean;
  public?: boolean;
  share?: ChatShare;
  sort?: number;
  /** At most 20, each 1-64 characters; kept sorted, repeats dropped. */
  tags?: Array<string> | null | undefined;
  /** Expire after the service's temporary-chat lifetime. */
  temporary?: boolean;
  title?: string | null | undefined;
};

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

/** A message to append; the service assigns id and sequence. */
export type MessageInput = {
  assistantId?: string | null | undefined;
  blockId?: string | null | undefined;
  id?: string | null | undefined;
  metadata?: unknown;
  props: unknown;
  requestId?: string | null | undefined;
  role: Role;
  threadId?: string | null | undefined;
  /** The message's token count (a whole number >= 0). */
  tokens?: number | null | undefined;
  type: string;
};

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

export type StartStreamInput = {
  assistantId?: string | null | undefined;
  chatId: string;
  input?: MessageInput | null | undefined;
  /** Answer this message (again): the stream's messages hang below it, beside any earlier answer, instead of after the active leaf. */
  parentId?: string | null | undefined;
  requestId?: string | null | undefined;
  streamId?: string | null | undefined;
};

/** How a stream ended. AWAITING_INPUT: it asked a person (a tool call with needsApproval, a question) and waits for the decisions; a COMPLETED end of a stream that asked becomes AWAITING_INPUT. */
export type StreamStatus =
  | 'AWAITING_INPUT'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED';

export type TimeField =
  | 'CREATED_AT'
  | 'LAST_MESSAGE_AT';

/** Fields left out stay as they are. */
export type UpdateChatInput = {
  /** null keeps the chat until it is deleted. */
  expiresAt?: string | null | undefined;
  metadata?: unknown;
  pinned?: boolean | null | undefined;
  public?: boolean | null | undefined;
  share?: ChatShare | null | undefined;
  sort?: number | null | undefined;
  status?: ChatStatus | null | undefined;
  tags?: Array<string> | null | undefined;
  title?: string | null | undefined;
};

/** What one model request cost, as the producer reports it. */
export type UsageInput = {
  completionTokens?: number;
  model?: string | null | undefined;
  promptTokens?: number;
};

export type MessageLeavesFragment = { id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null };

export type ChatSummaryFieldsFragment = { id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus };

export type MessageFieldsFragment = { id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string }> };

export type FileFieldsFragment = { id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string };

export type ChunkFieldsFragment = { streamId: string, seq: number, fromSeq: number, snapshot: boolean, chunkId: string, messageId: string | null, blockId: string | null, threadId: string | null, type: string, role: Role | null, props: unknown, delta: boolean, deltaPath: string | null, deltaAction: string | null };

export type ChatsQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  filter?: ChatFilter | null | undefined;
  timezone?: string | null | undefined;
}>;


export type ChatsQuery = { chats: { pageInfo: { hasNextPage: boolean, endCursor: string | null }, groups: Array<{ key: string, label: string, totalCount: number, chats: Array<{ id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus }> }> } };

export type ChatPageQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  filter?: ChatFilter | null | undefined;
}>;


export type ChatPageQuery = { chats: { pageInfo: { hasNextPage: boolean, endCursor: string | null }, edges: Array<{ node: { id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } }> } };

export type ChatQueryVariables = Exact<{
  id: string;
}>;


export type ChatQuery = { chat: { activeLeafId: string | null, id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } | null };

export type MessagesQueryVariables = Exact<{
  chatId: string;
  last?: number | null | undefined;
  before?: string | null | undefined;
}>;


export type MessagesQuery = { messages: { pageInfo: { hasPreviousPage: boolean, startCursor: string | null }, edges: Array<{ node: { id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string }> } }> } };

export type MessageTreeQueryVariables = Exact<{
  chatId: string;
  first?: number | null | undefined;
  after?: string | null | undefined;
}>;


export type MessageTreeQuery = { messages: { pageInfo: { hasNextPage: boolean, endCursor: string | null }, edges: Array<{ node: { id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string }> } }> } };

export type ChatEventsSubscriptionVariables = Exact<{
  filter?: ChatFilter | null | undefined;
}>;


export type ChatEventsSubscription = { chatEvents: { type: ChatEventType, chatId: string, at: string, chat: { id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } | null } };

export type ChatStreamSubscriptionVariables = Exact<{
  chatId: string;
  afterSeq?: number | null | undefined;
}>;


export type ChatStreamSubscription = { chatStream: { streamId: string, seq: number, fromSeq: number, snapshot: boolean, chunkId: string, messageId: string | null, blockId: string | null, threadId: string | null, type: string, role: Role | null, props: unknown, delta: boolean, deltaPath: string | null, deltaAction: string | null } };

export type CreateChatMutationVariables = Exact<{
  input: CreateChatInput;
}>;


export type CreateChatMutation = { createChat: { id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } };

export type UpdateChatMutationVariables = Exact<{
  id: string;
  input: UpdateChatInput;
}>;


export type UpdateChatMutation = { updateChat: { id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } };

export type DeleteChatMutationVariables = Exact<{
  id: string;
}>;


export type DeleteChatMutation = { deleteChat: boolean };

export type AppendMessagesMutationVariables = Exact<{
  chatId: string;
  appendId: string;
  messages: Array<MessageInput> | MessageInput;
  parentId?: string | null | undefined;
}>;


export type AppendMessagesMutation = { appendMessages: { messageIds: Array<string>, lastSequence: number } };

export type StartStreamMutationVariables = Exact<{
  input: StartStreamInput;
}>;


export type StartStreamMutation = { startStream: { id: string, chatId: string, requestId: string | null, status: string } };

export type PushChunksMutationVariables = Exact<{
  streamId: string;
  chunks: Array<ChunkInput> | ChunkInput;
}>;


export type PushChunksMutation = { pushChunks: { accepted: number, duplicates: number, lastSeq: number } };

export type EndStreamMutationVariables = Exact<{
  streamId: string;
  status: StreamStatus;
  error?: string | null | undefined;
  usage?: UsageInput | null | undefined;
}>;


export type EndStreamMutation = { endStream: { messages: Array<{ id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string }> }> } };

export type StopStreamMutationVariables = Exact<{
  chatId: string;
}>;


export type StopStreamMutation = { stopStream: boolean };

export type EditMessageMutationVariables = Exact<{
  id: string;
  input: EditMessageInput;
  appendId: string;
}>;


export type EditMessageMutation = { editMessage: { id: string, chatId: string, requestId: string | null, role: Role, type: string, props: unknown, blockId: string | null, threadId: string | null, assistantId: string | null, sequence: number, status: MessageStatus, metadata: unknown, createdAt: string, updatedAt: string, tokens: number | null, tokensEstimated: boolean, parentId: string | null, files: Array<{ id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string }> } };

export type RegenerateMutationVariables = Exact<{
  messageId: string;
}>;


export type RegenerateMutation = { regenerate: { activeLeafId: string | null, id: string, title: string | null, assistantId: string, lastMessageAt: string | null, createdAt: string, status: ChatStatus } };

export type InterruptFieldsFragment = { id: string, chatId: string, streamId: string, messageId: string, requestId: string | null, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string } | null };

export type ChatInterruptsQueryVariables = Exact<{
  id: string;
  state?: InterruptState | null | undefined;
}>;


export type ChatInterruptsQuery = { chat: { id: string, assistantId: string, interrupts: Array<{ id: string, chatId: string, streamId: string, messageId: string, requestId: string | null, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string } | null }> } | null };

export type InterruptQueryVariables = Exact<{
  id: string;
}>;


export type InterruptQuery = { interrupt: { id: string, chatId: string, streamId: string, messageId: string, requestId: string | null, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string } | null } };

export type ResolveInterruptMutationVariables = Exact<{
  id: string;
  approved?: boolean | null | undefined;
  editedArguments?: unknown;
  response?: unknown;
  reason?: string | null | undefined;
  decisionId?: string | null | undefined;
}>;


export type ResolveInterruptMutation = { resolveInterrupt: { id: string, chatId: string, streamId: string, messageId: string, requestId: string | null, kind: InterruptKind, state: InterruptState, toolCallId: string | null, toolName: string | null, arguments: unknown, prompt: string | null, responseSchema: unknown, reason: string | null, expiresAt: string | null, decision: { approved: boolean | null, editedArguments: unknown, response: unknown, reason: string | null, decidedBy: string } | null } };

export type FileQueryVariables = Exact<{
  id: string;
}>;


export type FileQuery = { file: { id: string, filename: string, mediaType: string, size: number, width: number | null, height: number | null, url: string } | null };

export type FileLimitsQueryVariables = Exact<{ [key: string]: never; }>;


export type FileLimitsQuery = { fileLimits: { maxBytes: number, mediaTypes: Array<string>, quotaBytes: number | null, usedBytes: number | null } };

export type RateMessageMutationVariables = Exact<{
  messageId: string;
  rating?: Rating | null | undefined;
  comment?: string | null | undefined;
  tags?: Array<string> | string | null | undefined;
}>;


export type RateMessageMutation = { rateMessage: { id: string, messageId: string, rating: Rating, comment: string | null, tags: Array<string>, updatedAt: string } | null };

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
export const ChatSummaryFieldsFragmentDoc = new TypedDocumentString(`
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}
    `, {"fragmentName":"ChatSummaryFields"}) as unknown as TypedDocumentString<ChatSummaryFieldsFragment, unknown>;
export const MessageLeavesFragmentDoc = new TypedDocumentString(`
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
    `, {"fragmentName":"MessageLeaves"}) as unknown as TypedDocumentString<MessageLeavesFragment, unknown>;
export const FileFieldsFragmentDoc = new TypedDocumentString(`
    fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}
    `, {"fragmentName":"FileFields"}) as unknown as TypedDocumentString<FileFieldsFragment, unknown>;
export const MessageFieldsFragmentDoc = new TypedDocumentString(`
    fragment MessageFields on Message {
  ...MessageLeaves
  files {
    ...FileFields
  }
}
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`, {"fragmentName":"MessageFields"}) as unknown as TypedDocumentString<MessageFieldsFragment, unknown>;
export const ChunkFieldsFragmentDoc = new TypedDocumentString(`
    fragment ChunkFields on Chunk {
  streamId
  seq
  fromSeq
  snapshot
  chunkId
  messageId
  blockId
  threadId
  type
  role
  props
  delta
  deltaPath
  deltaAction
}
    `, {"fragmentName":"ChunkFields"}) as unknown as TypedDocumentString<ChunkFieldsFragment, unknown>;
export const InterruptFieldsFragmentDoc = new TypedDocumentString(`
    fragment InterruptFields on Interrupt {
  id
  chatId
  streamId
  messageId
  requestId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
  }
}
    `, {"fragmentName":"InterruptFields"}) as unknown as TypedDocumentString<InterruptFieldsFragment, unknown>;
export const ChatsDocument = new TypedDocumentString(`
    query Chats($first: Int, $after: String, $filter: ChatFilter, $timezone: String) {
  chats(first: $first, after: $after, filter: $filter, timezone: $timezone) {
    pageInfo {
      hasNextPage
      endCursor
    }
    groups {
      key
      label
      totalCount
      chats {
        ...ChatSummaryFields
      }
    }
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<ChatsQuery, ChatsQueryVariables>;
export const ChatPageDocument = new TypedDocumentString(`
    query ChatPage($first: Int, $after: String, $filter: ChatFilter) {
  chats(first: $first, after: $after, filter: $filter) {
    pageInfo {
      hasNextPage
      endCursor
    }
    edges {
      node {
        ...ChatSummaryFields
      }
    }
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<ChatPageQuery, ChatPageQueryVariables>;
export const ChatDocument = new TypedDocumentString(`
    query Chat($id: ID!) {
  chat(id: $id) {
    ...ChatSummaryFields
    activeLeafId
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<ChatQuery, ChatQueryVariables>;
export const MessagesDocument = new TypedDocumentString(`
    query Messages($chatId: ID!, $last: Int, $before: String) {
  messages(chatId: $chatId, last: $last, before: $before) {
    pageInfo {
      hasPreviousPage
      startCursor
    }
    edges {
      node {
        ...MessageFields
      }
    }
  }
}
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
fragment MessageFields on Message {
  ...MessageLeaves
  files {
    ...FileFields
  }
}
fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`) as unknown as TypedDocumentString<MessagesQuery, MessagesQueryVariables>;
export const MessageTreeDocument = new TypedDocumentString(`
    query MessageTree($chatId: ID!, $first: Int, $after: String) {
  messages(chatId: $chatId, first: $first, after: $after, allBranches: true) {
    pageInfo {
      hasNextPage
      endCursor
    }
    edges {
      node {
        ...MessageFields
      }
    }
  }
}
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
fragment MessageFields on Message {
  ...MessageLeaves
  files {
    ...FileFields
  }
}
fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`) as unknown as TypedDocumentString<MessageTreeQuery, MessageTreeQueryVariables>;
export const ChatEventsDocument = new TypedDocumentString(`
    subscription ChatEvents($filter: ChatFilter) {
  chatEvents(filter: $filter) {
    type
    chatId
    at
    chat {
      ...ChatSummaryFields
    }
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<ChatEventsSubscription, ChatEventsSubscriptionVariables>;
export const ChatStreamDocument = new TypedDocumentString(`
    subscription ChatStream($chatId: ID!, $afterSeq: Int) {
  chatStream(chatId: $chatId, afterSeq: $afterSeq) {
    ...ChunkFields
  }
}
    fragment ChunkFields on Chunk {
  streamId
  seq
  fromSeq
  snapshot
  chunkId
  messageId
  blockId
  threadId
  type
  role
  props
  delta
  deltaPath
  deltaAction
}`) as unknown as TypedDocumentString<ChatStreamSubscription, ChatStreamSubscriptionVariables>;
export const CreateChatDocument = new TypedDocumentString(`
    mutation CreateChat($input: CreateChatInput!) {
  createChat(input: $input) {
    ...ChatSummaryFields
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<CreateChatMutation, CreateChatMutationVariables>;
export const UpdateChatDocument = new TypedDocumentString(`
    mutation UpdateChat($id: ID!, $input: UpdateChatInput!) {
  updateChat(id: $id, input: $input) {
    ...ChatSummaryFields
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<UpdateChatMutation, UpdateChatMutationVariables>;
export const DeleteChatDocument = new TypedDocumentString(`
    mutation DeleteChat($id: ID!) {
  deleteChat(id: $id)
}
    `) as unknown as TypedDocumentString<DeleteChatMutation, DeleteChatMutationVariables>;
export const AppendMessagesDocument = new TypedDocumentString(`
    mutation AppendMessages($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!, $parentId: ID) {
  appendMessages(
    chatId: $chatId
    appendId: $appendId
    messages: $messages
    parentId: $parentId
  ) {
    messageIds
    lastSequence
  }
}
    `) as unknown as TypedDocumentString<AppendMessagesMutation, AppendMessagesMutationVariables>;
export const StartStreamDocument = new TypedDocumentString(`
    mutation StartStream($input: StartStreamInput!) {
  startStream(input: $input) {
    id
    chatId
    requestId
    status
  }
}
    `) as unknown as TypedDocumentString<StartStreamMutation, StartStreamMutationVariables>;
export const PushChunksDocument = new TypedDocumentString(`
    mutation PushChunks($streamId: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $streamId, chunks: $chunks) {
    accepted
    duplicates
    lastSeq
  }
}
    `) as unknown as TypedDocumentString<PushChunksMutation, PushChunksMutationVariables>;
export const EndStreamDocument = new TypedDocumentString(`
    mutation EndStream($streamId: ID!, $status: StreamStatus!, $error: String, $usage: UsageInput) {
  endStream(streamId: $streamId, status: $status, error: $error, usage: $usage) {
    messages {
      ...MessageFields
    }
  }
}
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
fragment MessageFields on Message {
  ...MessageLeaves
  files {
    ...FileFields
  }
}
fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`) as unknown as TypedDocumentString<EndStreamMutation, EndStreamMutationVariables>;
export const StopStreamDocument = new TypedDocumentString(`
    mutation StopStream($chatId: ID!) {
  stopStream(chatId: $chatId)
}
    `) as unknown as TypedDocumentString<StopStreamMutation, StopStreamMutationVariables>;
export const EditMessageDocument = new TypedDocumentString(`
    mutation EditMessage($id: ID!, $input: EditMessageInput!, $appendId: String!) {
  editMessage(id: $id, input: $input, appendId: $appendId) {
    ...MessageFields
  }
}
    fragment MessageLeaves on Message {
  id
  chatId
  requestId
  role
  type
  props
  blockId
  threadId
  assistantId
  sequence
  status
  metadata
  createdAt
  updatedAt
  tokens
  tokensEstimated
  parentId
}
fragment MessageFields on Message {
  ...MessageLeaves
  files {
    ...FileFields
  }
}
fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`) as unknown as TypedDocumentString<EditMessageMutation, EditMessageMutationVariables>;
export const RegenerateDocument = new TypedDocumentString(`
    mutation Regenerate($messageId: ID!) {
  regenerate(messageId: $messageId) {
    ...ChatSummaryFields
    activeLeafId
  }
}
    fragment ChatSummaryFields on Chat {
  id
  title
  assistantId
  lastMessageAt
  createdAt
  status
}`) as unknown as TypedDocumentString<RegenerateMutation, RegenerateMutationVariables>;
export const ChatInterruptsDocument = new TypedDocumentString(`
    query ChatInterrupts($id: ID!, $state: InterruptState) {
  chat(id: $id) {
    id
    assistantId
    interrupts(state: $state) {
      ...InterruptFields
    }
  }
}
    fragment InterruptFields on Interrupt {
  id
  chatId
  streamId
  messageId
  requestId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
  }
}`) as unknown as TypedDocumentString<ChatInterruptsQuery, ChatInterruptsQueryVariables>;
export const InterruptDocument = new TypedDocumentString(`
    query Interrupt($id: ID!) {
  interrupt(id: $id) {
    ...InterruptFields
  }
}
    fragment InterruptFields on Interrupt {
  id
  chatId
  streamId
  messageId
  requestId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
  }
}`) as unknown as TypedDocumentString<InterruptQuery, InterruptQueryVariables>;
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
  streamId
  messageId
  requestId
  kind
  state
  toolCallId
  toolName
  arguments
  prompt
  responseSchema
  reason
  expiresAt
  decision {
    approved
    editedArguments
    response
    reason
    decidedBy
  }
}`) as unknown as TypedDocumentString<ResolveInterruptMutation, ResolveInterruptMutationVariables>;
export const FileDocument = new TypedDocumentString(`
    query File($id: ID!) {
  file(id: $id) {
    ...FileFields
  }
}
    fragment FileFields on File {
  id
  filename
  mediaType
  size
  width
  height
  url
}`) as unknown as TypedDocumentString<FileQuery, FileQueryVariables>;
export const FileLimitsDocument = new TypedDocumentString(`
    query FileLimits {
  fileLimits {
    maxBytes
    mediaTypes
    quotaBytes
    usedBytes
  }
}
    `) as unknown as TypedDocumentString<FileLimitsQuery, FileLimitsQueryVariables>;
export const RateMessageDocument = new TypedDocumentString(`
    mutation RateMessage($messageId: ID!, $rating: Rating, $comment: String, $tags: [String!]) {
  rateMessage(
    messageId: $messageId
    rating: $rating
    comment: $comment
    tags: $tags
  ) {
    id
    messageId
    rating
    comment
    tags
    updatedAt
  }
}
    `) as unknown as TypedDocumentString<RateMessageMutation, RateMessageMutationVariables>;