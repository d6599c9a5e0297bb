"""Message queries and mutations: pages, idempotent appends, updates and deletes."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import (
    announce,
    announce_append,
    before_write_of_message,
    bring_back,
)
from chatql.gql.schema.chat_type import Chat
from chatql.gql.schema.pages import message_connection
from chatql.gql.schema.types import (
    AppendReceipt,
    EditMessageInput,
    Message,
    MessageConnection,
    MessageEdge,
    MessageFilter,
    MessageInput,
    PageInfo,
    UpdateMessageInput,
)
from chatql.store.errors import ChatArchived, InvalidArgument, InvalidCursor
from chatql.store.messages import message as store_messages
from chatql.store.messages import requests as store_requests
from chatql.store.records import AppendReceipt as StoreAppendReceipt
from chatql.store.records import RequestPosition

__all__ = ["MessageMutation", "MessageQuery"]


def _request_scope(request_id: str) -> str:
    # Bound to the request id; the caller's identity decides which rows a page holds.
    return f"request|{request_id}"


def _request_position(info: Info, scope: str, cursor: str | None) -> RequestPosition | None:
    if cursor is None:
        return None
    position = info.context.services.cursors.decode(scope, cursor)
    try:
        created, chat_id, sequence = position
        if (not isinstance(created, str) or not isinstance(chat_id, str)
                or not isinstance(sequence, int) or isinstance(sequence, bool)):
            raise ValueError(position)
        return RequestPosition(datetime.fromisoformat(created), chat_id, sequence)
    except (TypeError, ValueError):
        raise InvalidCursor("the cursor is not valid for this list") from None


@strawberry.type
class MessageQuery:
    @strawberry.field(description="A page of a chat's messages (newest 50 by default) along"
                      " one branch: the path from the root to `branch` (default: the active"
                      " leaf); with allBranches, every message in sequence order.")
    async def messages(
        self,
        info: Info,
        chat_id: strawberry.ID,
        filter: MessageFilter | None = None,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        branch: strawberry.ID | None = None,
        all_branches: bool = False,
    ) -> MessageConnection:
        return await message_connection(
            info, str(chat_id), filter=filter, first=first, after=after, last=last,
            before=before, branch=branch, all_branches=all_branches,
        )

    @strawberry.field(description="A request's messages across every chat the caller may"
                      " read, oldest first (by creation time, then chat and sequence);"
                      " 50 a page by default, at most 200.")
    async def messages_by_request(
        self,
        info: Info,
        request_id: str,
        first: int | None = None,
        after: str | None = None,
    ) -> MessageConnection:
        scope = _request_scope(request_id)
        page = await store_requests.list_request_messages(
            info.context.db, info.context.identity, request_id, first=first,
            after=_request_position(info, scope, after))
        encode = info.context.services.cursors.encoder(scope)
        edges = [
            MessageEdge(cursor=encode([m.created_at.isoformat(), m.chat_id, m.sequence]),
                        node=m)  # type: ignore[arg-type]
            for m in page.items
        ]
        return MessageConnection(
            edges=edges,
            page_info=PageInfo.of([edge.cursor for edge in edges], has_next=page.has_next,
                                  has_previous=after is not None),
        )


@strawberry.type
class MessageMutation:
    @strawberry.mutation(
        description="Append a batch atomically; re-sending the same appendId is safe. The"
        " batch is a chain after the active leaf, or after parentId when given."
    )
    async def append_messages(
        self,
        info: Info,
        chat_id: strawberry.ID,
        append_id: str,
        messages: list[MessageInput],
        parent_id: strawberry.ID | None = None,
    ) -> AppendReceipt:
        # MessageInput values arrive as the store's NewMessage (gql/schema/types.py).
        batch = cast("list[store_messages.NewMessage]", messages)

        async def append(stop_archived: bool) -> StoreAppendReceipt:
            return await store_messages.append_messages(
                info.context.db,
                info.context.identity,
                str(chat_id),
                append_id,
                batch,
                parent_id=None if parent_id is None else str(parent_id),
                stop_archived=stop_archived,
            )

        try:
            # The archive check rides on the append's own lock read; an archived
            # chat comes back first and the append runs again.
            receipt = await append(info.context.services.archive is not None)
        except ChatArchived:
            await bring_back(info, str(chat_id))
            receipt = await append(False)
        await announce_append(info.context, receipt)
        return receipt  # type: ignore[return-value]

    @strawberry.mutation(
        description="Write an edited copy of a message as its sibling and make it the active"
        " leaf; the original keeps its branch. Re-sending the same appendId is safe."
    )
    async def edit_message(
        self, info: Info, id: strawberry.ID, input: EditMessageInput, append_id: str
    ) -> Message:
        message = await store_messages.edit_message(
            info.context.db,
            info.context.identity,
            str(id),
            append_id,
            props=input.props,  # type: ignore[arg-type]
            metadata=input.metadata,  # type: ignore[arg-type]
        )
        await announce(info, "MESSAGES", message.chat_id)
        return message  # type: ignore[return-value]

    @strawberry.mutation(
        description="Make the branch through leafId active (from a message with replies,"
        " its most recently written leaf)."
    )
    async def switch_branch(
        self, info: Info, chat_id: strawberry.ID, leaf_id: strawberry.ID
    ) -> Chat:
        chat = await store_messages.switch_branch(
            info.context.db, info.context.identity, str(chat_id), str(leaf_id))
        return chat  # type: ignore[return-value]

    @strawberry.mutation(
        description="Answer a USER message again: it becomes the chat's active leaf, so"
        " the chat awaits a reply (awaitingReply); its earlier answers stay below it and"
        " the next stream with parentId = this message is their sibling. Returns the chat."
    )
    async def regenerate(self, info: Info, message_id: strawberry.ID) -> Chat:
        before = await before_write_of_message(info, str(message_id))
        chat = await store_messages.regenerate(
            info.context.db, info.context.identity, str(message_id))
        await announce(info, "UPDATED", chat.id, before=before)
        return chat  # type: ignore[return-value]

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

    @strawberry.mutation(description=(
        "Delete messages of one chat; returns how many rows went. By default exactly the"
        " named messages go and each one's replies hang on its parent in its place;"
        " withReplies also removes everything below them."))
    async def delete_messages(
        self, info: Info, chat_id: strawberry.ID, ids: list[strawberry.ID],
        with_replies: bool | None = False,
    ) -> int:
        deleted = await store_messages.delete_messages(
            info.context.db, info.context.identity, str(chat_id), [str(i) for i in ids],
            with_replies=bool(with_replies),
        )
        await announce(info, "MESSAGES", str(chat_id))
        return deleted
