"""The stream writer: an agent's output as batched, idempotent ``pushChunks``.

``async with client.stream(chat_id) as s:`` opens a stream (``startStream``); every call
(``s.text``, ``s.tool_call`` …) turns into chunks that wait at most ``flush_interval``
seconds, or until ``max_batch`` are waiting, before one ``pushChunks`` carries them all.
Consecutive appends to the same place (a run of ``text`` tokens) wait as one chunk whose
delta grows, so the service applies and publishes one change per run and batch.
Each chunk's ``chunkId`` is its number in the stream, so a push retried after a lost
answer is recognised by the service as already applied. Leaving the block ends the stream
``COMPLETED``; an exception ends it ``FAILED`` with the error's text (and propagates); a
cancelled task ends it ``INTERRUPTED``.

Stop: when the service answers ``STREAM_CLOSED`` (the person pressed Stop) the writer
raises :class:`~chatql_client.errors.StreamStopped` from the agent's next write or flush.
If the agent is not writing at that moment (waiting on its model or a tool), the task
that opened the stream is cancelled — like ``asyncio.timeout`` — and the ``async with``
raises ``StreamStopped`` in place of the cancellation, so a long model call does not run
on for nothing.

While the agent is quiet the writer sends heartbeats (a ``pushChunks`` with no chunks) at a
third of the service's idle timeout (``Stream.idleTimeout``), so only a producer that
vanished is timed out, never a slow tool.

How calls map to chunks: ``text`` and ``thinking`` append to the ``content`` of a message
(consecutive calls of the same kind in the same block and thread extend one message; any
other call in between starts a new one); ``tool_call`` creates a ``tool_call`` message with
props ``{id, name, arguments}`` whose ``arguments`` grows by ``tool_arguments`` (append
deltas at path ``arguments``); ``tool_result`` is a ``TOOL`` ``tool_result`` message with
props ``{content, tool_call_id}``; ``file`` uploads a file and writes a ``file`` message
with props ``{fileId, mediaType, filename}`` (a whole message in one chunk, never a delta:
the record keeps the file's id, not its bytes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from chatql_client.documents import (
    CHAT_EVENTS,
    CHAT_INTERRUPTS,
    END_STREAM,
    INTERRUPT,
    PUSH_CHUNKS,
    RECORD_STEP,
    SET_CHAT_TITLE,
    START_STREAM,
)
from chatql_client.errors import ChatqlError, StreamEndedError, StreamStopped
from chatql_client.files import FileSource, UploadedFile, file_part
from chatql_client.types import StreamResult

if TYPE_CHECKING:
    from chatql_client.client import ChatqlClient

__all__ = ["StreamWriter"]

logger = logging.getLogger("chatql_client")

#: The most chunks one ``pushChunks`` takes.
MAX_PUSH = 1000
#: The heartbeat's pace when the service does not say its idle timeout.
DEFAULT_IDLE_TIMEOUT = 60.0
#: The longest error text sent with a FAILED end.
MAX_ERROR_TEXT = 2000
#: Seconds between two reads of an interrupt an inline ask waits for, besides those the
#: chat's events prompt: the safety net for a subscription that dropped.
DECISION_FALLBACK = 5.0
#: Seconds before listening again after the subscription failed (doubling, at most
#: ``DECISION_FALLBACK``).
DECISION_RECONNECT = 0.5
#: The chat events that make an inline ask read its interrupt again (DELETED, PURGED: the
#: read then fails, rather than waiting on a chat that is gone).
DECISION_EVENTS = frozenset({"INTERRUPT_RESOLVED", "INTERRUPT_REQUESTED", "DELETED",
                             "PURGED"})


def _input_message(value: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, str):
        return {"role": "USER", "type": "user_input", "props": {"content": value}}
    return dict(value)


def _asking(reason: str | None, expires_in: float | None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if reason is not None:
        props["reason"] = reason
    if expires_in is not None:
        if expires_in <= 0:
            raise ValueError("expires_in must be a positive number of seconds")
        props["expiresIn"] = expires_in
    return props


class StreamWriter:
    """One stream's producer side; made by :meth:`ChatqlClient.stream`."""

    def __init__(self, client: ChatqlClient, chat_id: str, *, request_id: str | None = None,
                 parent_id: str | None = None, input: str | Mapping[str, Any] | None = None,
                 flush_interval: float = 0.02, max_batch: int = 256,
                 assistant_id: str | None = None, stream_id: str | None = None) -> None:
        if not 1 <= max_batch <= MAX_PUSH:
            raise ValueError(f"max_batch must be between 1 and {MAX_PUSH}")
        if flush_interval < 0:
            raise ValueError("flush_interval must be >= 0")
        self.client = client
        self.chat_id = chat_id
        self.request_id = request_id
        self.parent_id = parent_id
        self.input = input
        self.flush_interval = flush_interval
        self.max_batch = max_batch
        self.assistant_id = assistant_id
        #: The stream's id (chosen here unless given; known before the start).
        self.stream_id: str = stream_id or uuid.uuid4().hex
        #: The service's idle timeout in seconds (from ``startStream``).
        self.idle_timeout: float = DEFAULT_IDLE_TIMEOUT
        #: None until the stream ended; then COMPLETED, FAILED or INTERRUPTED.
        self.status: str | None = None
        #: ``endStream``'s answer (the stored messages), once the writer ended the stream.
        self.result: StreamResult | None = None
        self._started = False
        self._ended = False
        self._exiting = False
        self._pending: list[dict[str, Any]] = []
        #: Writer calls waiting (several deltas may share one pending chunk).
        self._waiting = 0
        #: The last pending chunk further deltas to the same place may join, with the
        #: place: (message id, type, delta path, block, thread), and the prop they grow.
        self._tail: tuple[tuple[Any, ...], str, dict[str, Any]] | None = None
        self._chunks = 0
        self._messages = 0
        self._seen: set[str] = set()
        self._lanes: dict[tuple[str | None, str | None], tuple[str, str]] = {}
        self._calls: dict[str, tuple[str | None, str | None, str]] = {}
        self._call_arguments: dict[str, str] = {}
        self._usage: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._last_push = 0.0
        self._failure: ChatqlError | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._in_call = 0
        self._cancelled_by_stop = False
        self._stop_reported = False
        #: The person's decisions this stream resumes after (set by the agent loop for
        #: a resumption; empty for a first answer): each a ``Interrupt`` dict with its
        #: ``decision`` (an expired one has state ``EXPIRED``: treat it as denied).
        self.resume: list[dict[str, Any]] = []

    @property
    def stopped(self) -> bool:
        """True once the service refused a push because the stream was stopped."""
        return isinstance(self._failure, StreamStopped)

    # ---- start and end ---------------------------------------------------------------

    async def __aenter__(self) -> StreamWriter:
        payload: dict[str, Any] = {"chatId": self.chat_id, "streamId": self.stream_id}
        if self.request_id is not None:
            payload["requestId"] = self.request_id
        if self.parent_id is not None:
            payload["parentId"] = self.parent_id
        if self.assistant_id is not None:
            payload["assistantId"] = self.assistant_id
        if self.input is not None:
            payload["input"] = _input_message(self.input)
        client = self.client
        body = client.encode_request(START_STREAM, {"i": payload})
        lost = False

        async def attempt() -> dict[str, Any]:
            nonlocal lost
            try:
                return await client.post_once(body)
            except ChatqlError as exc:
                if not (lost and exc.code in ("STREAM_ACTIVE", "CONFLICT")):
                    raise
                # An earlier attempt whose answer was lost may have opened this very
                # stream: a heartbeat to its id succeeds only then.
                try:
                    await client.post_once(client.encode_request(
                        PUSH_CHUNKS, {"id": self.stream_id, "chunks": []}))
                except ChatqlError:
                    raise exc from None
                return {"startStream": {"id": self.stream_id, "idleTimeout": None}}
            except Exception:  # NoAnswer: this attempt may have opened the stream
                lost = True
                raise

        try:
            data = await client.with_retries(attempt)
        except asyncio.CancelledError:
            # The start may have reached the service: end what it may have opened, so a
            # worker stopped mid-claim leaves no stream to time out.
            await self._abandon()
            raise
        stream = data["startStream"]
        self.stream_id = stream["id"]
        if stream.get("idleTimeout"):
            self.idle_timeout = float(stream["idleTimeout"])
        self._started = True
        self._last_push = time.monotonic()
        self._owner = asyncio.current_task()
        self._heartbeat = asyncio.create_task(self._beat(), name=f"heartbeat {self.stream_id}")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool:
        self._exiting = True
        await self._quiet_background()
        if self._cancelled_by_stop and self._owner is not None:
            # Our own cancellation (Stop while the agent was not writing): the task is not
            # left cancelled, and the cancellation becomes StreamStopped.
            self._cancelled_by_stop = False
            self._owner.uncancel()
            if isinstance(exc, asyncio.CancelledError):
                self._mark_ended("INTERRUPTED")
                raise cast(StreamStopped, self._failure) from None
        if self.stopped:
            self._mark_ended("INTERRUPTED")
            if exc is None and not self._stop_reported:
                # Found by a background flush the agent never saw: it learns it here.
                raise cast(StreamStopped, self._failure)
            return False
        if exc is None:
            try:
                await self.flush()
            except StreamStopped:
                self._mark_ended("INTERRUPTED")
                raise
            except BaseException as failure:
                await self._end_after(failure)
                raise
            await self._end("COMPLETED")
            return False
        await self._end_after(exc)
        return False

    async def _abandon(self) -> None:
        async def end() -> None:
            try:
                await self.client.execute(END_STREAM, {
                    "id": self.stream_id, "status": "INTERRUPTED", "error": None,
                    "usage": None})
            except Exception as failure:  # not opened after all (NOT_FOUND), or unreachable
                logger.debug("stream %s: abandoned start: %s", self.stream_id, failure)

        task = asyncio.ensure_future(end())
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
        self._mark_ended("INTERRUPTED")

    async def _end_after(self, exc: BaseException) -> None:
        """Ends the stream after ``exc``: INTERRUPTED when the producer is going away
        (cancelled, interrupted), FAILED with the error's text otherwise. Never masks
        ``exc``: a failure to end is logged."""
        going_away = not isinstance(exc, Exception)
        status = "INTERRUPTED" if going_away else "FAILED"
        error = None if going_away else f"{type(exc).__name__}: {exc}"[:MAX_ERROR_TEXT]

        async def finish() -> None:
            if self._pending and self._failure is None:
                try:
                    await self.flush()
                except Exception as failure:  # the end below still records the outcome
                    logger.debug("stream %s: last flush failed: %s", self.stream_id, failure)
            await self._end(status, error)

        task = asyncio.ensure_future(finish())
        try:
            # A second cancellation (a worker shutting down) must not leave it open.
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
            if task.done() and not task.cancelled() and task.exception() is not None:
                logger.warning("stream %s: could not end it %s: %s", self.stream_id, status,
                               task.exception())
            raise
        except StreamStopped:
            self._mark_ended("INTERRUPTED")
        except Exception as failure:
            logger.warning("stream %s: could not end it %s: %s", self.stream_id, status,
                           failure)
            self._mark_ended(status)

    async def _end(self, status: str, error: str | None = None) -> None:
        try:
            data = await self.client.execute(END_STREAM, {
                "id": self.stream_id, "status": status, "error": error, "usage": self._usage},
                retry_codes=("PERSIST_FAILED",))
        except StreamStopped:
            self._mark_ended("INTERRUPTED")
            raise
        self.result = cast(StreamResult, data["endStream"])
        self._mark_ended(self.result["stream"]["status"])

    def _mark_ended(self, status: str) -> None:
        self._ended = True
        self.status = status
        self._pending.clear()
        self._tail = None

    async def _quiet_background(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
        if self._flusher is not None and not self._flusher.done():
            await asyncio.gather(self._flusher, return_exceptions=True)

    # ---- batching --------------------------------------------------------------------

    def _check(self) -> None:
        if self._ended:
            raise StreamEndedError(f"stream {self.stream_id} has ended ({self.status}); "
                                   "it takes no more writes")
        if not self._started:
            raise StreamEndedError("the stream is not open: use `async with client.stream(...)`")
        if self._failure is not None:
            self._stop_reported = self.stopped
            raise self._failure

    async def _add(self, chunk: dict[str, Any], grows: str | None = None) -> None:
        """Queue ``chunk``. An append delta (``grows`` names the prop it appends to) to
        the place the last waiting delta appends to joins that chunk instead: a run of
        tokens goes out as one chunk of the batch, so the service applies, publishes and
        stores one change where it would have handled one per token."""
        self._check()
        self._chunks += 1
        self._waiting += 1
        tail = self._tail
        place = None
        if grows is not None:
            place = (chunk["messageId"], chunk["type"], chunk.get("deltaPath"),
                     chunk.get("blockId"), chunk.get("threadId"))
        if tail is not None and place == tail[0] and grows == tail[1]:
            tail[2]["props"][grows] += chunk["props"][grows]
        else:
            chunk["chunkId"] = str(self._chunks)
            self._pending.append(chunk)
            self._tail = None if place is None else (place, grows, chunk)  # type: ignore[assignment]
        if self._waiting >= self.max_batch:
            await self.flush()
        elif self._timer is None and not self._exiting:
            self._timer = asyncio.get_running_loop().call_later(self.flush_interval,
                                                                self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._background_flush())

    async def _background_flush(self) -> None:
        try:
            await self._send(everything=False)
        except StreamStopped:
            self._stop_reported = False  # found here: the agent has not seen it
            self._interrupt_owner()
        except ChatqlError as exc:
            # Raised from the agent's next call.
            self._failure = self._failure or exc
        except Exception as exc:  # kept for the next flush; the agent sees it there
            logger.debug("stream %s: background flush failed: %s", self.stream_id, exc)

    async def flush(self) -> None:
        """Send every waiting chunk now."""
        await self._send(everything=True)

    async def _send(self, *, everything: bool) -> None:
        """Push the waiting chunks: all of them, or (the timer's flush) those that were
        waiting when it began — chunks written while that push is on the wire wait
        their own interval, so a steady writer sends one push per interval rather than
        one per round trip."""
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._failure is not None:
                self._stop_reported = self.stopped
                raise self._failure
            due = len(self._pending)
            while self._pending and (everything or due > 0):
                batch = self._pending[:MAX_PUSH if everything else min(MAX_PUSH, due)]
                # Cut: what is sent is never grown again; later calls start new chunks.
                self._tail = None
                self._waiting = len(self._pending) - len(batch)
                try:
                    await self._push(batch)
                except StreamStopped as exc:
                    self._failure = exc
                    self._pending.clear()
                    self._tail = None
                    self._stop_reported = self._in_call > 0 or not self._exiting
                    raise
                except ChatqlError:
                    # Refused whole (a chunk that cannot apply): dropped, reported.
                    del self._pending[:len(batch)]
                    raise
                del self._pending[:len(batch)]
                due -= len(batch)
            if self._pending and self._timer is None and not self._exiting:
                self._timer = asyncio.get_running_loop().call_later(self.flush_interval,
                                                                    self._on_timer)

    async def _push(self, chunks: list[dict[str, Any]]) -> None:
        # Encoded once and retried as such: a push whose answer was lost is sent again
        # with the same chunk ids, which the service recognises as already applied.
        await self.client.execute(PUSH_CHUNKS, {"id": self.stream_id, "chunks": chunks})
        self._last_push = time.monotonic()

    def _interrupt_owner(self) -> None:
        """Stop found in the background: cancel the agent's task unless it is inside a
        writer call (which raises StreamStopped itself) or already leaving the block."""
        owner = self._owner
        if owner is None or self._in_call or self._exiting or owner.done():
            return
        self._cancelled_by_stop = True
        owner.cancel(msg="chatql: the stream was stopped")

    async def _beat(self) -> None:
        interval = max(self.idle_timeout / 3, 0.05)
        while True:
            wait = self._last_push + interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            try:
                async with self._lock:
                    if self._failure is not None:
                        return
                    if time.monotonic() - self._last_push >= interval:
                        await self._push([])
            except StreamStopped as exc:
                self._failure = exc
                self._interrupt_owner()
                return
            except ChatqlError as exc:
                self._failure = self._failure or exc
                return
            except Exception as exc:  # no answer after every retry: try again later
                logger.warning("stream %s: heartbeat failed: %s", self.stream_id, exc)
                self._last_push = time.monotonic()

    async def _call(self, chunk: dict[str, Any], grows: str | None = None) -> None:
        self._in_call += 1
        try:
            await self._add(chunk, grows)
        finally:
            self._in_call -= 1

    # ---- the agent's calls -----------------------------------------------------------

    def _new_id(self, kind: str) -> str:
        self._messages += 1
        return f"{kind}.{self._messages}"

    def _place(self, chunk: dict[str, Any], block_id: str | None,
               thread_id: str | None) -> dict[str, Any]:
        if block_id is not None:
            chunk["blockId"] = block_id
        if thread_id is not None:
            chunk["threadId"] = thread_id
        return chunk

    async def _grow(self, kind: str, delta: str, message_id: str | None,
                    block_id: str | None, thread_id: str | None) -> None:
        if not isinstance(delta, str):
            raise TypeError(f"{kind} takes a string, not {type(delta).__name__}")
        self._check()
        lane = (block_id, thread_id)
        if message_id is None:
            last = self._lanes.get(lane)
            message_id = last[1] if last is not None and last[0] == kind else self._new_id(kind)
        self._lanes[lane] = (kind, message_id)
        if not delta:
            return
        chunk: dict[str, Any] = {"messageId": message_id, "type": kind, "delta": True,
                                 "props": {"content": delta}}
        if message_id not in self._seen:
            self._seen.add(message_id)
            chunk["role"] = "ASSISTANT"
        await self._call(self._place(chunk, block_id, thread_id), "content")

    async def text(self, delta: str, message_id: str | None = None,
                   block_id: str | None = None, thread_id: str | None = None) -> None:
        """Append ``delta`` to the current text message (a new one after any other call)."""
        await self._grow("text", delta, message_id, block_id, thread_id)

    async def thinking(self, delta: str, message_id: str | None = None,
                       block_id: str | None = None, thread_id: str | None = None) -> None:
        """Append ``delta`` to the current thinking (reasoning) message."""
        await self._grow("thinking", delta, message_id, block_id, thread_id)

    async def tool_call(self, call_id: str, name: str, arguments_delta: str = "",
                        block_id: str | None = None, thread_id: str | None = None, *,
                        needs_approval: bool = False, reason: str | None = None,
                        expires_in: float | None = None) -> None:
        """Start a tool call; its ``arguments`` grow with :meth:`tool_arguments`.

        ``needs_approval``: a person must approve the call before it runs. The stream
        then ends ``AWAITING_INPUT`` (leaving the block ends it so) and the service
        keeps the call as an interrupt; once it is decided, the agent loop calls the
        handler again with the decisions (``s.resume``). ``reason`` says why the agent
        asks; ``expires_in`` (seconds) is how long the person has to decide (an expired
        call counts as denied)."""
        self._check()
        if call_id in self._calls:
            raise ValueError(f"tool call {call_id!r} was already started in this stream")
        message_id = f"call.{call_id}"
        self._calls[call_id] = (block_id, thread_id, name)
        self._lanes[(block_id, thread_id)] = ("tool_call", message_id)
        self._seen.add(message_id)
        self._call_arguments[call_id] = arguments_delta
        props: dict[str, Any] = {"id": call_id, "name": name, "arguments": arguments_delta}
        if needs_approval:
            props.update(_asking(reason, expires_in))
            props["needsApproval"] = True
        await self._call(self._place({
            "messageId": message_id, "type": "tool_call", "role": "ASSISTANT",
            "props": props}, block_id, thread_id))

    @overload
    async def ask(self, prompt: str, response_schema: Mapping[str, Any] | None = None, *,
                  reason: str | None = None, expires_in: float | None = None,
                  block_id: str | None = None, thread_id: str | None = None,
                  wait: Literal[False] = False, timeout: float | None = None) -> str: ...

    @overload
    async def ask(self, prompt: str, response_schema: Mapping[str, Any] | None = None, *,
                  reason: str | None = None, expires_in: float | None = None,
                  block_id: str | None = None, thread_id: str | None = None,
                  wait: Literal[True], timeout: float | None = None) -> dict[str, Any]: ...

    async def ask(self, prompt: str, response_schema: Mapping[str, Any] | None = None, *,
                  reason: str | None = None, expires_in: float | None = None,
                  block_id: str | None = None, thread_id: str | None = None,
                  wait: bool = False, timeout: float | None = None) -> str | dict[str, Any]:
        """Ask the person a question (a ``question`` message). ``response_schema`` (a
        JSON Schema) is what an answer must satisfy; the service refuses others.

        By default the stream then ends ``AWAITING_INPUT`` and the answer comes back in
        ``s.resume`` when the agent loop resumes the chat; this returns the message's
        producer id. With ``wait=True`` (the inline form) the agent waits here, in the
        open stream, and this returns the decided interrupt as :meth:`ask_approval`
        does (the answer in ``decision.response``; ``approved: false`` when the person
        declined), after at most ``timeout`` seconds (else :class:`TimeoutError`)."""
        props: dict[str, Any] = {"prompt": prompt, **_asking(reason, expires_in)}
        if response_schema is not None:
            props["responseSchema"] = dict(response_schema)
        if not wait:
            return await self.message("question", props, block_id=block_id,
                                      thread_id=thread_id)
        self._check()
        message_id = self._new_id("question")
        # The question's id lets the kit find its interrupt among the stream's.
        props.update({"id": message_id, "inline": True})
        await self.message("question", props, message_id=message_id, block_id=block_id,
                           thread_id=thread_id)
        return await self._wait_for_decision(message_id, timeout)

    async def ask_approval(self, call_id: str, name: str | None = None,
                           arguments: str | Mapping[str, Any] | None = None, *,
                           reason: str | None = None, expires_in: float | None = None,
                           timeout: float | None = None) -> dict[str, Any]:
        """Ask the person to approve a tool call and wait for the decision here, in the
        open stream (the inline form: heartbeats keep the stream alive meanwhile; the
        wait follows the chat's events over a WebSocket, so the decision arrives as soon
        as it is made, with a safety-net read every ``DECISION_FALLBACK`` seconds).

        ``call_id`` names a call this stream started with :meth:`tool_call` (``name``
        and ``arguments`` default to what it was given), or a new call, which then needs
        ``name``. ``reason`` says why the agent asks; ``expires_in`` (seconds) is how
        long the person has. Returns the decided interrupt, as in ``s.resume``: ``state``
        ``RESOLVED`` with its ``decision`` (``approved``, ``editedArguments``,
        ``reason``, ``decidedBy``), ``EXPIRED`` (count it as denied) or ``CANCELLED``.
        ``timeout`` (seconds) bounds the wait: past it, :class:`TimeoutError` (the
        interrupt stays pending until the stream ends, which cancels it)."""
        await self._ask_about_call(call_id, name, arguments, reason, expires_in, inline=True)
        return await self._wait_for_decision(call_id, timeout)

    async def request_approval(self, call_id: str, *, reason: str | None = None,
                               expires_in: float | None = None) -> None:
        """Mark the tool call ``call_id`` this stream started as needing a person's
        approval, in the resumed form (as ``tool_call(..., needs_approval=True)`` would
        have): the stream ends ``AWAITING_INPUT`` and the decision comes back in
        ``s.resume``. For a framework that says only once its run has paused that a
        call waits for approval."""
        if call_id not in self._calls:
            raise ValueError(f"request_approval for {call_id!r}, a call this stream has not "
                             "started")
        await self._ask_about_call(call_id, None, None, reason, expires_in, inline=False)

    async def _ask_about_call(self, call_id: str, name: str | None,
                              arguments: str | Mapping[str, Any] | None, reason: str | None,
                              expires_in: float | None, *, inline: bool) -> None:
        """Write the call ``call_id`` (started, or new with ``name``) again, whole, now
        asking for approval."""
        self._check()
        started = self._calls.get(call_id)
        if started is None and name is None:
            raise ValueError(f"ask_approval for {call_id!r}, a call this stream has not "
                             "started: give its name")
        if arguments is None:
            text = self._call_arguments.get(call_id, "")
        elif isinstance(arguments, str):
            text = arguments
        else:
            text = json.dumps(dict(arguments), separators=(",", ":"))
        call_name = name if name is not None else cast(tuple[Any, Any, str], started)[2]
        block_id, thread_id = (started[0], started[1]) if started is not None else (None, None)
        self._calls[call_id] = (block_id, thread_id, call_name)
        self._call_arguments[call_id] = text
        props: dict[str, Any] = {"id": call_id, "name": call_name, "arguments": text,
                                 **_asking(reason, expires_in), "needsApproval": True}
        if inline:
            props["inline"] = True
        # Written whole (a started call's message is replaced, now asking).
        await self.message("tool_call", props, message_id=f"call.{call_id}",
                           block_id=block_id, thread_id=thread_id)

    async def _wait_for_decision(self, asked_id: str, timeout: float | None) -> dict[str, Any]:
        """Push what waits, find the interrupt the service recorded for ``asked_id`` in
        this stream and wait until it is decided, expired or cancelled.

        The wait listens rather than polls: it follows the chat's events (``chatEvents``)
        and reads the interrupt once when one says an interrupt of the chat was resolved.
        It also reads it once each time the subscription is established (a decision made
        before that is seen at once) and every ``DECISION_FALLBACK`` seconds, a safety
        net for a subscription that dropped or could not be opened."""
        self._in_call += 1
        try:
            await self.flush()
        finally:
            self._in_call -= 1
        async with asyncio.timeout(timeout):
            # Recorded by the push above: found here, with the chat's assistant (the
            # events followed are that assistant's chats).
            chat, found = await self._find_interrupt(asked_id)
            if found is not None and found["state"] != "PENDING":
                return found
            wake = asyncio.Event()
            listener = asyncio.create_task(
                self._listen_for_decisions(chat.get("assistantId"), wake),
                name=f"decisions {self.stream_id}")
            try:
                while True:
                    try:
                        async with asyncio.timeout(DECISION_FALLBACK):
                            await wake.wait()
                    except TimeoutError:
                        pass
                    wake.clear()
                    if found is None:
                        found = (await self._find_interrupt(asked_id))[1]
                    else:
                        found = cast(dict[str, Any], (await self.client.execute(
                            INTERRUPT, {"id": found["id"]}))["interrupt"])
                    if found is not None and found["state"] != "PENDING":
                        return found
            finally:
                listener.cancel()
                await asyncio.gather(listener, return_exceptions=True)

    async def _find_interrupt(self, asked_id: str
                              ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The chat (its ``assistantId``) and the interrupt this stream recorded for
        ``asked_id`` (None: not yet)."""
        data = await self.client.execute(CHAT_INTERRUPTS, {"id": self.chat_id})
        chat = data.get("chat") or {}
        found = next((interrupt for interrupt in chat.get("interrupts") or []
                      if interrupt["streamId"] == self.stream_id
                      and interrupt["toolCallId"] == asked_id), None)
        return chat, found

    async def _listen_for_decisions(self, assistant_id: str | None,
                                    wake: asyncio.Event) -> None:
        """Follow the events of the chats of ``assistant_id`` (this chat among them) and
        set ``wake`` when one may have decided the awaited interrupt — and each time the
        subscription is established. Reconnects, with backoff, until cancelled."""
        events_filter: dict[str, Any] = {"includeSubagents": True}
        if assistant_id:
            events_filter["assistantId"] = assistant_id
        delay = DECISION_RECONNECT
        while True:
            try:
                async with self.client.subscribe(CHAT_EVENTS, {"f": events_filter}) as events:
                    wake.set()  # listening now: a decision made before is read at once
                    delay = DECISION_RECONNECT
                    while True:
                        data = await events.receive()
                        if data is None:
                            break
                        event = data["chatEvents"]
                        if event["type"] == "RESYNC" or (
                                event["chatId"] == self.chat_id
                                and event["type"] in DECISION_EVENTS):
                            wake.set()
            except Exception as exc:  # lost or refused: the fallback reads meanwhile
                logger.debug("stream %s: listening for decisions failed: %s",
                             self.stream_id, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, DECISION_FALLBACK)

    async def tool_arguments(self, call_id: str, delta: str) -> None:
        """Append ``delta`` to the arguments of the tool call ``call_id``."""
        self._check()
        if call_id not in self._calls:
            raise ValueError(f"tool_arguments for {call_id!r}, a call this stream has not "
                             "started: call tool_call first")
        if not delta:
            return
        self._call_arguments[call_id] = self._call_arguments.get(call_id, "") + delta
        await self._call({"messageId": f"call.{call_id}", "type": "tool_call", "delta": True,
                          "deltaPath": "arguments", "props": {"arguments": delta}}, "arguments")

    async def tool_result(self, call_id: str, content: Any) -> None:
        """The tool's result: a ``TOOL`` message keeping the call's id."""
        self._check()
        block_id, thread_id, name = self._calls.get(call_id, (None, None, None))
        message_id = f"result.{call_id}"
        self._lanes[(block_id, thread_id)] = ("tool_result", message_id)
        props: dict[str, Any] = {"content": content, "tool_call_id": call_id}
        if name is not None:
            props["name"] = name
        self._seen.add(message_id)
        await self._call(self._place({"messageId": message_id, "type": "tool_result",
                                      "role": "TOOL", "props": props}, block_id, thread_id))

    async def message(self, type: str, props: Mapping[str, Any], role: str = "ASSISTANT",
                      message_id: str | None = None, block_id: str | None = None,
                      thread_id: str | None = None) -> str:
        """Any typed message (a second call with the same ``message_id`` replaces its type
        and props); returns its producer id."""
        self._check()
        message_id = message_id or self._new_id("message")
        self._lanes[(block_id, thread_id)] = (type, message_id)
        self._seen.add(message_id)
        await self._call(self._place({"messageId": message_id, "type": type, "role": role,
                                      "props": dict(props)}, block_id, thread_id))
        return message_id

    async def file(self, file: FileSource, *, media_type: str | None = None,
                   filename: str | None = None, block_id: str | None = None,
                   thread_id: str | None = None) -> UploadedFile:
        """Upload a file (a path, or bytes with a ``filename``) and answer with it: a
        ``file`` message with props ``{fileId, mediaType, filename}``, which people
        reading the chat may open (``Message.files``). Returns the stored file."""
        self._check()
        uploaded = await self.client.upload(file, filename=filename, media_type=media_type)
        props = {key: value for key, value in file_part(uploaded).items() if key != "type"}
        await self.message("file", props, block_id=block_id, thread_id=thread_id)
        return uploaded

    async def sources(self, sources: list[Any], block_id: str | None = None,
                      thread_id: str | None = None) -> str:
        """What the answer drew on (retrieval): a ``sources`` message."""
        return await self.message("sources", {"sources": list(sources)},
                                  block_id=block_id, thread_id=thread_id)

    async def error(self, text: str, block_id: str | None = None,
                    thread_id: str | None = None) -> str:
        """An error shown to the person (an ``error`` message; models never read it)."""
        return await self.message("error", {"content": text}, block_id=block_id,
                                  thread_id=thread_id)

    async def event(self, name: str, props: Mapping[str, Any] | None = None,
                    block_id: str | None = None, thread_id: str | None = None) -> None:
        """A producer event (``block_start``, ``message_end`` …): seen live, never stored."""
        await self._call(self._place({"type": "event", "props": {"event": name,
                                                                  **(props or {})}},
                                     block_id, thread_id))

    async def step(self, step: Mapping[str, Any]) -> None:
        """Record (or update by id) an execution step for resume (a ``StepInput``)."""
        self._check()
        self._in_call += 1
        try:
            await self.flush()
            await self.client.execute(RECORD_STEP, {"id": self.stream_id, "step": dict(step)})
        except StreamStopped as exc:
            self._failure = exc
            raise
        finally:
            self._in_call -= 1
        self._last_push = time.monotonic()

    async def set_title(self, title: str) -> bool:
        """Name the chat (its ``titleSource`` becomes ``AGENT``): the title replaces an
        automatic one (the first question's words) or an earlier one of the agent's; a
        title a person gave is never replaced. Returns whether ``title`` is the chat's
        title now. Sent at once (``setChatTitle``), apart from the stream's chunks."""
        self._check()
        title = title.strip()
        self._in_call += 1
        try:
            data = await self.client.execute(SET_CHAT_TITLE, {"c": self.chat_id, "t": title})
        finally:
            self._in_call -= 1
        chat = data["setChatTitle"]
        return bool(chat["titleSource"] == "AGENT" and chat["title"] == title)

    def usage(self, prompt_tokens: int = 0, completion_tokens: int = 0,
              model: str | None = None) -> None:
        """Model usage, sent with the end of the stream; several calls add up."""
        current = self._usage or {"promptTokens": 0, "completionTokens": 0, "model": None}
        current["promptTokens"] += int(prompt_tokens)
        current["completionTokens"] += int(completion_tokens)
        if model is not None:
            current["model"] = model
        self._usage = current
