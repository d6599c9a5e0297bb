"""One subscriber's bounded queue of live chunks.

Each subscriber reads from its own :class:`SubscriberQueue`, which coalesces queued
string or list appends to the same message and path without loss and, past its hard
bound, drops what it queued for a fresh snapshot: a slow reader never slows the
producer or the other readers and never grows memory without bound.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from store.streams.reducer import ChunkEvent

__all__ = ["DEFAULT_QUEUE_LIMIT", "SubscriberQueue"]

#: Events a subscriber may have queued before it is resynchronised with a snapshot.
DEFAULT_QUEUE_LIMIT = 2_048


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


class SubscriberQueue:
    """One subscriber's bounded queue of chunks waiting to be sent."""

    def __init__(self, limit: int, resync: Callable[[], list[ChunkEvent]]) -> None:
        self._items: deque[ChunkEvent] = deque()
        self._ready = asyncio.Event()
        self._limit = limit
        self._resync = resync
        self.closed = False
        self._resync_pending = False
        #: How many chunks were merged into their predecessor (for tests and metrics).
        self.coalesced = 0
        #: How many times the queue overflowed and was replaced by a snapshot.
        self.resyncs = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def resync_pending(self) -> bool:
        return self._resync_pending

    def put(self, event: ChunkEvent) -> None:
        if self.closed:
            return
        if self._resync_pending:
            return  # the snapshot taken when the reader comes back includes it
        if self._items:
            merged = _coalesced(self._items[-1], event)
            if merged is not None:
                self._items[-1] = merged
                self.coalesced += 1
                self._ready.set()
                return
        self._items.append(event)
        if len(self._items) > self._limit:
            # Hopelessly behind: drop what is queued and hold nothing more; the
            # reader gets the state as a snapshot when it next asks.
            self._items.clear()
            self._resync_pending = True
            self.resyncs += 1
        self._ready.set()

    def extend(self, events: Sequence[ChunkEvent]) -> None:
        for event in events:
            self.put(event)

    async def events(self) -> AsyncIterator[ChunkEvent]:
        """Every queued chunk in order, waiting for more, until the queue is closed."""
        while True:
            try:
                batch = await self.get()
            except StopAsyncIteration:
                return
            for event in batch:
                yield event

    async def get(self) -> list[ChunkEvent]:
        """Everything queued (at least one chunk), waiting when there is nothing."""
        while True:
            if self._resync_pending:
                self._resync_pending = False
                snapshot = self._resync()
                if snapshot:
                    return snapshot
            if self._items:
                items = list(self._items)
                self._items.clear()
                return items
            if self.closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()

    def close(self) -> None:
        self.closed = True
        self._ready.set()
