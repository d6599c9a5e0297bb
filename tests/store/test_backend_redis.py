"""The Redis backend's fan-out: the memory backend's guarantees, across instances.

Each ``RedisBackend`` here stands for one chatql instance; two of them on the same
Redis (and key prefix) are two instances sharing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from chatql.store.errors import StreamActive
from chatql.store.records import Identity
from chatql.store.streams import SubscriberQueue, backend_from_url
from chatql.store.streams.backends.redis import RedisBackend, split_prefix
from chatql.store.streams.buffer import StreamBuffer, StreamInfo
from chatql.store.streams.reducer import ChunkEvent, ChunkIn, StreamState
from tests.store.test_backend_memory import Producer, end_event, start_event, text, view_of


@pytest.fixture
async def make_broker(redis_url: str) -> AsyncIterator[Callable[..., RedisBackend]]:
    made: list[RedisBackend] = []

    def make(**options: Any) -> RedisBackend:
        broker = RedisBackend(redis_url, **options)
        made.append(broker)
        return broker

    yield make
    for broker in made:
        await broker.close()


@pytest.fixture
def chat() -> str:
    return f"chat-{uuid.uuid4().hex[:10]}"


async def publish(broker: RedisBackend, chat: str, events: Sequence[ChunkEvent]) -> None:
    """Publish ``events`` the one way the backend offers: a fenced save under each
    stream's lease, as the service does."""
    for stream_id, group in itertools.groupby(events, key=lambda event: event["streamId"]):
        async with broker.lease(stream_id):
            await broker.save(buffer_of(chat, stream_id), list(group))


async def until(queue: SubscriberQueue, seq: int, stream_id: str | None = None
                ) -> list[ChunkEvent]:
    """Everything the queue delivers up to and including ``seq`` (of ``stream_id``)."""
    got: list[ChunkEvent] = []
    async with asyncio.timeout(5):
        while not got or got[-1]["seq"] < seq or (
                stream_id is not None and got[-1]["streamId"] != stream_id):
            got += await queue.get()
    return got


async def queued(queue: SubscriberQueue) -> list[ChunkEvent]:
    """What the queue holds right now, without waiting."""
    if not len(queue) and not queue.resync_pending:
        return []
    return await queue.get()


def test_redis_urls_pick_the_redis_broker_and_keep_the_prefix_out_of_the_url() -> None:
    assert split_prefix("redis://h:1/2?prefix=x:&socket_timeout=3") == (
        "redis://h:1/2?socket_timeout=3", "x:")
    assert split_prefix("redis://h:1/0")[1] == "chatql:"
    broker = backend_from_url("redis://127.0.0.1:1/0?prefix=p:")
    assert isinstance(broker, RedisBackend) and broker.key("c") == "p:chat:c"


async def test_after_seq_replays_exactly_and_none_joins_with_a_snapshot(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    publisher, broker = make_broker(), make_broker(queue_limit=10_000)
    producer = Producer("s1")
    published = [start_event("s1")]
    published += producer.push(text("a", "x"), ChunkIn(type="tool_call", message_id="b",
                                                      props={"name": "f"}))
    published += producer.push(*(text("a", str(i)) for i in range(5)))
    await publish(publisher, chat, published)
    for after in range(len(published) + 1):
        queue = await broker.subscribe(chat, after)
        got = await queued(queue)
        assert view_of(got) == view_of(published[after:])
        assert (got[-1]["seq"] if got else after) == len(published)
        assert got == [] or got[0]["seq"] > after
    assert broker.reader_count == 1  # however many subscribers
    late = await make_broker().subscribe(chat)
    snapshot = await queued(late)
    assert snapshot[0]["props"]["event"] == "stream_start"
    assert {e["seq"] for e in snapshot[1:]} == {len(published)}
    assert view_of(snapshot) == view_of(published)


async def test_live_chunks_reach_subscribers_on_every_instance_in_order(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    a, b = make_broker(), make_broker()
    producer = Producer("s1")
    await publish(a, chat, [start_event("s1")])
    on_a = await a.subscribe(chat, 0)
    on_b = [await b.subscribe(chat, 0) for _ in range(3)]
    assert (a.reader_count, b.reader_count) == (1, 1)
    sent = [start_event("s1")]
    for i in range(30):
        events = producer.push(ChunkIn(type="text", message_id=f"m{i % 4}",
                                       props={"content": str(i)}, delta=True))
        sent += events
        await publish(a, chat, events)
    last = sent[-1]["seq"]
    for queue in (on_a, *on_b):
        got = await until(queue, last)
        seqs = [e["seq"] for e in got]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert view_of(got) == view_of(sent)
    # A reconnect on B with afterSeq replays exactly what it missed.
    again = await b.subscribe(chat, 10)
    assert view_of(await queued(again)) == view_of(sent[10:])
    # The last local subscriber leaving stops that instance's reader.
    for queue in (*on_b, again):
        await b.unsubscribe(chat, queue)
    assert b.reader_count == 0 and a.reader_count == 1


async def test_after_seq_for_an_ended_stream_and_joining_between_streams(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    publisher = make_broker()
    producer = Producer("s1")
    events = [start_event("s1"), *producer.push(text("a", "hi"))]
    events.append(end_event("s1", 3))
    await publish(publisher, chat, events)
    broker = make_broker()
    assert await queued(await broker.subscribe(chat)) == []  # nothing live right now
    assert await queued(await broker.subscribe(chat, 2)) == [events[2]]  # missed the end
    # A new stream replaces the old one (in Redis too); a subscriber spans both.
    queue = await broker.subscribe(chat)
    await publish(publisher, chat, [start_event("s2")])
    assert [e["streamId"] for e in await until(queue, 1, "s2")] == ["s2"]
    assert await publisher.redis.xlen(publisher.key(chat)) == 1


def buffer_of(chat: str, stream_id: str) -> StreamBuffer:
    info = StreamInfo(id=stream_id, chat_id=chat, request_id=None, status="COMPLETED",
                      started_at=datetime.now(UTC))
    return StreamBuffer(info=info, owner=Identity(user_id="u", tenant_id="t"),
                        assistant_id=None, state=StreamState(stream_id), user_input=None)


async def test_a_persisted_stream_is_trimmed_after_the_retention(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    broker = make_broker(retain_seconds=0.2)
    key = broker.key(chat)
    await publish(broker, chat, [start_event("s1"), end_event("s1", 2)])
    assert await broker.redis.pttl(key) > 60_000  # the long safety TTL while live
    await broker.retire(buffer_of(chat, "other-stream"))  # not this chat's stream: kept
    assert await broker.redis.pttl(key) > 60_000
    await broker.retire(buffer_of(chat, "s1"))
    assert 0 < await broker.redis.pttl(key) <= 200
    await asyncio.sleep(0.4)
    assert await broker.redis.exists(key) == 0


async def test_a_hopelessly_slow_subscriber_is_resynchronised_with_a_snapshot(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    publisher, broker = make_broker(), make_broker(queue_limit=8)
    producer = Producer("s")
    await publish(publisher, chat, [start_event("s")])
    slow = await broker.subscribe(chat, 0)
    fast = await broker.subscribe(chat, 0)
    assert len(await queued(fast)) == 1
    sent: list[ChunkEvent] = [start_event("s")]
    for i in range(40):
        events = producer.push(ChunkIn(type="text", message_id=f"m{i}",
                                       props={"content": str(i)}))
        sent += events
        await publish(publisher, chat, events)
        assert [e["seq"] for e in await until(fast, events[-1]["seq"])] == [events[-1]["seq"]]
    assert slow.resyncs >= 1 and len(slow) == 0
    got = await slow.get()
    assert view_of(got) == view_of(sent)
    assert got[-1]["seq"] == sent[-1]["seq"]


async def test_a_subscriber_whose_reader_left_while_loading_gets_a_fresh_one(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    broker = make_broker()
    await publish(broker, chat, [start_event("s")])

    async def come_and_go() -> None:
        # Leaves in the same step it joined: the reader stops before the other
        # subscriber, woken by the same load, runs.
        await broker.unsubscribe(chat, await broker.subscribe(chat, 0))

    gone = asyncio.create_task(come_and_go())
    second = asyncio.create_task(broker.subscribe(chat, 0))
    await gone
    queue = await second
    assert broker.subscriber_count(chat) == 1 and broker.reader_count == 1
    assert [e["seq"] for e in await queued(queue)] == [1]
    await publish(broker, chat, Producer("s").push(text("a", "x")))
    assert [e["seq"] for e in await until(queue, 2)] == [2]


async def test_a_stale_lease_holder_publishes_nothing(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    """Chunks reach a chat's log only through the fenced write: once another instance
    holds the stream, a late write of the old holder is refused and adds nothing."""
    a, b = make_broker(), make_broker()
    await publish(a, chat, [start_event("s")])
    queue = await b.subscribe(chat, 0)
    assert [e["seq"] for e in await until(queue, 1)] == [1]
    # Both number their chunk 2: A's is the one B's takeover made stale.
    late, taken = Producer("s").push(text("m", "late")), Producer("s").push(text("m", "b"))
    async with a.lease("s"):
        # A stalls past its lease (the key expires); B takes the stream over.
        await a.redis.delete(a._k("lease", "s"))
        async with b.lease("s"):
            await b.save(buffer_of(chat, "s"), taken)
        with pytest.raises(StreamActive):
            await a.save(buffer_of(chat, "s"), late)
    assert a.refused == 1
    entries = await a.redis.xrange(a.key(chat), "-", "+")
    assert [int(fields[b"seq"]) for _, fields in entries] == [1, 2]
    got = await until(queue, taken[-1]["seq"])
    assert view_of(got) == view_of(taken)


async def test_a_batch_is_one_log_entry_and_single_chunk_entries_still_replay(
        make_broker: Callable[..., RedisBackend], chat: str) -> None:
    """A push of many chunks costs Redis one entry; a log whose entries hold one chunk
    each (as earlier versions wrote it) is read, followed and rebuilt the same way."""
    import orjson

    from chatql.store.streams.backends.redis import _rebuild

    a, b = make_broker(), make_broker()
    producer = Producer("s1")
    first = [start_event("s1")]
    batch = producer.push(*[text(f"m{i % 3}", f"part {i} ") for i in range(50)])
    await publish(a, chat, first)
    await publish(a, chat, batch)
    assert await a.redis.xlen(a.key(chat)) == 2
    queue = await b.subscribe(chat, 0)
    assert view_of(await until(queue, batch[-1]["seq"])) == view_of(first + batch)

    # The same log written one chunk per entry in the older shape.
    old_chat = f"{chat}-old"
    for event in first + batch:
        await a.redis.xadd(a.key(old_chat), {"seq": event["seq"],
                                             "e": orjson.dumps(event)})
    follower = await b.subscribe(old_chat, 0)
    got = await until(follower, batch[-1]["seq"])
    assert view_of(got) == view_of(first + batch)
    later = producer.push(text("m0", "more"))
    await publish(a, old_chat, later)  # new entries follow old ones in one log
    await publish(a, chat, later)
    got += await until(follower, later[-1]["seq"])
    assert view_of(got) == view_of(first + batch + later)
    for key in (a.key(chat), a.key(old_chat)):
        entries = await a.redis.xrange(key, "-", "+")
        meta = {b"meta": orjson.dumps({
            "info": {"id": "s1", "chat_id": chat, "request_id": None,
                     "started_at": datetime.now(UTC).isoformat()},
            "owner": {"user_id": "u", "tenant_id": "t", "team_id": None, "roles": []},
            "assistant_id": None, "user_input": None, "started": True})}
        rebuilt = _rebuild("s1", meta, {}, set(), entries)
        assert rebuilt.state.messages == producer.state.messages
        assert rebuilt.state.seq == producer.state.seq


async def test_a_lease_ends_when_its_renewal_is_cancelled_mid_call(
        make_broker: Callable[..., RedisBackend]) -> None:
    """A cancellation that reaches the renewal inside a Redis call, and that the client
    turns into a connection error, still ends the renewal: the operation holding the lease
    finishes instead of waiting for it for ever."""
    broker = make_broker(lease_seconds=0.03)
    entered = asyncio.Event()

    async def cancelled_into_an_error(**_: Any) -> int:
        entered.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise ConnectionError("connection closed by the cancellation") from None
        return 1

    broker._renew_script = cancelled_into_an_error  # type: ignore[assignment]
    stream_id = f"s-{uuid.uuid4().hex[:8]}"

    async def hold() -> None:
        async with broker.lease(stream_id):
            await entered.wait()  # the renewal is inside its Redis call

    holder = asyncio.create_task(hold())
    done, _ = await asyncio.wait({holder}, timeout=5)
    assert done == {holder}, "the lease never ended: its renewal swallowed the cancellation"
    holder.result()


async def test_a_lease_ends_when_the_client_swallows_the_renewals_cancellation(
        make_broker: Callable[..., RedisBackend]) -> None:
    """The same cancellation, swallowed by the client, which answers the call as if
    nothing happened: the renewal still stops (seen as a server that never shut down,
    its request waiting on a renewer that kept renewing)."""
    broker = make_broker(lease_seconds=0.03)
    entered = asyncio.Event()

    async def cancellation_swallowed(**_: Any) -> int:
        entered.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(10)
        return 1

    broker._renew_script = cancellation_swallowed  # type: ignore[assignment]
    stream_id = f"s-{uuid.uuid4().hex[:8]}"

    async def hold() -> None:
        async with broker.lease(stream_id):
            await entered.wait()

    holder = asyncio.create_task(hold())
    done, _ = await asyncio.wait({holder}, timeout=5)
    assert done == {holder}, "the lease never ended: its renewal swallowed the cancellation"
    holder.result()
