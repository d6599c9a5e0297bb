"""A chat as JSON Lines: the chat, every message oldest first, then its resume records.

Every line is one JSON object with a ``kind`` (``chat``, ``message`` or ``resume``)
and the record's fields in the API's camelCase names; times are ISO 8601 in UTC. The
first line also names the ``format`` (``chatql``) and its ``version``, so an import
can tell what it reads.

Lines are produced from keyset pages (``sequence > last``), each read in its own short
transaction, so memory stays flat however long the chat is and no connection is held
while a slow client reads. A chat written to during an export may show the writes of
later pages; a finished chat exports exactly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import select, text

from store.chats import get_chat
from store.database import Database
from store.errors import NotFound
from store.ids import check_chat_id
from store.messages import message_from_row
from store.records import Chat, Identity, Message, ResumeRecord
from store.resume import resume_from_row
from store.tables import messages, resume_records

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_PAGE_SIZE",
    "EXPORT_VERSION",
    "chat_line",
    "export_chat",
    "message_line",
    "open_export",
    "resume_line",
]

EXPORT_FORMAT = "chatql"
EXPORT_VERSION = 1
#: Rows read per transaction: large enough to amortise the round trip, small enough
#: that a page of big messages stays a few MiB.
EXPORT_PAGE_SIZE = 1_000


def _time(value: datetime | None) -> str | None:
    # Always six fractional digits, the same text Postgres builds below.
    return None if value is None else value.isoformat(timespec="microseconds")


def _pg_time(column: str) -> str:
    return (f"to_char({column} AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')")


#: On Postgres the database builds each page of message lines as one text value, so
#: Python only forwards bytes: no row objects, no JSON decoding and re-encoding.
_PG_MESSAGE_PAGE = text(
    "SELECT count(*) AS n, max(sequence) AS last, "
    "string_agg(line, E'\\n' ORDER BY sequence) AS body FROM ("
    "SELECT sequence, json_build_object("
    "'kind', 'message', 'id', id, 'sequence', sequence, 'requestId', request_id, "
    "'role', role, 'type', type, 'props', props, 'blockId', block_id, "
    "'threadId', thread_id, 'assistantId', assistant_id, 'status', status, "
    f"'metadata', metadata, 'createdAt', {_pg_time('created_at')}, "
    f"'updatedAt', {_pg_time('updated_at')})::text AS line "
    "FROM messages WHERE chat_id = :chat AND sequence > :after "
    "ORDER BY sequence LIMIT :size) AS page"
)


def chat_line(chat: Chat) -> dict[str, Any]:
    return {
        "kind": "chat",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "id": chat.id,
        "title": chat.title,
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
    }


def message_line(message: Message) -> dict[str, Any]:
    return {
        "kind": "message",
        "id": message.id,
        "sequence": message.sequence,
        "requestId": message.request_id,
        "role": message.role,
        "type": message.type,
        "props": message.props,
        "blockId": message.block_id,
        "threadId": message.thread_id,
        "assistantId": message.assistant_id,
        "status": message.status,
        "metadata": message.metadata,
        "createdAt": _time(message.created_at),
        "updatedAt": _time(message.updated_at),
    }


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


async def open_export(db: Database, who: Identity, chat_id: str) -> Chat:
    """The chat to export; NOT_FOUND when ``who`` may not read it (checked up front,
    so an HTTP answer can carry the right status before the body starts)."""
    chat = await get_chat(db, who, check_chat_id(chat_id))
    if chat is None:
        raise NotFound(f"chat {chat_id!r} not found")
    return chat


async def export_chat(
    db: Database, chat: Chat, *, page_size: int = EXPORT_PAGE_SIZE
) -> AsyncIterator[bytes]:
    """The export of a chat returned by :func:`open_export`, as encoded chunks of whole
    lines (newlines included): the chat line, a chunk per page of messages, then each
    resume record."""
    yield _encode(chat_line(chat))
    after = 0
    while True:
        async with db.read() as conn:
            if db.is_postgres:
                page = (await conn.execute(
                    _PG_MESSAGE_PAGE, {"chat": chat.id, "after": after, "size": page_size}
                )).one()
                count, last = int(page.n), page.last
                chunk = b"" if not count else page.body.encode() + b"\n"
            else:
                rows = (
                    await conn.execute(
                        select(messages)
                        .where(messages.c.chat_id == chat.id, messages.c.sequence > after)
                        .order_by(messages.c.sequence)
                        .limit(page_size)
                    )
                ).all()
                count = len(rows)
                last = rows[-1].sequence if rows else after
                chunk = b"".join(_encode(message_line(message_from_row(row))) for row in rows)
        if chunk:
            yield chunk
        if count < page_size:
            break
        after = last
    async with db.read() as conn:
        records = (
            await conn.execute(
                select(resume_records)
                .where(resume_records.c.chat_id == chat.id)
                # In the order they were written: each stream's steps count from 1.
                .order_by(resume_records.c.created_at, resume_records.c.sequence,
                          resume_records.c.id)
            )
        ).all()
    # Resume records are a few per interrupted stream: read in one go.
    for record in records:
        yield _encode(resume_line(resume_from_row(record)))


def _encode(line: dict[str, Any]) -> bytes:
    return orjson.dumps(line) + b"\n"
