"""The prepared statements of message pages: every page of a chat's messages — the
newest, deep in a long chat, along a branch, filtered — is one of these, run by
:func:`chatql.store.messages.message.page_rows` and
:func:`~chatql.store.messages.message.branch_rows` for the resolver and the compiled
reads alike (see :mod:`chatql.store.db.prepared` for how a statement is made and run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Integer, String, bindparam, case, false, select

from chatql.store import access
from chatql.store.access import present
from chatql.store.db.database import Database
from chatql.store.db.prepared import (
    MARK_NOW,
    MESSAGE_COLUMNS,
    PreparedStatement,
    compile_prepared,
    marked_identity,
)
from chatql.store.db.tables import chats, messages
from chatql.store.messages import tree
from chatql.store.records import Identity

__all__ = [
    "FILTER_FIELDS",
    "BranchPageShape",
    "MessagePageShape",
    "ancestor_statement",
    "branch_page_statement",
    "message_flags_statement",
    "message_page_statement",
]

#: Filter fields a prepared message page knows, in :class:`store.messages.MessageFilter` order.
FILTER_FIELDS = ("request_id", "role", "block_id", "thread_id", "type")


@dataclass(frozen=True, slots=True)
class MessagePageShape:
    """What decides the text of a message-page statement (not the values bound to it)."""

    dialect: str
    privileged: bool
    team: bool
    forward: bool
    after: bool
    before: bool
    filters: tuple[str, ...]
    #: The message columns each row returns, in :data:`MESSAGE_COLUMNS` order.
    columns: tuple[str, ...] = MESSAGE_COLUMNS

    @classmethod
    def of(cls, db: Database, who: Identity, *, forward: bool, after: bool, before: bool,
           filters: tuple[str, ...],
           columns: tuple[str, ...] = MESSAGE_COLUMNS) -> MessagePageShape:
        return cls(db.dialect, who.is_admin or who.is_agent, bool(who.team_id), forward,
                   after, before, filters, columns)


def message_page_statement(db: Database, shape: MessagePageShape) -> PreparedStatement:
    """The statement :func:`store.messages.page_rows` runs for a page.

    Named slots: ``chat``, ``user``, ``tenant``, ``team``, ``after``, ``before``,
    ``limit``, ``now`` and one per filter field. Rows: the shape's columns, then whether
    older and newer rows exist next to the cursors.
    """
    statement = db.statements.get(("message_page_statement", shape))
    if statement is None:
        statement = db.statements[("message_page_statement", shape)] = _compile_message_page(shape)
    return statement


def message_flags_statement(db: Database, shape: MessagePageShape) -> PreparedStatement:
    """What :func:`store.messages.page_rows` asks when a page has no rows: whether the
    chat is there for the caller, and whether rows lie before and after the cursors —
    the page statement's own predicates, so an empty page is answered as exactly as a
    full one. The slots are the page statement's (``limit`` is not one)."""
    statement = db.statements.get(("message_flags_statement", shape))
    if statement is None:
        _, visible, older, newer, _ = _message_page_parts(shape)
        statement = db.statements[("message_flags_statement", shape)] = compile_prepared(
            select(visible.label("visible"), older, newer), shape.dialect)
    return statement


def _message_page_parts(shape: MessagePageShape) -> tuple[list[Any], Any, Any, Any, Any]:
    """A message page's predicates: the rows' bounds, the chat's visibility and the
    neighbour probes next to each cursor, and the page's order."""
    who = marked_identity(shape.privileged, shape.team)
    chat = bindparam("chat", type_=String())
    base = [messages.c.chat_id == chat,
            *(messages.c[name] == bindparam(name, type_=String()) for name in shape.filters)]
    after = bindparam("after", type_=BigInteger())
    before = bindparam("before", type_=BigInteger())

    def neighbour(*clauses: Any, newest: bool) -> Any:
        # "(SELECT sequence … ORDER BY sequence LIMIT 1) IS NOT NULL" rather than
        # EXISTS: Postgres strips ORDER BY/LIMIT from EXISTS, and a cached generic
        # plan may then pick a sequential scan over a long chat to find one row.
        order = messages.c.sequence.desc() if newest else messages.c.sequence.asc()
        nearest = select(messages.c.sequence).where(*base, *clauses).order_by(order).limit(1)
        return nearest.scalar_subquery().is_not(None)

    # Rows older than the page exist when something sits at or before ``after``
    # (forward pages start at the first row past it), newer rows when something sits
    # at or after ``before``; the other side is the extra row the page reads.
    older = neighbour(messages.c.sequence <= after, newest=True) if shape.after else false()
    newer = neighbour(messages.c.sequence >= before, newest=False) if shape.before else false()
    visible = (
        select(chats.c.id)
        .where(chats.c.id == chat, present(at=MARK_NOW), access.can_read(who))
        .exists()
    )
    bounds = list(base)
    if shape.after:
        bounds.append(messages.c.sequence > after)
    if shape.before:
        bounds.append(messages.c.sequence < before)
    order = messages.c.sequence.asc() if shape.forward else messages.c.sequence.desc()
    return bounds, visible, older, newer, order


def _compile_message_page(shape: MessagePageShape) -> PreparedStatement:
    bounds, visible, older, newer, order = _message_page_parts(shape)
    query = (
        select(*(messages.c[name] for name in shape.columns), older.label("_older"),
               newer.label("_newer"))
        .where(*bounds, visible)
        .order_by(order)
        .limit(bindparam("limit", type_=Integer()))
    )
    return compile_prepared(query, shape.dialect)


@dataclass(frozen=True, slots=True)
class BranchPageShape:
    """What decides the text of a branch-page statement (not the values bound to it)."""

    dialect: str
    privileged: bool
    team: bool
    #: Read oldest first from an ``after`` cursor (or the root), not back from the end.
    forward: bool
    #: A named branch (its end message must be in the chat), not the active leaf.
    branch: bool
    #: A ``before`` cursor bounds the page.
    before: bool
    filters: tuple[str, ...]
    #: The message columns each row returns, in :data:`MESSAGE_COLUMNS` order.
    columns: tuple[str, ...] = MESSAGE_COLUMNS

    @classmethod
    def of(cls, db: Database, who: Identity, *, forward: bool, branch: bool, before: bool,
           filters: tuple[str, ...],
           columns: tuple[str, ...] = MESSAGE_COLUMNS) -> BranchPageShape:
        return cls(db.dialect, who.is_admin or who.is_agent, bool(who.team_id), forward,
                   branch, before, filters, columns)


def branch_page_statement(db: Database, shape: BranchPageShape) -> PreparedStatement:
    """The statement :func:`store.messages.branch_rows` runs for a page.

    The page walks parent links (:func:`store.tree.path_walk`) and costs the rows it
    returns at any depth. Read backwards (the newest page, the page before a cursor),
    the walk starts at the ``start`` slot (the ``before`` cursor's message or the named
    branch) or at the chat's active leaf and takes at most ``count`` rows (the page,
    the row that tells more lie above it and the skipped cursor row; see ``skip``),
    none at or above ``floor`` (an ``after`` cursor's depth). Read forwards, the page's
    upper end — ``top`` (below a ``before`` cursor) or the branch's end, at most
    ``cap`` — is first found by one jump-pointer climb (O(log depth) rows), and the
    walk runs from there down to ``floor``.

    Named slots: ``chat``, ``user``, ``tenant``, ``team``, ``now``, ``branch``, ``floor``,
    ``limit``, one per filter field; backwards ``start``, ``count`` and ``skip``; forwards
    ``top`` and ``cap``. Rows, in walk order (newest first backwards, oldest first
    forwards): the shape's columns, then the row's depth and the chat's active leaf.
    """
    statement = db.statements.get(("branch_page_statement", shape))
    if statement is None:
        statement = db.statements[("branch_page_statement", shape)] = _compile_branch_page(shape)
    return statement


def _compile_branch_page(shape: BranchPageShape) -> PreparedStatement:
    who = marked_identity(shape.privileged, shape.team)
    # Unfiltered, the walk is as long as the page and carries the page's columns; a
    # filtered walk may run the length of the branch, so it carries none and the rows
    # that pass are looked up.
    carried = () if shape.filters else shape.columns
    chat = bindparam("chat", type_=String())
    floor = bindparam("floor", type_=Integer())
    visible = [chats.c.id == chat, present(at=MARK_NOW), access.can_read(who)]
    where: list[Any] = [messages.c.chat_id == chat]
    if shape.branch:
        end: Any = bindparam("branch", type_=String())
        where.append(select(chats.c.id).where(*visible).exists())
    else:
        end = select(chats.c.active_leaf_id).where(*visible).scalar_subquery()
    if not shape.forward:
        if shape.before:
            first: Any = bindparam("start", type_=String())
            if not shape.branch:
                where.append(select(chats.c.id).where(*visible).exists())
        else:
            first = end
        if shape.branch and shape.before:
            named = messages.alias("named")
            where.append(select(named.c.id).where(named.c.id == end,
                                                  named.c.chat_id == chat).exists())
        walk = tree.path_walk(first, where, chat=chat, floor=floor,
                              count=bindparam("count", type_=Integer()), carry=carried,
                              dialect=shape.dialect)
        steps: list[Any] = [walk.c.n > bindparam("skip", type_=Integer())]
        order: Any = walk.c.n
    else:
        known = messages.alias("known")
        end_depth = select(known.c.depth).where(known.c.id == end,
                                                known.c.chat_id == chat).scalar_subquery()
        top = bindparam("top", type_=Integer()) if shape.before else end_depth
        cap = bindparam("cap", type_=Integer())
        upper = case((top < cap, top), else_=cap)
        # The end's row must be there (a named branch, or rows not in the archive).
        where.append(end_depth.is_not(None))
        first = tree.ancestor_at(end, upper, chat=chat,
                                 dialect=shape.dialect).scalar_subquery()
        walk = tree.path_walk(first, where, chat=chat, floor=floor, carry=carried,
                              dialect=shape.dialect)
        steps = []
        order = walk.c.n.desc()
    current = select(chats.c.active_leaf_id).where(chats.c.id == chat).scalar_subquery()
    if carried:
        # The walk read each row's columns on its way: no second lookup per row.
        query = select(*(walk.c[name] for name in shape.columns), walk.c.depth,
                       current.label("_leaf"))
    else:
        query = (select(*(messages.c[name] for name in shape.columns), messages.c.depth,
                        current.label("_leaf"))
                 .join(walk, (messages.c.id == walk.c.id) & (messages.c.chat_id == chat))
                 .where(*(messages.c[name] == bindparam(name, type_=String())
                          for name in shape.filters)))
    query = query.where(*steps).order_by(order).limit(bindparam("limit", type_=Integer()))
    return compile_prepared(query, shape.dialect)


def ancestor_statement(db: Database, dialect: str) -> PreparedStatement:
    """The id of a message's ancestor (or itself) at a depth, by one jump-pointer climb
    (:func:`store.tree.ancestor_at`): whether a cursor issued for an earlier end of a
    branch still lies on it. Named slots: ``start``, ``depth``, ``chat``."""
    statement = db.statements.get(("ancestor_statement", dialect))
    if statement is None:
        query = tree.ancestor_at(bindparam("start", type_=String()),
                                 bindparam("depth", type_=Integer()),
                                 chat=bindparam("chat", type_=String()), dialect=dialect)
        statement = db.statements[("ancestor_statement", dialect)] = compile_prepared(
            query, dialect)
    return statement
