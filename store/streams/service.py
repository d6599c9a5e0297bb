"""Live streams: the one door for gql/ (start, push, step, end, stop, subscribe).

A :class:`StreamService` drives every stream through its
:class:`store.streams.backends.Backend` (chosen once from the broker URL): each
operation holds the stream's lease, loads its latest state, applies the chunks
through the reducer (:mod:`store.streams.reducer`) and saves the state together with
the chunks it publishes. During a stream nothing is written to the database. When the
stream ends (``end_stream``, ``stop_stream``, the idle timeout, or shutdown) the
stream_end event is published and the buffer is written in ONE transaction
(:mod:`store.streams.persist`).

If the database fails the buffer is kept, the caller gets PERSIST_FAILED and a
background task retries with exponential backoff until the write succeeds (or the
service closes, which makes a last attempt). A chat stays busy (STREAM_ACTIVE) until
its stream's write succeeded, so its messages can never be interleaved.

On shutdown a backend that shares streams with other instances (``redis://``) hands
active streams over (their producers carry on elsewhere; an idle sweeper ends them if
none does); otherwise every active stream is ended INTERRUPTED and persisted first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import orjson
from sqlalchemy import select

from chatql.store import access
from chatql.store.chats.usage import UsageIn, record_usage
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.tables import append_receipts, messages
from chatql.store.errors import (
    ChatqlError,
    Conflict,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    PersistFailed,
    StreamClosed,
    StreamNotFound,
)
from chatql.store.files import links as file_links
from chatql.store.ids import check_chat_id, check_message_id, new_id
from chatql.store.limits import KEY_CHARS, check_length, check_optional_name
from chatql.store.messages import interrupts
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.records import Identity
from chatql.store.streams import claims, persist
from chatql.store.streams.backends import Backend, StaleCopy
from chatql.store.streams.buffer import PushResult, StreamBuffer, StreamInfo, StreamResult
from chatql.store.streams.queue import SubscriberQueue
from chatql.store.streams.reducer import (
    ChunkEvent,
    ChunkIn,
    PushOutcome,
    StreamState,
    Undo,
    apply_chunks,
)


class ChatEvents(Protocol):
    """Where the service announces what changed a chat (the live chat lists' events,
    :class:`chatql.store.lists.events.ChatEvents`, set by the app)."""

    async def publish(self, type: Any, chat_id: str, tenant_id: str) -> None: ...

__all__ = ["END_STATUSES", "MAX_PUSH_CHUNKS", "StreamService"]

logger = logging.getLogger("chatql.streams")

END_STATUSES = ("COMPLETED", "AWAITING_INPUT", "INTERRUPTED", "FAILED")
MAX_PUSH_CHUNKS = 1_000
# Rough per-chunk overhead of the buffered copy besides its props (ids, seq, dict).
_CHUNK_OVERHEAD = 160
# Results of finished streams kept for endStream retries without a database read
# (older ones are read back from the database), and ids of ended streams kept so a
# late push is STREAM_CLOSED rather than STREAM_NOT_FOUND.
_FINISHED_KEPT = 256
_CLOSED_IDS_KEPT = 100_000


#: What the reply of a stream that wrote nothing says, by end status (a FAILED or
#: INTERRUPTED end's own reason comes first).
_EMPTY_REPLY = {
    "COMPLETED": "The agent ended its reply without writing anything.",
    "INTERRUPTED": "Stopped before the agent wrote anything.",
    "FAILED": "The agent's reply failed before it wrote anything.",
}


def _empty_reply(stream_id: str, status: str, error: str | None) -> ChunkIn:
    return ChunkIn(type="error", role="ASSISTANT", chunk_id=f"{stream_id}.empty",
                   props={"content": (status != "COMPLETED" and error) or _EMPTY_REPLY[status]})


def _asks(stream: StreamBuffer) -> bool:
    """Whether a message of the stream asks a person (an approval or a question) and
    waits for a resumption (an inline ask is answered within the stream)."""
    return any(interrupts.asks_later(message.type, message.props) is not None
               for message in stream.state.messages.values())


def _asks_inline(chunks: Sequence[ChunkIn]) -> bool:
    return any(isinstance(chunk.props, dict) and chunk.props.get("inline") is True
               and chunk.message_id is not None for chunk in chunks)


def _byte_size(chunks: Sequence[ChunkIn]) -> int:
    """The batch's size in the buffer."""
    return _weigh(chunks)[0]


def _weigh(chunks: Sequence[ChunkIn]) -> tuple[int, bool]:
    """The batch's size in the buffer, and whether its props may name a file (False
    only when they cannot: :func:`store.files.links.may_reference_files` of their one
    encoding, so a batch without a ``fileId`` costs no lookup)."""
    size = _CHUNK_OVERHEAD * len(chunks)
    props = []
    for chunk in chunks:
        size += len(chunk.type)
        if chunk.props:
            props.append(chunk.props)
    if not props:
        return size, False
    try:
        # One encoding of the batch: a list adds its brackets and a comma per item.
        encoded = orjson.dumps(props)
    except TypeError:  # integers beyond 64 bits; only the size matters here
        return size + sum(_props_size(item) for item in props), True
    return size + len(encoded) - len(props) - 1, file_links.may_reference_files(encoded)


def _named_files(stream: StreamBuffer, events: Sequence[ChunkEvent]) -> list[str]:
    """The files the messages a push changed reference now (as the persist will find
    them: :func:`store.files.links.file_ids_in`, a ``fileId`` that is no id skipped)."""
    messages = stream.state.messages
    touched: set[str] = set()
    named: dict[str, None] = {}
    for event in events:
        message_id = event["messageId"]
        if message_id is None or message_id in touched:
            continue
        touched.add(message_id)
        message = messages.get(message_id)
        if message is not None:
            named.update(dict.fromkeys(
                file_links.file_ids_in(message.type, message.props, strict=False)))
    return list(named)


def _props_size(props: Any) -> int:
    try:
        return len(orjson.dumps(props))
    except TypeError:
        return len(repr(props))


class StreamService:
    """Every live stream, over one backend, and their persistence."""

    def __init__(
        self,
        db: Database,
        backend: Backend,
        *,
        idle_timeout: float = 60.0,
        max_bytes: int = 16 * 1024 * 1024,
        retry_initial: float = 0.5,
        retry_max: float = 30.0,
    ) -> None:
        self.db = db
        self.backend = backend
        self.idle_timeout = idle_timeout
        self.max_bytes = max_bytes
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        # This process's copies of the streams it operated on (the backend says
        # whether a copy is still current).
        self._streams: dict[str, StreamBuffer] = {}
        self._finished: dict[str, StreamResult] = {}
        # Ended stream id -> its chat id, so a late push is checked against the chat's
        # access rule before it learns the stream existed (STREAM_CLOSED).
        self._closed: dict[str, str] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._closing = False
        #: The live chat list: told when a stream starts and when one is written.
        self.events: ChatEvents | None = None
        #: Counts for metrics, read by differences: chunks accepted by pushes on this
        #: instance, and idle sweeps run.
        self.chunks_pushed = 0
        self.idle_sweeps = 0
        #: Told how long each stream's write to the database took (seconds).
        self.on_persisted: Callable[[float], None] | None = None

    # ---- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Start the idle-stream sweeper. A backend that keeps streams in this process
        alone first marks the database's live claims ended: streams of an earlier run
        are gone with it."""
        if not self.backend.hands_over:
            try:
                ended = await claims.end_live_claims(self.db)
            except persist.DB_ERRORS as error:
                # The process still starts (and answers liveness) while the database
                # is down; those claims are ended by the next start that reaches it.
                logger.warning("stream claims of an earlier run not checked: %s", error)
                ended = 0
            if ended:
                logger.warning("%d stream(s) of an earlier run were lost", ended)
        if self._watcher is None and self.idle_timeout > 0:
            self._watcher = asyncio.create_task(self._watch_idle(), name="chatql-idle-streams")

    async def close(self) -> None:
        """Shutdown: persist what ended; end active streams INTERRUPTED and persist them,
        unless the backend hands them over to other instances. Then close the backend."""
        self._closing = True
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        for stream_id, local in list(self._streams.items()):
            if local.retry_task is not None:
                local.retry_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await local.retry_task
            try:
                async with self.backend.lease(stream_id, wait=not self.backend.hands_over) \
                        as mine:
                    stream = await self._load(stream_id) if mine else None
                    if stream is None:
                        continue
                    if stream.end_status is not None:
                        await self._persist(stream)
                    elif not self.backend.hands_over:
                        await self._end(stream, "INTERRUPTED", "the service shut down")
            except ChatqlError as error:
                logger.error("stream %s could not be persisted at shutdown: %s",
                             stream_id, error)
            except Exception as error:  # the backend is down: its sweepers finish it
                logger.warning("stream %s left to the sweepers: %s", stream_id, error)
        await self.backend.close()

    @property
    def active_count(self) -> int:
        return sum(1 for s in self._streams.values() if s.end_status is None)

    def buffered(self, stream_id: str) -> StreamBuffer | None:
        """This process's buffer of a stream not yet persisted (for tests and metrics)."""
        return self._streams.get(stream_id)

    # ---- subscribers -----------------------------------------------------------------

    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        """The chat's chunks, stream after stream: first the catch-up for ``after_seq``
        (or the late-join snapshot when ``None``), then live. The caller checked that the
        subscriber may read the chat."""
        return await self.backend.subscribe(chat_id, after_seq)

    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        await self.backend.unsubscribe(chat_id, queue)

    async def active_stream(self, chat_id: str) -> str | None:
        """The id of the chat's active stream on any instance, or None."""
        return await self.backend.active_stream(chat_id)

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
        parent_id: str | None = None,
    ) -> StreamInfo:
        check_chat_id(chat_id)
        if parent_id is not None:
            check_message_id(parent_id)
        if stream_id is not None:
            check_length(stream_id, "streamId", KEY_CHARS)
        check_optional_name(request_id, "requestId")
        check_optional_name(assistant_id, "assistantId")
        if user_input is not None:
            user_input = replace(
                user_input,
                id=user_input.id or new_id(),
                request_id=user_input.request_id or request_id,
            )
            user_input.check()
        await self._check_producer(who, chat_id)
        stream_id = stream_id or new_id()
        if stream_id in self._streams or stream_id in self._closed:
            raise Conflict(f"stream id {stream_id!r} was already used")
        # The database row first: of two starts with one request id exactly one gets
        # it (the other is CONFLICT, whatever the chat's claim says).
        await claims.open_claim(self.db, chat_id=chat_id, stream_id=stream_id,
                                request_id=request_id)
        try:
            await self.backend.claim(chat_id, stream_id)
        except BaseException:
            await claims.drop_claim(self.db, stream_id)
            raise
        try:
            async with self.backend.lease(stream_id):
                return await self._open(who, chat_id, stream_id, request_id, assistant_id,
                                        user_input, parent_id)
        except BaseException:
            self._streams.pop(stream_id, None)
            await self.backend.unclaim(chat_id, stream_id)
            await claims.drop_claim(self.db, stream_id)
            raise

    async def _open(self, who: Identity, chat_id: str, stream_id: str,
                    request_id: str | None, assistant_id: str | None,
                    user_input: NewMessage | None, parent_id: str | None) -> StreamInfo:
        async with self.db.read() as conn:
            used = await conn.scalar(
                select(append_receipts.c.append_id).where(
                    append_receipts.c.chat_id == chat_id, append_receipts.c.append_id == stream_id
                )
            )
            taken = user_input is not None and await conn.scalar(
                select(message_chats.c.id).where(message_chats.c.id == user_input.id))
            parent_found = parent_id is None or await conn.scalar(
                select(messages.c.id).where(messages.c.id == parent_id,
                                            messages.c.chat_id == chat_id))
        if not parent_found:
            raise NotFound(f"message {parent_id!r} not found in chat {chat_id!r}")
        if used is not None:
            raise Conflict(f"stream id {stream_id!r} was already used")
        if taken:
            # Found now rather than at the end, when the whole stream would be lost.
            raise Conflict(f"message id {user_input.id!r} is already taken")  # type: ignore[union-attr]
        info = StreamInfo(id=stream_id, chat_id=chat_id, request_id=request_id,
                          status="ACTIVE", started_at=now())
        stream = StreamBuffer(
            info=info, owner=who, assistant_id=assistant_id, state=StreamState(stream_id),
            user_input=user_input, allowed={who}, parent_id=parent_id,
        )
        self._streams[stream_id] = stream
        props: dict[str, Any] = {"event": "stream_start", "requestId": request_id}
        if user_input is not None:
            # The user's message is not a chunk (it takes no seq), but viewers other
            # than its sender should be able to show it while the stream runs.
            props["input"] = {"id": user_input.id, **user_input.wire()}
        if parent_id is not None:
            # A regenerated answer: viewers place it beside the earlier ones.
            props["parentId"] = parent_id
        await self.backend.save(stream, [self._event(stream, props)])
        if self.events is not None:
            await self.events.publish("STREAM_STARTED", chat_id, who.tenant_id)
        return info

    async def push_chunks(self, who: Identity, stream_id: str,
                          chunks: Sequence[ChunkIn]) -> PushResult:
        # Optimistic first: when this instance's copy is current a shared backend
        # writes the push in one round trip; if it is not, nothing was written and
        # the push is redone under the lease on the current state.
        try:
            result = await self._push(who, stream_id, chunks, optimistic=True)
        except StaleCopy:
            return await self._push(who, stream_id, chunks, optimistic=False)
        except ChatqlError:
            # Refused on this instance's copy: stands if that copy is current.
            if await self.backend.is_current(stream_id):
                raise
            return await self._push(who, stream_id, chunks, optimistic=False)
        if chunks and not result.accepted and not await self.backend.is_current(stream_id):
            # Nothing written (all duplicates) proves nothing about the copy; a
            # heartbeat (no chunks) was written, so its copy was current.
            return await self._push(who, stream_id, chunks, optimistic=False)
        return result

    async def _push(self, who: Identity, stream_id: str, chunks: Sequence[ChunkIn], *,
                    optimistic: bool) -> PushResult:
        async with self.backend.lease(stream_id, optimistic=optimistic):
            stream = await self._producer_stream(who, stream_id)
            if len(chunks) > MAX_PUSH_CHUNKS:
                raise PayloadTooLarge(f"pushChunks takes at most {MAX_PUSH_CHUNKS} chunks")
            size, names_files = _weigh(chunks)
            if stream.buffered_bytes + size > self.max_bytes:
                raise PayloadTooLarge(
                    f"the stream's buffer would exceed {self.max_bytes} bytes; end the stream"
                )
            # Numbering and publishing under one lock: a backend whose save really
            # awaits must still receive chunks in seq order.
            async with stream.publish_lock:
                if stream.end_status is not None:  # ended while we awaited
                    raise StreamClosed(f"stream {stream_id!r} has ended")
                if names_files:
                    outcome = await self._apply_naming_files(who, stream, chunks)
                else:
                    outcome = apply_chunks(stream.state, chunks)
                stream.buffered_bytes += size
                stream.last_push = time.time()
                # Read under the lease: releasing it awaits, and the next holder on this
                # instance numbers on in the same state.
                last_seq = stream.state.seq
                if outcome.events or not chunks:
                    # A push without chunks is a heartbeat: saved all the same, so the
                    # stream's last write (the idle clock every instance reads) moves.
                    await self.backend.save(stream, outcome.events, aliases=outcome.aliases,
                                            seen=outcome.seen, tokens=outcome.tokens)
                # Asked inline: the producer waits in the stream for the decision.
                asked = [] if not _asks_inline(chunks) else [
                    (message.id, message.type, dict(message.props)) for message in (
                        stream.state.messages.get(stream.state.aliases.get(
                            chunk.message_id or "", chunk.message_id or ""))
                        for chunk in chunks)
                    if message is not None and interrupts.waits_inline(message.props)
                    and interrupts.asks(message.type, message.props)]
        for message_id, message_type, props in asked:
            if await interrupts.record_inline(
                    self.db, message_id=message_id, type=message_type, props=props,
                    chat_id=stream.info.chat_id, tenant_id=stream.owner.tenant_id,
                    stream_id=stream.info.id, request_id=stream.info.request_id,
                    assistant_id=stream.assistant_id) and self.events is not None:
                await self.events.publish("INTERRUPT_REQUESTED", stream.info.chat_id,
                                          stream.owner.tenant_id)
        self.chunks_pushed += outcome.accepted
        return PushResult(accepted=outcome.accepted, duplicates=outcome.duplicates,
                          last_seq=last_seq)

    async def _apply_naming_files(self, who: Identity, stream: StreamBuffer,
                                  chunks: Sequence[ChunkIn]) -> PushOutcome:
        """Apply a batch whose props may name files: every file the changed messages
        reference must be one the pusher may read — else NOT_FOUND, as an append naming
        it, and the batch is taken back — and is linked to the stream before anything is
        published, so whoever may read the chat reads the file from the moment they
        receive the chunk (:func:`store.files.links.link_stream_files`)."""
        undo: Undo = []
        outcome = apply_chunks(stream.state, chunks, keep_undo=undo)
        try:
            named = _named_files(stream, outcome.events)
            if named:
                async with self.db.write() as conn:
                    await file_links.link_stream_files(
                        conn, who, chat_id=stream.info.chat_id, stream_id=stream.info.id,
                        file_ids=named, at=now())
        except BaseException:
            for step in reversed(undo):
                step()
            raise
        return outcome

    async def _drop_file_links(self, stream: StreamBuffer) -> None:
        """A stream that will never be stored: the files its chunks named are no longer
        readable through it."""
        try:
            async with self.db.write() as conn:
                await file_links.drop_stream_links(conn, stream.info.id)
        except Exception as error:  # the database failing now: said, not raised
            logger.warning("file links of stream %s not dropped: %s", stream.info.id, error)

    async def record_step(self, who: Identity, stream_id: str, step: StepIn) -> bool:
        async with self.backend.lease(stream_id):
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
            # Re-recording keeps the first-recorded order (dicts keep insertion order).
            stream.steps[step.id] = step
            stream.last_push = time.time()
            await self.backend.save(stream, steps=True)
        return True

    async def end_stream(self, who: Identity, stream_id: str, status: str,
                         error: str | None = None,
                         usage: UsageIn | None = None) -> StreamResult:
        if status not in END_STATUSES:
            raise InvalidArgument(f"status must be one of {', '.join(END_STATUSES)}")
        if usage is not None:
            usage.check()
        finished = self._finished.get(stream_id)
        if finished is not None:
            await self._check_stream_chat(who, stream_id, finished.stream.chat_id)
            await self._late_usage(finished, usage)
            return finished
        async with self.backend.lease(stream_id):
            stream = await self._load(stream_id)
            if stream is None:
                stored = await persist.stored_result(self.db, who, stream_id)
                if stored is None:
                    raise StreamNotFound(f"stream {stream_id!r} not found")
                # Readers find the stored stream, but ending it is for producers.
                await self._check_stream_chat(who, stream_id, stored.stream.chat_id)
                await self._late_usage(stored, usage)
                return stored
            await self._check_stream_access(who, stream)
            if status == "AWAITING_INPUT" and not _asks(stream):
                raise InvalidArgument(
                    "AWAITING_INPUT needs a tool_call with needsApproval or a question "
                    "message in the stream")
            if stream.usage is None:
                # Kept with the buffer, so the write that persists the stream records it.
                stream.usage = usage
            if stream.end_status is not None:
                # Ended already (stopped, idle, or a retried endStream): finish that end.
                result = await self._persist(stream)
                await self._late_usage(result, usage)
                return result
            return await self._end(stream, status, error)

    async def _late_usage(self, result: StreamResult, usage: UsageIn | None) -> None:
        """Usage reported by an endStream after the stream was already written (a stop
        or an idle timeout got there first): recorded on its own, at most once."""
        if usage is None:
            return
        async with self.db.write() as conn:
            assistant_id = next((m.assistant_id for m in result.messages
                                 if m.role != "USER" and m.assistant_id), None)
            await record_usage(conn, chat_id=result.stream.chat_id,
                               stream_id=result.stream.id,
                               request_id=result.stream.request_id,
                               assistant_id=assistant_id, usage=usage)

    async def stop_stream(self, who: Identity, chat_id: str) -> bool:
        """The person pressed stop: end the chat's active stream INTERRUPTED.

        False when the chat has no active stream. Stopping needs the right to write to
        the chat (its creator, its team for TEAM chats, ``agent``, ``admin``); a
        read-only viewer of a public chat is FORBIDDEN and the stream keeps running.
        """
        check_chat_id(chat_id)
        async with self.db.read() as conn:
            await access.require(conn, who, chat_id, "append")
        stream_id = await self.backend.active_stream(chat_id)
        if stream_id is None:
            # Nothing live: stopping a chat that waits for decisions cancels them.
            async with self.db.write() as conn:
                cancelled = await interrupts.cancel_pending(conn, chat_id)
            if cancelled and self.events is not None:
                await self.events.publish("INTERRUPT_RESOLVED", chat_id, who.tenant_id)
            return bool(cancelled)
        async with self.backend.lease(stream_id):
            stream = await self._load(stream_id)
            if stream is None or stream.end_status is not None:
                return False
            # Stopped all the same when the write fails: the background retry persists it.
            with contextlib.suppress(PersistFailed):
                await self._end(stream, "INTERRUPTED", None)
        return True

    # ---- internals -----------------------------------------------------------------

    async def _load(self, stream_id: str) -> StreamBuffer | None:
        """The stream's latest state (under its lease), kept as this process's copy."""
        stream = await self.backend.load(stream_id, self._streams.get(stream_id))
        if stream is None:
            self._streams.pop(stream_id, None)
        else:
            self._streams[stream_id] = stream
        return stream

    def _event(self, stream: StreamBuffer, props: dict[str, Any]) -> ChunkEvent:
        seq = stream.state.next_seq()
        return ChunkEvent(
            streamId=stream.info.id, seq=seq, chunkId=f"{stream.info.id}.{seq}",
            messageId=None, blockId=None, threadId=None, type="event", role=None,
            props=props, delta=False, deltaPath=None, deltaAction=None,
            fromSeq=seq, snapshot=False,
        )

    async def _check_producer(self, who: Identity, chat_id: str) -> None:
        async with self.db.read() as conn:
            # The producer mutations need ``agent`` or ``admin``.
            await access.require(conn, who, chat_id, "stream")

    async def _check_stream_chat(self, who: Identity, stream_id: str, chat_id: str) -> None:
        """The producer rule on a stream's chat; a hidden chat's stream does not exist."""
        try:
            await self._check_producer(who, chat_id)
        except NotFound:
            raise StreamNotFound(f"stream {stream_id!r} not found") from None

    async def _check_stream_access(self, who: Identity, stream: StreamBuffer) -> None:
        # The starter (and anyone checked once) skips the database on every push.
        if who in stream.allowed:
            return
        await self._check_stream_chat(who, stream.info.id, stream.info.chat_id)
        stream.allowed.add(who)

    async def _producer_stream(self, who: Identity, stream_id: str) -> StreamBuffer:
        stream = await self._load(stream_id)
        if stream is None:
            closed_chat = self._closed.get(stream_id) or await self.backend.closed_chat(
                stream_id)
            if closed_chat is not None:
                # Only those who could have pushed learn that it ended.
                await self._check_stream_chat(who, stream_id, closed_chat)
                raise StreamClosed(f"stream {stream_id!r} has ended")
            raise StreamNotFound(f"stream {stream_id!r} not found")
        await self._check_stream_access(who, stream)
        if stream.end_status is not None:
            raise StreamClosed(f"stream {stream_id!r} has ended")
        return stream

    async def _finish(self, stream: StreamBuffer, reason: str) -> StreamResult:
        """End ``stream`` INTERRUPTED for ``reason``, or persist it if it already ended."""
        if stream.end_status is None:
            return await self._end(stream, "INTERRUPTED", reason)
        return await self._persist(stream)

    async def _end(self, stream: StreamBuffer, status: str, error: str | None) -> StreamResult:
        if status == "COMPLETED" and _asks(stream):
            # It asked a person: it is not over until they decide.
            status = "AWAITING_INPUT"
        stream.end_status = status
        stream.end_error = error
        stream.info = replace(stream.info, status=status)
        async with stream.publish_lock:
            # Every turn leaves a reply: a stream that wrote no message of its own gets
            # an ``error`` message saying why, so its question is answered (no worker
            # waits on it, Regenerate asks again) and the person sees what happened.
            # Published like any chunk: subscribers hold what is persisted.
            filler = (apply_chunks(stream.state, [_empty_reply(stream.info.id, status, error)])
                      .events if not stream.state.messages else [])
            # Counted under the lock: a push that was publishing has finished.
            message_count = len(stream.state.messages) + (stream.user_input is not None)
            props: dict[str, Any] = {
                "event": "stream_end",
                "status": status.lower(),
                "messageCount": message_count,
                "durationMs": max(0, int((time.time() - stream.started) * 1000)),
            }
            if status == "FAILED" and error:
                # Viewers show why the reply failed (the producer's own words).
                props["error"] = error
            end = self._event(stream, props)
            await self.backend.save(stream, [*filler, end])
        return await self._persist(stream)

    async def _persist(self, stream: StreamBuffer) -> StreamResult:
        """Write the ended stream (once); PERSIST_FAILED schedules a retry."""
        async with stream.persist_lock:
            if stream.result is not None:
                return stream.result
            started = time.perf_counter()
            try:
                result = await persist.write(self.db, stream)
            except persist.DB_ERRORS as error:
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
                await self._drop_file_links(stream)
                await self._retire(stream)
                raise
            if self.on_persisted is not None:
                self.on_persisted(time.perf_counter() - started)
            stream.result = result
            self._forget(stream)
            self._remember(result)
        await self._retire(stream)
        await self._announce_written(stream)
        return result

    async def _announce_written(self, stream: StreamBuffer) -> None:
        """The stream is over and its messages are in the database."""
        if self.events is not None:
            chat_id, tenant_id = stream.info.chat_id, stream.owner.tenant_id
            await self.events.publish("STREAM_ENDED", chat_id, tenant_id)
            await self.events.publish("MESSAGES", chat_id, tenant_id)
            if stream.end_status == "AWAITING_INPUT":
                await self.events.publish("INTERRUPT_REQUESTED", chat_id, tenant_id)

    def _remember(self, result: StreamResult) -> None:
        self._finished[result.stream.id] = result
        while len(self._finished) > _FINISHED_KEPT:
            del self._finished[next(iter(self._finished))]

    def _forget(self, stream: StreamBuffer) -> None:
        self._closed[stream.info.id] = stream.info.chat_id
        while len(self._closed) > _CLOSED_IDS_KEPT:
            del self._closed[next(iter(self._closed))]
        self._streams.pop(stream.info.id, None)
        task = stream.retry_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        stream.retry_task = None

    async def _retire(self, stream: StreamBuffer) -> None:
        # Only releases the chat and shortens how long chunks are kept: never fails
        # the write it follows.
        try:
            await self.backend.retire(stream)
        except Exception as error:  # a backend outage must not undo a persist
            logger.warning("backend could not retire stream %s: %s", stream.info.id, error)

    def _schedule_retry(self, stream: StreamBuffer) -> None:
        if self._closing or stream.retry_task is not None:
            return
        stream.retry_task = asyncio.create_task(
            self._retry(stream), name=f"chatql-persist-{stream.info.id}"
        )

    async def _retry(self, stream: StreamBuffer) -> None:
        delay = self.retry_initial
        while stream.result is None and not self._closing:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_max)
            try:
                # Let _persist not schedule another task while this one runs.
                async with stream.persist_lock:
                    if stream.result is not None:
                        return
                    result = await persist.write(self.db, stream)
                    stream.result = result
                    self._remember(result)
            except persist.DB_ERRORS as error:
                logger.warning("retrying stream %s persist failed: %s", stream.info.id, error)
                continue
            except ChatqlError as error:
                logger.error("stream %s cannot be persisted: %s", stream.info.id, error)
                await self._drop_file_links(stream)
                break
            break
        stream.retry_task = None
        if stream.result is not None or not self._closing:
            self._forget(stream)
        if stream.result is not None:
            await self._retire(stream)
            await self._announce_written(stream)

    async def sweep(self) -> int:
        """End and persist every stream idle past the timeout (on a shared backend, on
        any instance: an orphan of a dead one); returns how many this instance took."""
        before = time.time() - self.idle_timeout
        taken = 0
        self.idle_sweeps += 1
        for stream_id in await self.backend.idle_streams(before, self._streams):
            async with self.backend.lease(stream_id, wait=False) as mine:
                if not mine or not await self.backend.still_idle(stream_id, before,
                                                                 self._streams):
                    continue
                stream = await self._load(stream_id)
                if stream is None:
                    continue
                taken += 1
                try:
                    await self._finish(stream, "the producer went silent")
                except ChatqlError as error:
                    logger.warning("idle stream %s: %s", stream_id, error)
        return taken

    async def _watch_idle(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception as error:  # the backend is down: try again next round
                logger.warning("sweeping idle streams failed: %s", error)
