export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** Date with time (isoformat) */
  DateTime: { input: string; output: string; }
  /** The `JSON` scalar type represents JSON values as specified by [ECMA-404](https://ecma-international.org/wp-content/uploads/ECMA-404_2nd_edition_december_2017.pdf). */
  JSON: { input: unknown; output: unknown; }
};

/** What an accepted append wrote (or had written before). */
export type AppendReceipt = {
  __typename?: 'AppendReceipt';
  appendId: Scalars['String']['output'];
  chatId: Scalars['ID']['output'];
  digest: Scalars['String']['output'];
  firstSequence: Scalars['Int']['output'];
  lastSequence: Scalars['Int']['output'];
  messageIds: Array<Scalars['ID']['output']>;
};

/** A conversation between people and assistants. */
export type Chat = {
  __typename?: 'Chat';
  /** The last message of the active branch (what is shown and what the model reads); null while the chat has no messages. */
  activeLeafId: Maybe<Scalars['ID']['output']>;
  /** When its messages moved to the cold archive (null: in the database). Reading, appending or streaming brings them back first. */
  archivedAt: Maybe<Scalars['DateTime']['output']>;
  assistantId: Scalars['String']['output'];
  /** Where the conversation happens (api, widget, telegram …); set at creation. */
  channel: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  createdBy: Maybe<Scalars['String']['output']>;
  /** When the chat is purged for good; null keeps it until deleted. */
  expiresAt: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  /** What the chat's streams asked a person (approvals, questions), oldest first; state narrows them. */
  interrupts: Array<Interrupt>;
  /** The newest message, or null while the chat has none. */
  lastMessage: Maybe<Message>;
  lastMessageAt: Maybe<Scalars['DateTime']['output']>;
  /** The chat's messages; same arguments as Query.messages. */
  messages: MessageConnection;
  metadata: Maybe<Scalars['JSON']['output']>;
  mode: Scalars['String']['output'];
  pinned: Scalars['Boolean']['output'];
  public: Scalars['Boolean']['output'];
  /** Decisions that wait for a worker to resume the run (every interrupt of the stream decided or expired, none resumed yet); null when there are none. */
  resumption: Maybe<Resumption>;
  share: ChatShare;
  /** The chat's share links, newest first (revoked and expired ones too), for whoever may change the chat; empty for everyone else. */
  shares: Array<Share>;
  sort: Scalars['Int']['output'];
  status: ChatStatus;
  /** Sorted, distinct; at most 20. */
  tags: Array<Scalars['String']['output']>;
  teamId: Maybe<Scalars['String']['output']>;
  tenantId: Maybe<Scalars['String']['output']>;
  title: Maybe<Scalars['String']['output']>;
  /** Where the title came from; null while the chat has none. */
  titleSource: Maybe<TitleSource>;
  updatedAt: Scalars['DateTime']['output'];
  updatedBy: Maybe<Scalars['String']['output']>;
  /** The chat's recorded model usage and message token sum. */
  usage: Usage;
};


/** A conversation between people and assistants. */
export type ChatInterruptsArgs = {
  state?: InputMaybe<InterruptState>;
};


/** A conversation between people and assistants. */
export type ChatMessagesArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  allBranches?: Scalars['Boolean']['input'];
  before?: InputMaybe<Scalars['String']['input']>;
  branch?: InputMaybe<Scalars['ID']['input']>;
  filter?: InputMaybe<MessageFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};

/** A page of chats (Relay connection) with totals and time groups. */
export type ChatConnection = {
  __typename?: 'ChatConnection';
  edges: Array<ChatEdge>;
  groups: Array<ChatGroup>;
  pageInfo: PageInfo;
  totalCount: Scalars['Int']['output'];
};

export type ChatEdge = {
  __typename?: 'ChatEdge';
  cursor: Scalars['String']['output'];
  node: Chat;
};

/** One change to the caller's chat list. */
export type ChatEvent = {
  __typename?: 'ChatEvent';
  at: Scalars['DateTime']['output'];
  /** The chat as it is now; null for PURGED, DELETED and RESYNC. */
  chat: Maybe<Chat>;
  /** Empty for RESYNC (fetch the list again). */
  chatId: Scalars['ID']['output'];
  type: ChatEventType;
};

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
  assistantId?: InputMaybe<Scalars['String']['input']>;
  /** true: only chats with an interrupt waiting for a person's decision (a tool call to approve, a question to answer); false: the others. */
  awaitingDecision?: InputMaybe<Scalars['Boolean']['input']>;
  /** true: only chats with no live stream whose active leaf is a USER message (a question waiting for an agent) or whose interrupts are all decided and not yet resumed; false: the others. With assistantId, what an agent worker lists and follows. */
  awaitingReply?: InputMaybe<Scalars['Boolean']['input']>;
  /** true: only chats with no live stream whose active leaf is a reply the service ended INTERRUPTED because its producer went away (its heartbeats stopped, or the service shut down), as the step the producer had running records; false: the others. A reply a person stopped is not one. With assistantId, what an agent worker lists to answer cut-off replies again. */
  awaitingRetry?: InputMaybe<Scalars['Boolean']['input']>;
  /** Only chats of this channel (api, widget, telegram …). */
  channel?: InputMaybe<Scalars['String']['input']>;
  createdBy?: InputMaybe<Scalars['String']['input']>;
  /** true: the trash, the deleted chats the caller may restore. */
  deleted?: InputMaybe<Scalars['Boolean']['input']>;
  /** Exclusive upper bound on timeField. */
  endTime?: InputMaybe<Scalars['DateTime']['input']>;
  /** Also list chats whose mode is subagent. */
  includeSubagents?: InputMaybe<Scalars['Boolean']['input']>;
  /** Case-insensitive match anywhere in the title. */
  keywords?: InputMaybe<Scalars['String']['input']>;
  /** Only chats of this mode (naming subagent lists them). */
  mode?: InputMaybe<Scalars['String']['input']>;
  pinned?: InputMaybe<Scalars['Boolean']['input']>;
  /** Inclusive lower bound on timeField. */
  startTime?: InputMaybe<Scalars['DateTime']['input']>;
  status?: InputMaybe<ChatStatus>;
  /** Only chats carrying every one of these tags. */
  tags?: InputMaybe<Array<Scalars['String']['input']>>;
  teamId?: InputMaybe<Scalars['String']['input']>;
  timeField?: InputMaybe<TimeField>;
};

/** One time bucket of a chat list page. */
export type ChatGroup = {
  __typename?: 'ChatGroup';
  chats: Array<Chat>;
  /** The bucket's chats on this page. */
  count: Scalars['Int']['output'];
  key: Scalars['String']['output'];
  label: Scalars['String']['output'];
  /** The bucket's chats across the whole filter. */
  totalCount: Scalars['Int']['output'];
};

export type ChatOrderField =
  | 'CREATED_AT'
  | 'LAST_MESSAGE_AT'
  | 'SORT'
  | 'TITLE'
  | 'UPDATED_AT';

export type ChatShare =
  | 'PRIVATE'
  | 'TEAM';

export type ChatStatus =
  | 'ACTIVE'
  | 'ARCHIVED';

/** One chunk of a live stream, with the service's message id. */
export type Chunk = {
  __typename?: 'Chunk';
  blockId: Maybe<Scalars['String']['output']>;
  chunkId: Scalars['String']['output'];
  delta: Scalars['Boolean']['output'];
  deltaAction: Maybe<Scalars['String']['output']>;
  deltaPath: Maybe<Scalars['String']['output']>;
  /** The first seq this chunk stands for: equal to seq, unless queued deltas of a slow subscriber were merged into it (then the first merged chunk's seq), or 1 on a snapshot chunk. Within one stream a client that applies chunks in order sees fromSeq == previous seq + 1 on every chunk that is not a snapshot. */
  fromSeq: Scalars['Int']['output'];
  messageId: Maybe<Scalars['ID']['output']>;
  props: Maybe<Scalars['JSON']['output']>;
  role: Maybe<Role>;
  seq: Scalars['Int']['output'];
  /** True on the chunks of a late-join or resync snapshot: each replaces the client's state for its message (they all carry the seq the snapshot reflects). */
  snapshot: Scalars['Boolean']['output'];
  streamId: Scalars['ID']['output'];
  threadId: Maybe<Scalars['String']['output']>;
  type: Scalars['String']['output'];
};

/** A chunk as a producer pushes it (by the merging rules). */
export type ChunkInput = {
  blockId?: InputMaybe<Scalars['String']['input']>;
  chunkId?: InputMaybe<Scalars['String']['input']>;
  delta?: InputMaybe<Scalars['Boolean']['input']>;
  deltaAction?: InputMaybe<Scalars['String']['input']>;
  deltaPath?: InputMaybe<Scalars['String']['input']>;
  messageId?: InputMaybe<Scalars['String']['input']>;
  props?: InputMaybe<Scalars['JSON']['input']>;
  role?: InputMaybe<Role>;
  threadId?: InputMaybe<Scalars['String']['input']>;
  /** Sets the message's token count (last value wins; left out: unchanged). */
  tokens?: InputMaybe<Scalars['Int']['input']>;
  type: Scalars['String']['input'];
};

export type CreateChatInput = {
  assistantId: Scalars['String']['input'];
  /** Where the conversation happens, 1-64 characters. */
  channel?: Scalars['String']['input'];
  /** Purge the chat for good at this moment. */
  expiresAt?: InputMaybe<Scalars['DateTime']['input']>;
  id?: InputMaybe<Scalars['ID']['input']>;
  metadata?: InputMaybe<Scalars['JSON']['input']>;
  mode?: Scalars['String']['input'];
  pinned?: Scalars['Boolean']['input'];
  public?: Scalars['Boolean']['input'];
  share?: ChatShare;
  sort?: Scalars['Int']['input'];
  /** At most 20, each 1-64 characters; kept sorted, repeats dropped. */
  tags?: InputMaybe<Array<Scalars['String']['input']>>;
  /** Expire after the service's temporary-chat lifetime. */
  temporary?: Scalars['Boolean']['input'];
  title?: InputMaybe<Scalars['String']['input']>;
};

/** A file to upload in two steps: what it will be. */
export type CreateUploadInput = {
  filename: Scalars['String']['input'];
  mediaType: Scalars['String']['input'];
  /** The SHA-256 of its bytes, in hex. */
  sha256: Scalars['String']['input'];
  /** In bytes. */
  size: Scalars['Int']['input'];
};

/** How a person answered an interrupt. */
export type Decision = {
  __typename?: 'Decision';
  /** For a tool approval: whether the call may run; false on a question declines it. */
  approved: Maybe<Scalars['Boolean']['output']>;
  decidedAt: Scalars['DateTime']['output'];
  decidedBy: Scalars['String']['output'];
  /** Arguments the person changed before approving; the call runs with these. */
  editedArguments: Maybe<Scalars['JSON']['output']>;
  reason: Maybe<Scalars['String']['output']>;
  /** The answer to a question. */
  response: Maybe<Scalars['JSON']['output']>;
};

/** The edited content; fields left out are copied from the original. */
export type EditMessageInput = {
  metadata?: InputMaybe<Scalars['JSON']['input']>;
  props?: InputMaybe<Scalars['JSON']['input']>;
};

/** A person's rating of an assistant's message (one per person and message), with what an evaluation starts from: the question it answered and the request and model of the stream that wrote it. */
export type Feedback = {
  __typename?: 'Feedback';
  assistantId: Maybe<Scalars['String']['output']>;
  chatId: Scalars['ID']['output'];
  comment: Maybe<Scalars['String']['output']>;
  /** When the person first rated it. */
  createdAt: Scalars['DateTime']['output'];
  id: Scalars['ID']['output'];
  /** The rated message; null once it is no longer readable (deleted, or its chat's messages are in the archive). */
  message: Maybe<Message>;
  messageId: Scalars['ID']['output'];
  /** The model the stream reported with its usage (endStream); null when it reported none. */
  model: Maybe<Scalars['String']['output']>;
  /** The question the rated message answered (the USER message questionId names), as the message is now. */
  question: Maybe<Message>;
  /** The question the message answered: its nearest USER message above (null: none). */
  questionId: Maybe<Scalars['ID']['output']>;
  /** Who rated (the person's user id). */
  ratedBy: Scalars['String']['output'];
  rating: Rating;
  /** The request of the stream that wrote the message. */
  requestId: Maybe<Scalars['String']['output']>;
  /** Sorted, distinct; at most 10. */
  tags: Array<Scalars['String']['output']>;
  /** When the rating was last set. */
  updatedAt: Scalars['DateTime']['output'];
};

/** A page of feedback, newest first. */
export type FeedbackConnection = {
  __typename?: 'FeedbackConnection';
  edges: Array<FeedbackEdge>;
  pageInfo: PageInfo;
};

export type FeedbackEdge = {
  __typename?: 'FeedbackEdge';
  cursor: Scalars['String']['output'];
  node: Feedback;
};

/** Narrows the feedback listing; every field given must match. since and until bound when the rating was last set (since included, until not). */
export type FeedbackFilter = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  chatId?: InputMaybe<Scalars['ID']['input']>;
  rating?: InputMaybe<Rating>;
  since?: InputMaybe<Scalars['DateTime']['input']>;
  until?: InputMaybe<Scalars['DateTime']['input']>;
};

/** How many people rated a message up and down. */
export type FeedbackSummary = {
  __typename?: 'FeedbackSummary';
  down: Scalars['Int']['output'];
  up: Scalars['Int']['output'];
};

/** A file kept with the record: an image, a PDF, a text file. Messages reference it by id; its bytes are read at its url. */
export type File = Node & {
  __typename?: 'File';
  createdAt: Scalars['DateTime']['output'];
  filename: Scalars['String']['output'];
  /** An image's height in pixels. */
  height: Maybe<Scalars['Int']['output']>;
  id: Scalars['ID']['output'];
  mediaType: Scalars['String']['output'];
  /** The SHA-256 of its bytes, in hex. */
  sha256: Scalars['String']['output'];
  /** In bytes. */
  size: Scalars['Int']['output'];
  /** Where to read its bytes: a signed address that works without credentials for a short time (CHATQL_FILE_URL_TTL, default 15 minutes). Ask again for a fresh one; never store it. Shown through a share link, the address also stops working when the link is revoked or expires. */
  url: Scalars['String']['output'];
  /** An image's width in pixels. */
  width: Maybe<Scalars['Int']['output']>;
};

/** What an upload may be, as this service is configured: POST /files and createUpload refuse anything else. Byte counts are whole numbers (Float, as a limit may pass Int's 2^31). */
export type FileLimits = {
  __typename?: 'FileLimits';
  /** The largest file, in bytes (CHATQL_FILE_MAX_BYTES). */
  maxBytes: Scalars['Float']['output'];
  /** The media types accepted (CHATQL_FILE_TYPES). */
  mediaTypes: Array<Scalars['String']['output']>;
  /** The bytes the caller's tenant's files may take in all, each distinct content once (CHATQL_FILE_QUOTA_BYTES); null: no quota. */
  quotaBytes: Maybe<Scalars['Float']['output']>;
  /** The bytes the caller's tenant's files take against the quota now (uploads not yet completed included); null when there is no quota. */
  usedBytes: Maybe<Scalars['Float']['output']>;
};

/** How modelContext hands over the files its messages reference. URL (the default): a signed, short-lived url on each file part. INLINE: the bytes as a data: url, and for a text file its contents as text (cut at CHATQL_CONTEXT_FILE_TEXT_BYTES, with a marker); a cut text file, or another file larger than CHATQL_CONTEXT_FILE_INLINE_BYTES, gets the signed url instead. NONE: file parts are dropped and messages of type file left out. */
export type FileMode =
  | 'INLINE'
  | 'NONE'
  | 'URL';

/** A chat to create from a document. */
export type ImportChatInput = {
  /** Required for OPENAI; overrides the export's for CHATQL. */
  assistantId?: InputMaybe<Scalars['String']['input']>;
  /** The new chat's id (default: the export's, or generated). */
  chatId?: InputMaybe<Scalars['ID']['input']>;
  /** CHATQL: the lines of a chatql export (chat line first) as a list; its file lines (an export with files=inline) are stored as files again. OPENAI: {"messages": [{role, content, tool_calls, tool_call_id, name}]}. */
  document: Scalars['JSON']['input'];
  format: ImportFormat;
  /** Re-sending the same importId with the same input returns the same chat and writes nothing (like appendId). */
  importId?: InputMaybe<Scalars['String']['input']>;
};

/** What an imported document is. */
export type ImportFormat =
  | 'CHATQL'
  | 'OPENAI';

/** What a stream asked a person: a tool call awaiting approval, or a question awaiting an answer. Kept with the chat; decided once. */
export type Interrupt = {
  __typename?: 'Interrupt';
  /** The tool call's arguments (parsed when they are JSON text). */
  arguments: Maybe<Scalars['JSON']['output']>;
  assistantId: Maybe<Scalars['String']['output']>;
  /** The chat it belongs to. */
  chat: Maybe<Chat>;
  chatId: Scalars['ID']['output'];
  decision: Maybe<Decision>;
  expiresAt: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  kind: InterruptKind;
  /** The tool_call or question message that asked. */
  message: Maybe<Message>;
  /** The tool_call or question message that asked. */
  messageId: Scalars['ID']['output'];
  /** The question, for INPUT. */
  prompt: Maybe<Scalars['String']['output']>;
  /** Why the agent asks, as it said. */
  reason: Maybe<Scalars['String']['output']>;
  requestId: Maybe<Scalars['String']['output']>;
  requestedAt: Scalars['DateTime']['output'];
  /** The JSON Schema an answer must satisfy (INPUT). */
  responseSchema: Maybe<Scalars['JSON']['output']>;
  state: InterruptState;
  streamId: Scalars['ID']['output'];
  toolCallId: Maybe<Scalars['String']['output']>;
  toolName: Maybe<Scalars['String']['output']>;
};

/** A page of interrupts, newest first. */
export type InterruptConnection = {
  __typename?: 'InterruptConnection';
  edges: Array<InterruptEdge>;
  pageInfo: PageInfo;
};

export type InterruptEdge = {
  __typename?: 'InterruptEdge';
  cursor: Scalars['String']['output'];
  node: Interrupt;
};

/** Narrows the interrupts inbox; every field given must match. */
export type InterruptFilter = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  chatId?: InputMaybe<Scalars['ID']['input']>;
  kind?: InputMaybe<InterruptKind>;
  /** Default PENDING (null: every state). */
  state?: InputMaybe<InterruptState>;
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

/** Something an agent chose to remember about a person. */
export type MemoryEntry = {
  __typename?: 'MemoryEntry';
  content: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  createdBy: Maybe<Scalars['String']['output']>;
  id: Scalars['ID']['output'];
  pinned: Scalars['Boolean']['output'];
  /** A workspace or project key, or `_global`. */
  scope: Scalars['String']['output'];
  /** The user the memory is about. */
  subject: Scalars['String']['output'];
  tenantId: Scalars['String']['output'];
  updatedAt: Scalars['DateTime']['output'];
};

/** A page of one scope's entries, pinned first then newest. */
export type MemoryEntryConnection = {
  __typename?: 'MemoryEntryConnection';
  edges: Array<MemoryEntryEdge>;
  pageInfo: PageInfo;
  /** Characters of content in the whole scope (what the cap counts). */
  totalChars: Scalars['Int']['output'];
  /** Entries in the whole scope. */
  totalCount: Scalars['Int']['output'];
};

export type MemoryEntryEdge = {
  __typename?: 'MemoryEntryEdge';
  cursor: Scalars['String']['output'];
  node: MemoryEntry;
};

/** A memory entry matching a search, with its relevance. */
export type MemoryHit = {
  __typename?: 'MemoryHit';
  entry: MemoryEntry;
  /** Relevance (BM25-shaped; higher is better). Comparable within one search. */
  score: Scalars['Float']['output'];
};

/** One message of a chat. */
export type Message = {
  __typename?: 'Message';
  assistantId: Maybe<Scalars['String']['output']>;
  blockId: Maybe<Scalars['String']['output']>;
  chatId: Scalars['ID']['output'];
  createdAt: Scalars['DateTime']['output'];
  /** How many people rated this message up and down. */
  feedbackSummary: FeedbackSummary;
  /** The files the message references (its props' file parts, or the file of a `file` message), in that order. */
  files: Array<File>;
  id: Scalars['ID']['output'];
  metadata: Maybe<Scalars['JSON']['output']>;
  /** The caller's own rating of this message (rateMessage); null when it has none. */
  myFeedback: Maybe<Feedback>;
  /** The message this one follows in the conversation tree (null for the first). */
  parentId: Maybe<Scalars['ID']['output']>;
  props: Scalars['JSON']['output'];
  requestId: Maybe<Scalars['String']['output']>;
  role: Role;
  sequence: Scalars['Int']['output'];
  /** The messages with the same parent (versions of this one), oldest first, and this one's place among them. */
  siblings: Siblings;
  status: MessageStatus;
  threadId: Maybe<Scalars['String']['output']>;
  /** The message's token count as its producer reported it (null: unknown; in modelContext, the estimate when tokensEstimated). */
  tokens: Maybe<Scalars['Int']['output']>;
  /** True when tokens is modelContext's estimate (one token per 4 characters of the props JSON), not a reported count. */
  tokensEstimated: Scalars['Boolean']['output'];
  type: Scalars['String']['output'];
  updatedAt: Scalars['DateTime']['output'];
};

/** A page of messages, always ordered oldest to newest. */
export type MessageConnection = {
  __typename?: 'MessageConnection';
  edges: Array<MessageEdge>;
  pageInfo: PageInfo;
};

export type MessageEdge = {
  __typename?: 'MessageEdge';
  cursor: Scalars['String']['output'];
  node: Message;
};

/** Narrows a message list; every field given must match. */
export type MessageFilter = {
  blockId?: InputMaybe<Scalars['String']['input']>;
  requestId?: InputMaybe<Scalars['String']['input']>;
  role?: InputMaybe<Role>;
  threadId?: InputMaybe<Scalars['String']['input']>;
  type?: InputMaybe<Scalars['String']['input']>;
};

/** A message to append; the service assigns id and sequence. */
export type MessageInput = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  blockId?: InputMaybe<Scalars['String']['input']>;
  id?: InputMaybe<Scalars['ID']['input']>;
  metadata?: InputMaybe<Scalars['JSON']['input']>;
  props: Scalars['JSON']['input'];
  requestId?: InputMaybe<Scalars['String']['input']>;
  role: Role;
  threadId?: InputMaybe<Scalars['String']['input']>;
  /** The message's token count (a whole number >= 0). */
  tokens?: InputMaybe<Scalars['Int']['input']>;
  type: Scalars['String']['input'];
};

export type MessageStatus =
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED';

export type Mutation = {
  __typename?: 'Mutation';
  /** Append a batch atomically; re-sending the same appendId is safe. The batch is a chain after the active leaf, or after parentId when given. */
  appendMessages: AppendReceipt;
  /** Move the chat's messages to the cold archive (verified before any row is deleted); the chat stays in lists with archivedAt set. */
  archiveChat: Chat;
  /** THE chat of (tenant, assistant, channel, person), created on first use: the person is the caller, or `subject` when an agent or admin asks on someone's behalf. Concurrent first calls create one chat; after a purge the next call creates a new one; a soft-deleted one is restored. */
  chatFor: Chat;
  /** Draw a boundary carrying `summary` (props.summary), a recap that stands in for everything before it. */
  compactChat: Message;
  /** Check an upload's bytes against its declared size and SHA-256 (and an image's or PDF's type) and make the file usable; a mismatch deletes the bytes (INVALID_ARGUMENT). */
  completeUpload: File;
  /** Create a chat; the id is generated unless given. */
  createChat: Chat;
  /** Start a two-phase upload: PUT the bytes to uploadUrl, then call completeUpload. Limits as for POST /files. */
  createUpload: Upload;
  /** Soft delete: hidden everywhere, data kept. */
  deleteChat: Scalars['Boolean']['output'];
  /** Forget an entry. */
  deleteMemory: Scalars['Boolean']['output'];
  /** Delete messages of one chat; returns how many rows went. By default exactly the named messages go and each one's replies hang on its parent in its place; withReplies also removes everything below them. */
  deleteMessages: Scalars['Int']['output'];
  /** Remove a chat's resume records; returns how many. */
  deleteResume: Scalars['Int']['output'];
  /** Write an edited copy of a message as its sibling and make it the active leaf; the original keeps its branch. Re-sending the same appendId is safe. */
  editMessage: Message;
  /** End the stream and persist it in one write (idempotent); `usage` is recorded with it, once. */
  endStream: StreamResult;
  /** Continue a branch as a new chat of one's own: the one a share link shows (fromShare, its token) or one of a chat one may read (fromMessage, its last message). The messages are copied with new ids, in order; title and assistant come along. Exactly one of the two. */
  forkChat: Chat;
  /** Create a chat from a chatql export or an OpenAI-style conversation; all or nothing. */
  importChat: Chat;
  /** Remove the chat and its messages for good; its id is closed forever. */
  purgeChat: Scalars['Boolean']['output'];
  /** Push up to 1,000 chunks; accepted whole or not at all. No chunks is a heartbeat: it keeps the stream alive and stores nothing. */
  pushChunks: PushResult;
  /** Rate an assistant's message: whoever may read it may, once per person (rating again replaces the rating, comment and tags; a comment or tags left out are cleared). A null rating clears the caller's feedback and returns null. A comment is at most 4,000 characters; at most 10 tags, each 1-64 characters. A message the caller may not read is NOT_FOUND. */
  rateMessage: Maybe<Feedback>;
  /** Buffer (or update by id) an execution step for resume. */
  recordStep: Scalars['Boolean']['output'];
  /** Answer a USER message again: it becomes the chat's active leaf, so the chat awaits a reply (awaitingReply); its earlier answers stay below it and the next stream with parentId = this message is their sibling. Returns the chat. */
  regenerate: Chat;
  /** Decide an interrupt, once. A tool approval takes approved (and editedArguments when approving); a question takes response, checked against its responseSchema (or approved: false to decline it). Only whoever may change the chat decides, or an identity with the approver role (the agent role alone does not): else FORBIDDEN. The same decisionId (or the same decision) again returns the interrupt as it is; a different decision on a decided one is CONFLICT; after expiresAt, EXPIRED. */
  resolveInterrupt: Interrupt;
  /** Bring an archived chat's messages back now. */
  restoreArchive: Chat;
  /** Undo a soft delete. */
  restoreChat: Chat;
  /** Close a share link for good (its creator, or whoever may change the chat); it then reads as NOT_FOUND. Revoking again returns it as it is. */
  revokeShare: Share;
  /** An agent names the chat (titleSource AGENT): the title replaces an automatic or an agent's title; a title a person gave stays, and the chat comes back unchanged. 1-1,000 characters on one line. Needs the right to stream into the chat (the agent or admin role). */
  setChatTitle: Chat;
  /** A share link to the branch ending at messageId (default: the active leaf) as it is now: later messages, on that branch or another, never show. Whoever may change the chat may share it. The answer carries the token and url, the only time they are shown. */
  shareChat: Share;
  /** Draw a boundary (role SYSTEM, type boundary): people still see what came before, the model does not. When the newest message already is a boundary, that one is returned. */
  startOver: Message;
  /** Open a stream in a chat (at most one active per chat). */
  startStream: Stream;
  /** Stop the chat's active stream (ends it INTERRUPTED); needs the right to write to the chat. */
  stopStream: Scalars['Boolean']['output'];
  /** Make the branch through leafId active (from a message with replies, its most recently written leaf). */
  switchBranch: Chat;
  /** Change title, status, share, public, sort, metadata, tags, pinned or expiresAt. */
  updateChat: Chat;
  /** Replace an entry's content or pinned flag; keeps its id and createdAt. */
  updateMemory: MemoryEntry;
  /** Replace a message's props or metadata, or set its status. */
  updateMessage: Message;
  /** Set a resume record's status and/or output (a runtime that resumed the run marks the step done); needs the right to append to its chat. */
  updateResume: ResumeRecord;
  /** Remember something about a person (default: the caller). MEMORY_FULL (with extensions.scopeChars and extensions.limit) when the scope's cap would be passed; nothing is written then. */
  writeMemory: MemoryEntry;
};


export type MutationAppendMessagesArgs = {
  appendId: Scalars['String']['input'];
  chatId: Scalars['ID']['input'];
  messages: Array<MessageInput>;
  parentId?: InputMaybe<Scalars['ID']['input']>;
};


export type MutationArchiveChatArgs = {
  id: Scalars['ID']['input'];
};


export type MutationChatForArgs = {
  assistantId: Scalars['String']['input'];
  channel: Scalars['String']['input'];
  subject?: InputMaybe<Scalars['String']['input']>;
};


export type MutationCompactChatArgs = {
  chatId: Scalars['ID']['input'];
  summary: Scalars['String']['input'];
};


export type MutationCompleteUploadArgs = {
  id: Scalars['ID']['input'];
};


export type MutationCreateChatArgs = {
  input: CreateChatInput;
};


export type MutationCreateUploadArgs = {
  input: CreateUploadInput;
};


export type MutationDeleteChatArgs = {
  id: Scalars['ID']['input'];
};


export type MutationDeleteMemoryArgs = {
  id: Scalars['ID']['input'];
};


export type MutationDeleteMessagesArgs = {
  chatId: Scalars['ID']['input'];
  ids: Array<Scalars['ID']['input']>;
  withReplies?: InputMaybe<Scalars['Boolean']['input']>;
};


export type MutationDeleteResumeArgs = {
  chatId: Scalars['ID']['input'];
};


export type MutationEditMessageArgs = {
  appendId: Scalars['String']['input'];
  id: Scalars['ID']['input'];
  input: EditMessageInput;
};


export type MutationEndStreamArgs = {
  error?: InputMaybe<Scalars['String']['input']>;
  status: StreamStatus;
  streamId: Scalars['ID']['input'];
  usage?: InputMaybe<UsageInput>;
};


export type MutationForkChatArgs = {
  fromMessage?: InputMaybe<Scalars['ID']['input']>;
  fromShare?: InputMaybe<Scalars['String']['input']>;
};


export type MutationImportChatArgs = {
  input: ImportChatInput;
};


export type MutationPurgeChatArgs = {
  id: Scalars['ID']['input'];
};


export type MutationPushChunksArgs = {
  chunks: Array<ChunkInput>;
  streamId: Scalars['ID']['input'];
};


export type MutationRateMessageArgs = {
  comment?: InputMaybe<Scalars['String']['input']>;
  messageId: Scalars['ID']['input'];
  rating?: InputMaybe<Rating>;
  tags?: InputMaybe<Array<Scalars['String']['input']>>;
};


export type MutationRecordStepArgs = {
  step: StepInput;
  streamId: Scalars['ID']['input'];
};


export type MutationRegenerateArgs = {
  messageId: Scalars['ID']['input'];
};


export type MutationResolveInterruptArgs = {
  approved?: InputMaybe<Scalars['Boolean']['input']>;
  decisionId?: InputMaybe<Scalars['ID']['input']>;
  editedArguments?: InputMaybe<Scalars['JSON']['input']>;
  id: Scalars['ID']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
  response?: InputMaybe<Scalars['JSON']['input']>;
};


export type MutationRestoreArchiveArgs = {
  id: Scalars['ID']['input'];
};


export type MutationRestoreChatArgs = {
  id: Scalars['ID']['input'];
};


export type MutationRevokeShareArgs = {
  id: Scalars['ID']['input'];
};


export type MutationSetChatTitleArgs = {
  chatId: Scalars['ID']['input'];
  title: Scalars['String']['input'];
};


export type MutationShareChatArgs = {
  audience?: ShareAudience;
  chatId: Scalars['ID']['input'];
  expiresAt?: InputMaybe<Scalars['DateTime']['input']>;
  messageId?: InputMaybe<Scalars['ID']['input']>;
};


export type MutationStartOverArgs = {
  chatId: Scalars['ID']['input'];
};


export type MutationStartStreamArgs = {
  input: StartStreamInput;
};


export type MutationStopStreamArgs = {
  chatId: Scalars['ID']['input'];
};


export type MutationSwitchBranchArgs = {
  chatId: Scalars['ID']['input'];
  leafId: Scalars['ID']['input'];
};


export type MutationUpdateChatArgs = {
  id: Scalars['ID']['input'];
  input: UpdateChatInput;
};


export type MutationUpdateMemoryArgs = {
  id: Scalars['ID']['input'];
  input: UpdateMemoryInput;
};


export type MutationUpdateMessageArgs = {
  id: Scalars['ID']['input'];
  input: UpdateMessageInput;
};


export type MutationUpdateResumeArgs = {
  id: Scalars['ID']['input'];
  output?: InputMaybe<Scalars['JSON']['input']>;
  status?: InputMaybe<Scalars['String']['input']>;
};


export type MutationWriteMemoryArgs = {
  input: WriteMemoryInput;
};

/** An object with an id that names it across the service. */
export type Node = {
  id: Scalars['ID']['output'];
};

export type PageInfo = {
  __typename?: 'PageInfo';
  endCursor: Maybe<Scalars['String']['output']>;
  hasNextPage: Scalars['Boolean']['output'];
  hasPreviousPage: Scalars['Boolean']['output'];
  startCursor: Maybe<Scalars['String']['output']>;
};

export type PushResult = {
  __typename?: 'PushResult';
  accepted: Scalars['Int']['output'];
  duplicates: Scalars['Int']['output'];
  lastSeq: Scalars['Int']['output'];
};

export type Query = {
  __typename?: 'Query';
  /** The chat, or null when it is absent or not visible. */
  chat: Maybe<Chat>;
  /** The chats the caller may read, a keyset page at a time, grouped by calendar time in the given IANA timezone. */
  chats: ChatConnection;
  /** Feedback on the chats the caller may change (its own, its team's shared ones; the whole tenant for admin), newest first (by when the rating was last set); keyset pages (first: default 20, at most 100) with signed cursors. Each node has the rated message, the question it answered and the stream's request and model. */
  feedback: FeedbackConnection;
  /** A file the caller may read (its own upload, or one a message references in a chat it may read); null otherwise. */
  file: Maybe<File>;
  /** What an upload may be here: the largest file, the media types, the tenant's quota. A client checks a file before sending it rather than learning the limit from a refusal. */
  fileLimits: FileLimits;
  /** One interrupt of a chat the caller may read. */
  interrupt: Interrupt;
  /** The interrupts the caller may decide, across its chats, newest first (default: the PENDING ones); keyset pages (first: default 20, at most 100) with signed cursors. */
  interrupts: InterruptConnection;
  /** The chat's newest resume record: where to resume. */
  lastResume: Maybe<ResumeRecord>;
  /** Every entry of one scope, pinned first then newest; keyset pages (first: default 20, at most 100) with signed cursors. */
  memoryEntries: MemoryEntryConnection;
  /** A page of a chat's messages (newest 50 by default) along one branch: the path from the root to `branch` (default: the active leaf); with allBranches, every message in sequence order. */
  messages: MessageConnection;
  /** A request's messages across every chat the caller may read, oldest first (by creation time, then chat and sequence); 50 a page by default, at most 200. */
  messagesByRequest: MessageConnection;
  /** What an agent should send its model: the newest boundary's summary first (as a SYSTEM message), then the newest complete user-led turns that fit in `limit` messages and/or `maxTokens` tokens (at least one is required; the summary counts). Messages without a token count are estimated (one token per 4 characters of the props JSON) and marked tokensEstimated. UI-only types (loading, action, error), FAILED messages, INTERRUPTED tool_call messages and (unless includeThinking) thinking messages are left out. A person's decisions are woven in: an approved tool call carries the approved arguments; a denied or expired one is followed by a TOOL tool_result {tool_call_id, denied: true, reason} unless the agent wrote a result; an answered question by a USER message holding the response. WINDOW_TOO_SMALL when the newest turn alone does not fit either bound. File references carry what `files` says (see FileMode); an estimate counts each file reference as 256 tokens, or, given INLINE, a text file as its text shown. */
  modelContext: Array<Message>;
  /** A person's memory across scopes: pinned entries first, then the most recently updated; limit is capped at 200. Another subject's memory needs role agent or admin (else: empty). */
  recentMemory: Array<MemoryEntry>;
  /** The resume records of one stack, oldest first. */
  resumeByStack: Array<ResumeRecord>;
  /** A chat's resume records, oldest first. */
  resumeRecords: Array<ResumeRecord>;
  /** Full-text search over a person's memory in the given scopes: every word must occur, best match first, near-ties most recently updated first. first is capped at 100. */
  searchMemory: Array<MemoryHit>;
  /** Search what people and assistants said (user_input and text messages) in the chats you may read, best match first; near-ties newest first. first is capped at 100, window at 20. */
  searchMessages: Array<SearchHit>;
  /** What a share link shows: the chat's title and the shared branch as it was when shared. PUBLIC links open without signing in; TENANT links to identities of the chat's tenant. A revoked, expired or unknown link is NOT_FOUND. Each read counts a view; reads are rate-limited (the shares class). */
  sharedChat: Maybe<SharedChat>;
  /** Stack ids from the delegation's root down to this stack. */
  stackPath: Array<Scalars['String']['output']>;
  /** Usage recorded in [startTime, endTime) over the chats the caller may read, grouped by UTC day, assistant or chat creator; rows ordered by key. */
  usage: Array<UsageRow>;
};


export type QueryChatArgs = {
  id: Scalars['ID']['input'];
};


export type QueryChatsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<ChatFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  order?: InputMaybe<SortOrder>;
  orderBy?: InputMaybe<ChatOrderField>;
  timezone?: InputMaybe<Scalars['String']['input']>;
  weekStart?: InputMaybe<Weekday>;
};


export type QueryFeedbackArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<FeedbackFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryFileArgs = {
  id: Scalars['ID']['input'];
};


export type QueryInterruptArgs = {
  id: Scalars['ID']['input'];
};


export type QueryInterruptsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<InterruptFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryLastResumeArgs = {
  chatId: Scalars['ID']['input'];
};


export type QueryMemoryEntriesArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  scope: Scalars['String']['input'];
  subject?: InputMaybe<Scalars['String']['input']>;
};


export type QueryMessagesArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  allBranches?: Scalars['Boolean']['input'];
  before?: InputMaybe<Scalars['String']['input']>;
  branch?: InputMaybe<Scalars['ID']['input']>;
  chatId: Scalars['ID']['input'];
  filter?: InputMaybe<MessageFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryMessagesByRequestArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  requestId: Scalars['String']['input'];
};


export type QueryModelContextArgs = {
  chatId: Scalars['ID']['input'];
  files?: FileMode;
  includeThinking?: InputMaybe<Scalars['Boolean']['input']>;
  limit?: InputMaybe<Scalars['Int']['input']>;
  maxTokens?: InputMaybe<Scalars['Int']['input']>;
  memoryScopes?: InputMaybe<Array<Scalars['String']['input']>>;
};


export type QueryRecentMemoryArgs = {
  limit?: InputMaybe<Scalars['Int']['input']>;
  scopes: Array<Scalars['String']['input']>;
  subject?: InputMaybe<Scalars['String']['input']>;
};


export type QueryResumeByStackArgs = {
  stackId: Scalars['String']['input'];
};


export type QueryResumeRecordsArgs = {
  chatId: Scalars['ID']['input'];
};


export type QuerySearchMemoryArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
  query: Scalars['String']['input'];
  scopes: Array<Scalars['String']['input']>;
  subject?: InputMaybe<Scalars['String']['input']>;
};


export type QuerySearchMessagesArgs = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  chatId?: InputMaybe<Scalars['ID']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  includeSubagents?: InputMaybe<Scalars['Boolean']['input']>;
  query: Scalars['String']['input'];
  window?: InputMaybe<Scalars['Int']['input']>;
};


export type QuerySharedChatArgs = {
  token: Scalars['String']['input'];
};


export type QueryStackPathArgs = {
  stackId: Scalars['String']['input'];
};


export type QueryUsageArgs = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  endTime: Scalars['DateTime']['input'];
  groupBy?: InputMaybe<UsageGroup>;
  startTime: Scalars['DateTime']['input'];
};

/** A person's rating of an assistant's message. */
export type Rating =
  | 'DOWN'
  | 'UP';

/** A stored execution step of an interrupted or failed stream. */
export type ResumeRecord = {
  __typename?: 'ResumeRecord';
  assistantId: Maybe<Scalars['String']['output']>;
  chatId: Scalars['ID']['output'];
  createdAt: Scalars['DateTime']['output'];
  error: Maybe<Scalars['String']['output']>;
  id: Scalars['ID']['output'];
  input: Maybe<Scalars['JSON']['output']>;
  metadata: Maybe<Scalars['JSON']['output']>;
  output: Maybe<Scalars['JSON']['output']>;
  requestId: Maybe<Scalars['String']['output']>;
  sequence: Scalars['Int']['output'];
  spaceSnapshot: Maybe<Scalars['JSON']['output']>;
  stackDepth: Scalars['Int']['output'];
  stackId: Maybe<Scalars['String']['output']>;
  stackParentId: Maybe<Scalars['String']['output']>;
  status: Scalars['String']['output'];
  type: Scalars['String']['output'];
  /** When the record was written or last changed by updateResume. */
  updatedAt: Scalars['DateTime']['output'];
};

/** Decisions a worker has yet to resume: start the stream that continues the run with requestId (exactly one worker's start succeeds). */
export type Resumption = {
  __typename?: 'Resumption';
  /** The resolved and expired interrupts it resumes (an expired one counts as denied, reason expired), oldest first. */
  decisions: Array<Interrupt>;
  /** The request id to claim with startStream: <request id>.resume.<N>. */
  requestId: Scalars['String']['output'];
};

export type Role =
  | 'ASSISTANT'
  | 'SYSTEM'
  | 'TOOL'
  | 'USER';

/** A message matching a search, with its chat and context. */
export type SearchHit = {
  __typename?: 'SearchHit';
  chat: Chat;
  message: Message;
  /** Relevance (BM25-shaped; higher is better). Comparable within one search. */
  score: Scalars['Float']['output'];
  /** Messages just before and after the hit in its chat, oldest first. */
  window: Array<Message>;
};

/** A share link: a read-only snapshot of one branch of a chat. Only a hash of its token is kept, so token and url are given once, by shareChat; listed later they are null. */
export type Share = {
  __typename?: 'Share';
  audience: ShareAudience;
  createdAt: Scalars['DateTime']['output'];
  /** When the link stops opening; null: never. */
  expiresAt: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  /** The shared branch's last message. */
  messageId: Scalars['ID']['output'];
  revokedAt: Maybe<Scalars['DateTime']['output']>;
  /** The link's secret (shareChat's answer only). */
  token: Maybe<Scalars['String']['output']>;
  /** The web app's page of the link, /s/{token} on this server (shareChat's answer only). */
  url: Maybe<Scalars['String']['output']>;
  /** How often the link was read. */
  views: Scalars['Int']['output'];
};

/** Who may open a share link: PUBLIC, anyone with the link, signed in or not; TENANT, identities of the chat's tenant. */
export type ShareAudience =
  | 'PUBLIC'
  | 'TENANT';

/** What a share link shows: the chat's title and the shared branch as it was when shared, oldest first. */
export type SharedChat = {
  __typename?: 'SharedChat';
  /** When the link was made. */
  createdAt: Scalars['DateTime']['output'];
  messages: Array<SharedMessage>;
  title: Maybe<Scalars['String']['output']>;
};

/** One message as a share link shows it. */
export type SharedMessage = {
  __typename?: 'SharedMessage';
  assistantId: Maybe<Scalars['String']['output']>;
  createdAt: Scalars['DateTime']['output'];
  /** The files the message references, in order, each with a signed address scoped to the link: it works without credentials for a short time (CHATQL_FILE_URL_TTL) and stops working (404) as soon as the link is revoked or expires. */
  files: Array<File>;
  id: Scalars['ID']['output'];
  props: Scalars['JSON']['output'];
  role: Role;
  type: Scalars['String']['output'];
};

/** A message's versions: the messages with the same parent. */
export type Siblings = {
  __typename?: 'Siblings';
  count: Scalars['Int']['output'];
  ids: Array<Scalars['ID']['output']>;
  /** This message's place, 0-based, oldest first. */
  index: Scalars['Int']['output'];
};

export type SortOrder =
  | 'ASC'
  | 'DESC';

export type StartStreamInput = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  chatId: Scalars['ID']['input'];
  input?: InputMaybe<MessageInput>;
  /** Answer this message (again): the stream's messages hang below it, beside any earlier answer, instead of after the active leaf. */
  parentId?: InputMaybe<Scalars['ID']['input']>;
  requestId?: InputMaybe<Scalars['String']['input']>;
  streamId?: InputMaybe<Scalars['ID']['input']>;
};

/** An execution step, buffered (or updated by id) for resume. */
export type StepInput = {
  assistantId?: InputMaybe<Scalars['String']['input']>;
  error?: InputMaybe<Scalars['String']['input']>;
  id: Scalars['ID']['input'];
  input?: InputMaybe<Scalars['JSON']['input']>;
  output?: InputMaybe<Scalars['JSON']['input']>;
  spaceSnapshot?: InputMaybe<Scalars['JSON']['input']>;
  stackDepth?: Scalars['Int']['input'];
  stackId?: InputMaybe<Scalars['String']['input']>;
  stackParentId?: InputMaybe<Scalars['String']['input']>;
  status?: Scalars['String']['input'];
  type: Scalars['String']['input'];
};

/** A live stream: one agent request's output in one chat. */
export type Stream = {
  __typename?: 'Stream';
  chatId: Scalars['ID']['output'];
  id: Scalars['ID']['output'];
  /** The server's idle timeout in seconds: a stream with no push for this long ends INTERRUPTED. A pushChunks with no chunks is a heartbeat that keeps a quiet stream alive (send one every third of this). Null when the server never ends idle streams. */
  idleTimeout: Maybe<Scalars['Float']['output']>;
  requestId: Maybe<Scalars['String']['output']>;
  startedAt: Scalars['DateTime']['output'];
  /** ACTIVE, COMPLETED, AWAITING_INPUT, INTERRUPTED or FAILED. */
  status: Scalars['String']['output'];
};

/** What endStream persisted. */
export type StreamResult = {
  __typename?: 'StreamResult';
  messages: Array<Message>;
  resume: Array<ResumeRecord>;
  stream: Stream;
};

/** How a stream ended. AWAITING_INPUT: it asked a person (a tool call with needsApproval, a question) and waits for the decisions; a COMPLETED end of a stream that asked becomes AWAITING_INPUT. */
export type StreamStatus =
  | 'AWAITING_INPUT'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED';

export type Subscription = {
  __typename?: 'Subscription';
  /** Changes to every chat the caller may read that matches the filter, after they commit; RESYNC when the subscriber fell behind. */
  chatEvents: ChatEvent;
  /** Every chunk of every stream of the chat, live; afterSeq resumes. */
  chatStream: Chunk;
};


export type SubscriptionChatEventsArgs = {
  filter?: InputMaybe<ChatFilter>;
};


export type SubscriptionChatStreamArgs = {
  afterSeq?: InputMaybe<Scalars['Int']['input']>;
  chatId: Scalars['ID']['input'];
};

export type TimeField =
  | 'CREATED_AT'
  | 'LAST_MESSAGE_AT';

/** Where a chat's title came from. USER: a person named it (never replaced by an agent's or automatic title); AGENT: its agent did (setChatTitle); AUTO: the first USER message of a chat nobody named. */
export type TitleSource =
  | 'AGENT'
  | 'AUTO'
  | 'USER';

/** Fields left out stay as they are. */
export type UpdateChatInput = {
  /** null keeps the chat until it is deleted. */
  expiresAt?: InputMaybe<Scalars['DateTime']['input']>;
  metadata?: InputMaybe<Scalars['JSON']['input']>;
  pinned?: InputMaybe<Scalars['Boolean']['input']>;
  public?: InputMaybe<Scalars['Boolean']['input']>;
  share?: InputMaybe<ChatShare>;
  sort?: InputMaybe<Scalars['Int']['input']>;
  status?: InputMaybe<ChatStatus>;
  tags?: InputMaybe<Array<Scalars['String']['input']>>;
  title?: InputMaybe<Scalars['String']['input']>;
};

export type UpdateMemoryInput = {
  content?: InputMaybe<Scalars['String']['input']>;
  pinned?: InputMaybe<Scalars['Boolean']['input']>;
};

/** Fields left out stay as they are. */
export type UpdateMessageInput = {
  metadata?: InputMaybe<Scalars['JSON']['input']>;
  props?: InputMaybe<Scalars['JSON']['input']>;
  status?: InputMaybe<MessageStatus>;
};

/** Where to PUT a file's bytes, then call completeUpload. */
export type Upload = {
  __typename?: 'Upload';
  expiresAt: Scalars['DateTime']['output'];
  fileId: Scalars['ID']['output'];
  /** Headers to send with the PUT. */
  headers: Scalars['JSON']['output'];
  /** PUT the bytes here (no other credentials needed) before expiresAt. */
  uploadUrl: Scalars['String']['output'];
};

/** Tokens a chat used. */
export type Usage = {
  __typename?: 'Usage';
  /** Sum of its requests' completion tokens. */
  completionTokens: Scalars['Int']['output'];
  /** Sum of its messages' tokens. */
  messageTokens: Scalars['Int']['output'];
  /** Sum of its requests' prompt tokens. */
  promptTokens: Scalars['Int']['output'];
};

/** How the usage report groups its rows. */
export type UsageGroup =
  | 'ASSISTANT'
  | 'DAY'
  | 'USER';

/** What one model request cost, as the producer reports it. */
export type UsageInput = {
  completionTokens?: Scalars['Int']['input'];
  model?: InputMaybe<Scalars['String']['input']>;
  promptTokens?: Scalars['Int']['input'];
};

/** Usage of one day (UTC), assistant or chat creator. */
export type UsageRow = {
  __typename?: 'UsageRow';
  completionTokens: Scalars['Int']['output'];
  /** The UTC date YYYY-MM-DD, the assistant id, or the chat creator's user id. */
  key: Scalars['String']['output'];
  promptTokens: Scalars['Int']['output'];
  /** How many requests reported usage. */
  requests: Scalars['Int']['output'];
};

export type Weekday =
  | 'MONDAY'
  | 'SUNDAY';

export type WriteMemoryInput = {
  content: Scalars['String']['input'];
  pinned?: Scalars['Boolean']['input'];
  scope: Scalars['String']['input'];
  /** Whom the entry is about; default the caller (another subject needs role agent or admin). */
  subject?: InputMaybe<Scalars['String']['input']>;
  /** Makes the write idempotent: a retry with the same writeId and content returns the same entry; other content is CONFLICT. */
  writeId?: InputMaybe<Scalars['String']['input']>;
};
