"""The in-process broker (``memory://``): one Python process, no network.

Each chat with a stream or a subscriber has a :class:`Topic` holding the current (or
last) stream's chunks in ``seq`` order — stream_start is seq 1 and seqs have no gaps,
so the log is indexed by ``seq - 1`` — and the view a subscriber would have built
from them. The log's size is bounded by the stream buffer limit the stream service
enforces. An ended stream is kept for reconnecting subscribers until the chat's next
stream starts, or until ``retain_seconds`` pass with nobody subscribed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from store.broker import DEFAULT_QUEUE_LIMIT, Broker, SubscriberQueue
from store.errors import InvalidDelta
from store.reducer import ChunkEvent, MessageState, apply_event, snapshot_events

__all__ = ["MemoryBroker", "Topic"]

logger = logging.getLogger("chatql.broker")


def _is_stream_end(event: ChunkEvent) -> bool:
    props = event["props"]
    return event["type"] == "event" and isinstance(props, dict) and (
        props.get("event") == "stream_end")


def _as_snapshot(event: ChunkEvent, seq: int) -> ChunkEvent:
    copy = ChunkEvent(**event)
    copy["seq"] = seq
    copy["fromSeq"] = 1
    copy["snapshot"] = True
    return copy


class Topic:
    """One chat's live state: the stream log, its reduced view, its subscribers."""

    def __init__(self) -> None:
        self.stream_id: str | None = None
        self.log: list[ChunkEvent] = []
        self.view: dict[str, MessageState] = {}
        #: How much of the log the view has applied.
        self.view_upto = 0
        self.ended = False
        self.subscribers: set[SubscriberQueue] = set()
        self.expiry: asyncio.TimerHandle | None = None

    @property
    def last_seq(self) -> int:
        return self.log[-1]["seq"] if self.log else 0

    def add(self, event: ChunkEvent) -> None:
        if event["streamId"] != self.stream_id:
            self.stream_id = event["streamId"]
            self.log = []
            self.view = {}
            self.view_upto = 0
            self.ended = False
        self.log.append(event)
        if event["type"] == "event" and _is_stream_end(event):
            self.ended = True

    def _catch_up_view(self) -> None:
        # The view is brought up to date only when a snapshot is asked for: most
        # streams never have a late joiner, and then reducing every chunk a second
        # time would be wasted work (the total is the same either way).
        log, view = self.log, self.view
        for index in range(self.view_upto, len(log)):
            try:
                apply_event(view, log[index], trusted=True)
            except InvalidDelta:  # pragma: no cover - the producer side checked it
                logger.exception("published chunk does not apply to the broker's view")
        self.view_upto = len(log)

    def snapshot(self) -> list[ChunkEvent]:
        """stream_start, one chunk per message, and stream_end when the stream is over,
        every one marked ``snapshot`` and carrying the current seq (so the next live
        chunk follows the snapshot's last one without a gap) and ``fromSeq`` 1."""
        if self.stream_id is None or not self.log:
            return []
        self._catch_up_view()
        last_seq = self.last_seq
        events = [_as_snapshot(self.log[0], last_seq)]
        events.extend(snapshot_events(self.stream_id, last_seq, self.view.values()))
        if self.ended:
            events.append(_as_snapshot(self.log[-1], last_seq))
        return events

    def catch_up(self, after_seq: int | None) -> list[ChunkEvent]:
        if self.stream_id is None or not self.log:
            return []
        if after_seq is None:
            # Joining between streams: the last one is in the history already.
            return [] if self.ended else self.snapshot()
        if after_seq < 0:
            after_seq = 0
        if after_seq <= self.last_seq:
            # seq n sits at index n - 1 (see the module docstring).
            return self.log[after_seq:]
        # A seq this stream never reached belongs to an older stream.
        return [] if self.ended else self.snapshot()


class MemoryBroker(Broker):
    """Fan-out inside one process."""

    def __init__(self, *, queue_limit: int = DEFAULT_QUEUE_LIMIT,
                 retain_seconds: float = 60.0) -> None:
        self._topics: dict[str, Topic] = {}
        self._queue_limit = queue_limit
        self._retain_seconds = retain_seconds

    def topic(self, chat_id: str) -> Topic | None:
        return self._topics.get(chat_id)

    async def publish(self, chat_id: str, events: Sequence[ChunkEvent]) -> None:
        topic = self._topics.get(chat_id)
        if topic is None:
            topic = self._topics[chat_id] = Topic()
        if topic.expiry is not None:
            topic.expiry.cancel()
            topic.expiry = None
        for event in events:
            topic.add(event)
            for queue in topic.subscribers:
                queue.put(event)
        if topic.ended:
            self._schedule_expiry(chat_id, topic)

    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        topic = self._topics.get(chat_id)
        if topic is None:
            topic = self._topics[chat_id] = Topic()
        if topic.expiry is not None:
            topic.expiry.cancel()
            topic.expiry = None
        # No await between the catch-up and joining the topic: nothing can slip between.
        queue = SubscriberQueue(self._queue_limit, topic.snapshot)
        queue.extend(topic.catch_up(after_seq))
        topic.subscribers.add(queue)
        return queue

    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        queue.close()
        topic = self._topics.get(chat_id)
        if topic is None:
            return
        topic.subscribers.discard(queue)
        if not topic.subscribers and (topic.ended or topic.stream_id is None):
            self._schedule_expiry(chat_id, topic)

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

    async def close(self) -> None:
        for topic in self._topics.values():
            if topic.expiry is not None:
                topic.expiry.cancel()
            for queue in topic.subscribers:
                queue.close()
        self._topics.clear()
