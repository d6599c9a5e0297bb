"""The chat list query: ``chats(...)`` → ``ChatConnection`` with time groups.

Cursors are signed by the service and bound to everything that shapes the list — the
caller, the filter, the order, the time zone and the week start — so a cursor replayed
against any other list is ``INVALID_CURSOR``. ``Chat.lastMessage`` goes through a
per-request DataLoader: a page of chats costs one query for all their newest messages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry
from strawberry.types.nodes import SelectedField

from chatql.gql.context import Info
from chatql.gql.schema.chat_type import Chat
from chatql.gql.schema.types import (
    ChatOrderField,
    ChatStatus,
    PageInfo,
    SortOrder,
    TimeField,
    Weekday,
)
from chatql.store.lists import chat_lists as store_lists
from chatql.store.records import Identity

__all__ = [
    "ChatConnection",
    "ChatEdge",
    "ChatFilter",
    "ChatGroup",
    "ChatListQuery",
]



@strawberry.input(description="Narrows a chat list; every field given must match.")
class ChatFilter:
    assistant_id: str | None = None
    status: ChatStatus | None = None
    keywords: str | None = strawberry.field(
        default=None, description="Case-insensitive match anywhere in the title."
    )
    start_time: datetime | None = strawberry.field(
        default=None, description="Inclusive lower bound on timeField."
    )
    end_time: datetime | None = strawberry.field(
        default=None, description="Exclusive upper bound on timeField."
    )
    # Nullable; null means the default.
    time_field: TimeField | None = TimeField.LAST_MESSAGE_AT
    channel: str | None = strawberry.field(
        default=None, description="Only chats of this channel (api, widget, telegram …)."
    )
    created_by: str | None = None
    team_id: str | None = None
    mode: str | None = strawberry.field(
        default=None, description="Only chats of this mode (naming subagent lists them)."
    )
    include_subagents: bool | None = strawberry.field(
        default=False, description="Also list chats whose mode is subagent."
    )
    tags: list[str] | None = strawberry.field(
        default=None, description="Only chats carrying every one of these tags."
    )
    pinned: bool | None = None
    awaiting_reply: bool | None = strawberry.field(
        default=None, description="true: only chats with no live stream whose active leaf"
        " is a USER message (a question waiting for an agent) or whose interrupts are"
        " all decided and not yet resumed; false: the others. With assistantId, what an"
        " agent worker lists and follows.")
    awaiting_decision: bool | None = strawberry.field(
        default=None, description="true: only chats with an interrupt waiting for a"
        " person's decision (a tool call to approve, a question to answer); false: the"
        " others.")
    awaiting_retry: bool | None = strawberry.field(
        default=None, description="true: only chats with no live stream whose active leaf"
        " is a reply the service ended INTERRUPTED because its producer went away (its"
        " heartbeats stopped, or the service shut down), as the step the producer had"
        " running records; false: the others. A reply a person stopped is not one. With"
        " assistantId, what an agent worker lists to answer cut-off replies again.")
    deleted: bool | None = strawberry.field(
        default=False,
        description="true: the trash, the deleted chats the caller may restore.",
    )

    def to_store(self) -> store_lists.ChatListFilter:
        return store_lists.ChatListFilter(
            assistant_id=self.assistant_id,
            status=None if self.status is None else self.status.value,
            keywords=self.keywords,
            start_time=self.start_time,
            end_time=self.end_time,
            time_field=(self.time_field or TimeField.LAST_MESSAGE_AT).value,
            channel=self.channel,
            created_by=self.created_by,
            team_id=self.team_id,
            mode=self.mode,
            include_subagents=bool(self.include_subagents),
            tags=None if self.tags is None else tuple(self.tags),
            pinned=self.pinned,
            awaiting_reply=self.awaiting_reply,
            awaiting_decision=self.awaiting_decision,
            awaiting_retry=self.awaiting_retry,
            deleted=bool(self.deleted),
        )


@strawberry.type
class ChatEdge:
    cursor: str
    node: Chat


@strawberry.type(description="One time bucket of a chat list page.")
class ChatGroup:
    key: str
    label: str
    count: int = strawberry.field(description="The bucket's chats on this page.")
    total_count: int = strawberry.field(
        description="The bucket's chats across the whole filter."
    )
    chats: list[Chat]


@strawberry.type(description="A page of chats (Relay connection) with totals and time groups.")
class ChatConnection:
    edges: list[ChatEdge]
    page_info: PageInfo
    total_count: int
    groups: list[ChatGroup]


def _cursor_scope(
    who: Identity,
    filter: store_lists.ChatListFilter,
    order_by: str,
    order: str,
    timezone: str,
    week_start: str,
) -> str:
    caller = f"{len(who.tenant_id)}:{who.tenant_id}{len(who.user_id)}:{who.user_id}"
    return f"chats|{caller}|{filter.key()}|{order_by}|{order}|{timezone}|{week_start}"


def _asks_for(info: Info, names: set[str]) -> bool:
    """Whether this field's selection (fragments included) reads any of ``names``."""
    pending: list[Any] = list(info.selected_fields)
    while pending:
        node = pending.pop()
        for child in node.selections:
            if isinstance(child, SelectedField):
                if child.name in names:
                    return True
            else:  # fragment spreads and inline fragments: look inside
                pending.append(child)
    return False


@strawberry.type
class ChatListQuery:
    @strawberry.field(
        description="The chats the caller may read, a keyset page at a time, "
        "grouped by calendar time in the given IANA timezone."
    )
    async def chats(
        self,
        info: Info,
        filter: ChatFilter | None = None,
        order_by: ChatOrderField | None = ChatOrderField.LAST_MESSAGE_AT,
        order: SortOrder | None = SortOrder.DESC,
        first: int | None = None,
        after: str | None = None,
        timezone: str | None = "UTC",
        week_start: Weekday | None = Weekday.MONDAY,
    ) -> ChatConnection:
        # The arguments are nullable; an explicit null means the default.
        order_by = order_by or ChatOrderField.LAST_MESSAGE_AT
        order = order or SortOrder.DESC
        timezone = "UTC" if timezone is None else timezone
        week_start = week_start or Weekday.MONDAY
        who = info.context.identity
        store_filter = filter.to_store() if filter else store_lists.ChatListFilter()
        scope = _cursor_scope(
            who, store_filter, order_by.value, order.value, timezone, week_start.value
        )
        signer = info.context.services.cursors
        page = await store_lists.list_chats(
            info.context.db,
            who,
            filter=store_filter,
            order_by=order_by.value,
            order=order.value,
            first=first,
            after=None if after is None else signer.decode(scope, after),
            timezone=timezone,
            week_start=week_start.value,
            with_totals=_asks_for(info, {"totalCount", "groups"}),
        )
        edges = [
            ChatEdge(cursor=signer.encode(scope, position), node=chat)  # type: ignore[arg-type]
            for chat, position in zip(page.items, page.positions, strict=True)
        ]
        return ChatConnection(
            edges=edges,
            page_info=PageInfo.of([edge.cursor for edge in edges], has_next=page.has_next,
                                  has_previous=page.has_previous),
            total_count=page.total_count or 0,
            groups=page.groups,  # type: ignore[arg-type]
        )
