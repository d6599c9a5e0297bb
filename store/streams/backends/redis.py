"""The distributed backend (``redis://``): streams shared by every instance through Redis.

**State: the log and a fenced lease.** The accepted chunks in the chat's Redis Stream
are the stream's log. Every operation on a stream runs under a short lease
(``{prefix}lease:{stream_id}``, renewed while the operation runs) whose grant carries a
token that only grows (``INCR {prefix}fence:{stream_id}``). The holder keeps the
reducer state in memory; every write — a push's chunks, a step, the end — is ONE Lua
script that first checks the lease still holds the writer's token, so a holder that
stalled past its lease (stopped, paused by the garbage collector, cut off) is refused
and must reload: two instances can never both apply chunks to one stream. Besides the
chunks a push writes only its batch's new message-id aliases and chunk ids and the
buffered size, so a push costs O(its batch). An instance whose copy is not current (a
producer moving, a dead holder, the sweeper) rebuilds the state by replaying the log
through the one reducer (:func:`store.streams.reducer.apply_event`).

**A push in one round trip.** An instance whose last write to a stream is still the
stream's latest version pushes without taking the lease: the push's one script checks
that nobody holds the lease and that the state is still at the version this instance
wrote (``v:<version>`` in place of the token), and writes. If either fails nothing is
written; the service redoes the push under the lease on the rebuilt state
(:class:`store.streams.backends.StaleCopy`). Everything else — start, steps, the end
and its persist, the sweeper — runs under the lease. The stream's own
facts (starter, input message, steps, end status) sit in ``{prefix}stream:{id}``.
One active stream per chat is a ``SET NX`` claim (``{prefix}active:{chat_id}``),
released once the stream is persisted; ``{prefix}live-streams`` indexes active streams
by their last write for the idle sweepers of every instance; an ended stream's id
stays known (``{prefix}closed:{id}``, holding its chat) for a week.

**Fan-out.** Every chat with a stream has one Redis Stream (``{prefix}chat:{chat_id}``)
holding the current (or last) stream's chunks in ``seq`` order, one entry per
published batch with the fields ``seq`` (the batch's last) and ``b`` (its chunks as one
JSON array); entries with one chunk in an ``e`` field, as earlier versions wrote them,
are read too. Publishing appends with ``XADD`` in the write's Lua script, so a batch
lands atomically and costs Redis one entry however many chunks it holds; a stream_start
of a new stream trims (``XTRIM MINID``) the previous stream's entries in the same
script. While a
stream is live the key carries a long safety TTL; once the stream is persisted the
TTL drops to ``retain_seconds`` so reconnecting subscribers can still replay the end.
Each instance runs ONE reader task per chat however many local subscribers that chat
has: it loads the key with ``XRANGE`` into a local :class:`store.streams.topic.Topic`,
then follows it with blocking ``XREAD`` from the last entry id it saw, so nothing can
slip between the load and the live read. When the last local subscriber leaves, the
reader stops and the local copy is dropped.

**Chat events.** The live chat list's events are published on one pub/sub channel
(``{prefix}chat-events``); each instance follows it on one connection of its own and
re-subscribes after an outage, then yields an empty payload: events may have been
missed, so every local subscriber is sent RESYNC.

The URL is ``redis://host:port/db`` with an optional ``prefix`` query parameter
(default ``chatql:``) so several deployments, or test runs, can share one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from chatql.store import jsonutil
from chatql.store.errors import Conflict, StreamActive
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.records import Identity
from chatql.store.streams.backends import Backend, StaleCopy
from chatql.store.streams.buffer import StreamBuffer, StreamInfo
from chatql.store.streams.queue import DEFAULT_QUEUE_LIMIT, SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent, StreamState, apply_event
from chatql.store.streams.topic import Topic

__all__ = ["DEFAULT_PREFIX", "LEASE_SECONDS", "RedisBackend", "split_prefix"]

logger = logging.getLogger("chatql.streams.redis")

#: How long a lease lasts without renewal: a dead holder's stream is writable on
#: another instance this long after its last renewal (plus one retry delay).
LEASE_SECONDS = 3.0
# Waiting longer than this for a busy stream's lease is STREAM_ACTIVE.
_LEASE_WAIT = 10.0
# Ended stream ids stay known (STREAM_CLOSED rather than STREAM_NOT_FOUND) this long.
_CLOSED_TTL = 7 * 86_400
# A claim whose state was never saved (the starter died in between) frees itself.
_CLAIM_TTL_MS = 60_000

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS[1] the lease, KEYS[2] the fence counter, KEYS[3] the state hash; ARGV[1] the
# lease ms, ARGV[2] the counter's TTL in s. A new grant gets the next token; the
# reply also carries the state's version (so a current holder needs no other read).
_GRANT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, false} end
local token = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
return {token, redis.call('HGET', KEYS[3], 'v')}
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# One fenced write. KEYS: lease, state hash, aliases hash, seen set, chat stream, live
# index, chat claim. ARGV: the fence, chat TTL ms, live score, stream id, then counts
# and items: n fields (name, value)*, n aliases (producer id, service id)*, n seen ids,
# then at most one batch of chunks (last seq, JSON array, starts). The fence is
# ``t:<token>`` under a lease (the lease must still hold the token) or ``v:<version>``
# for an optimistic write (nobody may hold the lease and the state must still be at
# that version). Returns the state's new version, or an error reply 'STALE'.
_WRITE = """
local kind, fence = string.sub(ARGV[1], 1, 2), string.sub(ARGV[1], 3)
if kind == 't:' then
  if redis.call('GET', KEYS[1]) ~= fence then return redis.error_reply('STALE') end
elseif redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HGET', KEYS[2], 'v') ~= fence then
  return redis.error_reply('STALE')
end
local i = 5
local n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]); i = i + 2
end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]); i = i + 2
end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  redis.call('SADD', KEYS[4], ARGV[i]); i = i + 1
end
local last = false
while i <= #ARGV do
  last = redis.call('XADD', KEYS[5], '*', 'seq', ARGV[i], 'b', ARGV[i + 1])
  if ARGV[i + 2] == '1' then
    redis.call('XTRIM', KEYS[5], 'MINID', last)
  end
  i = i + 3
end
if last then redis.call('PEXPIRE', KEYS[5], ARGV[2]) end
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[4])
redis.call('PERSIST', KEYS[7])
return redis.call('HINCRBY', KEYS[2], 'v', 1)
"""

DEFAULT_PREFIX = "chatql:"
# Entries read per blocking XREAD, and how long one blocks (ms) before looping; the
# loop only matters for noticing a dropped connection, delivery does not wait on it;
# it stays under redis-py's default 5 s socket timeout.
_READ_COUNT = 1_000
_BLOCK_MS = 1_000

# KEYS[1] the chat's stream; ARGV[1] the stream id, ARGV[2] the retain TTL in ms.
# Only the stream that was persisted is shortened: a newer one may have started.
_PERSISTED = """
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then return 0 end
local fields = first[1][2]
for i = 1, #fields, 2 do
  local event = nil
  if fields[i] == 'b' then
    event = cjson.decode(fields[i + 1])[1]
  elseif fields[i] == 'e' then
    event = cjson.decode(fields[i + 1])
  end
  if event then
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


def _entry_events(fields: dict[bytes, bytes]) -> list[ChunkEvent]:
    """The chunks of one log entry: a batch, or one chunk as earlier versions wrote."""
    batch = fields.get(b"b")
    if batch is not None:
        events: list[ChunkEvent] = _loads(batch)
        return events
    return [_loads(fields[b"e"])]


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
            for event in _entry_events(fields):
                # Entries written before chunks carried these fields.
                event.setdefault("fromSeq", event["seq"])
                event.setdefault("snapshot", False)
                last = events[-1] if events else (
                    self.topic.log[-1] if self.topic.log else None)
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


def _meta(stream: StreamBuffer) -> str:
    info = stream.info
    return jsonutil.dumps({
        "info": {"id": info.id, "chat_id": info.chat_id, "request_id": info.request_id,
                 "started_at": info.started_at.isoformat()},
        "owner": _identity_json(stream.owner),
        "assistant_id": stream.assistant_id,
        "user_input": None if stream.user_input is None else asdict(stream.user_input),
        "started": stream.started,
        "parent_id": stream.parent_id,
    })


def _loads_field(raw: Any) -> Any:
    return _loads(raw if isinstance(raw, bytes) else str(raw).encode())


def _rebuild(stream_id: str, fields: dict[bytes, bytes], aliases: dict[bytes, bytes],
             seen: set[bytes], entries: list[tuple[bytes, dict[bytes, bytes]]]) -> StreamBuffer:
    """The stream from its facts and its log, replayed through the reducer."""
    meta = _loads_field(fields[b"meta"])
    info = meta["info"]
    state = StreamState(stream_id)
    for _entry_id, entry in entries:
        for event in _entry_events(entry):
            if event["streamId"] != stream_id:
                continue
            state.seq = event["seq"]
            apply_event(state.messages, event, trusted=True)
    state.aliases = {_text(k): _text(v) for k, v in aliases.items()}
    state.seen_chunks = {_text(c) for c in seen}
    for name, value in fields.items():
        # Token counts are kept beside the log: subscribers' chunks do not carry them.
        if name.startswith(b"t:") and (message := state.messages.get(_text(name[2:]))):
            message.tokens = int(value)
    end = _loads_field(fields[b"end"]) if b"end" in fields else None
    status = "ACTIVE" if end is None else end["status"]
    stream = StreamBuffer(
        info=StreamInfo(id=stream_id, chat_id=info["chat_id"],
                        request_id=info["request_id"], status=status,
                        started_at=datetime.fromisoformat(info["started_at"])),
        owner=_identity(meta["owner"]),
        assistant_id=meta["assistant_id"],
        state=state,
        user_input=None if meta["user_input"] is None else NewMessage(**meta["user_input"]),
        started=meta["started"],
        parent_id=meta.get("parent_id"),
    )
    stream.allowed = {stream.owner}
    if b"steps" in fields:
        stream.steps = {step["id"]: StepIn(**step) for step in _loads_field(fields[b"steps"])}
    stream.buffered_bytes = int(fields.get(b"bytes", b"0"))
    if end is not None:
        stream.end_status = end["status"]
        stream.end_error = end["error"]
    return stream


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisBackend(Backend):
    """Stream state and fan-out shared by every instance through Redis."""

    hands_over = True

    def __init__(self, url: str, *, queue_limit: int = DEFAULT_QUEUE_LIMIT,
                 retain_seconds: float = 60.0, active_ttl_seconds: float = 86_400.0,
                 lease_seconds: float = LEASE_SECONDS, prefix: str | None = None) -> None:
        url, url_prefix = split_prefix(url)
        self.prefix = url_prefix if prefix is None else prefix
        # Readers block on their own connections; the pool grows with the chats followed.
        self.redis: aioredis.Redis = aioredis.Redis.from_url(url)
        self._queue_limit = queue_limit
        self._retain_ms = max(1, int(retain_seconds * 1000))
        self._active_ttl_ms = max(1, int(active_ttl_seconds * 1000))
        self._persisted = self.redis.register_script(_PERSISTED)
        self._unlock = self.redis.register_script(_UNLOCK)
        self._grant = self.redis.register_script(_GRANT)
        self._renew_script = self.redis.register_script(_RENEW)
        self._write = self.redis.register_script(_WRITE)
        self._lease_ms = max(1, int(lease_seconds * 1000))
        self._followers: dict[str, _Follower] = {}
        self._versions: dict[str, int] = {}
        self._tokens: dict[str, int] = {}
        self._granted_version: dict[str, int | None] = {}
        # Streams in an optimistic operation (no lease taken; see :meth:`lease`).
        self._optimistic: dict[str, int] = {}
        #: Writes refused for a stale lease, and states rebuilt from the log (metrics).
        self.refused = 0
        self.rebuilds = 0
        #: Optimistic writes refused (another instance wrote or held the stream).
        self.optimistic_misses = 0

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
    async def lease(self, stream_id: str, *, wait: bool = True,
                    optimistic: bool = False) -> AsyncIterator[bool]:
        if optimistic and stream_id in self._versions and stream_id not in self._tokens:
            # This instance wrote the stream last (as far as it knows): no lease round
            # trips; the one write checks nobody wrote or holds it since. (Writes on
            # this instance are ordered by the stream's publish lock.)
            self._optimistic[stream_id] = self._optimistic.get(stream_id, 0) + 1
            try:
                yield True
            finally:
                left = self._optimistic.pop(stream_id) - 1
                if left:
                    self._optimistic[stream_id] = left
            return
        key = self._k("lease", stream_id)
        deadline = time.monotonic() + _LEASE_WAIT
        delay = 0.005
        while True:
            reply: Any = await self._grant(
                keys=[key, self._k("fence", stream_id), self._k("stream", stream_id)],
                args=[self._lease_ms, _CLOSED_TTL])
            token = int(reply[0])
            if token:
                break
            if not wait:
                yield False
                return
            if time.monotonic() > deadline:
                raise StreamActive(f"stream {stream_id!r} is busy on another instance")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        self._tokens[stream_id] = token
        self._granted_version[stream_id] = None if reply[1] is None else int(reply[1])
        renewer = asyncio.create_task(self._renew(key, token))
        try:
            yield True
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            if self._tokens.get(stream_id) == token:
                del self._tokens[stream_id]
                self._granted_version.pop(stream_id, None)
            with contextlib.suppress(RedisError, OSError):
                await self._unlock(keys=[key], args=[token])

    async def _renew(self, key: str, token: int) -> None:
        """Keep the lease while the operation runs (a long persist, say)."""
        task = asyncio.current_task()
        while True:
            await asyncio.sleep(self._lease_ms / 3000)
            try:
                renewed = await self._renew_script(keys=[key], args=[token, self._lease_ms])
            except (RedisError, OSError):
                renewed = True  # the server may be briefly away: try again next period
            # The client may swallow a cancellation that lands mid-call (answering, or
            # raising a connection error instead): a renewer that kept going would keep
            # this task, and the operation that awaits it, alive for ever.
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            if not renewed:
                return  # lost it: the next write is refused

    async def is_current(self, stream_id: str) -> bool:
        version = self._versions.get(stream_id)
        if version is None:
            return False
        raw = await self.redis.hget(self._k("stream", stream_id), "v")
        return raw is not None and int(raw) == version

    async def load(self, stream_id: str, cached: StreamBuffer | None) -> StreamBuffer | None:
        key = self._k("stream", stream_id)
        if stream_id in self._optimistic:
            if cached is None or stream_id not in self._versions:
                raise StaleCopy(stream_id)
            return cached  # checked by the write
        version: Any
        if stream_id in self._granted_version:
            # Read with the grant; nobody can write while this instance holds the lease.
            version = self._granted_version.pop(stream_id)
        else:
            version = await self.redis.hget(key, "v")
        if version is None:
            self._versions.pop(stream_id, None)
            return None
        if cached is not None and self._versions.get(stream_id) == int(version):
            return cached
        # Not current (another instance wrote, or this one never held it): rebuild
        # from the log. Under the lease nothing changes meanwhile.
        fields: Any = await self.redis.hgetall(key)
        if b"meta" not in fields:
            return None
        chat_id = _loads_field(fields[b"meta"])["info"]["chat_id"]
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._k("aliases", stream_id))
            pipe.smembers(self._k("seen", stream_id))
            pipe.xrange(self.key(chat_id), "-", "+")
            aliases, seen, entries = await pipe.execute()
        stream = _rebuild(stream_id, fields, aliases, seen, entries)
        self._versions[stream_id] = int(fields[b"v"])
        self.rebuilds += 1
        return stream

    async def save(self, stream: StreamBuffer, events: Sequence[ChunkEvent] = (), *,
                   aliases: Mapping[str, str] | None = None, seen: Iterable[str] = (),
                   tokens: Mapping[str, int] | None = None, steps: bool = False) -> None:
        sid, chat_id = stream.info.id, stream.info.chat_id
        optimistic = sid in self._optimistic
        if optimistic:
            expected = self._versions.get(sid)
            if expected is None:
                raise StaleCopy(sid)
            fence = f"v:{expected}"
        else:
            token = self._tokens.get(sid)
            if token is None:  # pragma: no cover - every caller holds the lease
                raise RuntimeError(f"saving stream {sid!r} without its lease")
            fence = f"t:{token}"
        fields: list[Any] = ["bytes", stream.buffered_bytes]
        if events and events[0]["seq"] == 1:
            fields += ["meta", _meta(stream)]
        for message_id, count in (tokens or {}).items():
            fields += [f"t:{message_id}", count]
        if steps:
            fields += ["steps", jsonutil.dumps([asdict(s) for s in stream.steps.values()])]
        if stream.end_status is not None:
            fields += ["end", jsonutil.dumps({"status": stream.end_status,
                                              "error": stream.end_error})]
        args: list[Any] = [fence, self._active_ttl_ms, stream.last_push, sid, len(fields) // 2,
                           *fields]
        pairs = list((aliases or {}).items())
        args.append(len(pairs))
        for producer_id, service_id in pairs:
            args += [producer_id, service_id]
        ids = list(seen)
        args += [len(ids), *ids]
        if events:
            # One log entry for the whole batch; only a batch's first chunk can start a
            # stream (stream_start is seq 1, pushed on its own).
            args += [events[-1]["seq"], jsonutil.dumps(events),
                     "1" if _starts_stream(events[0]) else "0"]
        # Invalidate first: if the write fails (or is refused) the next operation reloads.
        self._versions.pop(sid, None)
        try:
            version = await self._write(
                keys=[self._k("lease", sid), self._k("stream", sid), self._k("aliases", sid),
                      self._k("seen", sid), self.key(chat_id), self._live_key,
                      self._k("active", chat_id)],
                args=args)
        except ResponseError as error:
            if "STALE" not in str(error):
                raise
            if optimistic:
                self.optimistic_misses += 1
                raise StaleCopy(sid) from None
            self.refused += 1
            raise StreamActive(
                f"stream {sid!r} moved to another instance while this one stalled; retry"
            ) from None
        self._versions[sid] = int(version)

    async def retire(self, stream: StreamBuffer) -> None:
        sid, chat_id = stream.info.id, stream.info.chat_id
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self._k("closed", sid), chat_id, ex=_CLOSED_TTL)
            pipe.delete(self._k("stream", sid), self._k("aliases", sid), self._k("seen", sid))
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

    # ---- chat events -------------------------------------------------------------------

    @property
    def _chat_events_channel(self) -> str:
        return f"{self.prefix}chat-events"

    async def publish_chat_event(self, payload: bytes) -> None:
        await self.redis.publish(self._chat_events_channel, payload)

    async def chat_event_feed(self) -> AsyncIterator[bytes]:
        pubsub = await self._chat_events_subscription()
        return self._follow_chat_events(pubsub)

    async def _chat_events_subscription(self) -> Any:
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(self._chat_events_channel)
        # The confirmation: from here on every publish reaches this instance.
        await pubsub.get_message(timeout=5.0)
        return pubsub

    async def _follow_chat_events(self, pubsub: Any) -> AsyncIterator[bytes]:
        delay = 0.05
        try:
            while True:
                try:
                    message = await pubsub.get_message(timeout=30.0)
                except (RedisError, OSError) as error:
                    logger.warning("chat events: lost Redis (%s); following again", error)
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 2.0)
                    with contextlib.suppress(RedisError, OSError):
                        pubsub = await self._chat_events_subscription()
                        yield b""  # followed again: whatever came meanwhile is lost
                    continue
                delay = 0.05
                if message is not None and message.get("type") == "message":
                    yield message["data"]
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def reachable(self) -> bool:
        try:
            async with asyncio.timeout(2.0):
                return bool(await self.redis.ping())
        except Exception:  # any failure to answer is "not reachable"
            return False

    async def close(self) -> None:
        for chat_id, follower in list(self._followers.items()):
            follower.topic.close()
            await self._drop(chat_id, follower)
        await self.redis.aclose()
