"""Live streams across two real instances sharing one database and Redis.

Two uvicorn servers on different ports, each with its own StreamService and a
``redis://`` broker on the same Redis key prefix: the producer talks to A while
subscribers on A and B, a late joiner on B and a reconnect with ``afterSeq`` on B all
end with exactly the messages the database holds. Runs on both database backends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest

from chatql.gql.settings import Settings
from tests.gql.test_streams_ws import (
    ALICE,
    CREATE,
    END,
    PUSH,
    START,
    Http,
    delta,
    persisted,
    serve,
    shown,
)
from tests.gql.wsclient import ChunkView, connect


@pytest.fixture
def shared(settings: Settings, redis_url: str) -> Settings:
    """Settings both instances use: the test's database and the run's Redis prefix."""
    return dataclasses.replace(settings, broker_url=redis_url)


async def subscribed(app: Any, chat: str, count: int) -> None:
    """Wait until ``count`` subscriptions of ``chat`` reached this instance's broker."""
    for _ in range(500):
        if app.state.services.streams.backend.subscriber_count(chat) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the subscriptions never arrived")


async def test_producer_on_a_subscribers_on_both_late_join_and_reconnect_on_b(
        shared: Settings) -> None:
    chat = f"x-{uuid.uuid4().hex[:10]}"
    protocol = "graphql-transport-ws"
    async with serve(shared) as (a, app_a), serve(shared) as (b, app_b), \
            connect(a, protocol, ALICE) as producer, \
            connect(a, protocol, ALICE) as on_a_socket, \
            connect(b, protocol, ALICE) as on_b_socket:
        await producer.execute(CREATE, {"id": chat})
        on_a = await ChunkView.open(on_a_socket, chat)
        on_b = await ChunkView.open(on_b_socket, chat)
        await subscribed(app_a, chat, 1)
        await subscribed(app_b, chat, 1)
        started = await producer.execute(START, {"input": {
            "chatId": chat, "requestId": "req", "assistantId": "bot",
            "input": {"role": "USER", "type": "user_input", "props": {"content": "hi"}}}})
        sid = started["startStream"]["id"]
        assert (await on_b.until_event("stream_start"))["streamId"] == sid

        async def push(*chunks: dict[str, Any]) -> int:
            result = await producer.execute(PUSH, {"id": sid, "chunks": list(chunks)})
            return int(result["pushChunks"]["lastSeq"])

        await push(delta("think", "Let me ", kind="thinking"),
                   delta("think", "look.", kind="thinking"))
        last = await push(delta("t1", "Sunny"), delta("t2", "Also"))
        await on_b.until_seq(last)
        # A late joiner on B gets a snapshot built from the Redis Stream.
        async with connect(b, protocol, ALICE) as late_socket:
            late = await ChunkView.open(late_socket, chat)
            assert (await late.next())["props"]["event"] == "stream_start"
            snapshot = [await late.next() for _ in range(3)]
            assert {c["seq"] for c in snapshot} == {last}
            assert not any(c["delta"] for c in snapshot)
            dropped_at = late.last_seq
            kept = dict(late.messages)
        await push(delta("t1", " in Oslo"), delta("t2", " no rain"),
                   delta("t1", "."), delta("t2", "!"))
        # Reconnect on B with afterSeq: exactly the chunks after it, none twice.
        async with connect(b, protocol, ALICE) as back_socket:
            back = await ChunkView.open(back_socket, chat, after=dropped_at)
            back.messages.update(kept)
            await back.until_seq(dropped_at + 4)
            assert [c["seq"] for c in back.chunks] == list(
                range(dropped_at + 1, dropped_at + 5))
            ended = await producer.execute(END, {"id": sid, "status": "COMPLETED"})
            await back.until_event("stream_end")
        await on_a.until_event("stream_end")
        await on_b.until_event("stream_end")
        # Both instances' single reader per chat served every local subscriber.
        assert app_b.state.services.streams.backend.reader_count <= 1
        rows = await Http(b).messages(chat)
        assert [m["id"] for m in rows] == [m["id"] for m in ended["endStream"]["messages"]]
        stored = persisted(rows)
        assert stored == {m["id"]: (m["type"], m["props"]) for m in rows[1:]}
        assert [m["type"] for m in rows] == ["user_input", "thinking", "text", "text"]
        for name, view in (("on A", on_a), ("on B", on_b), ("back on B", back)):
            assert shown(view) == stored, (name, view.chunks)
