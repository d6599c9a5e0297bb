"""The memory backend's fan-out: exact replay, late-join snapshots, lossless coalescing, resync."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from chatql.store.streams import SubscriberQueue, backend_from_url
from chatql.store.streams.backends.memory import MemoryBackend
from chatql.store.streams.queue import TURN_CHUNKS
from chatql.store.streams.reducer import ChunkEvent, ChunkIn, StreamState, apply_chunks
from tests.client_reducer import client_apply
from tests.gql.wsclient import check_continuity


def start_event(stream_id: str) -> ChunkEvent:
    return ChunkEvent(streamId=stream_id, seq=1, chunkId=f"{stream_id}.1", messageId=None,
                      blockId=None, threadId=None, type="event", role=None,
                      props={"event": "stream_start"}, delta=False, deltaPath=None,
                      deltaAction=None, fromSeq=1, snapshot=False)


def end_event(stream_id: str, seq: int) -> ChunkEvent:
    event = start_event(stream_id)
    event.update(seq=seq, fromSeq=seq, chunkId=f"{stream_id}.{seq}",
                 props={"event": "stream_end", "status": "completed"})
    return event


class Producer:
    def __init__(self, stream_id: str) -> None:
        self.state = StreamState(stream_id)
        self.state.next_seq()
        numbers = itertools.count(1)
        self.ids = lambda: f"{stream_id}-m{next(numbers)}"

    def push(self, *chunks: ChunkIn) -> list[ChunkEvent]:
        return apply_chunks(self.state, chunks, make_id=self.ids).events


def text(mid: str, value: str, path: str | None = None) -> ChunkIn:
    return ChunkIn(type="text", message_id=mid, props={(path or "content"): value},
                   delta=True, delta_path=path)


def view_of(events: list[ChunkEvent]) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for event in events:
        client_apply(view, event)
    return view


async def take(queue: SubscriberQueue) -> list[ChunkEvent]:
    if not len(queue) and not queue.resync_pending:
        return []
    return await queue.get()


def test_unknown_broker_url_is_refused() -> None:
    assert isinstance(backend_from_url("memory://"), MemoryBackend)
    with pytest.raises(ValueError, match="unsupported broker"):
        backend_from_url("kafka://x")


async def test_after_seq_replays_exactly_and_none_joins_with_a_snapshot() -> None:
    broker = MemoryBackend(queue_limit=10_000)
    producer = Producer("s1")
    published = [start_event("s1")]
    published += producer.push(text("a", "x"), ChunkIn(type="tool_call", message_id="b",
                                                      props={"name": "f"}))
    published += producer.push(*(text("a", str(i)) for i in range(5)))
    await broker.publish("chat", published)
    for after in range(len(published) + 1):
        queue = await broker.subscribe("chat", after)
        got = await take(queue)
        # Coalescing may merge neighbours, but the result and the last seq are exact.
        assert view_of(got) == view_of(published[after:])
        assert (got[-1]["seq"] if got else after) == len(published)
        assert got == [] or got[0]["seq"] > after
        previous: dict[str, Any] | None = None
        for event in got:
            check_continuity(previous, dict(event), after)
            previous = dict(event)
    late = await broker.subscribe("chat")
    snapshot = await take(late)
    assert snapshot[0]["props"]["event"] == "stream_start"
    assert {e["seq"] for e in snapshot} == {len(published)}
    assert all(e["snapshot"] for e in snapshot)
    assert view_of(snapshot) == view_of(published)


async def test_after_seq_for_an_ended_stream_and_joining_between_streams() -> None:
    broker = MemoryBackend()
    producer = Producer("s1")
    events = [start_event("s1"), *producer.push(text("a", "hi"))]
    events.append(end_event("s1", 3))
    await broker.publish("chat", events)
    assert await take(await broker.subscribe("chat")) == []  # nothing live right now
    assert await take(await broker.subscribe("chat", 2)) == [events[2]]  # missed the end only
    # A new stream replaces the old one; a subscriber spans both.
    queue = await broker.subscribe("chat")
    await broker.publish("chat", [start_event("s2")])
    assert [e["streamId"] for e in await take(queue)] == ["s2"]


async def test_queued_appends_coalesce_without_loss() -> None:
    producer = Producer("s")
    queue = SubscriberQueue(100, list)
    events = producer.push(text("a", "Hel"), text("a", "lo"), text("a", "[", "args"),
                           text("a", "1]", "args"), text("b", "x"), text("a", "!"),
                           ChunkIn(type="text", message_id="a", props={"items": [1]},
                                   delta=True, delta_path="items"),
                           ChunkIn(type="text", message_id="a", props={"items": [2]},
                                   delta=True, delta_path="items"))
    queue.extend(events)
    got = await take(queue)
    assert len(got) == 5 and queue.coalesced == 3
    assert got[0]["props"] == {"content": "Hello"} and got[0]["seq"] == events[1]["seq"]
    # A merged chunk stands for every chunk merged into it: no gap for the client.
    assert got[0]["fromSeq"] == events[0]["seq"]
    previous = None
    for event in got:  # the producer's seq 1 (stream_start) is not in this queue
        check_continuity(previous, dict(event), after=1)
        previous = dict(event)
    assert previous is not None and previous["seq"] == events[-1]["seq"]
    assert got[-1]["props"] == {"items": [1, 2]}
    assert view_of(got) == view_of(events)


async def test_appends_with_extra_props_or_other_actions_are_not_merged() -> None:
    producer = Producer("s")
    queue = SubscriberQueue(100, list)
    queue.extend(producer.push(
        ChunkIn(type="text", message_id="a", props={"content": "a", "note": 1}, delta=True),
        text("a", "b"),
        ChunkIn(type="text", message_id="a", props={"content": "c"}, delta=True,
                delta_action="replace"),
        text("a", "d")))
    assert len(await take(queue)) == 4 and queue.coalesced == 0


async def test_a_hopelessly_slow_subscriber_is_resynchronised_with_a_snapshot() -> None:
    broker = MemoryBackend(queue_limit=8)
    producer = Producer("s")
    await broker.publish("chat", [start_event("s")])
    slow = await broker.subscribe("chat", 0)
    fast = await broker.subscribe("chat", 0)
    assert len(await take(fast)) == 1
    sent: list[ChunkEvent] = [start_event("s")]
    for i in range(40):
        # Different messages, so nothing coalesces: the queue must overflow.
        events = producer.push(ChunkIn(type="text", message_id=f"m{i}",
                                       props={"content": str(i)}))
        sent += events
        await broker.publish("chat", events)
        fast_items = await take(fast)
        assert len(fast_items) == 1
    assert slow.resyncs >= 1 and len(slow) == 0  # holds nothing while behind
    got = await take(slow)
    assert view_of(got) == view_of(sent)
    assert got[-1]["seq"] == sent[-1]["seq"]
    # The resync is a snapshot at the current seq; the next live chunk follows it.
    assert all(e["snapshot"] and e["fromSeq"] == 1 for e in got)
    after = producer.push(text("m0", "!"))
    await broker.publish("chat", after)
    (following,) = await take(slow)
    assert not following["snapshot"]
    check_continuity(dict(got[-1]), dict(following))


async def test_a_publish_wakes_subscribers_later_and_they_share_one_read() -> None:
    broker = MemoryBackend()
    producer = Producer("s")
    await broker.publish("chat", [start_event("s")])
    queues = [await broker.subscribe("chat", 1) for _ in range(200)]
    readers = [asyncio.create_task(queue.get()) for queue in queues]
    await asyncio.sleep(0)  # every reader is waiting now
    events = producer.push(*(text("a", str(i)) for i in range(10)))
    await broker.publish("chat", events)
    # Publishing only appended to the log: no reader has anything handed to it yet.
    assert not any(reader.done() for reader in readers)
    got = await asyncio.gather(*readers)
    # The ten appends reach every reader merged into one chunk, the SAME object for
    # all of them (so a frame is serialised once per subscription shape).
    assert all(len(batch) == 1 for batch in got)
    assert all(batch[0] is got[0][0] for batch in got)
    assert got[0][0]["props"] == {"content": "0123456789"}
    assert view_of(got[0]) == view_of(events)


async def test_other_work_runs_between_slices_of_a_large_wake_up() -> None:
    broker = MemoryBackend()
    producer = Producer("s")
    await broker.publish("chat", [start_event("s")])
    order: list[str] = []
    loop = asyncio.get_running_loop()

    async def read(queue: SubscriberQueue, index: int) -> None:
        await queue.get()
        if index == 0:
            # Like a producer's next request arriving once fan-out has begun.
            loop.call_soon(order.append, "other")
        order.append("reader")

    queues = [await broker.subscribe("chat", 1) for _ in range(2_000)]
    tasks = [asyncio.create_task(read(queue, i)) for i, queue in enumerate(queues)]
    await asyncio.sleep(0)
    await broker.publish("chat", producer.push(text("a", "x")))
    await asyncio.gather(*tasks)
    # Served long before the last of 2,000 readers, not after all of them.
    assert order.index("other") < 500


async def test_a_subscriber_behind_at_a_new_stream_gets_the_old_end_then_the_new_start(
        ) -> None:
    broker = MemoryBackend()
    producer = Producer("s1")
    await broker.publish("chat", [start_event("s1")])
    queue = await broker.subscribe("chat", 1)
    first = producer.push(text("a", "x"))
    await broker.publish("chat", [*first, end_event("s1", 3)])
    await broker.publish("chat", [start_event("s2")])
    got = await take(queue)
    assert [(e["streamId"], e["seq"]) for e in got] == [("s1", 2), ("s1", 3), ("s2", 1)]


async def test_the_previous_streams_log_is_dropped_once_every_reader_is_past_it() -> None:
    broker = MemoryBackend()
    await broker.publish("chat", [start_event("s1"), end_event("s1", 2)])
    queue = await broker.subscribe("chat", 0)
    assert len(await take(queue)) == 2
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    await broker.publish("chat", [start_event("s2")])
    assert [e["streamId"] for e in await reader] == ["s2"]
    topic = broker.topic("chat")
    assert topic is not None and topic.previous == []


async def test_readers_with_a_backlog_take_turns() -> None:
    broker = MemoryBackend()
    producer = Producer("s")
    sent = [start_event("s")]
    sent += producer.push(*(ChunkIn(type="text", message_id=f"m{i}", props={"n": i})
                            for i in range(3 * TURN_CHUNKS)))
    await broker.publish("chat", sent)
    order: list[tuple[str, int]] = []

    async def read(name: str) -> None:
        queue = await broker.subscribe("chat", 0)  # the whole backlog to send
        async for event in queue.events():
            order.append((name, event["seq"]))
            if event["seq"] == len(sent):
                return

    await asyncio.gather(read("a"), read("b"))
    # Each got everything in order, but neither sent its whole backlog in one go.
    for name in ("a", "b"):
        assert [seq for who, seq in order if who == name] == list(range(1, len(sent) + 1))
    assert order.index(("b", 1)) < order.index(("a", TURN_CHUNKS + 1))
