"""The prepared statements of chat-list pages: a page of the list in its default order
(newest activity first) and one chat with its newest message, built from the list's own
predicates (:mod:`chatql.store.lists.chat_lists`) and run by the compiled reads (see
:mod:`chatql.store.db.prepared` for how a statement is made and run).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import String, and_, bindparam, func, select

from chatql.store import access
from chatql.store.access import present
from chatql.store.db.database import Database
from chatql.store.db.prepared import (
    CHAT_COLUMNS,
    MARK_AFTER_ID,
    MARK_AFTER_VALUE,
    MARK_NOW,
    MESSAGE_COLUMNS,
    PreparedStatement,
    compile_prepared,
    fixed,
    marked_identity,
)
from chatql.store.db.tables import chats, messages
from chatql.store.lists.chat_lists import ChatListFilter, _keyset_rows
from chatql.store.records import Identity

__all__ = ["ChatPageShape", "chat_page_statement", "chat_statement"]

@dataclass(frozen=True, slots=True)
class ChatPageShape:
    """What decides the text of a chat-list statement (newest activity first, no filter)."""

    dialect: str
    privileged: bool
    team: bool
    after: bool
    #: The chat columns each row returns, in :data:`CHAT_COLUMNS` order.
    columns: tuple[str, ...] = CHAT_COLUMNS
    #: The message columns that follow them (:func:`chat_statement` only).
    message_columns: tuple[str, ...] = MESSAGE_COLUMNS
    #: The rows a chat-list page reads, written into its text (:func:`chat_page_statement`
    #: only; a page's size is part of its shape, so Postgres plans it as a value).
    limit: int = 0

    @classmethod
    def of(cls, db: Database, who: Identity, *, after: bool,
           columns: tuple[str, ...] = CHAT_COLUMNS,
           message_columns: tuple[str, ...] = MESSAGE_COLUMNS,
           limit: int = 0) -> ChatPageShape:
        return cls(db.dialect, who.is_admin or who.is_agent, bool(who.team_id), after,
                   columns, message_columns, limit)


def chat_page_statement(db: Database, shape: ChatPageShape) -> PreparedStatement:
    """The statement :func:`store.chat_lists.list_chats` runs for an unfiltered page in
    its default order (newest activity first), without totals.

    Named slots: ``user``, ``tenant``, ``team``, ``after_value`` and ``after_id`` (the
    cursor's position, see :func:`chat_after`) and ``now``; the page size is the
    shape's ``limit``. Rows:
    the shape's columns, then (after a cursor) whether rows lie behind it.
    """
    statement = db.statements.get(("chat_page_statement", shape))
    if statement is None:
        statement = db.statements[("chat_page_statement", shape)] = _compile_chat_page(shape)
    return statement


def _compile_chat_page(shape: ChatPageShape) -> PreparedStatement:
    who = marked_identity(shape.privileged, shape.team)
    where = [present(at=MARK_NOW), access.can_read(who), *ChatListFilter().clauses()]
    base = select(*(chats.c[name] for name in shape.columns)).where(*where)
    start = (MARK_AFTER_VALUE, MARK_AFTER_ID) if shape.after else None
    (query,) = _keyset_rows(base, "LAST_MESSAGE_AT", True, start, inclusive=False, limit=1)
    if start is not None:
        (probe,) = _keyset_rows(select(chats.c.id).where(*where), "LAST_MESSAGE_AT", False,
                                start, inclusive=True, limit=1)
        behind = probe.correlate(None).scalar_subquery().is_not(None)
        query = query.add_columns(behind.label("_behind"))
    if shape.limit <= 0:
        raise ValueError("a chat-list page's shape needs its limit")
    return compile_prepared(query.limit(fixed(shape.limit)), shape.dialect)


def chat_statement(db: Database, shape: ChatPageShape) -> PreparedStatement:
    """One chat as :func:`store.chats.get_chat` finds it, with its newest message as
    :func:`store.chat_lists.newest_messages` finds it (``after`` is unused).

    Named slots: ``chat``, ``user``, ``tenant``, ``team``, ``now``. One row when the chat is
    visible: the shape's chat columns, then its message columns (all null while the chat
    has no messages).
    """
    statement = db.statements.get(("chat_statement", shape))
    if statement is None:
        who = marked_identity(shape.privileged, shape.team)
        later = messages.alias("later")
        chat = bindparam("chat", type_=String())
        # The messages are matched on the chat slot itself, not on chats.id: equal, but
        # only a value lets Postgres read one hash partition when planning.
        newest = select(func.max(later.c.sequence)).where(
            later.c.chat_id == chat).scalar_subquery()
        query = (
            select(*(chats.c[name] for name in shape.columns),
                   *(messages.c[name] for name in shape.message_columns))
            .select_from(chats)
            .outerjoin(messages, and_(messages.c.chat_id == chat,
                                      messages.c.sequence == newest))
            .where(chats.c.id == chat,
                   present(at=MARK_NOW), access.can_read(who))
        )
        statement = db.statements[("chat_statement", shape)] = compile_prepared(
            query, shape.dialect)
    return statement
