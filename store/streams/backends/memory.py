"""The in-process backend (``memory://``): one Python process, no network.

The service's buffers are the state; a chat's claim is a dict entry. Each chat with a
stream or a subscriber has a :class:`store.streams.topic.Topic`; publishing delivers
straight to it. An ended stream is kept for reconnecting subscribers until the chat's
next stream starts, or until ``retain_seconds`` pass with nobody subscribed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

from chatql.store.errors import StreamActive
from chatql.store.streams.backends import Backend
from chatql.store.streams.buffer import StreamBuffer
from chatql.store.streams.queue import DEFAULT_QUEUE_LIMIT, SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent
from chatql.store.streams.topic import Topic

__all__ = ["MemoryBackend"]


class MemoryBackend(Backend):
    """State and fan-out inside one process."""

    def __init__(self, *, queue_limit: int = DEFAULT_QUEUE_LIMIT,
                 retain_seconds: float = 60.0) -> None:
        self._topics: dict[str, Topic] = {}
        self._claims: dict[str, str] = {}
        self._queue_limit = queue_limit
        self._retain_seconds = retain_seconds
        self._chat_feeds: list[asyncio.Queue[bytes | None]] = []

    # ---- stream state ----------------------------------------------------------------

    async def claim(self, chat_id: str, stream_id: str) -> None:
        if chat_id in self._claims:
            raise StreamActive(f"chat {chat_id!r} already has an active stream")
        self._claims[chat_id] = stream_id

    async def unclaim(self, chat_id: str, stream_id: str) -> None:
        if self._claims.get(chat_id) == stream_id:
            del self._claims[chat_id]

    async def active_stream(self, chat_id: str) -> str | None:
        return self._claims.get(chat_id)

    async def save(self, stream: StreamBuffer, events: Sequence[ChunkEvent] = (), *,
                   aliases: Mapping[str, str] | None = None, seen: Iterable[str] = (),
                   tokens: Mapping[str, int] | None = None, steps: bool = False) -> None:
        if events:
            await self.publish(stream.info.chat_id, events)

    async def retire(self, stream: StreamBuffer) -> None:
        await self.unclaim(stream.info.chat_id, stream.info.id)

    # ---- fan-out ---------------------------------------------------------------------

    def topic(self, chat_id: str) -> Topic | None:
        return self._topics.get(chat_id)

    def _topic(self, chat_id: str) -> Topic:
        topic = self._topics.get(chat_id)
        if topic is None:
            topic = self._topics[chat_id] = Topic()
        if topic.expiry is not None:
            topic.expiry.cancel()
            topic.expiry = None
        return topic

    async def publish(self, chat_id: str, events: Sequence[ChunkEvent]) -> None:
        """Deliver ``events`` to the chat's topic (a new stream id starts a new stream)."""
        topic = self._topic(chat_id)
        topic.deliver(events)
        if topic.ended:
            self._schedule_expiry(chat_id, topic)

    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        return self._topic(chat_id).join(self._queue_limit, after_seq)

    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        queue.close()
        topic = self._topics.get(chat_id)
        if topic is None:
            return
        topic.leave(queue)
        if not topic.subscribers and (topic.ended or topic.stream_id is None):
            self._schedule_expiry(chat_id, topic)

    def subscriber_count(self, chat_id: str) -> int:
        topic = self._topics.get(chat_id)
        return 0 if topic is None else len(topic.subscribers)

    def _schedule_expiry(self, chat_id: str, topic: Topic) -> None:
        if topic.subscribers or topic.expiry is not None:
            return

        def expire() -> None:
            topic.expiry = None
            if self._topics.get(chat_id) is topic and not topic.subscribers and (
                topic.ended or topic.stream_id is None
            ):
                del self._topics[chat_id]

        delay = self._retain_seconds if topic.stream_id is not None else 0.0
        topic.expiry = asyncio.get_running_loop().call_later(delay, expire)

    # ---- chat events -------------------------------------------------------------------

    async def publish_chat_event(self, payload: bytes) -> None:
        for feed in self._chat_feeds:
            feed.put_nowait(payload)

    async def chat_event_feed(self) -> AsyncIterator[bytes]:
        feed: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._chat_feeds.append(feed)
        return self._follow_chat_events(feed)

    async def _follow_chat_events(self, feed: asyncio.Queue[bytes | None]
                                  ) -> AsyncIterator[bytes]:
        try:
            while (payload := await feed.get()) is not None:
                yield payload
        finally:
            if feed in self._chat_feeds:
                self._chat_feeds.remove(feed)

    async def close(self) -> None:
        for feed in self._chat_feeds:
            feed.put_nowait(None)
        for topic in self._topics.values():
            if topic.expiry is not None:
                topic.expiry.cancel()
            topic.close()
        self._topics.clear()
