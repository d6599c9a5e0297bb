"""Message queries and mutations: pages, idempotent appends, updates and deletes."""

from __future__ import annotations

import strawberry

from gql.archive import bring_back
from gql.chat_events import announce
from gql.context import Info
from gql.types import (
    AppendReceipt,
    Message,
    MessageConnection,
    MessageEdge,
    MessageFilter,
    MessageInput,
    PageInfo,
    UpdateMessageInput,
)
from store import messages as store_messages
from store.errors import InvalidArgument, InvalidCursor
from store.ids import check_chat_id
from store.records import MessagePage

__all__ = ["MessageMutation", "MessageQuery", "message_connection"]


def _cursor_scope(chat_id: str, filter: store_messages.MessageFilter) -> str:
    return f"messages|{chat_id}|{filter.key()}"


def _sequence_from(info: Info, scope: str, cursor: str | None) -> int | None:
    if cursor is None:
        return None
    position = info.context.services.cursors.decode(scope, cursor)
    if not isinstance(position, int) or isinstance(position, bool):
        raise InvalidCursor("the cursor is not valid for this list")
    return position


async def message_connection(
    info: Info,
    chat_id: str,
    *,
    filter: MessageFilter | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> MessageConnection:
    """Shared by ``Query.messages`` and ``Chat.messages``."""
    check_chat_id(chat_id)
    store_filter = filter.to_store() if filter else store_messages.MessageFilter()
    scope = _cursor_scope(chat_id, store_filter)
    signer = info.context.services.cursors

    async def read() -> MessagePage:
        return await store_messages.list_messages(
            info.context.db,
            info.context.identity,
            chat_id,
            filter=store_filter,
            first=first,
            after=_sequence_from(info, scope, after),
            last=last,
            before=_sequence_from(info, scope, before),
        )

    page = await read()
    # An archived chat has no message rows: only an empty page can mean one.
    if not page.items and await bring_back(info, chat_id):
        page = await read()
    edges = [
        MessageEdge(cursor=signer.encode(scope, m.sequence), node=m)  # type: ignore[arg-type]
        for m in page.items
    ]
    return MessageConnection(
        edges=edges,
        page_info=PageInfo.of([edge.cursor for edge in edges], has_next=page.has_next,
                              has_previous=page.has_previous),
    )


@strawberry.type
class MessageQuery:
    @strawberry.field(description="A page of a chat's messages (newest 50 by default).")
    async def messages(
        self,
        info: Info,
        chat_id: strawberry.ID,
        filter: MessageFilter | None = None,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> MessageConnection:
        return await message_connection(
            info, str(chat_id), filter=filter, first=first, after=after, last=last, before=before
        )


@strawberry.type
class MessageMutation:
    @strawberry.mutation(
        description="Append a batch atomically; re-sending the same appendId is safe."
    )
    async def append_messages(
        self,
        info: Info,
        chat_id: strawberry.ID,
        append_id: str,
        messages: list[MessageInput],
    ) -> AppendReceipt:
        await bring_back(info, str(chat_id))
        receipt = await store_messages.append_messages(
            info.context.db,
            info.context.identity,
            str(chat_id),
            append_id,
            [message.to_store() for message in messages],
        )
        await announce(info, "MESSAGES", receipt.chat_id)
        return receipt  # type: ignore[return-value]

    @strawberry.mutation(description="Replace a message's props or metadata, or set its status.")
    async def update_message(
        self, info: Info, id: strawberry.ID, input: UpdateMessageInput
    ) -> Message:
        if input.props is None and input.metadata is None and input.status is None:
            raise InvalidArgument("give at least one of props, metadata or status")
        message = await store_messages.update_message(
            info.context.db,
            info.context.identity,
            str(id),
            props=input.props,  # type: ignore[arg-type]
            metadata=input.metadata,  # type: ignore[arg-type]
            status=None if input.status is None else input.status.value,
        )
        await announce(info, "MESSAGES", message.chat_id)
        return message  # type: ignore[return-value]

    @strawberry.mutation(description="Delete messages of one chat; returns how many went.")
    async def delete_messages(
        self, info: Info, chat_id: strawberry.ID, ids: list[strawberry.ID]
    ) -> int:
        deleted = await store_messages.delete_messages(
            info.context.db, info.context.identity, str(chat_id), [str(i) for i in ids]
        )
        await announce(info, "MESSAGES", str(chat_id))
        return deleted
