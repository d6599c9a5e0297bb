"""Pages of messages as GraphQL connections: ``Query.messages`` and ``Chat.messages``.

One function, :func:`message_connection`, turns a page request (a filter, a window of
``first``/``after`` or ``last``/``before``, a branch or all branches) into the store's
page and the page into a ``MessageConnection`` with signed cursors; a chat whose
messages are in the archive is brought back first. The compiled read of a page signs
its cursors in the same scopes (:func:`_cursor_scope`, :func:`_branch_scope`).
"""

from __future__ import annotations

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import (
    bring_back,
)
from chatql.gql.schema.types import (
    MessageConnection,
    MessageEdge,
    MessageFilter,
    PageInfo,
)
from chatql.store.errors import InvalidArgument, InvalidCursor, NotFound
from chatql.store.ids import check_chat_id
from chatql.store.messages import message as store_messages
from chatql.store.records import BranchPosition, MessagePage

__all__ = ["message_connection"]


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
