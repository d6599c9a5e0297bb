"""GraphQL object, input and enum types (names and argument types of the public contract).

Object types carry the same attribute names as the store's frozen records, so a
resolver can hand a record straight to Strawberry: every scalar field then resolves
by plain attribute access, with no per-field conversion.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum, StrEnum
from typing import Any

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.file_type import File, message_files_loader
from chatql.gql.schema.inputs import converted_by_schema
from chatql.gql.schema.loaders import (
    feedback_summary_loader,
    message_loader,
    my_feedback_loader,
)
from chatql.store.files.links import file_ids_in
from chatql.store.messages.message import MessageFilter as StoreMessageFilter

__all__ = [
    "AppendReceipt",
    "ChatOrderField",
    "ChatShare",
    "ChatStatus",
    "CreateChatInput",
    "Feedback",
    "FeedbackSummary",
    "MessageConnection",
    "MessageEdge",
    "MessageFilter",
    "MessageInput",
    "MessageStatus",
    "PageInfo",
    "Rating",
    "Role",
    "SortOrder",
    "StreamStatus",
    "TimeField",
    "TitleSource",
    "UpdateChatInput",
    "UpdateMessageInput",
    "Usage",
    "Weekday",
]


@strawberry.enum
class Role(StrEnum):
    USER = "USER"
    ASSISTANT = "ASSISTANT"
    SYSTEM = "SYSTEM"
    TOOL = "TOOL"


@strawberry.enum
class ChatStatus(StrEnum):
    ACTIVE = "ACTIVE"
    ARCHIVED = "ARCHIVED"


@strawberry.enum
class ChatShare(StrEnum):
    PRIVATE = "PRIVATE"
    TEAM = "TEAM"


@strawberry.enum(description="Where a chat's title came from. USER: a person named it (never"
                 " replaced by an agent's or automatic title); AGENT: its agent did"
                 " (setChatTitle); AUTO: the first USER message of a chat nobody named.")
class TitleSource(StrEnum):
    USER = "USER"
    AGENT = "AGENT"
    AUTO = "AUTO"


@strawberry.enum(description="A person's rating of an assistant's message.")
class Rating(StrEnum):
    UP = "UP"
    DOWN = "DOWN"


@strawberry.enum
class MessageStatus(StrEnum):
    COMPLETED = "COMPLETED"
    INTERRUPTED = "INTERRUPTED"
    FAILED = "FAILED"


@strawberry.enum(description="How a stream ended. AWAITING_INPUT: it asked a person (a tool"
                 " call with needsApproval, a question) and waits for the decisions; a"
                 " COMPLETED end of a stream that asked becomes AWAITING_INPUT.")
class StreamStatus(StrEnum):
    COMPLETED = "COMPLETED"
    AWAITING_INPUT = "AWAITING_INPUT"
    INTERRUPTED = "INTERRUPTED"
    FAILED = "FAILED"


@strawberry.enum
class ChatOrderField(StrEnum):
    LAST_MESSAGE_AT = "LAST_MESSAGE_AT"
    CREATED_AT = "CREATED_AT"
    UPDATED_AT = "UPDATED_AT"
    SORT = "SORT"
    TITLE = "TITLE"


@strawberry.enum
class SortOrder(StrEnum):
    ASC = "ASC"
    DESC = "DESC"


@strawberry.enum
class TimeField(StrEnum):
    LAST_MESSAGE_AT = "LAST_MESSAGE_AT"
    CREATED_AT = "CREATED_AT"


@strawberry.enum
class Weekday(StrEnum):
    MONDAY = "MONDAY"
    SUNDAY = "SUNDAY"


@strawberry.type(description="One message of a chat.")
class Message:
    id: strawberry.ID
    chat_id: strawberry.ID
    request_id: str | None
    role: Role
    type: str
    props: JSON
    block_id: str | None
    thread_id: str | None
    assistant_id: str | None
    sequence: int
    status: MessageStatus
    metadata: JSON | None
    created_at: datetime
    updated_at: datetime
    tokens: int | None = strawberry.field(
        description="The message's token count as its producer reported it (null: unknown;"
        " in modelContext, the estimate when tokensEstimated)."
    )
    tokens_estimated: bool = strawberry.field(
        description="True when tokens is modelContext's estimate (one token per 4"
        " characters of the props JSON), not a reported count."
    )
    parent_id: strawberry.ID | None = strawberry.field(
        description="The message this one follows in the conversation tree (null for the"
        " first)."
    )

    @strawberry.field(description="The messages with the same parent (versions of this"
                      " one), oldest first, and this one's place among them.")
    async def siblings(self, info: Info) -> Siblings:
        from chatql.store.messages.message import message_siblings

        ids = await message_siblings(info.context.db, self)  # type: ignore[arg-type]
        return Siblings(index=ids.index(str(self.id)), count=len(ids),
                        ids=[strawberry.ID(i) for i in ids])

    @strawberry.field(description="The files the message references (its props' file"
                      " parts, or the file of a `file` message), in that order.")
    async def files(self, info: Info) -> list[File]:
        # The store's File records, which the File type reads as they are.
        found: list[Any] = await message_files_loader(info).load(str(self.id))
        if len(found) > 1:
            order = {file_id: place for place, file_id in enumerate(
                file_ids_in(self.type, self.props, strict=False))}
            found.sort(key=lambda file: order.get(file.id, len(order)))
        return found

    @strawberry.field(description="The caller's own rating of this message (rateMessage);"
                      " null when it has none.")
    async def my_feedback(self, info: Info) -> Feedback | None:
        found = await my_feedback_loader(info).load(str(self.id))
        return found  # type: ignore[return-value]

    @strawberry.field(description="How many people rated this message up and down.")
    async def feedback_summary(self, info: Info) -> FeedbackSummary:
        summary = await feedback_summary_loader(info).load(str(self.id))
        return summary  # type: ignore[return-value]


@strawberry.type(description="How many people rated a message up and down.")
class FeedbackSummary:
    up: int
    down: int


@strawberry.type(description="A person's rating of an assistant's message (one per person"
                 " and message), with what an evaluation starts from: the question it"
                 " answered and the request and model of the stream that wrote it.")
class Feedback:
    id: strawberry.ID
    chat_id: strawberry.ID
    message_id: strawberry.ID
    question_id: strawberry.ID | None = strawberry.field(
        description="The question the message answered: its nearest USER message above"
        " (null: none).")
    rating: Rating
    comment: str | None
    tags: list[str] = strawberry.field(description="Sorted, distinct; at most 10.")
    rated_by: str = strawberry.field(description="Who rated (the person's user id).")
    assistant_id: str | None
    request_id: str | None = strawberry.field(
        description="The request of the stream that wrote the message.")
    model: str | None = strawberry.field(
        description="The model the stream reported with its usage (endStream); null when"
        " it reported none.")
    created_at: datetime = strawberry.field(description="When the person first rated it.")
    updated_at: datetime = strawberry.field(description="When the rating was last set.")

    @strawberry.field(description="The rated message; null once it is no longer readable"
                      " (deleted, or its chat's messages are in the archive).")
    async def message(self, info: Info) -> Message | None:
        found = await message_loader(info).load((str(self.chat_id), str(self.message_id)))
        return found  # type: ignore[return-value]

    @strawberry.field(description="The question the rated message answered (the USER"
                      " message questionId names), as the message is now.")
    async def question(self, info: Info) -> Message | None:
        if self.question_id is None:
            return None
        found = await message_loader(info).load((str(self.chat_id), str(self.question_id)))
        return found  # type: ignore[return-value]


@strawberry.type(description="A message's versions: the messages with the same parent.")
class Siblings:
    index: int = strawberry.field(description="This message's place, 0-based, oldest first.")
    count: int
    ids: list[strawberry.ID]


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None

    @classmethod
    def of(cls, cursors: list[str], *, has_next: bool, has_previous: bool) -> PageInfo:
        """Relay page info for a page whose edges carry ``cursors`` in order."""
        return cls(
            has_next_page=has_next,
            has_previous_page=has_previous,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )


@strawberry.type
class MessageEdge:
    cursor: str
    node: Message


@strawberry.type(description="A page of messages, always ordered oldest to newest.")
class MessageConnection:
    edges: list[MessageEdge]
    page_info: PageInfo


@strawberry.input(description="Narrows a message list; every field given must match.")
class MessageFilter:
    request_id: str | None = None
    role: Role | None = None
    block_id: str | None = None
    thread_id: str | None = None
    type: str | None = None

    def to_store(self) -> StoreMessageFilter:
        return StoreMessageFilter(
            request_id=self.request_id,
            role=None if self.role is None else self.role.value,
            block_id=self.block_id,
            thread_id=self.thread_id,
            type=self.type,
        )


@strawberry.type(description="Tokens a chat used.")
class Usage:
    prompt_tokens: int = strawberry.field(description="Sum of its requests' prompt tokens.")
    completion_tokens: int = strawberry.field(
        description="Sum of its requests' completion tokens."
    )
    message_tokens: int = strawberry.field(description="Sum of its messages' tokens.")


@strawberry.type(description="What an accepted append wrote (or had written before).")
class AppendReceipt:
    chat_id: strawberry.ID
    append_id: str
    digest: str
    message_ids: list[strawberry.ID]
    first_sequence: int
    last_sequence: int


@strawberry.input
class CreateChatInput:
    assistant_id: str
    id: strawberry.ID | None = None
    title: str | None = None
    mode: str = "chat"
    share: ChatShare = ChatShare.PRIVATE
    public: bool = False
    sort: int = 0
    metadata: JSON | None = None
    channel: str = strawberry.field(
        default="api", description="Where the conversation happens, 1-64 characters."
    )
    tags: list[str] | None = strawberry.field(
        default=None, description="At most 20, each 1-64 characters; kept sorted, repeats dropped."
    )
    pinned: bool = False
    expires_at: datetime | None = strawberry.field(
        default=None, description="Purge the chat for good at this moment."
    )
    temporary: bool = strawberry.field(
        default=False, description="Expire after the service's temporary-chat lifetime."
    )


@strawberry.input(description="Fields left out stay as they are.")
class UpdateChatInput:
    title: str | None = strawberry.UNSET
    status: ChatStatus | None = strawberry.UNSET
    share: ChatShare | None = strawberry.UNSET
    public: bool | None = strawberry.UNSET
    sort: int | None = strawberry.UNSET
    metadata: JSON | None = strawberry.UNSET
    tags: list[str] | None = strawberry.UNSET
    pinned: bool | None = strawberry.UNSET
    expires_at: datetime | None = strawberry.field(
        default=strawberry.UNSET, description="null keeps the chat until it is deleted."
    )

    def changes(self) -> dict[str, Any]:
        values = {
            "title": self.title,
            "status": self.status,
            "share": self.share,
            "public": self.public,
            "sort": self.sort,
            "metadata": self.metadata,
            "tags": self.tags,
            "pinned": self.pinned,
            "expires_at": self.expires_at,
        }
        return {
            key: value.value if isinstance(value, Enum) else value
            for key, value in values.items()
            if value is not strawberry.UNSET
        }


@strawberry.input(description="A message to append; the service assigns id and sequence.")
class MessageInput:
    role: Role
    type: str
    props: JSON
    id: strawberry.ID | None = None
    request_id: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    assistant_id: str | None = None
    metadata: JSON | None = None
    tokens: int | None = strawberry.field(
        default=None, description="The message's token count (a whole number >= 0)."
    )


#: Strawberry builds ``MessageInput`` values as the store's ``NewMessage`` with the
#: schema's converter (gql/schema/inputs.py): the resolvers receive ``NewMessage``;
#: ``gql/schema/root.py`` sets the hook when it builds a schema.
message_from_input = converted_by_schema("MessageInput")


@strawberry.input(description="Fields left out stay as they are.")
class UpdateMessageInput:
    props: JSON | None = None
    metadata: JSON | None = None
    status: MessageStatus | None = None


@strawberry.input(description="The edited content; fields left out are copied from the"
                  " original.")
class EditMessageInput:
    props: JSON | None = None
    metadata: JSON | None = None
