"""Stream buffers shared through Redis, so any instance can serve a stream's producer.

:class:`SharedStreamService` is the :class:`store.streams.StreamService` used with the
``redis://`` broker. Every stream's buffer (reducer state, steps, owner, status) is
saved in Redis after each operation and every operation on a stream runs under a
Redis lease lock on that stream, on whichever instance receives it:

- the lock serialises ``pushChunks``/``recordStep``/``stopStream``/``endStream`` of a
  stream across instances, so seq allocation and chunk-id dedupe are exactly the
  in-memory ones, applied to the latest saved state (an instance reloads the state
  only when its version moved on; consecutive pushes to one instance do not reload);
- the new state and the published chunks are written in ONE ``MULTI`` (state hash,
  the broker's XADD script, the live-streams index), so the Redis Stream and the
  buffer never disagree, even when the instance dies right after;
- one active stream per chat is a ``SET NX`` claim on the chat, released once the
  stream is persisted;
- a sweeper on every instance ends streams whose last operation is older than the
  idle timeout (on any instance: an orphan of a SIGKILLed one) as ``INTERRUPTED`` and
  persists them under the stream's lock; the database append receipt (append id =
  stream id) makes the persist exactly-once even if a lease ever expired mid-write.

Cost: each operation saves the whole buffer (JSON), so a push costs O(buffer) in
Redis mode; ``memory://`` keeps the in-process path untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from store import jsonutil
from store.broker.redis import RedisBroker
from store.database import Database
from store.errors import (
    ChatqlError,
    Conflict,
    InvalidArgument,
    PersistFailed,
    StreamActive,
    StreamClosed,
    StreamNotFound,
)
from store.ids import check_chat_id, new_id
from store.messages import NewMessage
from store.records import Identity
from store.reducer import ChunkEvent, ChunkIn, MessageState, StreamState
from store.resume import StepIn
from store.streams import PushResult, StreamInfo, StreamResult, StreamService, _Stream
from store.usage import UsageIn

__all__ = ["SharedStreamService", "stream_service_for"]

logger = logging.getLogger("chatql.streams.shared")

# A lease outlives any single operation but frees a dead instance's lock soon.
_LEASE_MS = 30_000
_LOCK_WAIT = 10.0
# Ended stream ids stay known (STREAM_CLOSED rather than STREAM_NOT_FOUND) this long.
_CLOSED_TTL = 7 * 86_400
# A claim whose state was never saved (the starter died in between) frees itself.
_CLAIM_TTL_MS = 60_000

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _identity(data: dict[str, Any]) -> Identity:
    return Identity(user_id=data["user_id"], tenant_id=data["tenant_id"],
                    team_id=data["team_id"], roles=frozenset(data["roles"]))


def _identity_json(who: Identity) -> dict[str, Any]:
    return {"user_id": who.user_id, "tenant_id": who.tenant_id, "team_id": who.team_id,
            "roles": sorted(who.roles)}


class SharedStreamService(StreamService):
    """Stream buffers in Redis: any instance may receive any producer call."""

    def __init__(self, db: Database, broker: RedisBroker, **options: Any) -> None:
        super().__init__(db, broker, **options)
        self.shared = broker
        self.redis = broker.redis
        self._unlock = self.redis.register_script(_UNLOCK)
        self._versions: dict[str, int] = {}
        self._wall_started: dict[str, float] = {}

    # ---- keys ----------------------------------------------------------------------

    def _k(self, kind: str, name: str) -> str:
        return f"{self.shared.prefix}{kind}:{name}"

    @property
    def _live_key(self) -> str:
        return f"{self.shared.prefix}live-streams"

    # ---- state ---------------------------------------------------------------------

    def _dump(self, stream: _Stream) -> str:
        info = stream.info
        now = time.time()
        return jsonutil.dumps({
            "info": {"id": info.id, "chat_id": info.chat_id, "request_id": info.request_id,
                     "status": info.status, "started_at": info.started_at.isoformat()},
            "owner": _identity_json(stream.owner),
            "allowed": [_identity_json(who) for who in stream.allowed],
            "assistant_id": stream.assistant_id,
            "user_input": None if stream.user_input is None else asdict(stream.user_input),
            "steps": [asdict(step) for step in stream.steps.values()],
            "bytes": stream.buffered_bytes,
            "end_status": stream.end_status,
            "end_error": stream.end_error,
            "started": self._wall_started.get(info.id, now),
            "seq": stream.state.seq,
            "messages": [[m.id, m.type, m.role, m.props, m.block_id, m.thread_id, m.tokens]
                         for m in stream.state.messages.values()],
            "usage": None if stream.usage is None else asdict(stream.usage),
            "parent_id": stream.parent_id,
            "aliases": stream.state.aliases,
            "seen": sorted(stream.state.seen_chunks),
        })

    def _rebuild(self, blob: dict[str, Any]) -> _Stream:
        info = blob["info"]
        state = StreamState(info["id"], seq=blob["seq"])
        for mid, mtype, role, props, block_id, thread_id, *rest in blob["messages"]:
            state.messages[mid] = MessageState(mid, mtype, role, props, block_id, thread_id,
                                               rest[0] if rest else None)
        state.aliases = dict(blob["aliases"])
        state.seen_chunks = set(blob["seen"])
        clock = time.monotonic()
        started = clock - max(0.0, time.time() - blob["started"])
        self._wall_started[info["id"]] = blob["started"]
        stream = _Stream(
            info=StreamInfo(id=info["id"], chat_id=info["chat_id"],
                            request_id=info["request_id"], status=info["status"],
                            started_at=datetime.fromisoformat(info["started_at"])),
            owner=_identity(blob["owner"]),
            assistant_id=blob["assistant_id"],
            state=state,
            user_input=None if blob["user_input"] is None else NewMessage(**blob["user_input"]),
            started=started,
            last_push=clock,
        )
        stream.allowed = {_identity(who) for who in blob["allowed"]}
        stream.steps = {step["id"]: StepIn(**step) for step in blob["steps"]}
        stream.buffered_bytes = blob["bytes"]
        stream.end_status = blob["end_status"]
        stream.end_error = blob["end_error"]
        usage = blob.get("usage")
        stream.usage = None if usage is None else UsageIn(**usage)
        stream.parent_id = blob.get("parent_id")
        return stream

    def _drop_local(self, stream_id: str) -> None:
        stream = self._streams.pop(stream_id, None)
        self._versions.pop(stream_id, None)
        self._wall_started.pop(stream_id, None)
        if stream is not None and self._by_chat.get(stream.info.chat_id) == stream_id:
            del self._by_chat[stream.info.chat_id]

    async def _load(self, stream_id: str) -> _Stream | None:
        """The stream's latest saved state (the local copy when it is current)."""
        key = self._k("stream", stream_id)
        version = await self.redis.hget(key, "v")
        if version is None:
            self._drop_local(stream_id)
            return None
        local = self._streams.get(stream_id)
        if local is not None and self._versions.get(stream_id) == int(version):
            return local
        version, raw = await self.redis.hmget(key, ["v", "state"])
        if version is None or raw is None:
            self._drop_local(stream_id)
            return None
        stream = self._rebuild(jsonutil.loads(raw))
        self._streams[stream_id] = stream
        self._by_chat[stream.info.chat_id] = stream_id
        self._versions[stream_id] = int(version)
        return stream

    async def _save(self, stream: _Stream, events: Sequence[ChunkEvent] = ()) -> None:
        """Save the buffer and publish ``events`` in one MULTI."""
        sid = stream.info.id
        version = self._versions.get(sid, 0) + 1
        # Invalidate first: if the write fails the next operation reloads.
        self._versions.pop(sid, None)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._k("stream", sid), mapping={"v": version, "state": self._dump(stream)})
            pipe.zadd(self._live_key, {sid: time.time()})
            pipe.persist(self._k("active", stream.info.chat_id))
            await self.shared.publish_in(pipe, stream.info.chat_id, events)
            await pipe.execute()
        self._versions[sid] = version

    async def _publish(self, stream: _Stream, events: list[ChunkEvent]) -> None:
        await self._save(stream, events)

    @contextlib.asynccontextmanager
    async def _locked(self, stream_id: str, *, wait: bool = True) -> AsyncIterator[bool]:
        key = self._k("lock", stream_id)
        token = new_id()
        deadline = time.monotonic() + _LOCK_WAIT
        delay = 0.001
        while not await self.redis.set(key, token, nx=True, px=_LEASE_MS):
            if not wait:
                yield False
                return
            if time.monotonic() > deadline:
                raise StreamActive(f"stream {stream_id!r} is busy on another instance")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield True
        finally:
            await self._unlock(keys=[key], args=[token])

    async def _closed_or_missing(self, stream_id: str) -> ChatqlError:
        if stream_id in self._closed or await self.redis.exists(self._k("closed", stream_id)):
            return StreamClosed(f"stream {stream_id!r} has ended")
        return StreamNotFound(f"stream {stream_id!r} not found")

    async def _persisted(self, stream: _Stream) -> None:
        await self._retire(stream)
        await super()._persisted(stream)

    async def _retire(self, stream: _Stream) -> None:
        """Forget the stream in Redis: written, or never writable (chat gone)."""
        sid, chat_id = stream.info.id, stream.info.chat_id
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self._k("closed", sid), 1, ex=_CLOSED_TTL)
            pipe.delete(self._k("stream", sid))
            pipe.zrem(self._live_key, sid)
            await pipe.execute()
        # The claim only if it is still this stream's.
        await self._unlock(keys=[self._k("active", chat_id)], args=[sid])
        self._versions.pop(sid, None)
        self._wall_started.pop(sid, None)

    # ---- producer operations -----------------------------------------------------------

    async def start_stream(self, who: Identity, chat_id: str, *,
                           stream_id: str | None = None, **options: Any) -> StreamInfo:
        check_chat_id(chat_id)
        if stream_id is not None and not 1 <= len(stream_id) <= 128:
            raise InvalidArgument("streamId must be 1-128 characters")
        stream_id = stream_id or new_id()
        if await self.redis.exists(self._k("closed", stream_id), self._k("stream", stream_id)):
            raise Conflict(f"stream id {stream_id!r} was already used")
        active = self._k("active", chat_id)
        if not await self.redis.set(active, stream_id, nx=True, px=_CLAIM_TTL_MS):
            raise StreamActive(f"chat {chat_id!r} already has an active stream")
        # The claim is ours: anything this instance still holds for the chat is stale.
        stale = self._by_chat.get(chat_id)
        if stale is not None and stale != stream_id:
            self._drop_local(stale)
        self._wall_started[stream_id] = time.time()
        try:
            async with self._locked(stream_id):
                return await super().start_stream(who, chat_id, stream_id=stream_id, **options)
        except BaseException:
            self._drop_local(stream_id)
            await self._unlock(keys=[active], args=[stream_id])
            raise

    async def push_chunks(self, who: Identity, stream_id: str,
                          chunks: Sequence[ChunkIn]) -> PushResult:
        async with self._locked(stream_id):
            if await self._load(stream_id) is None:
                raise await self._closed_or_missing(stream_id)
            return await super().push_chunks(who, stream_id, chunks)

    async def record_step(self, who: Identity, stream_id: str, step: StepIn) -> bool:
        async with self._locked(stream_id):
            stream = await self._load(stream_id)
            if stream is None:
                raise await self._closed_or_missing(stream_id)
            recorded = await super().record_step(who, stream_id, step)
            await self._save(stream)
            return recorded

    async def end_stream(self, who: Identity, stream_id: str, status: str,
                         error: str | None = None,
                         usage: UsageIn | None = None) -> StreamResult:
        async with self._locked(stream_id):
            await self._load(stream_id)
            return await super().end_stream(who, stream_id, status, error, usage)

    async def stop_stream(self, who: Identity, chat_id: str) -> bool:
        check_chat_id(chat_id)
        raw = await self.redis.get(self._k("active", chat_id))
        if raw is None:
            stale = self._by_chat.get(chat_id)
            if stale is not None:
                self._drop_local(stale)
            return await super().stop_stream(who, chat_id)
        stream_id = raw.decode() if isinstance(raw, bytes) else str(raw)
        async with self._locked(stream_id):
            await self._load(stream_id)
            return await super().stop_stream(who, chat_id)

    # ---- orphans and shutdown ------------------------------------------------------------

    async def sweep(self) -> int:
        """End and persist every stream idle past the timeout, on any instance; returns
        how many this instance took (each under its lock: one instance per stream)."""
        before = time.time() - self.idle_timeout
        taken = 0
        for raw in await self.redis.zrangebyscore(self._live_key, "-inf", before):
            stream_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            async with self._locked(stream_id, wait=False) as mine:
                if not mine:
                    continue
                score = await self.redis.zscore(self._live_key, stream_id)
                if score is None or score > before:
                    continue  # persisted or pushed to meanwhile
                stream = await self._load(stream_id)
                if stream is None:
                    await self.redis.zrem(self._live_key, stream_id)
                    continue
                taken += 1
                try:
                    await self._finish(stream, "the producer went silent")
                except PersistFailed as error:
                    logger.warning("orphaned stream %s: %s", stream_id, error)
                except ChatqlError as error:
                    # The chat went away: nothing can ever be written.
                    logger.warning("orphaned stream %s dropped: %s", stream_id, error)
                    await self._retire(stream)
        return taken

    async def _watch_idle(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 5.0))
        while True:
            try:
                await self.sweep()
            except Exception as error:  # Redis down: try again next round
                logger.warning("sweeping idle streams failed: %s", error)
            await asyncio.sleep(interval)

    async def close(self) -> None:
        """Shutdown: active streams are NOT ended here, unlike in memory: their buffers
        are in Redis and their producers may carry on with another instance (if none
        does, a sweeper ends them after the idle timeout). Ended streams whose write
        is pending get a last attempt, under their locks."""
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
                async with self._locked(stream_id, wait=False) as mine:
                    stream = await self._load(stream_id) if mine else None
                    if stream is not None and stream.end_status is not None:
                        await self._persist(stream)
            except Exception as error:  # the sweepers of other instances finish it
                logger.warning("stream %s left to the sweepers: %s", stream_id, error)


def stream_service_for(db: Database, broker: Any, **options: Any) -> StreamService:
    """The stream service for ``broker``: shared buffers on Redis, in-process otherwise."""
    if isinstance(broker, RedisBroker):
        return SharedStreamService(db, broker, **options)
    return StreamService(db, broker, **options)
