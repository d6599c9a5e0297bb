"""Driver-level statements for the hottest reads, compiled once and run without SQLAlchemy.

A page of messages is read thousands of times a second by front ends. Building and
compiling its SQLAlchemy statement costs more than Postgres spends answering it, so
every message page — the store's own (:func:`store.messages.page_rows` and
:func:`store.messages.branch_rows`, behind ``list_messages`` and ``list_branch``) and
the compiled reads' — runs a statement built here once per *shape* — the dialect, the
caller's kind of access, the direction, which cursors and filter fields are present,
the columns asked for — and compiled to the driver's own SQL text. Each request then
only binds its values and runs the text on the raw driver connection, where asyncpg
keeps it as a prepared statement per connection.

The caller's identity goes into the statement through marker values that are replaced
by the request's own when the statement runs, so the access rule is written once, in
:mod:`store.access`, and never copied here.

Each shape names the columns its statement returns: a caller that shows a few fields
of each row asks for those only, and Postgres and the driver skip the rest. Rows come
back as the driver gives them; :func:`message_attribute` says how a column's value
becomes a record's attribute, and :func:`message_record` makes the whole record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    JSON,
    BigInteger,
    Boolean,
    Integer,
    String,
    and_,
    any_,
    bindparam,
    case,
    false,
    func,
    select,
)

from chatql.store.chats import access
from chatql.store.chats import chat as store_chats
from chatql.store.chats.chat import present
from chatql.store.db.database import Database
from chatql.store.db.driver_adapters import compiled_text
from chatql.store.db.rows import RECORD_COLUMNS
from chatql.store.db.tables import UTCDateTime, chats, columns_of_type, interrupts, messages
from chatql.store.jsonutil import loads
from chatql.store.messages import interrupts as store_interrupts
from chatql.store.records import Chat, Identity, Message

__all__ = [
    "CHAT_COLUMNS",
    "INTERRUPT_COLUMNS",
    "MESSAGE_COLUMNS",
    "Attribute",
    "BranchPageShape",
    "ChatPageShape",
    "InboxPageShape",
    "MessagePageShape",
    "PreparedStatement",
    "ancestor_statement",
    "branch_page_statement",
    "chat_after",
    "chat_attribute",
    "chat_page_statement",
    "chat_positions",
    "chat_record",
    "chat_statement",
    "chats_by_id_statement",
    "compile_prepared",
    "fetch",
    "inbox_page_statement",
    "inbox_positions",
    "interrupt_attribute",
    "message_attribute",
    "message_flags_statement",
    "message_page_statement",
    "message_record",
    "moment_argument",
]

#: Filter fields a prepared message page knows, in :class:`store.messages.MessageFilter` order.
FILTER_FIELDS = ("request_id", "role", "block_id", "thread_id", "type")
#: The message columns a prepared page returns, in this order, before the two flags.
MESSAGE_COLUMNS = RECORD_COLUMNS
#: The chat columns a prepared chat read returns, in this order, before any flag: every
#: attribute of a :class:`store.records.Chat` that is a column of the table, in the
#: record's field order (as ``RECORD_COLUMNS`` is for messages).
CHAT_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(Chat) if field.name in chats.c)
# How the driver's values are decoded, read from the tables' column types (SQLite
# answers JSON as text, times as naive text, booleans as 0/1).
_JSON_COLUMNS = columns_of_type(chats, messages, interrupts, kind=JSON)
_TIME_COLUMNS = columns_of_type(chats, messages, interrupts, kind=UTCDateTime)
_BOOL_COLUMNS = columns_of_type(chats, messages, interrupts, kind=Boolean)

# Marker values standing in for the caller's identity while a statement is compiled.
_USER = "\x00prepared:user"
_TENANT = "\x00prepared:tenant"
_TEAM = "\x00prepared:team"
_AFTER_ID = "\x00prepared:after_id"
_AFTER_VALUE = datetime(1111, 11, 11, 11, 11, 11, 111111, tzinfo=UTC)
_NOW = datetime(1222, 12, 12, 12, 12, 12, 121212, tzinfo=UTC)
_MARKERS: dict[Any, str] = {_USER: "user", _TENANT: "tenant", _TEAM: "team",
                            _AFTER_ID: "after_id", _AFTER_VALUE: "after_value", _NOW: "now"}


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


@dataclass(frozen=True, slots=True)
class PreparedStatement:
    """Driver SQL text and, per positional parameter, the value's name or constant."""

    sql: str
    slots: tuple[tuple[bool, Any], ...]

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for ``values`` (named slots), in statement order."""
        return [values[item] if named else item for named, item in self.slots]



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
        statement = db.statements[("message_flags_statement", shape)] = _compiled(
            select(visible.label("visible"), older, newer), shape.dialect)
    return statement


def _message_page_parts(shape: MessagePageShape) -> tuple[list[Any], Any, Any, Any, Any]:
    """A message page's predicates: the rows' bounds, the chat's visibility and the
    neighbour probes next to each cursor, and the page's order."""
    who = _marked_identity(shape.privileged, shape.team)
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
        .where(chats.c.id == chat, present(at=_NOW), access.can_read(who))
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
    return _compiled(query, shape.dialect)


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
    from chatql.store.messages import tree

    who = _marked_identity(shape.privileged, shape.team)
    # Unfiltered, the walk is as long as the page and carries the page's columns; a
    # filtered walk may run the length of the branch, so it carries none and the rows
    # that pass are looked up.
    carried = () if shape.filters else shape.columns
    chat = bindparam("chat", type_=String())
    floor = bindparam("floor", type_=Integer())
    visible = [chats.c.id == chat, present(at=_NOW), access.can_read(who)]
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
    return _compiled(query, shape.dialect)



def ancestor_statement(db: Database, dialect: str) -> PreparedStatement:
    """The id of a message's ancestor (or itself) at a depth, by one jump-pointer climb
    (:func:`store.tree.ancestor_at`): whether a cursor issued for an earlier end of a
    branch still lies on it. Named slots: ``start``, ``depth``, ``chat``."""
    statement = db.statements.get(("ancestor_statement", dialect))
    if statement is None:
        from chatql.store.messages import tree

        query = tree.ancestor_at(bindparam("start", type_=String()),
                                 bindparam("depth", type_=Integer()),
                                 chat=bindparam("chat", type_=String()), dialect=dialect)
        statement = db.statements[("ancestor_statement", dialect)] = _compiled(query, dialect)
    return statement


def compile_prepared(query: Any, dialect_name: str) -> PreparedStatement:
    """``query`` as a :class:`PreparedStatement` for :func:`fetch`: each bind parameter
    without a value is a named slot (``now``: filled in by :func:`fetch`)."""
    return _compiled(query, dialect_name)


def _compiled(query: Any, dialect_name: str) -> PreparedStatement:
    """``query`` as the driver's SQL text, with its parameters mapped to named slots."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = (postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]
               if dialect_name == "postgresql" else sqlite.aiosqlite.dialect())
    compiled = query.compile(dialect=dialect)
    sql, names = compiled_text(compiled)
    slots: list[tuple[bool, Any]] = []
    for name in names:
        value = compiled.params[name]
        if isinstance(value, str | datetime) and value in _MARKERS:
            slots.append((True, _MARKERS[value]))
        elif compiled.binds[name].value is None and compiled.binds[name].callable is None:
            slots.append((True, name))  # one of the named slots above
        else:
            slots.append((False, value))
    return PreparedStatement(sql=sql, slots=tuple(slots))


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
    from chatql.store.chats.lists import ChatListFilter, _keyset_rows, fixed

    who = _marked_identity(shape.privileged, shape.team)
    where = [present(at=_NOW), access.can_read(who), *ChatListFilter().clauses()]
    base = select(*(chats.c[name] for name in shape.columns)).where(*where)
    start = (_AFTER_VALUE, _AFTER_ID) if shape.after else None
    (query,) = _keyset_rows(base, "LAST_MESSAGE_AT", True, start, inclusive=False, limit=1)
    if start is not None:
        (probe,) = _keyset_rows(select(chats.c.id).where(*where), "LAST_MESSAGE_AT", False,
                                start, inclusive=True, limit=1)
        behind = probe.correlate(None).scalar_subquery().is_not(None)
        query = query.add_columns(behind.label("_behind"))
    if shape.limit <= 0:
        raise ValueError("a chat-list page's shape needs its limit")
    return _compiled(query.limit(fixed(shape.limit)), shape.dialect)


@dataclass(frozen=True, slots=True)
class InboxPageShape:
    """What decides the text of an inbox-page statement (not the values bound to it)."""

    dialect: str
    #: The caller's roles: who may decide depends on them (:func:`can_decide`).
    roles: frozenset[str]
    team: bool
    after: bool
    #: A checked filter; its values are written into the statement.
    interrupt_filter: store_interrupts.InterruptFilter
    #: The interrupt columns each row returns (:data:`INTERRUPT_COLUMNS` order).
    columns: tuple[str, ...]
    #: The page's size (its statement reads one row more).
    size: int

    @classmethod
    def of(cls, db: Database, who: Identity, *,
           interrupt_filter: store_interrupts.InterruptFilter, after: bool,
           columns: tuple[str, ...], size: int) -> InboxPageShape:
        return cls(db.dialect, who.roles, bool(who.team_id), after, interrupt_filter,
                   columns, size)


#: The interrupt columns a prepared inbox page may return, in this order.
INTERRUPT_COLUMNS = store_interrupts.STORED_ATTRIBUTES


def inbox_page_statement(db: Database, shape: InboxPageShape) -> PreparedStatement:
    """The statement :func:`store.messages.interrupts.inbox` runs (its own query,
    :func:`~store.messages.interrupts.inbox_select`, compiled for the driver).

    Named slots: ``user``, ``tenant``, ``team``, ``now``, and after a cursor
    ``after_value`` and ``after_id`` (see :func:`chat_after`). Rows: the shape's columns,
    newest first, at most one more than the page.
    """
    statement = db.statements.get(("inbox_page_statement", shape))
    if statement is None:
        who = Identity(user_id=_USER, tenant_id=_TENANT,
                       team_id=_TEAM if shape.team else None, roles=shape.roles)
        query = store_interrupts.inbox_select(
            who, shape.interrupt_filter, size=shape.size,
            after=(_AFTER_VALUE, _AFTER_ID) if shape.after else None, at=_NOW,
            columns=shape.columns)
        statement = db.statements[("inbox_page_statement", shape)] = _compiled(
            query, shape.dialect)
    return statement


def _marked_identity(privileged: bool, team: bool) -> Identity:
    return Identity(user_id=_USER, tenant_id=_TENANT, team_id=_TEAM if team else None,
                    roles=frozenset({"admin"}) if privileged else frozenset())



def chat_statement(db: Database, shape: ChatPageShape) -> PreparedStatement:
    """One chat as :func:`store.chats.get_chat` finds it, with its newest message as
    :func:`store.chat_lists.newest_messages` finds it (``after`` is unused).

    Named slots: ``chat``, ``user``, ``tenant``, ``team``, ``now``. One row when the chat is
    visible: the shape's chat columns, then its message columns (all null while the chat
    has no messages).
    """
    statement = db.statements.get(("chat_statement", shape))
    if statement is None:
        who = _marked_identity(shape.privileged, shape.team)
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
                   present(at=_NOW), access.can_read(who))
        )
        statement = db.statements[("chat_statement", shape)] = _compiled(query, shape.dialect)
    return statement


async def fetch(db: Database, statement: PreparedStatement,
                values: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
    """Run ``statement`` with ``values`` on a driver connection; the rows as given.

    The ``now`` slot (chats past their expiry are not there) is filled in here.
    """
    # Looked up per call: the store's clock is the one every reader of expiry uses.
    moment = moment_argument(store_chats.now(), db.dialect)
    arguments = statement.arguments({**values, "now": moment})
    if db.is_postgres:
        rows: Sequence[Sequence[Any]] = await db.fetch_prepared(statement.sql, arguments)
        return rows
    async with db.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        cursor = await driver.execute(statement.sql, arguments)
        try:
            return list(await cursor.fetchall())
        finally:
            await cursor.close()


def _moment(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    moment: datetime = value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _document(value: Any) -> Any:
    return loads(value) if type(value) is str or isinstance(value, bytes) else value


def _tags(value: Any) -> list[Any]:
    return list(_document(value) or [])


@dataclass(frozen=True, slots=True)
class Attribute:
    """How a record attribute comes from a prepared row: the column it is stored in and
    how the driver's value of that column becomes the record's (None: as given); or,
    for an attribute that is not stored, its constant value."""

    column: str | None
    convert: Callable[[Any], Any] | None = None
    constant: Any = None
    #: A timestamp: the record's value is the instant the driver's value names, in UTC.
    time: bool = False


def _converter(name: str) -> Callable[[Any], Any] | None:
    if name == "tags":  # a JSON list, never null in a record
        return _tags
    if name in _JSON_COLUMNS:
        return _document
    if name in _TIME_COLUMNS:
        return _moment
    if name in _BOOL_COLUMNS:
        return bool  # SQLite answers 0/1
    return None


def _attribute(name: str) -> Attribute:
    return Attribute(name, _converter(name), time=name in _TIME_COLUMNS)


def message_attribute(name: str) -> Attribute | None:
    """How a prepared message row gives the :class:`store.records.Message` attribute
    ``name``: the value :func:`message_record` puts in the
    record. None when ``name`` is not an attribute a prepared page reads."""
    if name == "tokens_estimated":
        return Attribute(None, constant=False)  # stored messages carry reported counts only
    return _attribute(name) if name in MESSAGE_COLUMNS else None


def chat_attribute(name: str) -> Attribute | None:
    """How a prepared chat row gives the :class:`store.records.Chat` attribute ``name``
    (as :func:`store.chats.chat_from_row` would); None when it does not."""
    return _attribute(name) if name in CHAT_COLUMNS else None


def interrupt_attribute(name: str) -> Attribute | None:
    """How a prepared inbox row gives the :class:`store.records.Interrupt` attribute
    ``name`` (as :func:`store.messages.interrupts.interrupt_from_row` would); None
    when it is not one stored as a column."""
    return _attribute(name) if name in INTERRUPT_COLUMNS else None


_message_converters = tuple((name, _converter(name)) for name in MESSAGE_COLUMNS)


def message_record(row: Sequence[Any]) -> Message:
    """The :class:`store.records.Message` a page row of every record column
    (:data:`MESSAGE_COLUMNS`, the default) holds; columns after the record's are not its."""
    return Message(**{name: value if convert is None else convert(value)
                      for (name, convert), value in zip(_message_converters, row,
                                                        strict=False)})


#: The columns :func:`chats_by_id_statement` returns, in this order: a whole chat record.
CHAT_RECORD_COLUMNS = CHAT_COLUMNS

def chats_by_id_statement(db: Database, dialect: str) -> PreparedStatement:
    """The chats whose ids are in the slot ``ids``, as stored (deleted or not, whoever may
    read them): :data:`CHAT_RECORD_COLUMNS`, then the chat's last sequence (which
    orders the states of a chat). ``ids`` is a JSON array of the ids on SQLite
    and a list on Postgres, so one text serves any number of them."""
    statement = db.statements.get(("chats_by_id_statement", dialect))
    if statement is None:
        if dialect == "postgresql":
            wanted = chats.c.id == any_(bindparam("ids", type_=ARRAY(String())))
        else:
            listed = func.json_each(bindparam("ids", type_=String())).table_valued("value")
            wanted = chats.c.id.in_(select(listed.c.value))
        query = select(*(chats.c[name] for name in CHAT_RECORD_COLUMNS),
                       chats.c.last_sequence).where(wanted)
        statement = db.statements[("chats_by_id_statement", dialect)] = _compiled(query, dialect)
    return statement


_record_converters = tuple((name, _converter(name)) for name in CHAT_RECORD_COLUMNS)


def chat_record(row: Sequence[Any]) -> Chat:
    """The :class:`store.records.Chat` a :func:`chats_by_id_statement` row holds, as
    :func:`store.chats.chat_from_row` reads it (columns after the record's are not its)."""
    return Chat(**{name: value if convert is None else convert(value)
                   for (name, convert), value in zip(_record_converters, row, strict=False)})


def chat_positions(columns: tuple[str, ...] = CHAT_COLUMNS
                   ) -> tuple[Callable[[Sequence[Any]], Any], Callable[[Sequence[Any]], Any]]:
    """For chat-list rows of ``columns`` (which hold ``id`` and ``activity_at``): what
    the cursor of a row (newest activity first) encodes, and what decides it — the
    activity time as the driver gave it and the id, cheaper than the position itself."""
    return _moment_positions(columns, "activity_at")


def inbox_positions(columns: tuple[str, ...]
                    ) -> tuple[Callable[[Sequence[Any]], Any], Callable[[Sequence[Any]], Any]]:
    """For inbox rows of ``columns`` (which hold ``id`` and ``requested_at``): what the
    cursor of a row encodes (:func:`store.messages.interrupts.position_of`) and what
    decides it, as :func:`chat_positions` gives them for chats."""
    return _moment_positions(columns, "requested_at")


def _moment_positions(columns: tuple[str, ...], moment_column: str
                      ) -> tuple[Callable[[Sequence[Any]], Any], Callable[[Sequence[Any]], Any]]:
    """A moment-and-id position ([the moment in ISO form, the id]) of rows of
    ``columns``, and the driver's values that decide it."""
    at, item_id = columns.index(moment_column), columns.index("id")

    def key(row: Sequence[Any]) -> tuple[Any, str]:
        return row[at], row[item_id]

    def position(row: Sequence[Any]) -> list[Any]:
        moment = _moment(row[at])
        assert moment is not None  # the column is NOT NULL
        return [moment.isoformat(), row[item_id]]

    return key, position


def moment_argument(moment: datetime, dialect: str) -> Any:
    """An aware time as the driver takes it for a UTC timestamp column."""
    value = moment.astimezone(UTC)
    if dialect == "sqlite":
        # How SQLAlchemy stores a UTC timestamp on SQLite (naive, fixed-width text).
        return value.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def chat_after(start: tuple[datetime, str], dialect: str) -> dict[str, Any]:
    """The ``after_value`` and ``after_id`` slots for a verified cursor position."""
    return {"after_value": moment_argument(start[0], dialect), "after_id": start[1]}
