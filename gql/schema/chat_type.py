"""The ``Chat`` type: a conversation, with its messages, newest message and usage.

It sits above the types it is made of and the page builder its ``messages`` field
calls, and below every concept that returns chats (the chat list, the live chat list,
archive, import, search), so nothing imports it back.
"""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.interrupt_types import Interrupt, InterruptState, Resumption
from chatql.gql.schema.loaders import chat_usage_loader, last_message_loader
from chatql.gql.schema.pages import message_connection
from chatql.gql.schema.share_types import Share, shares_loader
from chatql.gql.schema.types import (
    ChatShare,
    ChatStatus,
    Message,
    MessageConnection,
    MessageFilter,
    TitleSource,
    Usage,
)
from chatql.store.messages import interrupts as store_interrupts

__all__ = ["Chat"]


@strawberry.type(description="A conversation between people and assistants.")
class Chat:
    id: strawberry.ID
    title: str | None
    title_source: TitleSource | None = strawberry.field(
        description="Where the title came from; null while the chat has none."
    )
    assistant_id: str
    mode: str
    status: ChatStatus
    public: bool
    share: ChatShare
    sort: int
    last_message_at: datetime | None
    metadata: JSON | None
    created_at: datetime
    updated_at: datetime
    created_by: str | None
    updated_by: str | None
    team_id: str | None
    tenant_id: str | None
    tags: list[str] = strawberry.field(description="Sorted, distinct; at most 20.")
    pinned: bool
    expires_at: datetime | None = strawberry.field(
        description="When the chat is purged for good; null keeps it until deleted."
    )
    archived_at: datetime | None = strawberry.field(
        description="When its messages moved to the cold archive (null: in the database). "
        "Reading, appending or streaming brings them back first."
    )
    channel: str = strawberry.field(
        description="Where the conversation happens (api, widget, telegram …); set at creation."
    )
    active_leaf_id: strawberry.ID | None = strawberry.field(
        description="The last message of the active branch (what is shown and what the"
        " model reads); null while the chat has no messages."
    )

    @strawberry.field(description="What the chat's streams asked a person (approvals,"
                      " questions), oldest first; state narrows them.")
    async def interrupts(self, info: Info,
                         state: InterruptState | None = None) -> list[Interrupt]:
        found = await store_interrupts.chat_interrupts(
            info.context.db, info.context.identity, str(self.id),
            None if state is None else state.value)
        return found  # type: ignore[return-value]

    @strawberry.field(description="Decisions that wait for a worker to resume the run (every"
                      " interrupt of the stream decided or expired, none resumed yet); null"
                      " when there are none.")
    async def resumption(self, info: Info) -> Resumption | None:
        decisions = await store_interrupts.to_resume(info.context.db, info.context.identity,
                                                     str(self.id))
        if not decisions:
            return None
        return Resumption(
            request_id=store_interrupts.resume_request_id(decisions[-1].request_id),
            decisions=decisions)  # type: ignore[arg-type]

    @strawberry.field(description="The chat's share links, newest first (revoked and"
                      " expired ones too), for whoever may change the chat; empty for"
                      " everyone else.")
    async def shares(self, info: Info) -> list[Share]:
        found = await shares_loader(info).load(str(self.id))
        return found  # type: ignore[return-value]

    @strawberry.field(description="The chat's recorded model usage and message token sum.")
    async def usage(self, info: Info) -> Usage:
        totals = await chat_usage_loader(info).load(str(self.id))
        return totals  # type: ignore[return-value]

    @strawberry.field(description="The chat's messages; same arguments as Query.messages.")
    async def messages(
        self,
        info: Info,
        filter: MessageFilter | None = None,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        branch: strawberry.ID | None = None,
        all_branches: bool = False,
    ) -> MessageConnection:
        return await message_connection(
            info, str(self.id), filter=filter, first=first, after=after, last=last,
            before=before, branch=branch, all_branches=all_branches,
        )

    @strawberry.field(description="The newest message, or null while the chat has none.")
    async def last_message(self, info: Info) -> Message | None:
        message = await last_message_loader(info).load(str(self.id))
        return message  # type: ignore[return-value]
