"""Driver-level statements, compiled once and run without SQLAlchemy.

A page of messages or chats is read thousands of times a second by front ends. Building
and compiling its SQLAlchemy statement costs more than Postgres spends answering it, so
the hottest reads are built from the store's own predicates once per *shape* — the
dialect, the caller's kind of access, the direction, which cursors and filter fields are
present, the columns asked for — and compiled to the driver's own SQL text
(:func:`compile_prepared`). Each request then only binds its values and runs the text on
the raw driver connection (:func:`fetch`), where asyncpg keeps it as a prepared
statement per connection.

This module is the machinery every such statement shares; each concept builds its own
statements beside its queries: message pages in :mod:`chatql.store.messages.pages`, the
inbox in :mod:`chatql.store.messages.interrupts`, chat-list pages in
:mod:`chatql.store.lists.pages`.

The caller's identity goes into a statement through marker values
(:func:`marked_identity`) that are replaced by the request's own when the statement
runs, so the access rule is written once, in :mod:`chatql.store.access`, and never
copied.

A shape names the columns its statement returns: a caller that shows a few fields of
each row asks for those only, and Postgres and the driver skip the rest. Rows come back
as the driver gives them; :func:`message_attribute` and :func:`chat_attribute` say how a
column's value becomes a record's attribute, and :func:`message_record` and
:func:`chat_record` make whole records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
from sqlalchemy import ARRAY, JSON, Boolean, String, any_, bindparam, func, literal, select

from chatql.store import clock
from chatql.store.db.database import Database
from chatql.store.db.driver_adapters import compiled_text
from chatql.store.db.rows import RECORD_COLUMNS
from chatql.store.db.tables import (
    UTCDateTime,
    chats,
    columns_of_type,
    files,
    interrupts,
    messages,
)
from chatql.store.jsonutil import loads
from chatql.store.records import Chat, Identity, Message

__all__ = [
    "CHAT_COLUMNS",
    "CHAT_RECORD_COLUMNS",
    "MARK_AFTER_ID",
    "MARK_AFTER_VALUE",
    "MARK_NOW",
    "MESSAGE_COLUMNS",
    "Attribute",
    "PreparedStatement",
    "attribute",
    "chat_after",
    "chat_attribute",
    "chat_positions",
    "chat_record",
    "chats_by_id_statement",
    "compile_prepared",
    "fetch",
    "fixed",
    "ids_argument",
    "ids_in",
    "inbox_positions",
    "marked_identity",
    "message_attribute",
    "message_record",
    "moment_argument",
    "record_maker",
]

T = TypeVar("T")

#: The message columns a prepared page returns, in this order, before the two flags.
MESSAGE_COLUMNS = RECORD_COLUMNS


#: The chat columns a prepared chat read returns, in this order, before any flag: every
#: attribute of a :class:`store.records.Chat` that is a column of the table, in the
#: record's field order (as ``RECORD_COLUMNS`` is for messages).
CHAT_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(Chat) if field.name in chats.c)
# How the driver's values are decoded, read from the tables' column types (SQLite
# answers JSON as text, times as naive text, booleans as 0/1).
_JSON_COLUMNS = columns_of_type(chats, messages, interrupts, files, kind=JSON)
_TIME_COLUMNS = columns_of_type(chats, messages, interrupts, files, kind=UTCDateTime)
_BOOL_COLUMNS = columns_of_type(chats, messages, interrupts, files, kind=Boolean)

# Marker values standing in for the caller's identity while a statement is compiled.
MARK_USER = "\x00prepared:user"
MARK_TENANT = "\x00prepared:tenant"
MARK_TEAM = "\x00prepared:team"
MARK_AFTER_ID = "\x00prepared:after_id"
MARK_AFTER_VALUE = datetime(1111, 11, 11, 11, 11, 11, 111111, tzinfo=UTC)
MARK_NOW = datetime(1222, 12, 12, 12, 12, 12, 121212, tzinfo=UTC)
_MARKERS: dict[Any, str] = {MARK_USER: "user", MARK_TENANT: "tenant", MARK_TEAM: "team",
                            MARK_AFTER_ID: "after_id", MARK_AFTER_VALUE: "after_value",
                            MARK_NOW: "now"}


@dataclass(frozen=True, slots=True)
class PreparedStatement:
    """Driver SQL text and, per positional parameter, the value's name or constant."""

    sql: str
    slots: tuple[tuple[bool, Any], ...]

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for ``values`` (named slots), in statement order."""
        return [values[item] if named else item for named, item in self.slots]


def compile_prepared(query: Any, dialect_name: str) -> PreparedStatement:
    """``query`` as a :class:`PreparedStatement` for :func:`fetch`: the driver's SQL text,
    each bind parameter without a value a named slot (``now``: filled in by
    :func:`fetch`), each marker value the slot it stands for."""
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


def marked_identity(privileged: bool, team: bool,
                    roles: frozenset[str] | None = None) -> Identity:
    """An identity of markers, for compiling a statement of the access rule: an admin's
    (``privileged``: admins and agents read alike) or a member's, in a team or not; or,
    given ``roles``, one holding exactly those."""
    if roles is None:
        roles = frozenset({"admin"}) if privileged else frozenset()
    return Identity(user_id=MARK_USER, tenant_id=MARK_TENANT,
                    team_id=MARK_TEAM if team else None, roles=roles)


def fixed(value: str | int) -> Any:
    """``value`` written into the statement's text, not sent as a parameter: a constant
    of the chat list (the mode it leaves out, its page size). Postgres then plans the
    statement knowing it, and a prepared one gets a generic plan as good as a custom
    one instead of being planned again on every run (a custom plan of the chat list
    costs about as much as running it)."""
    return literal(value, literal_execute=True)


async def fetch(db: Database, statement: PreparedStatement, values: Mapping[str, Any], *,
                keys: int | None = None) -> Sequence[Sequence[Any]]:
    """Run ``statement`` with ``values`` on a driver connection; the rows as given.

    The ``now`` slot (chats past their expiry are not there) is filled in here. A read
    by ``keys`` ids (an ``ids`` slot) runs on SQLite's own read-only connections, on the
    event loop when few (see :class:`~chatql.store.db.drivers.SqliteReader`): no pooled
    connection to check out for a lookup that costs less than the checkout.
    """
    # Looked up per call: the store's clock is the one every reader of expiry uses.
    moment = moment_argument(clock.now(), db.dialect)
    arguments = statement.arguments({**values, "now": moment})
    if db.is_postgres:
        rows: Sequence[Sequence[Any]] = await db.fetch_prepared(statement.sql, arguments)
        return rows
    if keys is not None:
        reader = await db.sqlite_reader()
        if reader is not None:
            return await reader.rows(statement.sql, arguments, keys)
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


def attribute(name: str) -> Attribute:
    return Attribute(name, _converter(name), time=name in _TIME_COLUMNS)


def message_attribute(name: str) -> Attribute | None:
    """How a prepared message row gives the :class:`store.records.Message` attribute
    ``name``: the value :func:`message_record` puts in the
    record. None when ``name`` is not an attribute a prepared page reads."""
    if name == "tokens_estimated":
        return Attribute(None, constant=False)  # stored messages carry reported counts only
    return attribute(name) if name in MESSAGE_COLUMNS else None


def chat_attribute(name: str) -> Attribute | None:
    """How a prepared chat row gives the :class:`store.records.Chat` attribute ``name``
    (as :func:`store.chats.chat_from_row` would); None when it does not."""
    return attribute(name) if name in CHAT_COLUMNS else None


def record_maker(record: type[T], columns: Sequence[str]) -> Callable[[Sequence[Any]], T]:
    """What makes a ``record`` of a prepared row whose first values are ``columns``
    (attributes of the record, named as its fields), each decoded as the table's column
    type says (later values in the row are not the record's)."""
    converters = tuple((name, _converter(name)) for name in columns)

    def make(row: Sequence[Any]) -> T:
        return record(**{name: value if convert is None else convert(value)
                         for (name, convert), value in zip(converters, row, strict=False)})

    return make


#: The :class:`store.records.Message` a page row of every record column
#: (:data:`MESSAGE_COLUMNS`, the default) holds.
message_record = record_maker(Message, MESSAGE_COLUMNS)


#: The columns :func:`chats_by_id_statement` returns, in this order: a whole chat record.
CHAT_RECORD_COLUMNS = CHAT_COLUMNS


def ids_in(column: Any, dialect: str) -> Any:
    """``column`` is one of the ids in the slot ``ids`` (see :func:`ids_argument`): one
    statement text for any number of ids, never an ``IN`` list made per call."""
    if dialect == "postgresql":
        return column == any_(bindparam("ids", type_=ARRAY(String())))
    listed = func.json_each(bindparam("ids", type_=String())).table_valued("value")
    return column.in_(select(listed.c.value))


def ids_argument(dialect: str, ids: Sequence[str]) -> Any:
    """The value of an ``ids`` slot (:func:`ids_in`): a list on Postgres, a JSON array
    on SQLite."""
    return list(ids) if dialect == "postgresql" else orjson.dumps(list(ids)).decode()


def chats_by_id_statement(db: Database, dialect: str) -> PreparedStatement:
    """The chats whose ids are in the slot ``ids``, as stored (deleted or not, whoever may
    read them): :data:`CHAT_RECORD_COLUMNS`, then the chat's last sequence (which
    orders the states of a chat). ``ids`` is a JSON array of the ids on SQLite
    and a list on Postgres, so one text serves any number of them."""
    statement = db.statements.get(("chats_by_id_statement", dialect))
    if statement is None:
        query = select(*(chats.c[name] for name in CHAT_RECORD_COLUMNS),
                       chats.c.last_sequence).where(ids_in(chats.c.id, dialect))
        statement = db.statements[("chats_by_id_statement", dialect)] = compile_prepared(
            query, dialect)
    return statement


#: The :class:`store.records.Chat` a :func:`chats_by_id_statement` row holds, as
#: :func:`store.chats.chat_from_row` reads it.
chat_record = record_maker(Chat, CHAT_RECORD_COLUMNS)


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
