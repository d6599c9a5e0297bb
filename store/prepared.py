"""Driver-level statements for the hottest reads, compiled once and run without SQLAlchemy.

A page of messages is read thousands of times a second by front ends. Building and
compiling its SQLAlchemy statement costs more than Postgres spends answering it, so
here the statement :func:`store.messages.list_messages` runs is built from the same
predicates (the same access rule, the same neighbour probes) once per *shape* — the
dialect, the caller's kind of access, the direction, which cursors and filter fields
are present — and compiled to the driver's own SQL text. Each request then only
binds its values and runs the text on the raw driver connection, where asyncpg keeps
it as a prepared statement per connection.

The caller's identity goes into the statement through marker values that are replaced
by the request's own when the statement runs, so the access rule is written once, in
:mod:`store.access`, and never copied here.

Rows come back as the driver gives them; :func:`message_reader` reads from one the
values :func:`store.messages.message_from_row` would have put into a record.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from sqlalchemy import BigInteger, Integer, String, bindparam, false, select
from sqlalchemy.engine import make_url

from store import access
from store.database import Database
from store.jsonutil import loads
from store.records import Identity
from store.tables import chats, messages

__all__ = [
    "MESSAGE_COLUMNS",
    "MessagePageShape",
    "PreparedStatement",
    "fetch",
    "message_page_statement",
    "message_reader",
]

#: Filter fields a prepared message page knows, in :class:`store.messages.MessageFilter` order.
FILTER_FIELDS = ("request_id", "role", "block_id", "thread_id", "type")
#: The message columns a prepared page returns, in this order, before the two flags.
MESSAGE_COLUMNS = (
    "id", "chat_id", "sequence", "request_id", "role", "type", "props", "block_id",
    "thread_id", "assistant_id", "status", "metadata", "created_at", "updated_at", "tokens",
)
_JSON_COLUMNS = frozenset({"props", "metadata"})
_TIME_COLUMNS = frozenset({"created_at", "updated_at"})

# Marker values standing in for the caller's identity while a statement is compiled.
_USER = "\x00prepared:user"
_TENANT = "\x00prepared:tenant"
_TEAM = "\x00prepared:team"
_MARKERS = {_USER: "user", _TENANT: "tenant", _TEAM: "team"}


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

    @classmethod
    def of(cls, db: Database, who: Identity, *, forward: bool, after: bool, before: bool,
           filters: tuple[str, ...]) -> MessagePageShape:
        return cls(db.dialect, who.is_admin or who.is_agent, bool(who.team_id), forward,
                   after, before, filters)


@dataclass(frozen=True, slots=True)
class PreparedStatement:
    """Driver SQL text and, per positional parameter, the value's name or constant."""

    sql: str
    slots: tuple[tuple[bool, Any], ...]

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for ``values`` (named slots), in statement order."""
        return [values[item] if named else item for named, item in self.slots]


_statements: dict[MessagePageShape, PreparedStatement] = {}


def message_page_statement(shape: MessagePageShape) -> PreparedStatement:
    """The statement :func:`store.messages.list_messages` runs for a non-empty page.

    Named slots: ``chat``, ``user``, ``tenant``, ``team``, ``after``, ``before``,
    ``limit`` and one per filter field. Rows: :data:`MESSAGE_COLUMNS`, then whether
    older and newer rows exist next to the cursors.
    """
    statement = _statements.get(shape)
    if statement is None:
        statement = _statements[shape] = _compile_message_page(shape)
    return statement


def _compile_message_page(shape: MessagePageShape) -> PreparedStatement:
    from sqlalchemy.dialects import postgresql, sqlite

    who = Identity(user_id=_USER, tenant_id=_TENANT, team_id=_TEAM if shape.team else None,
                   roles=frozenset({"admin"}) if shape.privileged else frozenset())
    chat = bindparam("chat", type_=String())
    base = [messages.c.chat_id == chat,
            *(messages.c[name] == bindparam(name, type_=String()) for name in shape.filters)]
    after = bindparam("after", type_=BigInteger())
    before = bindparam("before", type_=BigInteger())

    def neighbour(*clauses: Any, newest: bool) -> Any:
        order = messages.c.sequence.desc() if newest else messages.c.sequence.asc()
        nearest = select(messages.c.sequence).where(*base, *clauses).order_by(order).limit(1)
        return nearest.scalar_subquery().is_not(None)

    older = neighbour(messages.c.sequence <= after, newest=True) if shape.after else false()
    newer = neighbour(messages.c.sequence >= before, newest=False) if shape.before else false()
    visible = (
        select(chats.c.id)
        .where(chats.c.id == chat, chats.c.deleted_at.is_(None), access.can_read(who))
        .exists()
    )
    bounds = list(base)
    if shape.after:
        bounds.append(messages.c.sequence > after)
    if shape.before:
        bounds.append(messages.c.sequence < before)
    order = messages.c.sequence.asc() if shape.forward else messages.c.sequence.desc()
    query = (
        select(*(messages.c[name] for name in MESSAGE_COLUMNS), older.label("_older"),
               newer.label("_newer"))
        .where(*bounds, visible)
        .order_by(order)
        .limit(bindparam("limit", type_=Integer()))
    )
    dialect = (postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]
               if shape.dialect == "postgresql" else sqlite.aiosqlite.dialect())
    compiled = query.compile(dialect=dialect)
    names = compiled.positiontup or ()
    slots: list[tuple[bool, Any]] = []
    for name in names:
        value = compiled.params[name]
        if isinstance(value, str) and value in _MARKERS:
            slots.append((True, _MARKERS[value]))
        elif compiled.binds[name].value is None and compiled.binds[name].callable is None:
            slots.append((True, name))  # one of the named slots above
        else:
            slots.append((False, value))
    return PreparedStatement(sql=compiled.string, slots=tuple(slots))


_pools: weakref.WeakKeyDictionary[Database, Any] = weakref.WeakKeyDictionary()


async def _asyncpg_pool(db: Database) -> Any:
    """The database's own asyncpg pool for prepared reads, opened on first use.

    Beside the engine's pool rather than through it: a checkout there pings the server
    first (a round trip per read), and asyncpg keeps each connection's prepared
    statements only while it lives. :meth:`Database.dispose` closes it.
    """
    pool = _pools.get(db)
    if pool is not None:
        return pool
    import asyncpg

    parsed = make_url(db.url)
    created = await asyncpg.create_pool(
        host=parsed.host, port=parsed.port or 5432, user=parsed.username,
        password=parsed.password, database=parsed.database, min_size=1,
        max_size=db.pool_size)
    pool = _pools.get(db)
    if pool is not None:  # another request opened one meanwhile: keep that one
        await created.close()
        return pool
    _pools[db] = created

    async def close() -> None:
        _pools.pop(db, None)
        await created.close()

    db.closers.append(close)
    return created


async def fetch(db: Database, statement: PreparedStatement,
                values: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
    """Run ``statement`` with ``values`` on a driver connection; the rows as given."""
    arguments = statement.arguments(values)
    if db.is_postgres:
        pool = await _asyncpg_pool(db)
        rows: Sequence[Sequence[Any]] = await pool.fetch(statement.sql, *arguments)
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
    return loads(value) if isinstance(value, str | bytes) else value


def message_reader(name: str) -> Callable[[Sequence[Any]], Any] | None:
    """How a prepared-page row gives the :class:`store.records.Message` attribute ``name``.

    The value is the one :func:`store.messages.message_from_row` would have put in the
    record; None when ``name`` is not an attribute a prepared page reads.
    """
    if name == "tokens_estimated":
        return lambda row: False  # stored messages carry reported counts only
    if name not in MESSAGE_COLUMNS:
        return None
    index = MESSAGE_COLUMNS.index(name)
    if name in _JSON_COLUMNS:
        return lambda row: _document(row[index])
    if name in _TIME_COLUMNS:
        return lambda row: _moment(row[index])
    return itemgetter(index)
