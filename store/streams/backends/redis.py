"""The distributed backend (``redis://``): streams shared by every instance through Redis.

**State.** Every operation on a stream runs under a Redis lease on that stream
(``{prefix}lock:{stream_id}``), on whichever instance receives it, and the stream's
buffer (reducer state, steps, owner, status) is saved in ``{prefix}stream:{id}`` after
each operation, in ONE ``MULTI`` with the chunks it publishes, so the chunks and the
buffer never disagree. An instance reloads the buffer only when its version moved on.
One active stream per chat is a ``SET NX`` claim (``{prefix}active:{chat_id}``),
released once the stream is persisted; ``{prefix}live-streams`` indexes active streams
by their last operation for the idle sweepers of every instance; an ended stream's id
stays known (``{prefix}closed:{id}``, holding its chat) for a week.

**Fan-out.** Every chat with a stream has one Redis Stream (``{prefix}chat:{chat_id}``)
holding the current (or last) stream's chunks in ``seq`` order, one entry per chunk
with the fields ``seq`` and ``e`` (the chunk as JSON). Publishing appends with ``XADD``
in a Lua script, so a batch lands as one atomic run; a stream_start of a new stream
trims (``XTRIM MINID``) the previous stream's entries in the same script. While a
stream is live the key carries a long safety TTL; once the stream is persisted the
TTL drops to ``retain_seconds`` so reconnecting subscribers can still replay the end.
Each instance runs ONE reader task per chat however many local subscribers that chat
has: it loads the key with ``XRANGE`` into a local :class:`store.streams.topic.Topic`,
then follows it with blocking ``XREAD`` from the last entry id it saw, so nothing can
slip between the load and the live read. When the last local subscriber leaves, the
reader stops and the local copy is dropped.

The URL is ``redis://host:port/db`` with an optional ``prefix`` query parameter
(default ``chatql:``) so several deployments, or test runs, can share one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from store import jsonutil
from store.errors import Conflict, StreamActive
from store.ids import new_id
from store.messages import NewMessage
from store.records import Identity
from store.resume import StepIn
from store.streams.backends import Backend
from store.streams.buffer import StreamBuffer, StreamInfo
from store.streams.queue import DEFAULT_QUEUE_LIMIT, SubscriberQueue
from store.streams.reducer import ChunkEvent, MessageState, StreamState
from store.streams.topic import Topic

__all__ = ["DEFAULT_PREFIX", "RedisBackend", "split_prefix"]

logger = logging.getLogger("chatql.streams.redis")

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

DEFAULT_PREFIX = "chatql:"
# Entries read per blocking XREAD, and how long one blocks (ms) before looping; the
# loop only matters for noticing a dropped connection, delivery does not wait on it;
# it stays under redis-py's default 5 s socket timeout.
_READ_COUNT = 1_000
_BLOCK_MS = 1_000

# KEYS[1] the chat's stream; ARGV[1] the TTL in ms, then triples (seq, json, starts).
# A chunk that starts a new stream trims every older entry, atomically with the add.
_PUBLISH = """
local key = KEYS[1]
local last = false
for i = 2, #ARGV, 3 do
  last = redis.call('XADD', key, '*', 'seq', ARGV[i], 'e', ARGV[i + 1])
  if ARGV[i + 2] == '1' then
    redis.call('XTRIM', key, 'MINID', last)
  end
end
redis.call('PEXPIRE', key, ARGV[1])
return last
"""

# KEYS[1] the chat's stream; ARGV[1] the stream id, ARGV[2] the retain TTL in ms.
# Only the stream that was persisted is shortened: a newer one may have started.
_PERSISTED = """
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then return 0 end
local fields = first[1][2]
for i = 1, #fields, 2 do
  if fields[i] == 'e' then
    local event = cjson.decode(fields[i + 1])
    if event['streamId'] == ARGV[1] then
      redis.call('PEXPIRE', KEYS[1], ARGV[2])
      return 1
    end
  end
end
return 0
"""


def split_prefix(url: str) -> tuple[str, str]:
    """``url`` without its ``prefix`` query parameter, and that prefix."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = DEFAULT_PREFIX
    kept = []
    for name, value in query:
        if name == "prefix":
            prefix = value
        else:
            kept.append((name, value))
    return urlunsplit(parts._replace(query=urlencode(kept))), prefix


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # integers beyond 64 bits (jsonutil.dumps wrote them)
        return json.loads(raw)


def _starts_stream(event: ChunkEvent) -> bool:
    props = event["props"]
    return event["type"] == "event" and event["seq"] == 1 and isinstance(props, dict) and (
        props.get("event") == "stream_start")


class _Follower:
    """One chat's local mirror of its Redis Stream and the task that follows it."""

    def __init__(self) -> None:
        self.topic = Topic()
        self.last_id = b"0-0"
        self.ready = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None
        #: Set before the task is cancelled: redis-py may turn a cancelled blocking
        #: read into a TimeoutError, which the reader would otherwise retry.
        self.stopped = False

    def add(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        """Deliver ``entries`` to the topic (and so to its subscribers)."""
        events: list[ChunkEvent] = []
        for entry_id, fields in entries:
            self.last_id = entry_id
            event: ChunkEvent = _loads(fields[b"e"])
            # Entries written before chunks carried these fields.
            event.setdefault("fromSeq", event["seq"])
            event.setdefault("snapshot", False)
            last = events[-1] if events else (self.topic.log[-1] if self.topic.log else None)
            if last is not None and event["streamId"] == last["streamId"] and (
                    event["seq"] <= last["seq"]):
                continue  # cannot happen with one writer per seq; guards replays
            events.append(event)
        self.topic.deliver(events)


def _identity(data: dict[str, Any]) -> Identity:
    return Identity(user_id=data["user_id"], tenant_id=data["tenant_id"],
                    team_id=data["team_id"], roles=frozenset(data["roles"]))


def _identity_json(who: Identity) -> dict[str, Any]:
    return {"user_id": who.user_id, "tenant_id": who.tenant_id, "team_id": who.team_id,
            "roles": sorted(who.roles)}


def _dump(stream: StreamBuffer) -> str:
    info = stream.info
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
        "started": stream.started,
        "seq": stream.state.seq,
        "messages": [[m.id, m.type, m.role, m.props, m.block_id, m.thread_id]
                     for m in stream.state.messages.values()],
        "aliases": stream.state.aliases,
        "seen": sorted(stream.state.seen_chunks),
    })


def _rebuild(blob: dict[str, Any]) -> StreamBuffer:
    info = blob["info"]
    state = StreamState(info["id"], seq=blob["seq"])
    for mid, mtype, role, props, block_id, thread_id in blob["messages"]:
        state.messages[mid] = MessageState(mid, mtype, role, props, block_id, thread_id)
    state.aliases = dict(blob["aliases"])
    state.seen_chunks = set(blob["seen"])
    stream = StreamBuffer(
        info=StreamInfo(id=info["id"], chat_id=info["chat_id"],
                        request_id=info["request_id"], status=info["status"],
                        started_at=datetime.fromisoformat(info["started_at"])),
        owner=_identity(blob["owner"]),
        assistant_id=blob["assistant_id"],
        state=state,
        user_input=None if blob["user_input"] is None else NewMessage(**blob["user_input"]),
        started=blob["started"],
    )
    stream.allowed = {_identity(who) for who in blob["allowed"]}
    stream.steps = {step["id"]: StepIn(**step) for step in blob["steps"]}
    stream.buffered_bytes = blob["bytes"]
    stream.end_status = blob["end_status"]
    stream.end_error = blob["end_error"]
    return stream


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisBackend(Backend):
    """Stream state and fan-out shared by every instance through Redis."""

    hands_over = True

    def __init__(self, url: str, *, queue_limit: int = DEFAULT_QUEUE_LIMIT,
                 retain_seconds: float = 60.0, active_ttl_seconds: float = 86_400.0,
                 prefix: str | None = None) -> None:
        url, url_prefix = split_prefix(url)
        self.prefix = url_prefix if prefix is None else prefix
        # Readers block on their own connections; the pool grows with the chats followed.
        self.redis: aioredis.Redis = aioredis.Redis.from_url(url)
        self._queue_limit = queue_limit
        self._retain_ms = max(1, int(retain_seconds * 1000))
        self._active_ttl_ms = max(1, int(active_ttl_seconds * 1000))
        self._publish = self.redis.register_script(_PUBLISH)
        self._persisted = self.redis.register_script(_PERSISTED)
        self._unlock = self.redis.register_script(_UNLOCK)
        self._followers: dict[str, _Follower] = {}
        self._versions: dict[str, int] = {}

    def key(self, chat_id: str) -> str:
        return f"{self.prefix}chat:{chat_id}"

    def _k(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    @property
    def _live_key(self) -> str:
        return f"{self.prefix}live-streams"

    # ---- stream state ----------------------------------------------------------------

    async def claim(self, chat_id: str, stream_id: str) -> None:
        if await self.redis.exists(self._k("closed", stream_id), self._k("stream", stream_id)):
            raise Conflict(f"stream id {stream_id!r} was already used")
        if not await self.redis.set(self._k("active", chat_id), stream_id, nx=True,
                                    px=_CLAIM_TTL_MS):
            raise StreamActive(f"chat {chat_id!r} already has an active stream")

    async def unclaim(self, chat_id: str, stream_id: str) -> None:
        await self._unlock(keys=[self._k("active", chat_id)], args=[stream_id])

    async def active_stream(self, chat_id: str) -> str | None:
        raw = await self.redis.get(self._k("active", chat_id))
        return None if raw is None else _text(raw)

    @contextlib.asynccontextmanager
    async def lease(self, stream_id: str, *, wait: bool = True) -> AsyncIterator[bool]:
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

    async def load(self, stream_id: str, cached: StreamBuffer | None) -> StreamBuffer | None:
        key = self._k("stream", stream_id)
        version = await self.redis.hget(key, "v")
        if version is None:
            self._versions.pop(stream_id, None)
            return None
        if cached is not None and self._versions.get(stream_id) == int(version):
            return cached
        version, raw = await self.redis.hmget(key, ["v", "state"])
        if version is None or raw is None:
            self._versions.pop(stream_id, None)
            return None
        stream = _rebuild(jsonutil.loads(raw))
        self._versions[stream_id] = int(version)
        return stream

    async def save(self, stream: StreamBuffer, events: Sequence[ChunkEvent] = ()) -> None:
        sid = stream.info.id
        version = self._versions.get(sid, 0) + 1
        # Invalidate first: if the write fails the next operation reloads.
        self._versions.pop(sid, None)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._k("stream", sid), mapping={"v": version, "state": _dump(stream)})
            pipe.zadd(self._live_key, {sid: stream.last_push})
            pipe.persist(self._k("active", stream.info.chat_id))
            if events:
                await self._publish(keys=[self.key(stream.info.chat_id)],
                                    args=self._publish_args(events), client=pipe)
            await pipe.execute()
        self._versions[sid] = version

    async def retire(self, stream: StreamBuffer) -> None:
        sid, chat_id = stream.info.id, stream.info.chat_id
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self._k("closed", sid), chat_id, ex=_CLOSED_TTL)
            pipe.delete(self._k("stream", sid))
            pipe.zrem(self._live_key, sid)
            await pipe.execute()
        # The claim only if it is still this stream's.
        await self.unclaim(chat_id, sid)
        self._versions.pop(sid, None)
        await self._persisted(keys=[self.key(chat_id)], args=[sid, self._retain_ms])

    async def closed_chat(self, stream_id: str) -> str | None:
        raw = await self.redis.get(self._k("closed", stream_id))
        return None if raw is None else _text(raw)

    async def idle_streams(self, before: float,
                           local: Mapping[str, StreamBuffer]) -> list[str]:
        return [_text(raw) for raw in
                await self.redis.zrangebyscore(self._live_key, "-inf", before)]

    async def still_idle(self, stream_id: str, before: float,
                         local: Mapping[str, StreamBuffer]) -> bool:
        score = await self.redis.zscore(self._live_key, stream_id)
        if score is None:
            return False  # persisted meanwhile
        return float(score) <= before

    # ---- fan-out ---------------------------------------------------------------------

    @property
    def reader_count(self) -> int:
        """Upstream reader tasks running on this instance (one per followed chat)."""
        return sum(1 for f in self._followers.values()
                   if f.task is not None and not f.task.done())

    def subscriber_count(self, chat_id: str) -> int:
        follower = self._followers.get(chat_id)
        return 0 if follower is None else len(follower.topic.subscribers)

    async def publish(self, chat_id: str, events: Sequence[ChunkEvent]) -> None:
        """Append ``events`` to the chat's Redis Stream (tests and tools; the service
        publishes through :meth:`save`)."""
        if events:
            await self._publish(keys=[self.key(chat_id)], args=self._publish_args(events))

    def _publish_args(self, events: Sequence[ChunkEvent]) -> list[Any]:
        args: list[Any] = [self._active_ttl_ms]
        for event in events:
            args += [event["seq"], jsonutil.dumps(event), "1" if _starts_stream(event) else "0"]
        return args

    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        while True:
            follower = self._followers.get(chat_id)
            if follower is None:
                follower = self._followers[chat_id] = _Follower()
                follower.task = asyncio.create_task(self._follow(chat_id, follower),
                                                    name=f"chatql-redis-{chat_id}")
            await follower.ready.wait()
            if follower.error is not None:
                await self._drop(chat_id, follower)
                raise follower.error
            # While this waited for the load, every other subscriber may have come
            # and gone, taking that reader with it: then start a fresh one.
            if self._followers.get(chat_id) is follower:
                break
        return follower.topic.join(self._queue_limit, after_seq)

    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        queue.close()
        follower = self._followers.get(chat_id)
        if follower is None:
            return
        follower.topic.leave(queue)
        if not follower.topic.subscribers:
            await self._drop(chat_id, follower)

    async def _drop(self, chat_id: str, follower: _Follower) -> None:
        if self._followers.get(chat_id) is follower:
            del self._followers[chat_id]
        follower.stopped = True
        task = follower.task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self, chat_id: str, follower: _Follower) -> None:
        key = self.key(chat_id)
        try:
            # redis-py's reply types are unions of every decode mode: bytes here.
            entries: Any = await self.redis.xrange(key, "-", "+")
        except (RedisError, OSError) as error:
            follower.error = error
            follower.ready.set()
            return
        follower.add(entries)
        follower.ready.set()
        delay = 0.05
        while not follower.stopped:
            try:
                reply: Any = await self.redis.xread({key: follower.last_id}, count=_READ_COUNT,
                                               block=_BLOCK_MS)
            except (RedisError, OSError) as error:
                if follower.stopped:
                    return
                # Redis went away: keep the subscribers and catch up when it is back
                # (entries are read from the last id seen, so nothing is skipped).
                logger.warning("reading %s failed: %s", key, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            delay = 0.05
            for _name, batch in reply or ():
                follower.add(batch)

    async def close(self) -> None:
        for chat_id, follower in list(self._followers.items()):
            follower.topic.close()
            await self._drop(chat_id, follower)
        await self.redis.aclose()
