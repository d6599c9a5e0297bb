"""Message rows: the one place a message becomes a row of ``messages``, and the one
writer of such rows.

Every path that stores messages — appends and edits, the persist of an ended stream,
imports and archive restores — builds its rows here, as plain tuples in
:data:`MESSAGE_COLUMNS` order, and writes them with :func:`write_rows`: a multi-row
INSERT, or COPY on Postgres once a batch is large enough for COPY to pay. Both
statements take the same tuples, so the two ways to write a row cannot drift apart;
the records handed back to callers are built from those tuples too.

A chain written by COPY (:func:`write_chain`) is built while it streams: the server
inserts the first rows while the next ones, and their records, are made.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from typing import Any, NamedTuple

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import jsonutil
from chatql.store.db.tables import messages
from chatql.store.records import Message

__all__ = [
    "CONTENT_COLUMNS",
    "COPY_BATCH",
    "COPY_THRESHOLD",
    "MESSAGE_COLUMNS",
    "RECORD_COLUMNS",
    "Link",
    "MessageRow",
    "chain_rows",
    "document_rows",
    "gc_paused",
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
#: What a writer says about each message of a chain, in this order (see :func:`chain_rows`).
CONTENT_COLUMNS: tuple[str, ...] = (
    "request_id", "role", "type", "props", "block_id", "thread_id", "assistant_id",
    "status", "metadata", "tokens",
)
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

_TREE = MESSAGE_COLUMNS.index("parent_id")


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
               links: Iterable[Link], contents: Iterable[Sequence[Any]]) -> list[MessageRow]:
    """Rows for messages written now as one chain: ``links[i]`` is message i's place in
    the tree (its id included), ``contents[i]`` its :data:`CONTENT_COLUMNS` values;
    sequences count up from ``first_sequence`` and both times are ``stamp``."""
    return _chain_rows(chat_id, first_sequence, stamp, zip(links, contents, strict=True))


def _chain_rows(chat_id: str, first_sequence: int, stamp: datetime,
                pairs: Iterable[tuple[Link, Sequence[Any]]]) -> list[MessageRow]:
    return [
        (link.id, chat_id, sequence, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8],
         stamp, stamp, c[9], link.parent_id, link.depth, link.jump_id, link.jump_depth)
        for sequence, (link, c) in enumerate(pairs, start=first_sequence)
    ]


def document_rows(chat_id: str, records: Iterable[Mapping[str, Any]]) -> list[MessageRow]:
    """Rows for messages described by column name (an import or an archive: times,
    sequences and tree columns as recorded); columns a record leaves out are NULL."""
    return [
        (r["id"], chat_id, r["sequence"], r.get("request_id"), r["role"], r["type"],
         r["props"], r.get("block_id"), r.get("thread_id"), r.get("assistant_id"),
         r["status"], r.get("metadata"), r["created_at"], r["updated_at"], r.get("tokens"),
         r["parent_id"], r["depth"], r["jump_id"], r["jump_depth"])
        for r in records
    ]


def record_from_mapping(values: Mapping[Any, Any]) -> Message:
    """The record of a message row read by column name."""
    return Message(**{name: values[name] for name in RECORD_COLUMNS})


def row_dicts(rows: Iterable[MessageRow]) -> list[dict[str, Any]]:
    """The rows keyed by column name, as an INSERT takes them."""
    columns = MESSAGE_COLUMNS
    return [dict(zip(columns, row, strict=True)) for row in rows]


def row_records(rows: Iterable[MessageRow]) -> list[Message]:
    """The records the store hands back for freshly written rows."""
    return [
        Message(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
                r[12], r[13], r[14], False, r[_TREE])
        for r in rows
    ]


def _copy_records(rows: Iterable[MessageRow]) -> list[MessageRow]:
    # COPY takes JSON columns as text. A metadata of None is written as JSON null,
    # which is what the INSERT path stores for it too. (Unpacked by position, the
    # fastest way to rebuild a tuple: the order is MESSAGE_COLUMNS'.)
    dumps = jsonutil.dumps
    return [(a, b, c, d, e, f, dumps(props), h, i, j, k,
             "null" if metadata is None else dumps(metadata), m, n, o, p, q, r, t)
            for (a, b, c, d, e, f, props, h, i, j, k, metadata, m, n, o, p, q, r, t) in rows]


def _copies(count: int) -> bool:
    return count >= COPY_THRESHOLD


async def _copy(conn: AsyncConnection, records: Iterable[MessageRow]) -> None:
    # COPY through the asyncpg connection under SQLAlchemy's transaction.
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    await driver.copy_records_to_table("messages", records=records, columns=MESSAGE_COLUMNS)


async def write_chain(conn: AsyncConnection, chat_id: str, first_sequence: int,
                      stamp: datetime, links: Iterable[Link],
                      contents: Iterable[Sequence[Any]], *, count: int) -> list[Message]:
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
