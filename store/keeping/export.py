"""A chat as JSON Lines: the chat, every message oldest first, its interrupts, then its
resume records.

Every line is one JSON object with a ``kind`` (``chat``, ``message``, ``interrupt`` or
``resume``) and the record's fields in the API's camelCase names; times are ISO 8601 in
UTC. The first line also names the ``format`` (``chatql``) and its ``version``, so an import
can tell what it reads. Lines the caller adds after the chat line (the ``file`` lines of
``store/files/transfer.py``) come before the messages.

An ``interrupt`` line is an approval or a question asked in the chat, with its state
and decision (``interruptKind`` is ``TOOL_APPROVAL`` or ``INPUT``); the id of an
interrupt is the id of the message that asked.

Lines are produced from keyset pages (``sequence > last``), each read by one statement
of its own, so memory stays flat however long the chat is and no connection is held
while a slow client reads. A chat written to during an export may show the writes of
later pages; a finished chat exports exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import orjson
from sqlalchemy import JSON, select

from chatql.store.chats.chat import get_chat
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.rows import RECORD_COLUMNS
from chatql.store.db.tables import (
    UTCDateTime,
    chats,
    columns_of_type,
    interrupts,
    messages,
    resume_records,
)
from chatql.store.errors import NotFound
from chatql.store.ids import check_chat_id
from chatql.store.messages.message import wire_name
from chatql.store.messages.resume import resume_from_row
from chatql.store.records import Chat, Identity, Message, ResumeRecord

__all__ = [
    "EXPORT_CHUNK",
    "EXPORT_FORMAT",
    "EXPORT_MAX_PAGE",
    "EXPORT_MIN_PAGE",
    "EXPORT_PAGE_BYTES",
    "EXPORT_PAGE_SIZE",
    "EXPORT_VERSION",
    "MESSAGE_LINE_COLUMNS",
    "MESSAGE_LINE_FIELDS",
    "chat_line",
    "chat_tenant",
    "export_chat",
    "interrupt_line",
    "message_line",
    "open_export",
    "resume_line",
]

EXPORT_FORMAT = "chatql"
EXPORT_VERSION = 1
#: Rows of the first page; later pages are sized to hold about EXPORT_PAGE_BYTES of
#: lines: large enough to amortise the round trip,
#: small enough that a page of big messages stays a few MiB.
EXPORT_PAGE_SIZE = 1_000
EXPORT_PAGE_BYTES = 2 << 20
EXPORT_MIN_PAGE = 50
EXPORT_MAX_PAGE = 5_000
#: Message lines per yielded chunk.
EXPORT_CHUNK = 500


def _time(value: datetime | None) -> str | None:
    # Always six fractional digits, the same text the page statement builds.
    return None if value is None else value.isoformat(timespec="microseconds")


#: The message columns version 1 of the format began with, in the line's order.
_FIRST_LINE_COLUMNS = ("id", "sequence", "request_id", "role", "type", "props", "block_id",
                       "thread_id", "assistant_id", "status", "metadata", "created_at",
                       "updated_at", "parent_id", "tokens")
#: The message columns a line carries after ``kind``, in the line's order: those the
#: format began with, then every other column of a record
#: (:data:`store.db.rows.RECORD_COLUMNS`) but the chat's id, in the table's order. A
#: column added to the table and the record is exported, at the end of the line.
MESSAGE_LINE_COLUMNS: tuple[str, ...] = (*_FIRST_LINE_COLUMNS, *(
    column for column in RECORD_COLUMNS
    if column not in _FIRST_LINE_COLUMNS and column != "chat_id"))
#: A message line's fields after ``kind``, in order: (JSON name, column). One list
#: serves the reference encoder (:func:`message_line`), the page reader and the
#: importer (``store/keeping/imports.py``), which reads each field back.
MESSAGE_LINE_FIELDS: tuple[tuple[str, str], ...] = tuple(
    (wire_name(column), column) for column in MESSAGE_LINE_COLUMNS)
_MESSAGE_FIELDS = MESSAGE_LINE_FIELDS
# How each column is read as the line's text, from the table's column types.
_TIME_COLUMNS = columns_of_type(messages, kind=UTCDateTime)
_JSON_COLUMNS = columns_of_type(messages, kind=JSON)


def _column(column: str, dialect: str) -> str:
    postgres = dialect == "postgresql"
    if column in _TIME_COLUMNS and postgres:
        return (f"to_char({column} AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')")
    if column in _TIME_COLUMNS:
        # Stored naive in UTC as "YYYY-MM-DD HH:MM:SS.ffffff".
        return f"replace(substr({column} || '.000000', 1, 26), ' ', 'T') || '+00:00'"
    # JSON as its text (the driver would decode jsonb; SQLite stores text).
    return f"{column}::text" if column in _JSON_COLUMNS and postgres else column


def _page_statement(dialect: str) -> prepared.PreparedStatement:
    """A keyset page of messages as the line's values in the line's order: times as
    the line's text, props and metadata as their JSON text. Run on the driver (asyncpg
    keeps it prepared), so rows arrive as the driver gives them."""
    chat, after, size = ("$1", "$2", "$3") if dialect == "postgresql" else ("?", "?", "?")
    columns = ", ".join(_column(column, dialect) for _key, column in _MESSAGE_FIELDS)
    return prepared.PreparedStatement(
        f"SELECT 'message', {columns} FROM messages WHERE chat_id = {chat} "
        f"AND sequence > {after} ORDER BY sequence LIMIT {size}",
        ((True, "chat"), (True, "after"), (True, "size")))


_PAGE_STATEMENTS = {dialect: _page_statement(dialect) for dialect in ("postgresql", "sqlite")}
_LINE_KEYS = ("kind", *(key for key, _column in _MESSAGE_FIELDS))
_SEQUENCE = _LINE_KEYS.index("sequence")
# The line's JSON fields, which a page row holds as their text.
_JSON_KEYS = tuple(key for key, column in _MESSAGE_FIELDS if column in _JSON_COLUMNS)
_encode_line = partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
_loads = orjson.loads


def _message_line_bytes(row: Sequence[Any]) -> bytes:
    """One page row as its encoded line: the same bytes as :func:`message_line`
    encoded, since the JSON columns are decoded as the store decodes them."""
    line = dict(zip(_LINE_KEYS, row, strict=True))
    for key in _JSON_KEYS:
        value = line[key]
        if value is not None:
            line[key] = _loads(value)
    return _encode_line(line)


def chat_line(chat: Chat) -> dict[str, Any]:
    return {
        "kind": "chat",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "id": chat.id,
        "title": chat.title,
        "titleSource": chat.title_source,
        "assistantId": chat.assistant_id,
        "mode": chat.mode,
        "status": chat.status,
        "public": chat.public,
        "share": chat.share,
        "sort": chat.sort,
        "tags": chat.tags,
        "pinned": chat.pinned,
        "metadata": chat.metadata,
        "lastMessageAt": _time(chat.last_message_at),
        "createdAt": _time(chat.created_at),
        "updatedAt": _time(chat.updated_at),
        "expiresAt": _time(chat.expires_at),
        "createdBy": chat.created_by,
        "updatedBy": chat.updated_by,
        "teamId": chat.team_id,
        "tenantId": chat.tenant_id,
        "activeLeafId": chat.active_leaf_id,
    }


def message_line(message: Message) -> dict[str, Any]:
    """The reference for a message line: what the page statements must produce."""
    line: dict[str, Any] = {"kind": "message"}
    for key, column in _MESSAGE_FIELDS:
        value = getattr(message, column)
        line[key] = _time(value) if column in _TIME_COLUMNS else value
    return line


def resume_line(record: ResumeRecord) -> dict[str, Any]:
    return {
        "kind": "resume",
        "id": record.id,
        "sequence": record.sequence,
        "requestId": record.request_id,
        "assistantId": record.assistant_id,
        "stackId": record.stack_id,
        "stackParentId": record.stack_parent_id,
        "stackDepth": record.stack_depth,
        "type": record.type,
        "status": record.status,
        "input": record.input,
        "output": record.output,
        "spaceSnapshot": record.space_snapshot,
        "error": record.error,
        "metadata": record.metadata,
        "createdAt": _time(record.created_at),
        "updatedAt": _time(record.updated_at),
    }


#: An interrupt line's fields after ``kind``: the table's columns but the chat's and
#: tenant's (the importer's own), camelCased; ``kind`` is ``interruptKind``.
_INTERRUPT_COLUMNS = tuple(column.name for column in interrupts.columns
                           if column.name not in ("chat_id", "tenant_id"))
_INTERRUPT_TIMES = columns_of_type(interrupts, kind=UTCDateTime)


def interrupt_line(row: Any) -> dict[str, Any]:
    """An interrupt row as its line."""
    line: dict[str, Any] = {"kind": "interrupt"}
    for column in _INTERRUPT_COLUMNS:
        value = getattr(row, column)
        key = "interruptKind" if column == "kind" else wire_name(column)
        line[key] = _time(value) if column in _INTERRUPT_TIMES else value
    return line


async def chat_tenant(db: Database, chat_id: str) -> str | None:
    """The tenant of the chat ``chat_id`` (ids are unique across tenants), or None.

    For operators, who reach the database directly; no access rule applies here.
    """
    async with db.read() as conn:
        tenant = await conn.scalar(
            select(chats.c.tenant_id).where(chats.c.id == check_chat_id(chat_id)))
    return None if tenant is None else str(tenant)


async def open_export(db: Database, who: Identity, chat_id: str) -> Chat:
    """The chat to export; NOT_FOUND when ``who`` may not read it (checked up front,
    so an HTTP answer can carry the right status before the body starts)."""
    chat = await get_chat(db, who, check_chat_id(chat_id))
    if chat is None:
        raise NotFound(f"chat {chat_id!r} not found")
    return chat


async def export_chat(
    db: Database, chat: Chat, *, page_size: int | None = None,
    head: AsyncIterator[bytes] | None = None, with_interrupts: bool = True,
) -> AsyncIterator[bytes]:
    """The export of a chat returned by :func:`open_export`, as encoded chunks of whole
    lines (newlines included): the chat line, the lines of ``head``, chunks of at most
    :data:`EXPORT_CHUNK` message lines, each interrupt (unless ``with_interrupts`` is
    False: the cold archive leaves them in their table), then each resume record.

    Pages start at ``page_size`` rows (default :data:`EXPORT_PAGE_SIZE`) and then hold
    about :data:`EXPORT_PAGE_BYTES` of lines, judged by the first chunk of the page
    before, within :data:`EXPORT_MIN_PAGE` and :data:`EXPORT_MAX_PAGE` rows: short messages
    cost few round trips, long ones keep a page's memory bounded. The next page is
    read while this one is encoded, so the database and Python work side by side; at
    most two pages are in memory.
    """
    yield _encode(chat_line(chat))
    if head is not None:
        async for chunk in head:
            yield chunk
    statement = _PAGE_STATEMENTS[db.dialect]

    async def read_page(after: int, size: int) -> Sequence[Any]:
        return await prepared.fetch(db, statement, {"chat": chat.id, "after": after,
                                                    "size": size})

    size = page_size or EXPORT_PAGE_SIZE
    reading: asyncio.Future[Sequence[Any]] | None = asyncio.ensure_future(read_page(0, size))
    try:
        while reading is not None:
            rows = await reading
            reading = None
            for start in range(0, len(rows), EXPORT_CHUNK):
                part = rows[start:start + EXPORT_CHUNK]
                chunk = b"".join(map(_message_line_bytes, part))
                if start == 0 and len(rows) == size:
                    # The next page, sized by these lines, is read while the rest of
                    # this one is encoded and sent.
                    size = _next_page_size(len(part), len(chunk))
                    reading = asyncio.ensure_future(read_page(rows[-1][_SEQUENCE], size))
                yield chunk
                await asyncio.sleep(0)
    finally:
        if reading is not None:
            reading.cancel()
    async with db.read() as conn:
        asked = (await conn.execute(
            select(interrupts).where(interrupts.c.chat_id == chat.id)
            .order_by(interrupts.c.sequence, interrupts.c.id))).all() if with_interrupts else []
        records = (
            await conn.execute(
                select(resume_records)
                .where(resume_records.c.chat_id == chat.id)
                # In the order they were written: each stream's steps count from 1.
                .order_by(resume_records.c.created_at, resume_records.c.sequence,
                          resume_records.c.id)
            )
        ).all()
    # Interrupts and resume records are a few per stream: read in one go.
    for row in asked:
        yield _encode(interrupt_line(row))
    for record in records:
        yield _encode(resume_line(resume_from_row(record)))


def _next_page_size(count: int, size_bytes: int) -> int:
    per_row = max(1, size_bytes // count)
    return max(EXPORT_MIN_PAGE, min(EXPORT_MAX_PAGE, EXPORT_PAGE_BYTES // per_row))


def _encode(line: dict[str, Any]) -> bytes:
    return orjson.dumps(line) + b"\n"
