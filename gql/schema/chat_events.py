"""The live chat list: the ``chatEvents`` subscription (rules in :mod:`store.events`;
what writes tell it is in :mod:`gql.schema.announce`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from enum import StrEnum

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.chat_lists import ChatFilter
from chatql.gql.schema.chat_type import Chat
from chatql.store.errors import InvalidArgument
from chatql.store.lists import chat_lists as store_lists
from chatql.store.lists import events as store_events

__all__ = ["ChatEvent", "ChatEventSubscription", "ChatEventType"]


@strawberry.enum(description=(
    "What happened to a chat in the caller's list. INTERRUPT_REQUESTED: a stream of the"
    " chat ended asking a person (an approval, a question); INTERRUPT_RESOLVED: an"
    " interrupt of the chat was decided, expired or cancelled."))
class ChatEventType(StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    DELETED = "DELETED"
    RESTORED = "RESTORED"
    PURGED = "PURGED"
    MESSAGES = "MESSAGES"
    STREAM_STARTED = "STREAM_STARTED"
    STREAM_ENDED = "STREAM_ENDED"
    INTERRUPT_REQUESTED = "INTERRUPT_REQUESTED"
    INTERRUPT_RESOLVED = "INTERRUPT_RESOLVED"
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
