"""The one-write persist of an ended stream.

:func:`write` stores, in ONE transaction:

- the user input and every stored message with its final props, each with the end
  status, sequences in first-arrival order (:func:`store.messages.insert_chain`
  under :func:`store.messages.lock_chat_for_write`; the rows built and written by
  :mod:`store.rows`, COPY on Postgres for large streams), and the chat's lastMessageAt
  (and its automatic title, when the input is the first question of an untitled chat:
  :func:`store.chats.titles.entitle`);
- unless the stream completed, every buffered step as a resume record (the newest
  step still ``running`` takes the end status; older running steps, such as a
  delegation waiting on its nested call, stay ``running``);
- the stored messages' file links (:func:`store.files.links.link_files`), which replace
  the links the stream's pushes wrote for the files they named while it was live;
- the model usage its producer reported with endStream, if any (once per stream);
- an append receipt whose append id is the stream id (:func:`store.receipts.receipted_write`),
  so a retried persist — after a lost answer, a restart or a database outage — finds
  it and writes nothing twice. It names the stream's messages by their sequence range,
  not by a list of ids; a retry reads the range back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from itertools import chain
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from chatql.store import access
from chatql.store.chats import titles
from chatql.store.chats.usage import record_usage
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.rows import Content, content_maker, field_names
from chatql.store.db.tables import append_receipts, chats, messages, resume_records
from chatql.store.db.tables import interrupts as interrupts_table
from chatql.store.files import links as file_links
from chatql.store.ids import new_id
from chatql.store.jsonutil import canonical_digest
from chatql.store.messages import interrupts
from chatql.store.messages.message import (
    NewMessage,
    insert_chain,
    lock_chat_for_write,
    message_from_row,
)
from chatql.store.messages.receipts import receipted_write
from chatql.store.messages.resume import StepIn, insert_resume, resume_from_row
from chatql.store.records import Identity, Message, ResumeRecord
from chatql.store.streams.buffer import StreamBuffer, StreamInfo, StreamResult
from chatql.store.streams.claims import end_claim
from chatql.store.streams.reducer import MessageState

__all__ = ["DB_ERRORS", "stored_result", "write"]

#: Failures of the database itself: the buffer is kept and the write retried.
DB_ERRORS = (DBAPIError, OperationalError, InterfaceError, OSError, ConnectionError,
             asyncio.TimeoutError)

# The user input's content, read by name, with the end status and (when it names none)
# the stream's assistant.
_input_content = content_maker(field_names(NewMessage), given=("status",),
                               defaults=("assistant_id",))
# A streamed message's content: what its merged state has; its request, assistant and
# status are the stream's.
_streamed_content = content_maker(field_names(MessageState),
                                  given=("request_id", "assistant_id", "status"))


def _chain(stream: StreamBuffer) -> tuple[list[str], Iterator[Content]]:
    """Ids and :data:`store.rows.Content` of the messages to store: the user input,
    then every message in first-arrival order, all with the end status. The content
    comes as a generator, so a long stream's is never all held at once.

    Read by name: the input's every content column, and of each streamed message the
    columns a :class:`~store.streams.reducer.MessageState` has (the rest are the
    stream's: its request, its assistant, the end status; any other is NULL)."""
    status = stream.end_status or "INTERRUPTED"
    if status == "AWAITING_INPUT":
        # Its messages are complete as written; the stream waits for decisions.
        status = "COMPLETED"
    request_id = stream.info.request_id
    assistant_id = stream.assistant_id
    m = stream.user_input
    ids = [message.id for message in stream.state.messages.values()]
    if m is not None:
        ids.insert(0, m.id or new_id())

    first = () if m is None else _input_content((m,), assistant_id=assistant_id,
                                                status=status)
    return ids, chain(first, _streamed_content(stream.state.messages.values(),
                                               request_id=request_id,
                                               assistant_id=assistant_id, status=status))


def _resume_steps(stream: StreamBuffer) -> list[StepIn]:
    if stream.end_status == "COMPLETED":
        return []
    steps = list(stream.steps.values())
    if stream.end_status == "AWAITING_INPUT":
        return steps  # paused, not ended: a running step is still running
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
    # Only the user input's id can have been chosen by a caller; the service's own
    # ids are unique by construction.
    chosen = ([stream.user_input.id] if stream.user_input is not None
              and stream.user_input.id is not None else [])
    steps = _resume_steps(stream)
    # The receipt marks the stream as written. A stream id names one stream, whose
    # messages are only ever added, so its status, input, message count and last
    # message identify the content (hashing every id, let alone every message's JSON,
    # would cost more than the receipt; nothing compares a stream's digest).
    digest = canonical_digest({
        "stream": stream.info.id,
        "status": stream.end_status,
        "input": stream.user_input.id if stream.user_input is not None else None,
        "messages": len(stream.state.messages),
        "last": next(reversed(stream.state.messages), None),
        "steps": len(steps),
    })
    resume: list[ResumeRecord] = []
    async with db.write() as conn:
        last_sequence, leaf = await lock_chat_for_write(conn, stream.owner, chat_id)

        async def write_all() -> list[Message]:
            ids, contents = _chain(stream)
            written = [] if not ids else await insert_chain(
                conn, chat_id, ids, contents, last_sequence=last_sequence, chosen=chosen,
                parent_id=leaf if stream.parent_id is None else stream.parent_id,
                explicit_parent=True)
            if stream.user_input is not None:
                # The input may be the chat's first question: it names an untitled chat.
                await titles.entitle(conn, chat_id, written)
            # Accepted long before: a file the producer may not read stays unlinked
            # rather than failing the whole stream's write. The stored messages' links
            # then replace the stream's own (read while it was live), so a file its
            # final messages no longer name is referenced no more.
            await file_links.link_files(conn, stream.owner, chat_id, written, at=now(),
                                        strict=False)
            await file_links.drop_stream_links(conn, stream.info.id)
            resume.extend(await insert_resume(conn, chat_id, steps,
                                              request_id=stream.info.request_id,
                                              assistant_id=stream.assistant_id))
            await interrupts.settle_inline(conn, stream.info.id, written)
            if stream.end_status == "AWAITING_INPUT":
                await interrupts.record_requested(
                    conn, chat_id=chat_id, tenant_id=stream.owner.tenant_id,
                    stream_id=stream.info.id, request_id=stream.info.request_id,
                    assistant_id=stream.assistant_id,
                    written=[message for message in written if message.role != "USER"])
            if stream.usage is not None:
                await record_usage(conn, chat_id=chat_id, stream_id=stream.info.id,
                                   request_id=stream.info.request_id,
                                   assistant_id=stream.assistant_id, usage=stream.usage)
            await end_claim(conn, stream.info.id)
            return written

        receipt, written = await receipted_write(
            conn, chat_id=chat_id, append_id=stream.info.id, digest=digest,
            last_sequence=last_sequence, write=write_all, conflict=None, listed=False)
        if written is None:
            return await _read_result(conn, stream.info, await _stored_messages(
                conn, chat_id, receipt.message_ids, receipt.first_sequence,
                receipt.last_sequence))
    return StreamResult(stream=stream.info, messages=list(written), resume=resume)


async def _stored_messages(conn: Any, chat_id: str, message_ids: list[str] | None,
                           first_sequence: int, last_sequence: int) -> list[Message]:
    """The messages a stream's receipt names that are still stored, in order.

    One write filled the receipt's sequence range with exactly the stream's messages,
    so the range is read whether the receipt lists their ids or not (no list of ten
    thousand ids to bind); only an empty list, whose range would name the message
    before the stream, names none.
    """
    if message_ids is not None and not message_ids:
        return []
    rows = (await conn.execute(
        select(messages).where(messages.c.chat_id == chat_id,
                               messages.c.sequence.between(first_sequence, last_sequence))
        .order_by(messages.c.sequence)
    )).all()
    return [message_from_row(row) for row in rows]


async def _read_result(conn: Any, info: StreamInfo, stored: list[Message]) -> StreamResult:
    status = stored[0].status if stored else info.status
    if status == "COMPLETED" and await conn.scalar(
            select(interrupts_table.c.id).where(
                interrupts_table.c.stream_id == info.id,
                interrupts_table.c.resumed_by.is_distinct_from(interrupts.INLINE_MARK))
            .limit(1)):
        status = "AWAITING_INPUT"
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
                       append_receipts.c.first_sequence, append_receipts.c.last_sequence,
                       append_receipts.c.created_at)
                .join(chats, chats.c.id == append_receipts.c.chat_id)
                .where(append_receipts.c.append_id == stream_id,
                       chats.c.deleted_at.is_(None), access.can_read(who))
            )
        ).first()
        if row is None:
            return None
        stored = await _stored_messages(conn, row.chat_id, row.message_ids,
                                        row.first_sequence, row.last_sequence)
        info = StreamInfo(id=stream_id, chat_id=row.chat_id,
                          request_id=stored[0].request_id if stored else None,
                          status="COMPLETED", started_at=row.created_at)
        return await _read_result(conn, info, stored)
