"""A request's messages across the caller's chats: the request-tracking correlation.

An agent's request can touch several chats (a hand-off, a sub-agent writing to its own
chat); every message it wrote carries its ``request_id``. This reads them together,
oldest first, in keyset pages over ``(created_at, chat_id, sequence)`` — the order of
the ``(request_id, created_at, chat_id, sequence)`` index, so a page reads O(page) rows
however many messages the service holds. Chats the caller may not read contribute
nothing, exactly as if they did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, select, tuple_

from chatql.store import access
from chatql.store.access import present
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages
from chatql.store.errors import InvalidArgument
from chatql.store.limits import check_optional_name
from chatql.store.messages.message import DEFAULT_PAGE_SIZE, check_page_size, message_from_row
from chatql.store.records import Identity, Message, RequestPosition

__all__ = ["RequestPage", "list_request_messages", "request_messages_query"]


@dataclass(frozen=True, slots=True)
class RequestPage:
    """One page of a request's messages, oldest first; ``has_next`` is exact."""

    items: list[Message]
    has_next: bool


def request_messages_query(who: Identity, request_id: str, *,
                           after: RequestPosition | None, limit: int) -> Select[Any]:
    """The statement a page runs (also what the index test explains)."""
    # The access rule as a correlated EXISTS, not a join: the request's index drives
    # the read on both databases (a join lets SQLite start from the chats instead).
    visible = select(chats.c.id).where(chats.c.id == messages.c.chat_id, present(),
                                       access.can_read(who)).exists()
    query = select(messages).where(messages.c.request_id == request_id, visible)
    if after is not None:
        query = query.where(tuple_(messages.c.created_at, messages.c.chat_id,
                                   messages.c.sequence)
                            > tuple_(after.created_at, after.chat_id, after.sequence))
    return query.order_by(messages.c.created_at, messages.c.chat_id,
                          messages.c.sequence).limit(limit)


async def list_request_messages(db: Database, who: Identity, request_id: str, *,
                                first: int | None = None,
                                after: RequestPosition | None = None) -> RequestPage:
    """Messages whose ``request_id`` is ``request_id`` in every chat ``who`` may read."""
    if not request_id:
        raise InvalidArgument("requestId must not be empty")
    check_optional_name(request_id, "request_id")
    size = check_page_size(first, "first") or DEFAULT_PAGE_SIZE
    query = request_messages_query(who, request_id, after=after, limit=size + 1)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return RequestPage([message_from_row(row) for row in rows[:size]], len(rows) > size)
