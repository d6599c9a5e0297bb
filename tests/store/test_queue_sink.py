"""A subscriber queue's sink: chunks handed on in the topic's wake-up, never out of order.

A reader waiting for more with a sink is written to from the wake-up itself; a reader
that is still sending a backlog (waiting for its turn) or cannot take the chunks now is
woken as before, and every chunk arrives once, in ``seq`` order, either way.
"""

from __future__ import annotations

import asyncio

from chatql.store.streams.queue import TURN_CHUNKS
from chatql.store.streams.reducer import ChunkEvent
from chatql.store.streams.topic import Topic


def chunk(seq: int) -> ChunkEvent:
    return ChunkEvent(streamId="s", seq=seq, chunkId=f"s.{seq}", messageId=f"m{seq}",
                      blockId=None, threadId=None, type="text", role="assistant",
                      props={"content": str(seq)}, delta=False, deltaPath=None,
                      deltaAction=None, fromSeq=seq, snapshot=False)


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def test_a_waiting_reader_is_handed_chunks_without_waking_its_task() -> None:
    topic = Topic()
    topic.deliver([chunk(1)])
    queue = topic.join(2_048, 1)
    sunk: list[int] = []
    sent: list[int] = []
    queue.sink = lambda run: sunk.extend(e["seq"] for e in run) or True

    async def reader() -> None:
        async for run in queue.batches():
            sent.extend(e["seq"] for e in run)

    task = asyncio.create_task(reader())
    await settle()
    for seq in range(2, 12, 2):
        topic.deliver([chunk(seq), chunk(seq + 1)])
        await settle()
    assert sunk == list(range(2, 12)) and sent == []
    queue.close()
    await task


async def test_a_reader_sending_its_backlog_is_never_overtaken_by_the_sink() -> None:
    topic = Topic()
    topic.deliver([chunk(1)])
    queue = topic.join(10_000, 1)
    arrived: list[int] = []
    queue.sink = lambda run: arrived.extend(e["seq"] for e in run) or True
    turns = 0

    async def reader() -> None:
        nonlocal turns
        async for run in queue.batches():
            arrived.extend(e["seq"] for e in run)
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(reader())
    await settle()
    # More than a turn's worth at once: the task is woken and sends it a turn at a time.
    backlog = 3 * TURN_CHUNKS
    topic.deliver([chunk(seq) for seq in range(2, 2 + backlog)])
    seq = 2 + backlog
    for _ in range(40):  # meanwhile, small publishes while the task waits for turns
        topic.deliver([chunk(seq)])
        seq += 1
        await asyncio.sleep(0)
    await settle()
    assert turns >= 3
    assert arrived == list(range(2, seq))
    queue.close()
    await task


async def test_a_sink_that_cannot_take_the_chunks_wakes_the_reader() -> None:
    topic = Topic()
    topic.deliver([chunk(1)])
    queue = topic.join(2_048, 1)
    queue.sink = lambda run: False
    sent: list[int] = []

    async def reader() -> None:
        async for run in queue.batches():
            sent.extend(e["seq"] for e in run)

    task = asyncio.create_task(reader())
    await settle()
    topic.deliver([chunk(2), chunk(3)])
    await settle()
    assert sent == [2, 3]
    queue.close()
    await task
