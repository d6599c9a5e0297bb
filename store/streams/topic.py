"""One chat's live topic: the current (or last) stream's log, its view, its subscribers.

The log holds the stream's chunks in ``seq`` order — stream_start is seq 1 and seqs have
no gaps, so the log is indexed by ``seq - 1`` — and the view a subscriber would have
built from them, so a topic can replay exactly the chunks after a ``seq`` or hand a
snapshot of the state so far. Fan-out (:meth:`Topic.deliver`) and the subscribe steps
(:meth:`Topic.join`) are written here once; every backend feeds its topics.

Fan-out does not ride on the producer: :meth:`Topic.deliver` appends to the log and
schedules one wake-up, whatever the number of subscribers. Subscribers are cursors
into the log (:class:`store.streams.queue.SubscriberQueue`); the wake-up runs on the
event loop after the producer's step, in slices, so a producer's request (or any
other socket) is served between slices instead of after every subscriber. Readers at
the same position share one coalesced read, so their frames are serialised once.
Positions are absolute: when the chat's next stream starts, the previous stream's log
is kept (until every reader is past it, or the next stream starts), so a reader still
sending the old stream's end goes on into the new stream without a gap.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Sequence

from chatql.store.errors import InvalidDelta
from chatql.store.streams.queue import SubscriberQueue, coalesce
from chatql.store.streams.reducer import ChunkEvent, MessageState, apply_event, snapshot_events

__all__ = ["Topic"]

logger = logging.getLogger("chatql.streams")

#: Subscribers woken per event-loop step; between slices the loop serves sockets.
WAKE_SLICE = 16
# Shared coalesced reads kept (by log range); readers at one position share one.
_READS_KEPT = 16


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
        #: The backend's retention timer for an ended or empty topic (memory only).
        self.expiry: asyncio.TimerHandle | None = None
        #: Absolute position of ``log[0]``; the previous stream's log and its position.
        self.base = 0
        self.previous: list[ChunkEvent] = []
        self.previous_base = 0
        self._waiting: list[SubscriberQueue] = []
        # Readers to wake, as lists handed over whole (a publish's waiting readers,
        # readers waiting their turn), and how far into the first one the slices got.
        self._to_wake: deque[tuple[bool, list[SubscriberQueue]]] = deque()
        self._to_wake_at = 0
        self._turns: list[SubscriberQueue] = []
        self._wake_scheduled = False
        self._reads: OrderedDict[tuple[int, int], tuple[list[ChunkEvent], int]] = (
            OrderedDict())

    @property
    def end(self) -> int:
        """The absolute position after the last chunk."""
        return self.base + len(self.log)

    def read(self, cursor: int) -> tuple[list[ChunkEvent], int, int] | None:
        """The chunks from absolute position ``cursor`` on (within one stream),
        coalesced once and shared by every reader at that position; the position
        after them; how many were merged away. None when ``cursor`` is gone."""
        if cursor >= self.base:
            log, base = self.log, self.base
        elif cursor >= self.previous_base and self.previous:
            log, base = self.previous, self.previous_base
        else:
            return None
        upto = base + len(log)
        key = (cursor, upto)
        cached = self._reads.get(key)
        if cached is None:
            cached = coalesce(log[cursor - base:])
            self._reads[key] = cached
            if len(self._reads) > _READS_KEPT:
                self._reads.popitem(last=False)
        return cached[0], upto, cached[1]

    def wait(self, queue: SubscriberQueue) -> None:
        """Wake ``queue`` once the log grows."""
        self._waiting.append(queue)
        if len(self._waiting) > 2 * len(self.subscribers) + 64:
            # Readers that left (or waited twice) while nothing was published.
            self._waiting = [q for q in dict.fromkeys(self._waiting) if not q.closed]

    def turn(self, queue: SubscriberQueue) -> None:
        """``queue`` sent its share for now and has more: wake it in a later slice,
        after the readers already waiting (so one step of the event loop never
        carries every subscriber's backlog)."""
        self._turns.append(queue)
        self._schedule()

    def _schedule(self) -> None:
        if not self._wake_scheduled:
            self._wake_scheduled = True
            asyncio.get_running_loop().call_soon(self._wake)

    def _wake(self) -> None:
        """Wake the next slice of readers; schedule the next slice if any are left."""
        self._wake_scheduled = False
        if self._turns:
            self._to_wake.append((False, self._turns))
            self._turns = []
        budget = WAKE_SLICE
        while budget and self._to_wake:
            published, queues = self._to_wake[0]
            start = self._to_wake_at
            if published and start == 0 and self.previous and (
                    self.subscribers.issubset(queues)):
                # Every reader was waiting at the end of the log: none still needs
                # the previous stream's chunks.
                self.previous = []
            stop = min(len(queues), start + budget)
            for queue in queues[start:stop]:
                queue.wake()
            budget -= stop - start
            if stop == len(queues):
                self._to_wake.popleft()
                self._to_wake_at = 0
            else:
                self._to_wake_at = stop
        if self._to_wake or self._turns:
            self._schedule()

    @property
    def last_seq(self) -> int:
        return self.log[-1]["seq"] if self.log else 0

    def add(self, event: ChunkEvent) -> None:
        if event["streamId"] != self.stream_id:
            self.stream_id = event["streamId"]
            self.previous, self.previous_base = self.log, self.base
            self.base += len(self.log)
            self._reads.clear()
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

    def deliver(self, events: Sequence[ChunkEvent]) -> None:
        """Add ``events`` (in ``seq`` order) to the log and schedule one wake-up for
        the subscribers waiting for more: O(len(events)) whatever their number."""
        for event in events:
            self.add(event)
        if events and self._waiting:
            self._to_wake.append((True, self._waiting))
            self._waiting = []
            self._schedule()

    def join(self, queue_limit: int, after_seq: int | None) -> SubscriberQueue:
        """A new subscriber: its queue first holds the catch-up for ``after_seq`` (or the
        late-join snapshot when ``None``), then every chunk delivered from now on.

        Synchronous: nothing can be delivered between the catch-up and joining."""
        queue = SubscriberQueue(queue_limit, self.snapshot, self)
        queue.extend(self.catch_up(after_seq))
        self.subscribers.add(queue)
        return queue

    def leave(self, queue: SubscriberQueue) -> None:
        queue.close()
        self.subscribers.discard(queue)

    def close(self) -> None:
        for queue in self.subscribers:
            queue.close()
        self.subscribers.clear()
