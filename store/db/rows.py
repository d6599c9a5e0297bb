"""Message rows: the one place a message becomes a row of ``messages``, and the one
writer of such rows.

Every path that stores messages — appends and edits, the persist of an ended stream,
imports and archive restores — builds its rows here, as plain tuples in
:data:`MESSAGE_COLUMNS` order, and writes them with :func:`write_rows`: a multi-row
INSERT, or COPY on Postgres once a batch is large enough for COPY to pay. Both
statements take the same tuples, so the two ways to write a row cannot drift apart;
the records handed back to callers are built from those tuples too.

Nothing here lists a message's columns by hand: the rows, the records, the COPY
values and a message's *content* (:data:`CONTENT_COLUMNS`, what its writer says about
it) are all read from the table and the record, by code generated from them once,
at import (:func:`content_maker` for callers' own objects), as quick as the
positional code it replaces. A nullable column added to the
table and to :class:`~store.records.Message` is written and handed back by every
writer without an edit here.

A chain written by COPY (:func:`write_chain`) is built while it streams: the server
inserts the first rows while the next ones, and their records, are made.
"""

from __future__ import annotations

import dataclasses
import gc
import keyword
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from typing import Any, NamedTuple

from sqlalchemy import JSON, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import jsonutil
from chatql.store.db.tables import messages
from chatql.store.records import Message

__all__ = [
    "CONTENT_COLUMNS",
    "COPY_BATCH",
    "COPY_THRESHOLD",
    "MESSAGE_COLUMNS",
    "PLACE_COLUMNS",
    "RECORD_COLUMNS",
    "Content",
    "Link",
    "MessageRow",
    "chain_rows",
    "content_maker",
    "document_rows",
    "field_names",
    "gc_paused",
    "generated",
    "row_dicts",
    "row_records",
    "write_chain",
    "write_rows",
]

#: Every column a message row has, in the order of a row tuple (and of COPY): the
#: table's own columns in the table's order.
MESSAGE_COLUMNS: tuple[str, ...] = tuple(column.name for column in messages.c)
#: The columns a :class:`~store.records.Message` is read from, in the record's field
#: order: every field of the record that is a column of the table. Reads (pages,
#: prepared statements, :func:`record_from_mapping`) take this one list, so a column
#: added to the table and the record is read everywhere.
RECORD_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(Message) if field.name in messages.c)
#: Below this many rows a multi-row INSERT is as quick as COPY on Postgres.
COPY_THRESHOLD = 200

#: Rows a streamed COPY builds at a time, the collector held off: about what fills
#: the first half-megabyte message asyncpg sends, so the server starts early. Not
#: fewer: the collector runs as each pause ends, and a pass per few hundred rows
#: brought on the full collections that walk the whole heap (a long stream's buffer
#: and all) in one persist out of three.
COPY_BATCH = 2_000

#: One message row: values in :data:`MESSAGE_COLUMNS` order.
MessageRow = tuple[Any, ...]


class Link(NamedTuple):
    """A message's place in the tree (the tree columns of its row).

    A named tuple: bulk writes make one per message, at a fraction of a frozen
    dataclass's construction cost.
    """

    id: str
    parent_id: str | None
    depth: int
    jump_id: str
    jump_depth: int

    def columns(self) -> dict[str, Any]:
        return {"parent_id": self.parent_id, "depth": self.depth,
                "jump_id": self.jump_id, "jump_depth": self.jump_depth}


#: The columns a chain's writer fills in itself (:func:`chain_rows`): the chat, the
#: sequence, both times and the message's place in the tree (a :class:`Link`, id and
#: all). Every other column of the table is content.
PLACE_COLUMNS: tuple[str, ...] = ("chat_id", "sequence", "created_at", "updated_at",
                                  *Link._fields)
#: What a writer says about each message of a chain, in this order (see
#: :func:`chain_rows`): every column of the table but the :data:`PLACE_COLUMNS`, in the
#: table's order. A column added to the table is content, written by every writer.
CONTENT_COLUMNS: tuple[str, ...] = tuple(
    name for name in MESSAGE_COLUMNS if name not in PLACE_COLUMNS)
#: A message's content: values in :data:`CONTENT_COLUMNS` order (made by
#: :func:`content_maker`; nothing but generated code indexes it).
Content = tuple[Any, ...]


def _identifier(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ValueError(f"{name!r} cannot name a column in generated code")
    return name


def generated(name: str, parameters: str, expression: str,
               names: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """The function ``name(parameters)`` that returns ``expression``, compiled once, at
    import, from the columns — as :func:`collections.namedtuple` and :mod:`dataclasses`
    make their methods: the positional code a person would write for today's columns
    (tuple displays, indexes, unpacking: the quickest Python there is for building
    rows), without a list of columns to keep in step by hand. ``names`` are the
    globals it sees; its source is kept as its ``source`` attribute."""
    source = f"def {name}({parameters}):\n    return {expression}\n"
    namespace = dict(names or {})
    exec(compile(source, f"<generated {__name__}.{name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    function.__module__ = __name__
    function.source = source  # type: ignore[attr-defined]
    return function


def field_names(kind: type[Any]) -> frozenset[str]:
    """The field names of the dataclass ``kind``: what :func:`content_maker` may read."""
    return frozenset(field.name for field in dataclasses.fields(kind))


def content_maker(fields: Collection[str], *, given: Collection[str] = (),
                  defaults: Collection[str] = ()) -> Callable[..., Iterator[Content]]:
    """What makes the :data:`Content` of messages from objects whose attributes
    ``fields`` names (records, :class:`~store.messages.NewMessage`, a stream's
    messages), read by name: ``make(items, **values)`` yields each item's content, in
    order. A column in ``given`` takes the value passed under its name; one in
    ``defaults`` the item's attribute, or the value passed when that is empty; any
    other in ``fields`` the item's attribute; any other is NULL.

    Make one per kind of writer, at import: it is generated code
    (:func:`generated`), as quick as a tuple display written out by hand.
    """
    passed = [*given, *defaults]
    unknown = set(passed) - set(CONTENT_COLUMNS)
    if unknown or not set(defaults) <= set(fields):
        raise ValueError(f"not content columns of the items: {sorted(unknown or defaults)}")

    def value(column: str) -> str:
        if column in given:
            return _identifier(column)
        if column in defaults:
            return f"(_item.{_identifier(column)} or {column})"
        return f"_item.{_identifier(column)}" if column in fields else "None"

    keywords = f", *, {', '.join(passed)}" if passed else ""
    return generated("make_content", f"_items{keywords}",
                      f"(({', '.join(map(value, CONTENT_COLUMNS))},) for _item in _items)")


# Each column of a chain row (see chain_rows): the writer's place columns, then the
# message's content by its position.
_CHAIN_VALUES = {
    "chat_id": "chat_id", "sequence": "sequence", "created_at": "stamp",
    "updated_at": "stamp",
    **{name: f"link.{_identifier(name)}" for name in Link._fields},
    **{name: f"content[{index}]" for index, name in enumerate(CONTENT_COLUMNS)},
}
_chain_rows: Callable[[str, int, datetime, Iterable[tuple[Link, Content]]],
                      list[MessageRow]] = generated(
    "_chain_rows", "chat_id, first_sequence, stamp, pairs",
    f"[({', '.join(_CHAIN_VALUES[name] for name in MESSAGE_COLUMNS)},) "
    "for sequence, (link, content) in enumerate(pairs, start=first_sequence)]")
# A record's fields that are not columns take their defaults (tokens_estimated:
# stored messages carry reported counts only).
_RECORD_DEFAULTS = {f"_{field.name}": field.default for field in dataclasses.fields(Message)
                    if field.name not in messages.c}
if dataclasses.MISSING in _RECORD_DEFAULTS.values():
    raise TypeError("every field of Message that is not a column needs a plain default")
_records: Callable[[Iterable[MessageRow]], list[Message]] = generated(
    "_records", "rows", "[Message({}) for row in rows]".format(", ".join(
        f"row[{MESSAGE_COLUMNS.index(field.name)}]" if field.name in messages.c
        else f"_{field.name}" for field in dataclasses.fields(Message))),
    {"Message": Message, **_RECORD_DEFAULTS})


def _copy_value(index: int, column: str) -> str:
    # COPY takes JSON columns as text; None as the INSERT stores it: JSON null, unless
    # the column's type stores SQL NULL for it.
    kind = messages.c[column].type
    if not isinstance(kind, JSON):
        return f"v{index}"
    if kind.none_as_null:
        return f"(None if v{index} is None else dumps(v{index}))"
    return f'("null" if v{index} is None else dumps(v{index}))'


_UNPACKED = ", ".join(f"v{index}" for index in range(len(MESSAGE_COLUMNS)))
_copy_values: Callable[[Iterable[MessageRow]], list[MessageRow]] = generated(
    "_copy_values", "rows",
    "[({},) for ({},) in rows]".format(
        ", ".join(_copy_value(index, name) for index, name in enumerate(MESSAGE_COLUMNS)),
        _UNPACKED),
    {"dumps": jsonutil.dumps})


def _document_value(column: str) -> str:
    # A record must name the place columns and every NOT NULL one; a nullable content
    # column it leaves out is NULL.
    if column == "chat_id":
        return "chat_id"
    if column in PLACE_COLUMNS or not messages.c[column].nullable:
        return f"record[{column!r}]"
    return f"record.get({column!r})"


_document_rows: Callable[[str, Iterable[Mapping[str, Any]]], list[MessageRow]] = generated(
    "_document_rows", "chat_id, records",
    f"[({', '.join(map(_document_value, MESSAGE_COLUMNS))},) for record in records]")


_paused = 0


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector while a bulk write builds its rows.

    Building ten thousand rows allocates tens of thousands of short-lived, acyclic
    tuples and records; each allocation threshold crossed would otherwise start a
    collection that walks the whole heap (a long stream's buffer included), which
    measured at several times the cost of building the rows. Reference counting
    frees them as usual. Nested and interleaved uses are counted: the collector comes
    back when the last one ends, and only if it was on before. Keep the block short
    (no waiting on the network inside).
    """
    global _paused
    if _paused == 0 and not gc.isenabled():
        yield  # switched off by someone else: not ours to switch back on
        return
    _paused += 1
    gc.disable()
    try:
        yield
    finally:
        _paused -= 1
        if _paused == 0:
            gc.enable()


def chain_rows(chat_id: str, first_sequence: int, stamp: datetime,
               links: Iterable[Link], contents: Iterable[Content]) -> list[MessageRow]:
    """Rows for messages written now as one chain: ``links[i]`` is message i's place in
    the tree (its id included), ``contents[i]`` its :data:`Content`; sequences count up
    from ``first_sequence`` and both times are ``stamp``."""
    return _chain_rows(chat_id, first_sequence, stamp, zip(links, contents, strict=True))


def document_rows(chat_id: str, records: Iterable[Mapping[str, Any]]) -> list[MessageRow]:
    """Rows for messages described by column name (an import or an archive: times,
    sequences and tree columns as recorded); columns a record leaves out are NULL."""
    return _document_rows(chat_id, records)


def record_from_mapping(values: Mapping[Any, Any]) -> Message:
    """The record of a message row read by column name."""
    return Message(**{name: values[name] for name in RECORD_COLUMNS})


def row_dicts(rows: Iterable[MessageRow]) -> list[dict[str, Any]]:
    """The rows keyed by column name, as an INSERT takes them."""
    columns = MESSAGE_COLUMNS
    return [dict(zip(columns, row, strict=True)) for row in rows]


def row_records(rows: Iterable[MessageRow]) -> list[Message]:
    """The records the store hands back for freshly written rows."""
    return _records(rows)


def _copy_records(rows: Iterable[MessageRow]) -> list[MessageRow]:
    """The rows as COPY takes them: JSON columns as their text."""
    return _copy_values(rows)


def _copies(count: int) -> bool:
    return count >= COPY_THRESHOLD


async def _copy(conn: AsyncConnection, records: Iterable[MessageRow]) -> None:
    # COPY through the asyncpg connection under SQLAlchemy's transaction.
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    await driver.copy_records_to_table("messages", records=records, columns=MESSAGE_COLUMNS)


async def write_chain(conn: AsyncConnection, chat_id: str, first_sequence: int,
                      stamp: datetime, links: Iterable[Link],
                      contents: Iterable[Content], *, count: int) -> list[Message]:
    """Write the :func:`chain_rows` of ``count`` messages (in the caller's
    transaction, as :func:`write_rows` would) and return their :func:`row_records`.

    On COPY the rows are made in batches as asyncpg asks for them: the Python work
    of a long chain — tree links (when ``links`` makes them as it goes), rows, COPY
    values, records — then runs while the server inserts the rows already sent,
    instead of before the first byte goes out.
    """
    if not (conn.dialect.name == "postgresql" and _copies(count)):
        with gc_paused():
            rows = chain_rows(chat_id, first_sequence, stamp, links, contents)
        await write_rows(conn, rows)
        with gc_paused():
            return row_records(rows)
    records: list[Message] = []
    pairs = zip(links, contents, strict=True)

    def produce() -> Iterator[MessageRow]:
        sequence = first_sequence
        while True:
            # Paused per batch only: asyncpg may wait on the network between them.
            with gc_paused():
                batch = _chain_rows(chat_id, sequence, stamp, islice(pairs, COPY_BATCH))
                if not batch:
                    return
                records.extend(row_records(batch))
                values = _copy_records(batch)
                del batch
            sequence += len(values)
            yield from values

    await _copy(conn, produce())
    return records


async def write_rows(conn: AsyncConnection, rows: Sequence[MessageRow]) -> None:
    """Write ``rows`` in the caller's transaction: COPY on Postgres for a large batch
    (the asyncpg connection under SQLAlchemy's transaction), else one multi-row INSERT."""
    if not rows:
        return
    if conn.dialect.name == "postgresql" and _copies(len(rows)):
        with gc_paused():
            records = _copy_records(rows)
        await _copy(conn, records)
    else:
        with gc_paused():
            values = row_dicts(rows)
        await conn.execute(insert(messages), values)
