"""The one-write persist of an ended stream.

:func:`write` stores, in ONE transaction:

- the user input and every stored message with its final props, each with the end
  status, sequences in first-arrival order (:func:`store.messages.insert_messages`
  under :func:`store.messages.lock_chat_for_append`; COPY on Postgres for large
  streams), and the chat's lastMessageAt;
- unless the stream completed, every buffered step as a resume record (the newest
  step still ``running`` takes the end status; older running steps, such as a
  delegation waiting on its nested call, stay ``running``);
- the model usage its producer reported with endStream, if any (once per stream);
- an append receipt whose append id is the stream id, so a retried persist — after
  a lost answer, a restart or a database outage — finds it and writes nothing twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from store import access, jsonutil
from store.chats import now
from store.database import Database
from store.errors import Conflict
from store.ids import new_id
from store.jsonutil import canonical_digest
from store.messages import NewMessage, insert_messages, lock_chat_for_append, message_from_row
from store.records import Identity, Message
from store.resume import StepIn, insert_resume, resume_from_row
from store.streams.buffer import StreamBuffer, StreamInfo, StreamResult
from store.tables import append_receipts, chats, messages, resume_records
from store.usage import record_usage

__all__ = ["DB_ERRORS", "stored_result", "write"]

# Below this many messages a multi-row INSERT is as quick as COPY.
_COPY_THRESHOLD = 200
#: Failures of the database itself: the buffer is kept and the write retried.
DB_ERRORS = (DBAPIError, OperationalError, InterfaceError, OSError, ConnectionError,
             asyncio.TimeoutError)

_MESSAGE_COLUMNS = ("id", "chat_id", "sequence", "request_id", "role", "type", "props",
                    "block_id", "thread_id", "assistant_id", "status", "metadata",
                    "created_at", "updated_at", "tokens")


async def _copy_messages(conn: AsyncConnection, stream: StreamBuffer,
                         last_sequence: int) -> list[Message]:
    """Postgres: write a large stream with COPY inside the caller's transaction.

    The same rows :func:`store.messages.insert_messages` would write, at COPY speed
    (the asyncpg connection under SQLAlchemy's transaction; JSON columns as text),
    built straight from the buffer. Only the user input's id can have been chosen by
    a caller; the service's own ids are unique by construction.
    """
    chat_id = stream.info.chat_id
    status = stream.end_status or "INTERRUPTED"
    request_id = stream.info.request_id
    stamp = now()
    written: list[Message] = []
    sequence = last_sequence
    if stream.user_input is not None:
        m = stream.user_input
        taken = await conn.scalar(select(messages.c.id).where(messages.c.id == m.id))
        if taken is not None:
            raise Conflict(f"message id {m.id!r} is already taken")
        sequence += 1
        written.append(Message(
            id=m.id or new_id(), chat_id=chat_id, sequence=sequence, request_id=m.request_id,
            role=m.role, type=m.type, props=m.props, block_id=m.block_id,
            thread_id=m.thread_id, assistant_id=m.assistant_id or stream.assistant_id,
            status=status, metadata=m.metadata, created_at=stamp, updated_at=stamp,
            tokens=m.tokens,
        ))
    first = sequence + 1
    for number, state in enumerate(stream.state.messages.values(), start=first):
        written.append(Message(
            id=state.id, chat_id=chat_id, sequence=number, request_id=request_id,
            role=state.role, type=state.type, props=state.props, block_id=state.block_id,
            thread_id=state.thread_id, assistant_id=stream.assistant_id, status=status,
            metadata=None, created_at=stamp, updated_at=stamp, tokens=state.tokens,
        ))
    dumps = jsonutil.dumps
    records = [
        (m.id, chat_id, m.sequence, m.request_id, m.role, m.type, dumps(m.props),
         m.block_id, m.thread_id, m.assistant_id, status,
         None if m.metadata is None else dumps(m.metadata), stamp, stamp, m.tokens)
        for m in written
    ]
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    await driver.copy_records_to_table("messages", records=records, columns=_MESSAGE_COLUMNS)
    await conn.execute(
        update(chats).where(chats.c.id == chat_id).values(
            last_sequence=last_sequence + len(written), last_message_at=stamp,
            activity_at=stamp)
    )
    return written


def _stored_messages(stream: StreamBuffer) -> list[NewMessage]:
    status = stream.end_status or "INTERRUPTED"
    batch: list[NewMessage] = []
    if stream.user_input is not None:
        batch.append(replace(stream.user_input, status=status))
    for message in stream.state.messages.values():
        batch.append(NewMessage(
            id=message.id, role=message.role, type=message.type, props=message.props,
            request_id=stream.info.request_id, block_id=message.block_id,
            thread_id=message.thread_id, assistant_id=stream.assistant_id, status=status,
            tokens=message.tokens,
        ))
    return batch

def _resume_steps(stream: StreamBuffer) -> list[StepIn]:
    if stream.end_status == "COMPLETED":
        return []
    steps = list(stream.steps.values())
    running = [i for i, step in enumerate(steps) if step.status == "running"]
    if running:
        newest = running[-1]
        steps[newest] = replace(
            steps[newest],
            status=(stream.end_status or "INTERRUPTED").lower(),
            error=steps[newest].error or stream.end_error,
        )
    return steps


async def write(db: Database, stream: StreamBuffer) -> StreamResult:
    """Write the ended ``stream`` once (a second call returns what the first wrote)."""
    chat_id = stream.info.chat_id
    count = len(stream.state.messages) + (stream.user_input is not None)
    use_copy = db.is_postgres and count >= _COPY_THRESHOLD
    batch = [] if use_copy else _stored_messages(stream)
    steps = _resume_steps(stream)
    # The receipt marks the stream as written; its ids and status identify the
    # content (hashing every message's JSON would cost more than the write).
    ids = ([stream.user_input.id] if stream.user_input is not None else [])
    digest = canonical_digest({
        "stream": stream.info.id,
        "status": stream.end_status,
        "messages": [*ids, *stream.state.messages],
        "steps": len(steps),
    })
    async with db.write() as conn:
        last_sequence = await lock_chat_for_append(conn, stream.owner, chat_id)
        earlier = (
            await conn.execute(
                select(append_receipts.c.message_ids).where(
                    append_receipts.c.chat_id == chat_id,
                    append_receipts.c.append_id == stream.info.id,
                )
            )
        ).first()
        if earlier is not None:
            return await _read_result(conn, stream.info, list(earlier.message_ids))
        if use_copy:
            written = await _copy_messages(conn, stream, last_sequence)
        elif not batch:
            written = []
        else:
            written = await insert_messages(conn, chat_id, batch,
                                            last_sequence=last_sequence,
                                            default_assistant_id=stream.assistant_id)
        resume = await insert_resume(conn, chat_id, steps,
                                     request_id=stream.info.request_id,
                                     assistant_id=stream.assistant_id)
        if stream.usage is not None:
            await record_usage(conn, chat_id=chat_id, stream_id=stream.info.id,
                               request_id=stream.info.request_id,
                               assistant_id=stream.assistant_id, usage=stream.usage)
        await conn.execute(insert(append_receipts).values(
            chat_id=chat_id,
            append_id=stream.info.id,
            digest=digest,
            message_ids=[m.id for m in written],
            first_sequence=written[0].sequence if written else last_sequence,
            last_sequence=written[-1].sequence if written else last_sequence,
            created_at=now(),
        ))
    return StreamResult(stream=stream.info, messages=written, resume=resume)

async def _read_result(conn: Any, info: StreamInfo,
                       message_ids: list[str]) -> StreamResult:
    rows = (
        await conn.execute(
            select(messages).where(messages.c.id.in_(message_ids))
            .order_by(messages.c.sequence)
        )
    ).all() if message_ids else []
    stored = [message_from_row(row) for row in rows]
    status = stored[0].status if stored else info.status
    resume_rows = (
        await conn.execute(
            select(resume_records).where(
                resume_records.c.chat_id == info.chat_id,
                resume_records.c.request_id == info.request_id,
            ).order_by(resume_records.c.created_at, resume_records.c.sequence)
        )
    ).all() if status != "COMPLETED" and info.request_id is not None else []
    return StreamResult(
        stream=replace(info, status=status),
        messages=stored,
        resume=[resume_from_row(row) for row in resume_rows],
    )

async def stored_result(db: Database, who: Identity, stream_id: str) -> StreamResult | None:
    """The result of a stream persisted before this process knew it (a restart)."""
    async with db.read() as conn:
        row = (
            await conn.execute(
                select(append_receipts.c.chat_id, append_receipts.c.message_ids,
                       append_receipts.c.created_at)
                .join(chats, chats.c.id == append_receipts.c.chat_id)
                .where(append_receipts.c.append_id == stream_id,
                       chats.c.deleted_at.is_(None), access.can_read(who))
            )
        ).first()
        if row is None:
            return None
        message_ids = list(row.message_ids)
        request_id = None
        if message_ids:
            request_id = await conn.scalar(
                select(messages.c.request_id).where(messages.c.id == message_ids[0]))
        info = StreamInfo(id=stream_id, chat_id=row.chat_id, request_id=request_id,
                          status="COMPLETED", started_at=row.created_at)
        return await _read_result(conn, info, message_ids)
