# Generated from schema.graphql and the kit's documents (chatql_client/documents.py)
# by clients/python/generate_types.py: do not edit by hand, run `make kit-types`.

"""The JSON shapes the kit sends and receives (GraphQL field names, as the service spells them),
generated from the service's schema and the kit's documents (:mod:`chatql_client.documents`).

Each class is named as its GraphQL type and holds the fields the kit's documents select of it (an
input type: all its fields). A key another selection of the type may leave out is not required.
``ChatPage`` is the kit's own: :meth:`ChatqlClient.chats_page` builds it from a ``chats``
connection. Enums are ``Literal`` aliases named as the enum."""

from typing import Any, Literal, NotRequired, Required, TypedDict

__all__ = [
    "AppendReceipt",
    "Chat",
    "ChatPage",
    "ChatStatus",
    "Decision",
    "FileLimits",
    "Interrupt",
    "InterruptKind",
    "InterruptState",
    "MemoryEntry",
    "MemoryHit",
    "Message",
    "MessageInput",
    "MessageStatus",
    "Resumption",
    "Role",
    "SearchHit",
    "Stream",
    "StreamResult",
    "TitleSource",
]

ChatStatus = Literal["ACTIVE", "ARCHIVED"]
"""The values of the GraphQL enum ``ChatStatus``."""

InterruptKind = Literal["TOOL_APPROVAL", "INPUT"]
"""What an interrupt asks: TOOL_APPROVAL (may this tool call run, with these arguments?) or INPUT
(a question with an answer to give)."""

InterruptState = Literal["PENDING", "RESOLVED", "EXPIRED", "CANCELLED"]
"""PENDING until decided; RESOLVED once decided; EXPIRED when its expiresAt passed first (it
counts as denied); CANCELLED when the stream was stopped."""

MessageStatus = Literal["COMPLETED", "INTERRUPTED", "FAILED"]
"""The values of the GraphQL enum ``MessageStatus``."""

Role = Literal["USER", "ASSISTANT", "SYSTEM", "TOOL"]
"""The values of the GraphQL enum ``Role``."""

TitleSource = Literal["USER", "AGENT", "AUTO"]
"""Where a chat's title came from. USER: a person named it (never replaced by an agent's or
automatic title); AGENT: its agent did (setChatTitle); AUTO: the first USER message of a chat
nobody named."""


class Message(TypedDict, total=False):
    """One message of a chat."""

    id: str
    chatId: str
    requestId: str | None
    role: Role
    type: str
    props: Any
    blockId: str | None
    threadId: str | None
    assistantId: str | None
    sequence: int
    status: MessageStatus
    metadata: Any | None
    createdAt: str
    updatedAt: str
    tokens: int | None
    """The message's token count as its producer reported it (null: unknown; in modelContext, the
    estimate when tokensEstimated)."""
    tokensEstimated: bool
    """True when tokens is modelContext's estimate (one token per 4 characters of the props
    JSON), not a reported count."""
    parentId: str | None
    """The message this one follows in the conversation tree (null for the first)."""


class MessageInput(TypedDict, total=False):
    """A message to append; the service assigns id and sequence."""

    role: Required[Role]
    type: Required[str]
    props: Required[Any]
    id: str | None
    requestId: str | None
    blockId: str | None
    threadId: str | None
    assistantId: str | None
    metadata: Any | None
    tokens: int | None
    """The message's token count (a whole number >= 0)."""


class Decision(TypedDict):
    """How a person answered an interrupt."""

    approved: bool | None
    """For a tool approval: whether the call may run; false on a question declines it."""
    editedArguments: Any | None
    """Arguments the person changed before approving; the call runs with these."""
    response: Any | None
    """The answer to a question."""
    reason: str | None
    decidedBy: str


class Interrupt(TypedDict):
    """What a stream asked a person: a tool call awaiting approval, or a question awaiting an
    answer. Kept with the chat; decided once."""

    id: str
    streamId: NotRequired[str]
    kind: InterruptKind
    state: InterruptState
    toolCallId: str | None
    toolName: str | None
    arguments: Any | None
    """The tool call's arguments (parsed when they are JSON text)."""
    prompt: str | None
    """The question, for INPUT."""
    expiresAt: NotRequired[str | None]
    decision: Decision | None


class Resumption(TypedDict):
    """Decisions a worker has yet to resume: start the stream that continues the run with
    requestId (exactly one worker's start succeeds)."""

    requestId: str
    """The request id to claim with startStream: <request id>.resume.<N>."""
    decisions: list[Interrupt]
    """The resolved and expired interrupts it resumes (an expired one counts as denied, reason
    expired), oldest first."""


class Chat(TypedDict, total=False):
    """A conversation between people and assistants."""

    id: str
    title: str | None
    titleSource: TitleSource | None
    """Where the title came from; null while the chat has none."""
    assistantId: str
    mode: str
    status: ChatStatus
    lastMessageAt: str | None
    metadata: Any | None
    createdAt: str
    createdBy: str | None
    channel: str
    """Where the conversation happens (api, widget, telegram …); set at creation."""
    activeLeafId: str | None
    """The last message of the active branch (what is shown and what the model reads); null while
    the chat has no messages."""
    interrupts: list[Interrupt]
    """What the chat's streams asked a person (approvals, questions), oldest first; state narrows
    them."""
    resumption: Resumption | None
    """Decisions that wait for a worker to resume the run (every interrupt of the stream decided
    or expired, none resumed yet); null when there are none."""


class ChatPage(TypedDict):
    """One page of chats, as :meth:`ChatqlClient.chats_page` returns it: the nodes of the
    ``chats`` connection and its page info, under the kit's own keys."""

    chats: list[Chat]
    end_cursor: str | None
    has_next_page: bool


class AppendReceipt(TypedDict):
    """What an accepted append wrote (or had written before)."""

    chatId: str
    appendId: str
    messageIds: list[str]
    firstSequence: int
    lastSequence: int


class FileLimits(TypedDict):
    """What an upload may be, as this service is configured: POST /files and createUpload refuse
    anything else. Byte counts are whole numbers (Float, as a limit may pass Int's 2^31)."""

    maxBytes: float
    """The largest file, in bytes (CHATQL_FILE_MAX_BYTES)."""
    mediaTypes: list[str]
    """The media types accepted (CHATQL_FILE_TYPES)."""
    quotaBytes: float | None
    """The bytes the caller's tenant's files may take in all, each distinct content once
    (CHATQL_FILE_QUOTA_BYTES); null: no quota."""
    usedBytes: float | None
    """The bytes the caller's tenant's files take against the quota now (uploads not yet
    completed included); null when there is no quota."""


class MemoryEntry(TypedDict):
    """Something an agent chose to remember about a person."""

    id: str
    scope: str
    """A workspace or project key, or `_global`."""
    content: str
    pinned: bool
    subject: str
    """The user the memory is about."""
    createdAt: str
    updatedAt: str


class MemoryHit(TypedDict):
    """A memory entry matching a search, with its relevance."""

    entry: MemoryEntry
    score: float
    """Relevance (BM25-shaped; higher is better). Comparable within one search."""


class SearchHit(TypedDict):
    """A message matching a search, with its chat and context."""

    message: Message
    chat: Chat
    score: float
    """Relevance (BM25-shaped; higher is better). Comparable within one search."""
    window: list[Message]
    """Messages just before and after the hit in its chat, oldest first."""


class Stream(TypedDict):
    """A live stream: one agent request's output in one chat."""

    id: str
    chatId: str
    requestId: str | None
    status: str
    """ACTIVE, COMPLETED, AWAITING_INPUT, INTERRUPTED or FAILED."""
    idleTimeout: NotRequired[float | None]
    """The server's idle timeout in seconds: a stream with no push for this long ends
    INTERRUPTED. A pushChunks with no chunks is a heartbeat that keeps a quiet stream alive (send
    one every third of this). Null when the server never ends idle streams."""


class StreamResult(TypedDict):
    """What endStream persisted."""

    stream: Stream
    messages: list[Message]
