"""One subscriber's view of a topic's live chunks: a cursor into a shared log.

A topic keeps its stream's chunks in one append-only log (:mod:`store.streams.topic`).
Each subscriber reads through its own :class:`SubscriberQueue`, which holds only a
position in that log (plus, right after joining, its own catch-up or snapshot). A
publish appends to the log and schedules ONE wake-up for the topic, so the producer's
cost does not grow with the number of subscribers; woken readers take everything after
their cursor at once. What several readers at the same position read is coalesced once
(string or list appends to the same message and path merged without loss) and shared,
so one chunk is serialised once per subscription shape, not once per subscriber.
A reader that fell more than ``limit`` chunks behind is not sent the backlog: it gets
the state as a snapshot instead (RESYNC), so a slow reader never slows the producer or
the other readers and never holds memory of its own.
A consumer that can hand a run of chunks on synchronously (a socket whose frames are
written straight to its transport) sets a :attr:`SubscriberQueue.sink`: while its
reader waits for more, the topic's wake-up hands new chunks to the sink directly
instead of waking the reader's task.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

from chatql.store.streams.reducer import ChunkEvent

__all__ = ["DEFAULT_QUEUE_LIMIT", "DELIVERED", "DeliveryTally", "LogSource", "SubscriberQueue",
           "coalesce"]

#: Chunks a subscriber may be behind before it is resynchronised with a snapshot.
DEFAULT_QUEUE_LIMIT = 2_048
#: Chunks a reader hands on in one go before it lets the others (and the producer)
#: have a turn.
TURN_CHUNKS = 128


def _coalesced(previous: ChunkEvent, event: ChunkEvent) -> ChunkEvent | None:
    """``previous`` followed by ``event`` as one chunk, when that loses nothing."""
    if not (previous["delta"] and event["delta"]):
        return None
    if previous["deltaAction"] != "append" or event["deltaAction"] != "append":
        return None
    for key in ("streamId", "messageId", "deltaPath", "type", "role", "blockId", "threadId"):
        if previous[key] != event[key]:  # type: ignore[literal-required,unused-ignore]
            return None
    before, after = previous["props"], event["props"]
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return None
    path = event["deltaPath"]
    name = (path or "content").split(".")[-1] if path != "" else None
    # Only props that hold just the appended entry: anything else in them is shown
    # to the client as sent, and merging would change what it sees.
    if name is None or list(before) != [name] or list(after) != [name]:
        return None
    a, b = before[name], after[name]
    joined: str | list[Any]
    # Two branches so the type checker sees str + str and list + list.
    if isinstance(a, str) and isinstance(b, str):  # noqa: SIM114
        joined = a + b
    elif isinstance(a, list) and isinstance(b, list):
        joined = a + b
    else:
        return None
    merged = ChunkEvent(**event)
    merged["props"] = {name: joined}
    # It stands for every chunk merged into it, so a client's continuity check
    # (fromSeq == previous seq + 1) still holds.
    merged["fromSeq"] = previous["fromSeq"]
    return merged


def coalesce(events: Sequence[ChunkEvent]) -> tuple[list[ChunkEvent], int]:
    """``events`` with neighbouring appends merged, and how many were merged away."""
    out: list[ChunkEvent] = []
    merged_away = 0
    for event in events:
        if out:
            merged = _coalesced(out[-1], event)
            if merged is not None:
                out[-1] = merged
                merged_away += 1
                continue
        out.append(event)
    return out, merged_away


class LogSource(Protocol):
    """What a queue reads from: a topic's log, addressed by absolute positions."""

    @property
    def end(self) -> int:
        """The position after the last chunk."""

    def read(self, cursor: int) -> tuple[list[ChunkEvent], int, int] | None:
        """The (coalesced, shared) chunks from ``cursor`` on, the position after them
        and how many were merged away; None when ``cursor`` is no longer held."""

    def wait(self, queue: SubscriberQueue) -> None:
        """Wake ``queue`` (once) when the log grows."""

    def turn(self, queue: SubscriberQueue) -> None:
        """Wake ``queue`` (once) in a later slice: it has more to send."""


class DeliveryTally:
    """Chunks this process has handed to subscribers since it started (a plain count a
    metrics exporter reads by differences; counting costs one addition per run)."""

    __slots__ = ("chunks",)

    def __init__(self) -> None:
        self.chunks = 0


#: The process's one tally: every subscriber queue adds what it hands on.
DELIVERED = DeliveryTally()


class SubscriberQueue:
    """One subscriber's position in a topic's log, and its own catch-up."""

    def __init__(self, limit: int, resync: Callable[[], list[ChunkEvent]],
                 source: LogSource | None = None) -> None:
        # What this subscriber holds of its own: the catch-up or snapshot it joined
        # with (or chunks queued with put, when it follows no log).
        self._items: deque[ChunkEvent] = deque()
        self._ready = asyncio.Event()
        self._limit = limit
        self._resync = resync
        self._source = source
        self._cursor = 0 if source is None else source.end
        self.closed = False
        self._resync_pending = False
        self._coalesced = 0
        self._resyncs = 0
        self._waited = False
        #: Set by a consumer that can hand a run of chunks on at once, synchronously
        #: (a socket writing frames straight to its transport): it returns whether it
        #: did, and does nothing when it cannot.
        self.sink: Callable[[list[ChunkEvent]], bool] | None = None
        # Whether the reader's task waits in get() for more (not for its turn).
        self._idle = False

    # ---- state -------------------------------------------------------------------------

    def _lag(self) -> int:
        return 0 if self._source is None else self._source.end - self._cursor

    def _check(self) -> None:
        """Resynchronise when hopelessly behind: the backlog is skipped, a snapshot
        is taken when the reader comes back."""
        source = self._source
        if source is None or self._resync_pending or self._lag() <= self._limit:
            return
        read = source.read(self._cursor)
        if read is not None and len(self._items) + len(read[0]) <= self._limit:
            return  # what is behind coalesces to little enough: it is sent as it is
        self._overflow()

    def _overflow(self) -> None:
        self._items.clear()
        if self._source is not None:
            self._cursor = self._source.end
        self._resync_pending = True
        self._resyncs += 1

    def __len__(self) -> int:
        self._check()
        if self._resync_pending:
            return 0
        return len(self._items) + self._lag()

    @property
    def resync_pending(self) -> bool:
        self._check()
        return self._resync_pending

    @property
    def resyncs(self) -> int:
        """How many times the reader fell behind and was sent a snapshot instead."""
        self._check()
        return self._resyncs

    @property
    def coalesced(self) -> int:
        """How many chunks reached this reader merged into their predecessor."""
        return self._coalesced

    # ---- filling -------------------------------------------------------------------------

    def put(self, event: ChunkEvent) -> None:
        """Queue ``event`` for this reader alone (its catch-up)."""
        if self.closed or self._resync_pending:
            return  # the snapshot taken when the reader comes back includes it
        if self._items:
            merged = _coalesced(self._items[-1], event)
            if merged is not None:
                self._items[-1] = merged
                self._coalesced += 1
                self._ready.set()
                return
        self._items.append(event)
        if len(self._items) > self._limit:
            self._overflow()
        self._ready.set()

    def extend(self, events: Sequence[ChunkEvent]) -> None:
        for event in events:
            self.put(event)

    def wake(self) -> None:
        """The log grew (called by the topic's one wake-up).

        A reader waiting with a :attr:`sink` that takes what is new hands it on right
        here and waits again, without waking its task (most of the cost of a reader
        at thousands of subscribers); anything else — its own catch-up, a snapshot
        due, more than a turn's worth behind, a sink that cannot take it now, a task
        already woken — wakes the task, which reads the ordinary way."""
        sink, source = self.sink, self._source
        if (sink is not None and self._idle and source is not None and not self._ready.is_set()
                and not self._items and not self._resync_pending and not self.closed
                and 0 < source.end - self._cursor <= min(TURN_CHUNKS, self._limit)):
            read = source.read(self._cursor)
            if read is not None and sink(read[0]):
                DELIVERED.chunks += len(read[0])
                self._cursor = read[1]
                self._coalesced += read[2]
                if self._cursor < source.end:  # the next stream's chunks follow
                    self._ready.set()
                else:
                    source.wait(self)
                return
        self._ready.set()

    # ---- reading -------------------------------------------------------------------------

    async def events(self) -> AsyncIterator[ChunkEvent]:
        """Every chunk in order, waiting for more, until the queue is closed.

        After :data:`TURN_CHUNKS` chunks without waiting, the reader waits for its turn
        (the topic wakes readers in slices): a reader with a backlog sends it a share
        at a time instead of holding the event loop for all of it."""
        async for run in self.batches():
            for event in run:
                yield event

    async def batches(self) -> AsyncIterator[list[ChunkEvent]]:
        """What :meth:`events` yields, a run of chunks at a time (at most
        :data:`TURN_CHUNKS`), so a consumer can send a run as one write; the turns
        are the same."""
        handed = 0
        while True:
            try:
                batch = await self.get()
            except StopAsyncIteration:
                return
            if self._waited:
                handed = 0
            start = 0
            while start < len(batch):
                if handed >= TURN_CHUNKS:
                    handed = 0
                    await self._turn()
                share = TURN_CHUNKS - handed
                run = batch if start == 0 and len(batch) <= share else (
                    batch[start:start + share])
                yield run
                handed += len(run)
                start += len(run)

    async def _turn(self) -> None:
        if self._source is None or self.closed:
            return
        self._ready.clear()
        self._source.turn(self)
        await self._ready.wait()

    def _take(self) -> list[ChunkEvent]:
        """Everything available now (possibly nothing)."""
        self._check()
        if self._resync_pending:
            self._resync_pending = False
            snapshot = self._resync()
            if snapshot:
                return snapshot
        items: list[ChunkEvent] = []
        if self._items:
            items = list(self._items)
            self._items.clear()
        source = self._source
        while source is not None and self._cursor < source.end:
            read = source.read(self._cursor)
            if read is None:  # the log moved on past this reader: a snapshot
                self._overflow()
                return self._take()
            events, self._cursor, merged_away = read
            self._coalesced += merged_away
            if items and events:
                # The catch-up's last chunk may merge with the first live one.
                joined, more = coalesce([items[-1], events[0]])
                if more:
                    items[-1] = joined[0]
                    self._coalesced += 1
                    events = events[1:]
            items.extend(events)
        return items

    async def get(self) -> list[ChunkEvent]:
        """Everything available (at least one chunk), waiting when there is nothing."""
        self._waited = False
        while True:
            items = self._take()
            if items:
                DELIVERED.chunks += len(items)
                return items
            if self.closed:
                raise StopAsyncIteration
            self._ready.clear()
            if self._source is not None:
                self._source.wait(self)
            self._waited = True
            self._idle = True
            await self._ready.wait()
            self._idle = False

    def close(self) -> None:
        self.closed = True
        self._ready.set()
