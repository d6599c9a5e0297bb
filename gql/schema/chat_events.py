"""The live chat list: the ``chatEvents`` subscription (rules in :mod:`store.events`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from enum import StrEnum

import strawberry

from chatql.gql.context import Context, Info
from chatql.gql.schema.chat_lists import ChatFilter
from chatql.gql.schema.types import Chat
from chatql.store.chats import events as store_events
from chatql.store.chats import lists as store_lists
from chatql.store.errors import InvalidArgument
from chatql.store.records import AppendReceipt
from chatql.store.records import Chat as StoreChat

__all__ = ["ChatEvent", "ChatEventSubscription", "ChatEventType", "announce",
           "announce_append", "announce_to", "before_write", "before_write_of_message"]


async def announce(info: Info, type: store_events.ChatEventType, chat_id: str, *,
                   before: StoreChat | None = None) -> None:
    """Tell every live chat list about a write that just committed."""
    await announce_to(info.context, type, chat_id, before=before)


async def announce_to(context: Context, type: store_events.ChatEventType, chat_id: str, *,
                      before: StoreChat | None = None) -> None:
    """:func:`announce` for a write made outside a resolver (a fast path's)."""
    events = context.services.events
    if events is not None:
        tenant_id = before.tenant_id if before is not None else context.identity.tenant_id
        await events.publish(type, chat_id, tenant_id, before=before)


async def announce_append(context: Context, receipt: AppendReceipt) -> None:
    """Tell every live chat list about an append that just committed, with the chat as
    it committed (so the lists need not read it again)."""
    events = context.services.events
    if events is not None:
        await events.publish("MESSAGES", receipt.chat_id, context.identity.tenant_id,
                             after=receipt.chat, sequence=receipt.last_sequence)


async def before_write(info: Info, chat_id: str) -> StoreChat | None:
    """The chat before a write that may take it out of someone's list (sidebars on any
    instance decide with it whether they could see the chat before)."""
    events = info.context.services.events
    if events is None:
        return None
    return await store_events.load_chat(info.context.db, chat_id)


async def before_write_of_message(info: Info, message_id: str) -> StoreChat | None:
    """:func:`before_write` for the chat holding ``message_id`` (None when unknown)."""
    events = info.context.services.events
    if events is None:
        return None
    chat_id = await store_events.chat_of_message(info.context.db, message_id)
    return None if chat_id is None else await store_events.load_chat(info.context.db,
                                                                     chat_id)


@strawberry.enum(description="What happened to a chat in the caller's list.")
class ChatEventType(StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    DELETED = "DELETED"
    RESTORED = "RESTORED"
    PURGED = "PURGED"
    MESSAGES = "MESSAGES"
    STREAM_STARTED = "STREAM_STARTED"
    STREAM_ENDED = "STREAM_ENDED"
    RESYNC = "RESYNC"


@strawberry.type(description="One change to the caller's chat list.")
class ChatEvent:
    type: ChatEventType
    chat_id: strawberry.ID = strawberry.field(
        description="Empty for RESYNC (fetch the list again)."
    )
    chat: Chat | None = strawberry.field(
        description="The chat as it is now; null for PURGED, DELETED and RESYNC."
    )
    at: datetime

    @classmethod
    def from_store(cls, event: store_events.ChatEvent) -> ChatEvent:
        return cls(type=ChatEventType(event.type), chat_id=strawberry.ID(event.chat_id),
                   chat=event.chat, at=event.at)  # type: ignore[arg-type]


@strawberry.type
class ChatEventSubscription:
    @strawberry.subscription(
        description="Changes to every chat the caller may read that matches the filter, "
        "after they commit; RESYNC when the subscriber fell behind."
    )
    async def chat_events(self, info: Info, filter: ChatFilter | None = None
                          ) -> AsyncGenerator[ChatEvent, None]:
        list_filter = filter.to_store() if filter else store_lists.ChatListFilter()
        list_filter.check()
        if list_filter.deleted:
            raise InvalidArgument("chatEvents follows live chats; list the trash with "
                                  "chats(filter: {deleted: true})")
        events = info.context.services.events
        assert events is not None
        subscriber = events.subscribe(info.context.identity, list_filter)
        try:
            async for event in subscriber.events():
                yield ChatEvent.from_store(event)
        finally:
            events.unsubscribe(subscriber)
