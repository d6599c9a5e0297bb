"""The distributed broker (``redis://``): live streams on Redis Streams.

Every chat with a stream has one Redis Stream (``{prefix}chat:{chat_id}``) holding the
current (or last) stream's chunks in ``seq`` order, one entry per chunk with the
fields ``seq`` and ``e`` (the chunk as JSON). Publishing appends with ``XADD`` in a
Lua script, so a batch lands as one atomic run; a stream_start of a new stream trims
(``XTRIM MINID``) the previous stream's entries in the same script, so the key holds
exactly what the memory broker's topic holds. While a stream is live the key carries
a long safety TTL (a crashed producer cannot leak it forever); once the stream is
persisted (:meth:`RedisBroker.stream_persisted`) the TTL drops to ``retain_seconds``
so reconnecting subscribers can still replay the end, then Redis removes it.

Each instance runs ONE reader task per chat however many local subscribers that
chat has: on the first local subscriber it loads the key with ``XRANGE`` into a local
:class:`store.broker.memory.Topic` (late-join snapshot and ``afterSeq`` replay are then
computed exactly like in memory, from the Redis Stream's own content), then follows
it with blocking ``XREAD`` from the last entry id it saw — so nothing can slip between
the load and the live read — and fans every entry out into the subscribers'
:class:`SubscriberQueue`. When the last local subscriber leaves, the reader stops and
the local copy is dropped. The producer's own instance reads its chunks back the same
way, so every instance delivers the same order.

The URL is ``redis://host:port/db`` with an optional ``prefix`` query parameter
(default ``chatql:``) so several deployments, or test runs, can share one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from store import jsonutil
from store.broker import DEFAULT_QUEUE_LIMIT, Broker, SubscriberQueue
from store.broker.memory import Topic
from store.reducer import ChunkEvent

__all__ = ["DEFAULT_PREFIX", "RedisBroker", "split_prefix"]

logger = logging.getLogger("chatql.broker.redis")

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

    def add(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> list[ChunkEvent]:
        events = []
        for entry_id, fields in entries:
            self.last_id = entry_id
            event: ChunkEvent = _loads(fields[b"e"])
            # Entries written before chunks carried these fields.
            event.setdefault("fromSeq", event["seq"])
            event.setdefault("snapshot", False)
            if self.topic.log and event["streamId"] == self.topic.stream_id and (
                    event["seq"] <= self.topic.last_seq):
                continue  # cannot happen with one writer per seq; guards replays
            self.topic.add(event)
            events.append(event)
        return events


class RedisBroker(Broker):
    """Fan-out across instances through Redis Streams."""

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
        self._followers: dict[str, _Follower] = {}
        self._subscribers: dict[str, set[SubscriberQueue]] = {}
        self._closed = False

    def key(self, chat_id: str) -> str:
        return f"{self.prefix}chat:{chat_id}"

    @property
    def reader_count(self) -> int:
        """Upstream reader tasks running on this instance (one per followed chat)."""
        return sum(1 for f in self._followers.values()
                   if f.task is not None and not f.task.done())

    def subscriber_count(self, chat_id: str) -> int:
        """Local subscribers of ``chat_id`` (for tests and metrics)."""
        return len(self._subscribers.get(chat_id, ()))

    async def publish(self, chat_id: str, events: Sequence[ChunkEvent]) -> None:
        if not events:
            return
        await self._publish(keys=[self.key(chat_id)], args=self._publish_args(events))

    def _publish_args(self, events: Sequence[ChunkEvent]) -> list[Any]:
        args: list[Any] = [self._active_ttl_ms]
        for event in events:
            args += [event["seq"], jsonutil.dumps(event), "1" if _starts_stream(event) else "0"]
        return args

    async def publish_in(self, pipe: Any, chat_id: str, events: Sequence[ChunkEvent]) -> None:
        """Queue the publish of ``events`` in ``pipe`` (a MULTI pipeline), so it lands
        atomically with whatever else the caller queues there."""
        if events:
            await self._publish(keys=[self.key(chat_id)], args=self._publish_args(events),
                                client=pipe)

    async def stream_persisted(self, chat_id: str, stream_id: str) -> None:
        await self._persisted(keys=[self.key(chat_id)], args=[stream_id, self._retain_ms])

    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        while True:
            follower = self._followers.get(chat_id)
            if follower is None:
                follower = self._followers[chat_id] = _Follower()
                self._subscribers[chat_id] = set()
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
        topic = follower.topic
        # No await between the catch-up and joining: the reader adds nothing in between.
        queue = SubscriberQueue(self._queue_limit, topic.snapshot)
        queue.extend(topic.catch_up(after_seq))
        self._subscribers[chat_id].add(queue)
        return queue

    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        queue.close()
        subscribers = self._subscribers.get(chat_id)
        if subscribers is None:
            return
        subscribers.discard(queue)
        follower = self._followers.get(chat_id)
        if not subscribers and follower is not None:
            await self._drop(chat_id, follower)

    async def _drop(self, chat_id: str, follower: _Follower) -> None:
        if self._followers.get(chat_id) is follower:
            del self._followers[chat_id]
            self._subscribers.pop(chat_id, None)
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
            if not reply:
                continue
            for _name, batch in reply:
                events = follower.add(batch)
                for queue in self._subscribers.get(chat_id, ()):
                    queue.extend(events)

    async def close(self) -> None:
        self._closed = True
        for chat_id, follower in list(self._followers.items()):
            for queue in self._subscribers.get(chat_id, ()):
                queue.close()
            await self._drop(chat_id, follower)
        await self.redis.aclose()
