"""Message queries and mutations: pages, idempotent appends, updates and deletes."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.archive import bring_back
from chatql.gql.schema.chat_events import announce, announce_append, before_write_of_message
from chatql.gql.schema.types import (
    AppendReceipt,
    Chat,
    EditMessageInput,
    Message,
    MessageConnection,
    MessageEdge,
    MessageFilter,
    MessageInput,
    PageInfo,
    UpdateMessageInput,
)
from chatql.store.errors import ChatArchived, InvalidArgument, InvalidCursor, NotFound
from chatql.store.ids import check_chat_id
from chatql.store.messages import message as store_messages
from chatql.store.messages import requests as store_requests
from chatql.store.records import AppendReceipt as StoreAppendReceipt
from chatql.store.records import BranchPosition, MessagePage, RequestPosition

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


def _branch_scope(chat_id: str, filter: store_messages.MessageFilter, branch: str | None) -> str:
    # Bound to the chat, the filter and the branch asked for ("" the active one).
    return f"branch|{chat_id}|{filter.key()}|{branch or ''}"


def _position_from(info: Info, scope: str, cursor: str | None) -> BranchPosition | None:
    if cursor is None:
        return None
    position = info.context.services.cursors.decode(scope, cursor)
    if (not isinstance(position, list) or len(position) != 3
            or not isinstance(position[0], str) or not isinstance(position[2], str)
            or not isinstance(position[1], int) or isinstance(position[1], bool)):
        raise InvalidCursor("the cursor is not valid for this list")
    return BranchPosition(id=position[0], depth=position[1], leaf=position[2])


async def _branch_connection(
    info: Info,
    chat_id: str,
    store_filter: store_messages.MessageFilter,
    branch: str | None,
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> MessageConnection:
    scope = _branch_scope(chat_id, store_filter, branch)
    signer = info.context.services.cursors

    async def read() -> MessagePage:
        return await store_messages.list_branch(
            info.context.db,
            info.context.identity,
            chat_id,
            branch=branch,
            filter=store_filter,
            first=first,
            after=_position_from(info, scope, after),
            last=last,
            before=_position_from(info, scope, before),
        )

    try:
        page = await read()
    except NotFound:
        # A branch named in an archived chat: its rows come back first.
        if branch is None or not await bring_back(info, chat_id):
            raise
        page = await read()
    # An archived chat has no message rows: only an empty page can mean one.
    if not page.items and await bring_back(info, chat_id):
        page = await read()
    leaf = page.branch_leaf
    # Depth on a branch is the number of messages up to and including this one;
    # items are consecutive on the branch only without a filter, so cursors carry it.
    edges = [
        MessageEdge(cursor=signer.encode(scope, [m.id, depth, leaf]),
                    node=m)  # type: ignore[arg-type]
        for m, depth in zip(page.items, page.depths, strict=True)
    ]
    return MessageConnection(
        edges=edges,
        page_info=PageInfo.of([edge.cursor for edge in edges], has_next=page.has_next,
                              has_previous=page.has_previous),
    )


async def message_connection(
    info: Info,
    chat_id: str,
    *,
    filter: MessageFilter | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    branch: strawberry.ID | None = None,
    all_branches: bool = False,
) -> MessageConnection:
    """Shared by ``Query.messages`` and ``Chat.messages``.

    By default a page follows one branch (the active one, or the path to ``branch``);
    ``allBranches`` lists every message of the chat in ``sequence`` order.
    """
    check_chat_id(chat_id)
    store_filter = filter.to_store() if filter else store_messages.MessageFilter()
    if branch is not None and all_branches:
        raise InvalidArgument("pass either branch or allBranches, not both")
    if not all_branches:
        return await _branch_connection(
            info, chat_id, store_filter, None if branch is None else str(branch),
            first=first, after=after, last=last, before=before)
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
