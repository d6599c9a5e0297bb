"""Live streams: the in-process buffer of each active stream and its one-write persist.

A :class:`StreamService` holds every active stream of this process. During a stream
nothing is written to the database: chunks go through the reducer
(:mod:`store.reducer`) into the buffer and out to subscribers through the broker.
When the stream ends (``end_stream``, ``stop_stream``, the idle timeout, or shutdown)
the stream_end event is published and the buffer is written in ONE transaction:

- the user input and every stored message with its final props, each with the end
  status, sequences in first-arrival order (:func:`store.messages.insert_messages`
  under :func:`store.messages.lock_chat_for_append`), and the chat's lastMessageAt;
- unless the stream completed, every buffered step as a resume record (the newest
  step still ``running`` takes the end status; older running steps, such as a
  delegation waiting on its nested call, stay ``running``);
- an append receipt whose append id is the stream id, so a retried persist — after
  a lost answer, a restart or a database outage — finds it and writes nothing twice.

If the database fails the buffer is kept, the caller gets PERSIST_FAILED and a
background task retries with exponential backoff until the write succeeds (or the
service closes, which makes a last attempt). A chat stays busy (STREAM_ACTIVE) until
its stream's write succeeded, so its messages can never be interleaved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import insert, select, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from store import access, jsonutil
from store.broker import Broker
from store.chats import now
from store.database import Database
from store.errors import (
    ChatqlError,
    Conflict,
    Forbidden,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    PersistFailed,
    StreamActive,
    StreamClosed,
    StreamNotFound,
)
from store.ids import check_chat_id, new_id
from store.jsonutil import canonical_digest
from store.messages import NewMessage, insert_messages, lock_chat_for_append, message_from_row
from store.records import Identity, Message, ResumeRecord
from store.reducer import ChunkEvent, ChunkIn, StreamState, apply_chunks
from store.resume import StepIn, insert_resume, resume_from_row
from store.tables import append_receipts, chats, messages, resume_records

__all__ = [
    "END_STATUSES",
    "MAX_PUSH_CHUNKS",
    "PushResult",
    "StreamInfo",
    "StreamResult",
    "StreamService",
]

logger = logging.getLogger("chatql.streams")

END_STATUSES = ("COMPLETED", "INTERRUPTED", "FAILED")
MAX_PUSH_CHUNKS = 1_000
_MAX_NAME = 200
# Rough per-chunk overhead of the buffered copy besides its props (ids, seq, dict).
_CHUNK_OVERHEAD = 160
# Results of finished streams kept for endStream retries without a database read
# (older ones are read back from the database), and ids of ended streams kept so a
# late push is STREAM_CLOSED rather than STREAM_NOT_FOUND.
_FINISHED_KEPT = 256
_CLOSED_IDS_KEPT = 100_000
# Below this many messages a multi-row INSERT is as quick as COPY.
_COPY_THRESHOLD = 200
_DB_ERRORS = (DBAPIError, OperationalError, InterfaceError, OSError, ConnectionError,
              asyncio.TimeoutError)


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A stream as the API shows it (``Stream``)."""

    id: str
    chat_id: str
    request_id: str | None
    status: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class StreamResult:
    """What the persist wrote (``StreamResult``)."""

    stream: StreamInfo
    messages: list[Message]
    resume: list[ResumeRecord]


@dataclass(frozen=True, slots=True)
class PushResult:
    accepted: int
    duplicates: int
    last_seq: int


@dataclass
class _Stream:
    """One active (or ended, not yet persisted) stream's buffer."""

    info: StreamInfo
    owner: Identity
    assistant_id: str | None
    state: StreamState
    user_input: NewMessage | None
    started: float
    last_push: float
    steps: dict[str, StepIn] = field(default_factory=dict)
    buffered_bytes: int = 0
    allowed: set[Identity] = field(default_factory=set)
    end_status: str | None = None
    end_error: str | None = None
    result: StreamResult | None = None
    persist_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    publish_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    retry_task: asyncio.Task[None] | None = None


_MESSAGE_COLUMNS = ("id", "chat_id", "sequence", "request_id", "role", "type", "props",
                    "block_id", "thread_id", "assistant_id", "status", "metadata",
                    "created_at", "updated_at")


async def _copy_messages(conn: AsyncConnection, stream: _Stream,
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
        ))
    first = sequence + 1
    for number, state in enumerate(stream.state.messages.values(), start=first):
        written.append(Message(
            id=state.id, chat_id=chat_id, sequence=number, request_id=request_id,
            role=state.role, type=state.type, props=state.props, block_id=state.block_id,
            thread_id=state.thread_id, assistant_id=stream.assistant_id, status=status,
            metadata=None, created_at=stamp, updated_at=stamp,
        ))
    dumps = jsonutil.dumps
    records = [
        (m.id, chat_id, m.sequence, m.request_id, m.role, m.type, dumps(m.props),
         m.block_id, m.thread_id, m.assistant_id, status,
         None if m.metadata is None else dumps(m.metadata), stamp, stamp)
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


def _byte_size(chunks: Sequence[ChunkIn]) -> int:
    size = 0
    for chunk in chunks:
        size += _CHUNK_OVERHEAD + len(chunk.type)
        if chunk.props:
            try:
                size += len(orjson.dumps(chunk.props))
            except TypeError:  # integers beyond 64 bits; only the size matters here
                size += len(repr(chunk.props))
    return size


class StreamService:
    """Every active stream of this process, and their persistence."""

    def __init__(
        self,
        db: Database,
        broker: Broker,
        *,
        idle_timeout: float = 300.0,
        max_bytes: int = 16 * 1024 * 1024,
        retry_initial: float = 0.5,
        retry_max: float = 30.0,
    ) -> None:
        self.db = db
        self.broker = broker
        self.idle_timeout = idle_timeout
        self.max_bytes = max_bytes
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self._streams: dict[str, _Stream] = {}
        self._by_chat: dict[str, str] = {}
        self._finished: dict[str, StreamResult] = {}
        # Ended stream id -> its chat id, so a late push is checked against the chat's
        # access rule before it learns the stream existed (STREAM_CLOSED).
        self._closed: dict[str, str] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._closing = False

    # ---- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Start the idle-timeout watcher."""
        if self._watcher is None and self.idle_timeout > 0:
            self._watcher = asyncio.create_task(self._watch_idle(), name="chatql-idle-streams")

    async def close(self) -> None:
        """Shutdown: end every active stream INTERRUPTED and persist everything held."""
        self._closing = True
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        for stream in list(self._streams.values()):
            if stream.retry_task is not None:
                stream.retry_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stream.retry_task
            try:
                await self._finish(stream, "the service shut down")
            except ChatqlError as error:
                logger.error("stream %s could not be persisted at shutdown: %s",
                             stream.info.id, error)

    @property
    def active_count(self) -> int:
        return sum(1 for s in self._streams.values() if s.end_status is None)

    def buffered(self, stream_id: str) -> _Stream | None:
        """The buffer of a stream not yet persisted (for tests and metrics)."""
        return self._streams.get(stream_id)

    # ---- producer operations -------------------------------------------------------

    async def start_stream(
        self,
        who: Identity,
        chat_id: str,
        *,
        request_id: str | None = None,
        assistant_id: str | None = None,
        stream_id: str | None = None,
        user_input: NewMessage | None = None,
    ) -> StreamInfo:
        check_chat_id(chat_id)
        if stream_id is not None and not 1 <= len(stream_id) <= 128:
            raise InvalidArgument("streamId must be 1-128 characters")
        for name, value in (("requestId", request_id), ("assistantId", assistant_id)):
            if value is not None and len(value) > _MAX_NAME:
                raise InvalidArgument(f"{name} must be at most {_MAX_NAME} characters")
        if user_input is not None:
            user_input = replace(
                user_input,
                id=user_input.id or new_id(),
                request_id=user_input.request_id or request_id,
            )
            user_input.check()
        await self._check_producer(who, chat_id)
        if chat_id in self._by_chat:
            raise StreamActive(f"chat {chat_id!r} already has an active stream")
        stream_id = stream_id or new_id()
        if stream_id in self._streams or stream_id in self._closed:
            raise Conflict(f"stream id {stream_id!r} was already used")
        async with self.db.read() as conn:
            used = await conn.scalar(
                select(append_receipts.c.append_id).where(
                    append_receipts.c.chat_id == chat_id, append_receipts.c.append_id == stream_id
                )
            )
            taken = user_input is not None and await conn.scalar(
                select(messages.c.id).where(messages.c.id == user_input.id))
        if used is not None:
            raise Conflict(f"stream id {stream_id!r} was already used")
        if taken:
            # Found now rather than at the end, when the whole stream would be lost.
            raise Conflict(f"message id {user_input.id!r} is already taken")  # type: ignore[union-attr]
        # Checked again: the reads above awaited, another start may have won.
        if chat_id in self._by_chat:
            raise StreamActive(f"chat {chat_id!r} already has an active stream")
        clock = time.monotonic()
        info = StreamInfo(id=stream_id, chat_id=chat_id, request_id=request_id,
                          status="ACTIVE", started_at=now())
        stream = _Stream(
            info=info, owner=who, assistant_id=assistant_id, state=StreamState(stream_id),
            user_input=user_input, started=clock, last_push=clock, allowed={who},
        )
        self._streams[stream_id] = stream
        self._by_chat[chat_id] = stream_id
        props: dict[str, Any] = {"event": "stream_start", "requestId": request_id}
        if user_input is not None:
            # The user's message is not a chunk (it takes no seq), but viewers other
            # than its sender should be able to show it while the stream runs.
            props["input"] = {"id": user_input.id, **user_input.wire()}
        start = self._event(stream, props)
        await self._publish(stream, [start])
        return info

    async def push_chunks(self, who: Identity, stream_id: str,
                          chunks: Sequence[ChunkIn]) -> PushResult:
        stream = await self._producer_stream(who, stream_id)
        if len(chunks) > MAX_PUSH_CHUNKS:
            raise PayloadTooLarge(f"pushChunks takes at most {MAX_PUSH_CHUNKS} chunks")
        size = _byte_size(chunks)
        if stream.buffered_bytes + size > self.max_bytes:
            raise PayloadTooLarge(
                f"the stream's buffer would exceed {self.max_bytes} bytes; end the stream"
            )
        if stream.end_status is not None:  # ended while we awaited the access check
            raise StreamClosed(f"stream {stream_id!r} has ended")
        # Numbering and publishing under one lock: a broker whose publish really
        # awaits (a network backend) must still receive chunks in seq order.
        async with stream.publish_lock:
            if stream.end_status is not None:
                raise StreamClosed(f"stream {stream_id!r} has ended")
            outcome = apply_chunks(stream.state, chunks)
            stream.buffered_bytes += size
            stream.last_push = time.monotonic()
            if outcome.events:
                await self._publish(stream, outcome.events)
        return PushResult(accepted=outcome.accepted, duplicates=outcome.duplicates,
                          last_seq=stream.state.seq)

    async def record_step(self, who: Identity, stream_id: str, step: StepIn) -> bool:
        stream = await self._producer_stream(who, stream_id)
        step.check()
        earlier = stream.steps.get(step.id)
        if earlier is not None:
            # Fields the update leaves out keep their recorded values.
            defaults = StepIn(id=step.id, type=step.type)
            changes = {
                name: getattr(step, name)
                for name in StepIn.__dataclass_fields__
                if getattr(step, name) != getattr(defaults, name)
            }
            step = replace(earlier, **changes)
            # Re-inserting would move it to the end: keep first-recorded order.
            stream.steps[step.id] = step
        else:
            stream.steps[step.id] = step
        stream.last_push = time.monotonic()
        return True

    async def end_stream(self, who: Identity, stream_id: str, status: str,
                         error: str | None = None) -> StreamResult:
        if status not in END_STATUSES:
            raise InvalidArgument(f"status must be one of {', '.join(END_STATUSES)}")
        finished = self._finished.get(stream_id)
        if finished is not None:
            await self._check_stream_chat(who, stream_id, finished.stream.chat_id)
            return finished
        stream = self._streams.get(stream_id)
        if stream is None:
            stored = await self._stored_result(who, stream_id)
            if stored is None:
                raise StreamNotFound(f"stream {stream_id!r} not found")
            # Readers find the stored stream, but ending it is for producers.
            await self._check_stream_chat(who, stream_id, stored.stream.chat_id)
            return stored
        await self._check_stream_access(who, stream)
        if stream.end_status is not None:
            # Ended already (stopped, idle, or a retried endStream): finish that end.
            return await self._persist(stream)
        return await self._end(stream, status, error)

    async def stop_stream(self, who: Identity, chat_id: str) -> bool:
        """The person pressed stop: end the chat's active stream INTERRUPTED.

        False when the chat has no active stream. Whoever may read the chat may stop it.
        """
        check_chat_id(chat_id)
        async with self.db.read() as conn:
            visible = await conn.scalar(
                select(chats.c.id).where(
                    chats.c.id == chat_id, chats.c.deleted_at.is_(None), access.can_read(who)
                )
            )
        if visible is None:
            raise NotFound(f"chat {chat_id!r} not found")
        stream_id = self._by_chat.get(chat_id)
        stream = None if stream_id is None else self._streams.get(stream_id)
        if stream is None or stream.end_status is not None:
            return False
        # Stopped all the same when the write fails: the background retry persists it.
        with contextlib.suppress(PersistFailed):
            await self._end(stream, "INTERRUPTED", None)
        return True

    # ---- internals -----------------------------------------------------------------

    async def _publish(self, stream: _Stream, events: list[ChunkEvent]) -> None:
        # One seam for every publish: a shared-state service (store.shared_streams)
        # saves the buffer in the same atomic step.
        await self.broker.publish(stream.info.chat_id, events)

    def _event(self, stream: _Stream, props: dict[str, Any]) -> ChunkEvent:
        seq = stream.state.next_seq()
        return ChunkEvent(
            streamId=stream.info.id, seq=seq, chunkId=f"{stream.info.id}.{seq}",
            messageId=None, blockId=None, threadId=None, type="event", role=None,
            props=props, delta=False, deltaPath=None, deltaAction=None,
            fromSeq=seq, snapshot=False,
        )

    async def _check_producer(self, who: Identity, chat_id: str) -> None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    # SPEC §10: the producer mutations need ``agent`` or ``admin``.
                    select(access.can_stream(who).label("writable")).where(
                        chats.c.id == chat_id, chats.c.deleted_at.is_(None),
                        access.can_read(who),
                    )
                )
            ).first()
        if row is None:
            raise NotFound(f"chat {chat_id!r} not found")
        if not row.writable:
            raise Forbidden(f"you may read chat {chat_id!r} but not stream into it")

    async def _check_stream_chat(self, who: Identity, stream_id: str, chat_id: str) -> None:
        """The producer rule on a stream's chat; a hidden chat's stream does not exist."""
        try:
            await self._check_producer(who, chat_id)
        except NotFound:
            raise StreamNotFound(f"stream {stream_id!r} not found") from None

    async def _check_stream_access(self, who: Identity, stream: _Stream) -> None:
        # The starter (and anyone checked once) skips the database on every push.
        if who in stream.allowed:
            return
        await self._check_stream_chat(who, stream.info.id, stream.info.chat_id)
        stream.allowed.add(who)

    async def _producer_stream(self, who: Identity, stream_id: str) -> _Stream:
        stream = self._streams.get(stream_id)
        if stream is None:
            closed_chat = self._closed.get(stream_id)
            if closed_chat is not None:
                # Only those who could have pushed learn that it ended.
                await self._check_stream_chat(who, stream_id, closed_chat)
                raise StreamClosed(f"stream {stream_id!r} has ended")
            raise StreamNotFound(f"stream {stream_id!r} not found")
        await self._check_stream_access(who, stream)
        if stream.end_status is not None:
            raise StreamClosed(f"stream {stream_id!r} has ended")
        return stream

    def _stored_messages(self, stream: _Stream) -> list[NewMessage]:
        status = stream.end_status or "INTERRUPTED"
        batch: list[NewMessage] = []
        if stream.user_input is not None:
            batch.append(replace(stream.user_input, status=status))
        for message in stream.state.messages.values():
            batch.append(NewMessage(
                id=message.id, role=message.role, type=message.type, props=message.props,
                request_id=stream.info.request_id, block_id=message.block_id,
                thread_id=message.thread_id, assistant_id=stream.assistant_id, status=status,
            ))
        return batch

    def _resume_steps(self, stream: _Stream) -> list[StepIn]:
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

    async def _finish(self, stream: _Stream, reason: str) -> StreamResult:
        """End ``stream`` INTERRUPTED for ``reason``, or persist it if it already ended."""
        if stream.end_status is None:
            return await self._end(stream, "INTERRUPTED", reason)
        return await self._persist(stream)

    async def _end(self, stream: _Stream, status: str, error: str | None) -> StreamResult:
        stream.end_status = status
        stream.end_error = error
        stream.info = replace(stream.info, status=status)
        async with stream.publish_lock:
            # Counted under the lock: a push that was publishing has finished.
            message_count = len(stream.state.messages) + (stream.user_input is not None)
            end = self._event(stream, {
                "event": "stream_end",
                "status": status.lower(),
                "messageCount": message_count,
                "durationMs": int((time.monotonic() - stream.started) * 1000),
            })
            await self._publish(stream, [end])
        return await self._persist(stream)

    async def _persist(self, stream: _Stream) -> StreamResult:
        """Write the ended stream (once); PERSIST_FAILED schedules a retry."""
        async with stream.persist_lock:
            if stream.result is not None:
                return stream.result
            try:
                result = await self._write(stream)
            except _DB_ERRORS as error:
                logger.warning("persisting stream %s failed: %s", stream.info.id, error)
                self._schedule_retry(stream)
                raise PersistFailed(
                    f"the database failed while persisting stream {stream.info.id!r}; the"
                    " stream is kept and will be written by a retry (endStream again or wait)"
                ) from None
            except ChatqlError:
                # The chat went away (deleted, purged, access revoked): nothing can
                # ever be written, so the buffer is dropped instead of retried forever.
                self._forget(stream)
                raise
            stream.result = result
            self._forget(stream)
            self._remember(result)
        await self._persisted(stream)
        return result

    def _remember(self, result: StreamResult) -> None:
        self._finished[result.stream.id] = result
        while len(self._finished) > _FINISHED_KEPT:
            del self._finished[next(iter(self._finished))]

    def _forget(self, stream: _Stream) -> None:
        self._closed[stream.info.id] = stream.info.chat_id
        while len(self._closed) > _CLOSED_IDS_KEPT:
            del self._closed[next(iter(self._closed))]
        self._streams.pop(stream.info.id, None)
        if self._by_chat.get(stream.info.chat_id) == stream.info.id:
            del self._by_chat[stream.info.chat_id]
        task = stream.retry_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        stream.retry_task = None

    def _schedule_retry(self, stream: _Stream) -> None:
        if self._closing or stream.retry_task is not None:
            return
        stream.retry_task = asyncio.create_task(
            self._retry(stream), name=f"chatql-persist-{stream.info.id}"
        )

    async def _retry(self, stream: _Stream) -> None:
        delay = self.retry_initial
        while stream.result is None and not self._closing:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_max)
            try:
                # Let _persist not schedule another task while this one runs.
                async with stream.persist_lock:
                    if stream.result is not None:
                        return
                    result = await self._write(stream)
                    stream.result = result
                    self._remember(result)
            except _DB_ERRORS as error:
                logger.warning("retrying stream %s persist failed: %s", stream.info.id, error)
                continue
            except ChatqlError as error:
                logger.error("stream %s cannot be persisted: %s", stream.info.id, error)
                break
            break
        stream.retry_task = None
        if stream.result is not None or not self._closing:
            self._forget(stream)
        if stream.result is not None:
            await self._persisted(stream)

    async def _persisted(self, stream: _Stream) -> None:
        # Only shortens how long the broker keeps the chunks: never fails the write.
        try:
            await self.broker.stream_persisted(stream.info.chat_id, stream.info.id)
        except Exception as error:  # a broker outage must not undo a persist
            logger.warning("broker could not retire stream %s: %s", stream.info.id, error)

    async def _write(self, stream: _Stream) -> StreamResult:
        chat_id = stream.info.chat_id
        count = len(stream.state.messages) + (stream.user_input is not None)
        use_copy = self.db.is_postgres and count >= _COPY_THRESHOLD
        batch = [] if use_copy else self._stored_messages(stream)
        steps = self._resume_steps(stream)
        # The receipt marks the stream as written; its ids and status identify the
        # content (hashing every message's JSON would cost more than the write).
        ids = ([stream.user_input.id] if stream.user_input is not None else [])
        digest = canonical_digest({
            "stream": stream.info.id,
            "status": stream.end_status,
            "messages": [*ids, *stream.state.messages],
            "steps": len(steps),
        })
        async with self.db.write() as conn:
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
                return await self._read_result(conn, stream.info, list(earlier.message_ids))
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

    async def _read_result(self, conn: Any, info: StreamInfo,
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

    async def _stored_result(self, who: Identity, stream_id: str) -> StreamResult | None:
        """The result of a stream persisted before this process knew it (a restart)."""
        async with self.db.read() as conn:
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
            return await self._read_result(conn, info, message_ids)

    async def _watch_idle(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            deadline = time.monotonic() - self.idle_timeout
            for stream in list(self._streams.values()):
                if stream.end_status is None and stream.last_push <= deadline:
                    try:
                        await self._end(stream, "INTERRUPTED", "the producer went silent")
                    except ChatqlError as error:
                        logger.warning("idle stream %s: %s", stream.info.id, error)
