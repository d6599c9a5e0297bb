"""The stream service directly, on every backend (memory, redis) and both databases."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy import func, select, update

from chatql.store.chats.chat import create_chat
from chatql.store.db.database import Database
from chatql.store.db.rows import COPY_THRESHOLD
from chatql.store.db.tables import append_receipts, messages
from chatql.store.errors import StreamActive, StreamClosed
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.records import Identity
from chatql.store.streams import StreamService, backend_from_url, persist
from chatql.store.streams.backends.redis import RedisBackend, split_prefix
from chatql.store.streams.reducer import ChunkIn
from tests.client_reducer import client_apply

AGENT = Identity(user_id="agent", tenant_id="acme", roles=frozenset({"agent"}))


def text(mid: str, value: str, chunk_id: str | None = None) -> ChunkIn:
    return ChunkIn(type="text", message_id=mid, chunk_id=chunk_id,
                   props={"content": value}, delta=True)


@pytest.fixture(params=["memory", "redis"])
def broker_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
async def services(db: Database, broker_url: str) -> AsyncIterator[
        Callable[[], StreamService]]:
    made: list[StreamService] = []

    def make() -> StreamService:
        service = StreamService(db, backend_from_url(broker_url), idle_timeout=0)
        made.append(service)
        return service

    yield make
    for service in made:
        await service.close()


async def new_chat(db: Database) -> str:
    chat = f"svc-{uuid.uuid4().hex[:10]}"
    await create_chat(db, AGENT, id=chat, assistant_id="bot")
    return chat


async def drain(queue: Any, until_seq: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while not got or got[-1]["seq"] < until_seq:
        got.extend(await asyncio.wait_for(queue.get(), 10))
    return got


async def test_start_push_step_end_and_subscribe_through_the_one_service(
        db: Database, services: Callable[[], StreamService]) -> None:
    service = services()
    chat = await new_chat(db)
    queue = await service.subscribe(chat)
    info = await service.start_stream(
        AGENT, chat, request_id="r1",
        user_input=NewMessage(role="USER", type="user_input", props={"text": "hi"}))
    first = await service.push_chunks(AGENT, info.id, [text("m", "Hel", "c1"), text("m", "lo")])
    again = await service.push_chunks(AGENT, info.id, [text("m", "Hel", "c1")])
    assert (first.accepted, first.last_seq, again.duplicates, again.last_seq) == (2, 3, 1, 3)
    assert await service.record_step(AGENT, info.id, StepIn(id="s1", type="llm",
                                                             status="running"))
    result = await service.end_stream(AGENT, info.id, "INTERRUPTED")
    assert [m.type for m in result.messages] == ["user_input", "text"]
    assert result.messages[1].props == {"content": "Hello"}
    assert [r.status for r in result.resume] == ["interrupted"]
    seen = await drain(queue, 4)
    view: dict[str, Any] = {}
    for event in seen:
        client_apply(view, event)
    assert [v["props"] for v in view.values()] == [{"content": "Hello"}]
    assert seen[-1]["props"]["event"] == "stream_end"
    await service.unsubscribe(chat, queue)
    with pytest.raises(StreamClosed):
        await service.push_chunks(AGENT, info.id, [text("m", "late")])


async def test_one_active_stream_per_chat_across_services(
        db: Database, services: Callable[[], StreamService], broker_url: str) -> None:
    one, two = services(), services()
    chat = await new_chat(db)
    info = await one.start_stream(AGENT, chat)
    # Another service on the same backend URL: Redis shares the claim, memory does not
    # share anything (one process, one service).
    if broker_url.startswith("redis"):
        with pytest.raises(StreamActive):
            await two.start_stream(AGENT, chat)
        await two.push_chunks(AGENT, info.id, [text("m", "from two")])
    with pytest.raises(StreamActive):
        await one.start_stream(AGENT, chat)
    await one.end_stream(AGENT, info.id, "COMPLETED")
    await one.start_stream(AGENT, chat)


async def test_redis_pushes_save_only_the_batch_and_a_stale_holder_is_refused(
        db: Database, redis_url: str) -> None:
    a = StreamService(db, backend_from_url(redis_url), idle_timeout=0)
    b = StreamService(db, backend_from_url(redis_url), idle_timeout=0)
    backend_a, backend_b = a.backend, b.backend
    assert isinstance(backend_a, RedisBackend) and isinstance(backend_b, RedisBackend)
    _, prefix = split_prefix(redis_url)
    try:
        chat = await new_chat(db)
        info = await a.start_stream(AGENT, chat)
        for i in range(20):
            await a.push_chunks(AGENT, info.id, [text("m", f"{i} ")])
        # The holder kept its state: nothing was rebuilt, and the shared state holds
        # no copy of the messages (the log is the chunks).
        assert backend_a.rebuilds == 0
        fields = await backend_a.redis.hkeys(f"{prefix}stream:{info.id}")
        assert {f.decode() for f in fields} == {"v", "meta", "bytes"}
        # B takes the stream over: it rebuilds from the log and numbers on.
        pushed = await b.push_chunks(AGENT, info.id, [text("m", "B")])
        assert (pushed.last_seq, backend_b.rebuilds) == (22, 1)
        # A stalls inside an operation past its lease; B is granted a newer token and
        # writes; A's write is then refused and A reloads.
        async with backend_a.lease(info.id):
            stream = await a._load(info.id)
            assert stream is not None
            await backend_a.redis.delete(f"{prefix}lease:{info.id}")
            await b.push_chunks(AGENT, info.id, [text("m", "C")])
            with pytest.raises(StreamActive):
                await backend_a.save(stream, [])
        assert backend_a.refused == 1
        after = await a.push_chunks(AGENT, info.id, [text("m", "D")])
        assert after.last_seq == 24
        result = await a.end_stream(AGENT, info.id, "COMPLETED")
        expected = "".join(f"{i} " for i in range(20)) + "BCD"
        assert [m.props for m in result.messages] == [{"content": expected}]
    finally:
        await a.close()
        await b.close()


async def test_redis_push_on_a_current_copy_is_one_round_trip_and_a_stale_one_is_redone(
        db: Database, redis_url: str) -> None:
    a = StreamService(db, backend_from_url(redis_url), idle_timeout=0)
    b = StreamService(db, backend_from_url(redis_url), idle_timeout=0)
    backend_a = a.backend
    assert isinstance(backend_a, RedisBackend)
    commands: list[str] = []
    original = backend_a.redis.execute_command

    async def counted(*args: Any, **options: Any) -> Any:
        commands.append(str(args[0]))
        return await original(*args, **options)

    try:
        chat = await new_chat(db)
        info = await a.start_stream(AGENT, chat)
        await a.push_chunks(AGENT, info.id, [text("m", "0 ")])
        backend_a.redis.execute_command = counted  # type: ignore[method-assign]
        for i in range(1, 6):
            await a.push_chunks(AGENT, info.id, [text("m", f"{i} "), text("n", f"{i}")])
        # The holder's copy is current: each push is its one fenced write, nothing else.
        assert commands == ["EVALSHA"] * 5
        # Another instance writes; A's next push finds its copy stale, writes nothing
        # optimistically and is redone on the current state.
        await b.push_chunks(AGENT, info.id, [text("m", "B ")])
        pushed = await a.push_chunks(AGENT, info.id, [text("m", "A")])
        assert pushed.last_seq == 14 and backend_a.optimistic_misses == 1
        # Chunks seen only by the other instance are duplicates here too.
        again = await a.push_chunks(AGENT, info.id, [
            ChunkIn(type="text", message_id="m", props={"content": "x"}, delta=True,
                    chunk_id="once")])
        assert again.accepted == 1
        await b.push_chunks(AGENT, info.id, [
            ChunkIn(type="text", message_id="m", props={"content": "x"}, delta=True,
                    chunk_id="twice")])
        dup = await a.push_chunks(AGENT, info.id, [
            ChunkIn(type="text", message_id="m", props={"content": "x"}, delta=True,
                    chunk_id="twice")])
        assert (dup.accepted, dup.duplicates, dup.last_seq) == (0, 1, 16)
        result = await a.end_stream(AGENT, info.id, "COMPLETED")
        contents = {m.props["content"] for m in result.messages}
        assert contents == {"0 1 2 3 4 5 B Axx", "12345"}
    finally:
        backend_a.redis.execute_command = original  # type: ignore[method-assign]
        await a.close()
        await b.close()


def test_a_batch_counts_against_the_buffer_as_its_chunks_do_one_by_one() -> None:
    import orjson

    from chatql.store.streams.service import _byte_size

    def one(chunk: ChunkIn) -> int:
        size = 160 + len(chunk.type)
        if chunk.props:
            try:
                size += len(orjson.dumps(chunk.props))
            except TypeError:
                size += len(repr(chunk.props))
        return size

    batch = [ChunkIn(type="text", props={"content": "héllo", "n": [1, {"a": None}]}),
             ChunkIn(type="event"), ChunkIn(type="t", props={}),
             ChunkIn(type="text", props={"content": "x"}, delta=True)]
    assert _byte_size(batch) == sum(map(one, batch))
    assert _byte_size([]) == 0
    huge = [*batch, ChunkIn(type="text", props={"n": 2**70})]
    assert _byte_size(huge) == sum(map(one, huge))


async def test_a_stream_receipt_names_its_sequences_and_a_retry_reads_the_same_result(
        db: Database, services: Callable[[], StreamService]) -> None:
    """The persist's receipt holds no list of ids; a retried write (an answer lost
    after the commit) and a restart both answer with exactly what was written — the
    empty stream after a full one too, whose range must not name the one before."""
    service = services()
    chat = await new_chat(db)
    many = COPY_THRESHOLD + 5  # COPY on Postgres
    full = await service.start_stream(
        AGENT, chat, request_id="r1",
        user_input=NewMessage(role="USER", type="user_input", props={"text": "hi"}))
    await service.push_chunks(AGENT, full.id, [text(f"m{n}", f"part {n}")
                                               for n in range(many)])
    await service.record_step(AGENT, full.id, StepIn(id="s1", type="llm"))
    full_buffer = service.buffered(full.id)
    written = await service.end_stream(AGENT, full.id, "INTERRUPTED")
    empty = await service.start_stream(AGENT, chat, request_id="r2")
    empty_buffer = service.buffered(empty.id)
    nothing = await service.end_stream(AGENT, empty.id, "COMPLETED")
    assert len(written.messages) == many + 1
    # The stream that wrote nothing answers with the note that says so.
    assert [(m.type, m.role, m.status) for m in nothing.messages] == [
        ("error", "ASSISTANT", "COMPLETED")]
    assert full_buffer is not None and empty_buffer is not None

    async with db.read() as conn:
        receipts = {row.append_id: row for row in (await conn.execute(
            select(append_receipts).where(append_receipts.c.chat_id == chat))).all()}
    assert receipts[full.id].message_ids is None
    assert (receipts[full.id].first_sequence, receipts[full.id].last_sequence) == (
        written.messages[0].sequence, written.messages[-1].sequence)
    assert (receipts[empty.id].first_sequence, receipts[empty.id].last_sequence) == (
        nothing.messages[0].sequence, nothing.messages[0].sequence)

    for stream, result in ((full_buffer, written), (empty_buffer, nothing)):
        again = await persist.write(db, stream)
        assert (again.messages, again.resume) == (result.messages, result.resume)
        assert again.stream.status == result.stream.status
        restarted = await persist.stored_result(db, AGENT, stream.info.id)
        assert restarted is not None
        assert (restarted.messages, restarted.resume) == (result.messages, result.resume)
    async with db.read() as conn:
        count = await conn.scalar(select(func.count()).select_from(messages)
                                  .where(messages.c.chat_id == chat))
    assert count == many + 1 + 1  # and the empty stream's note


async def test_a_receipt_that_lists_its_ids_still_answers(
        db: Database, services: Callable[[], StreamService]) -> None:
    """Receipts written before streams stored their sequence range list the ids."""
    service = services()
    chat = await new_chat(db)
    info = await service.start_stream(AGENT, chat, request_id="r1")
    await service.push_chunks(AGENT, info.id, [text("a", "one"), text("b", "two")])
    await service.record_step(AGENT, info.id, StepIn(id="s1", type="llm"))
    result = await service.end_stream(AGENT, info.id, "FAILED")
    async with db.write() as conn:
        await conn.execute(
            update(append_receipts).where(append_receipts.c.append_id == info.id)
            .values(message_ids=[m.id for m in result.messages]))
    restarted = await persist.stored_result(db, AGENT, info.id)
    assert restarted is not None
    assert (restarted.messages, restarted.resume) == (result.messages, result.resume)
    assert (restarted.stream.status, restarted.stream.request_id) == ("FAILED", "r1")
