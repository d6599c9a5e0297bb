"""Frozen records the store returns; the GraphQL layer turns them into its types."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "AppendReceipt",
    "BranchPosition",
    "Chat",
    "Decision",
    "Feedback",
    "File",
    "Identity",
    "Interrupt",
    "Message",
    "MessagePage",
    "RequestPosition",
    "ResumeRecord",
    "Share",
    "SharedChat",
    "SharedMessage",
    "UsageRow",
    "UsageTotals",
]


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: recorded in owner fields and used for access decisions."""

    user_id: str = "dev"
    tenant_id: str = "default"
    team_id: str | None = None
    roles: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def is_agent(self) -> bool:
        return "agent" in self.roles


@dataclass(frozen=True, slots=True)
class Chat:
    id: str
    title: str | None
    assistant_id: str
    mode: str
    status: str
    public: bool
    share: str
    sort: int
    last_message_at: datetime | None
    metadata: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    created_by: str | None
    updated_by: str | None
    team_id: str | None
    tenant_id: str
    deleted_at: datetime | None = None
    activity_at: datetime | None = None
    channel: str = "api"
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    expires_at: datetime | None = None
    archived_at: datetime | None = None
    #: The last message of the active branch; None while the chat has no messages.
    active_leaf_id: str | None = None
    #: Whether the active leaf is a USER message and no stream is live; None when the
    #: read did not look (only the live chat list does, for awaitingReply filters).
    awaiting_reply: bool | None = None
    #: Whether an interrupt of the chat waits for a person's decision; None when the
    #: read did not look (only the live chat list does, for awaitingDecision filters).
    awaiting_decision: bool | None = None
    #: Whether the active leaf is a reply cut off because its producer went away; None
    #: when the read did not look (only the live chat list does, for awaitingRetry filters).
    awaiting_retry: bool | None = None
    #: Where the title came from: USER, AGENT or AUTO; None while the chat has none.
    title_source: str | None = None


@dataclass(slots=True)
class Message:
    """A stored message. Read-only by convention, not frozen: a frozen dataclass costs
    about five times as much to construct, which shows on bulk writes and long pages."""

    id: str
    chat_id: str
    sequence: int
    request_id: str | None
    role: str
    type: str
    props: dict[str, Any]
    block_id: str | None
    thread_id: str | None
    assistant_id: str | None
    status: str
    metadata: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    #: The producer's token count; None when it reported none.
    tokens: int | None = None
    #: True when ``tokens`` is the model window's estimate, not a reported count.
    tokens_estimated: bool = False
    #: The message this one follows in the conversation tree; None for a root.
    parent_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessagePage:
    """One page of a chat's messages, oldest first, with exact neighbours."""

    items: list[Message]
    has_previous: bool
    has_next: bool
    #: For a page along a branch: the branch's last message the page was read for,
    #: and each item's depth on it (what its cursor carries).
    branch_leaf: str | None = None
    depths: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BranchPosition:
    """A cursor's place on a branch: the message, its depth, and the branch's end."""

    id: str
    depth: int
    leaf: str


@dataclass(frozen=True, slots=True)
class RequestPosition:
    """A cursor's place in a request's messages across chats: the message's creation
    time, chat and sequence (the page's order)."""

    created_at: datetime
    chat_id: str
    sequence: int


@dataclass(frozen=True, slots=True)
class AppendReceipt:
    chat_id: str
    append_id: str
    digest: str
    message_ids: list[str]
    first_sequence: int
    last_sequence: int
    #: The chat as this append committed it (its last sequence is ``last_sequence``);
    #: None when the receipt is an earlier append's, or the write did not read it.
    chat: Chat | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ResumeRecord:
    id: str
    chat_id: str
    request_id: str | None
    assistant_id: str | None
    stack_id: str | None
    stack_parent_id: str | None
    stack_depth: int
    type: str
    status: str
    input: Any
    output: Any
    space_snapshot: Any
    error: str | None
    sequence: int
    metadata: Any
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """A chat's recorded usage and the sum of its messages' token counts."""

    prompt_tokens: int
    completion_tokens: int
    message_tokens: int


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One row of the usage report: a day, an assistant or a chat creator."""

    key: str
    prompt_tokens: int
    completion_tokens: int
    requests: int


@dataclass(frozen=True, slots=True)
class Decision:
    """How a person answered an interrupt."""

    approved: bool | None
    edited_arguments: Any
    response: Any
    reason: str | None
    decided_by: str
    decided_at: datetime


@dataclass(frozen=True, slots=True)
class Feedback:
    """A person's rating of a message (one per person and message), with what an
    evaluation starts from: the question it answered and the stream's request and model."""

    id: str
    chat_id: str
    message_id: str
    #: The nearest USER message above the rated one; None when there is none.
    question_id: str | None
    rated_by: str
    rating: str
    comment: str | None
    tags: list[str]
    assistant_id: str | None
    request_id: str | None
    model: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Interrupt:
    """What a stream asked a person: a tool call to approve or a question to answer."""

    id: str
    chat_id: str
    message_id: str
    stream_id: str
    request_id: str | None
    assistant_id: str | None
    kind: str
    state: str
    tool_call_id: str | None
    tool_name: str | None
    arguments: Any
    prompt: str | None
    response_schema: Any
    reason: str | None
    requested_at: datetime
    expires_at: datetime | None
    decision: Decision | None
    decision_id: str | None
    resumed_by: str | None


@dataclass(frozen=True, slots=True)
class Share:
    """A share link: a read-only snapshot of one branch of a chat."""

    id: str
    chat_id: str
    #: The branch's last message when it was shared.
    message_id: str
    audience: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    views: int
    #: The link's secret, only in the answer that made it (the store keeps its hash).
    token: str | None = None


@dataclass(slots=True)
class SharedMessage:
    """A message as a share link shows it: these fields and nothing else (read-only by
    convention, like :class:`Message`)."""

    id: str
    role: str
    type: str
    props: dict[str, Any]
    created_at: datetime
    assistant_id: str | None


@dataclass(frozen=True, slots=True)
class SharedChat:
    """What a share link shows: the chat's title and the shared messages, in branch order."""

    title: str | None
    #: When the link was made.
    created_at: datetime
    messages: list[SharedMessage]
    #: The link's id: whoever answers with the read counts its view (never shown).
    share_id: str = ""


@dataclass(frozen=True, slots=True)
class File:
    """An uploaded file: its description and where its bytes are (never the bytes)."""

    id: str
    tenant_id: str
    uploader: str
    filename: str
    media_type: str
    size: int
    sha256: str
    width: int | None
    height: int | None
    created_at: datetime
    storage_key: str
    #: PENDING (a two-phase upload waiting for its bytes), READY, or DELETED.
    state: str = "READY"
