"""Fan-out to many subscribers over real WebSockets, on both backends and databases.

A few hundred ``chatStream`` subscriptions of one chat — some joined before the
stream, some late (snapshot), some resuming with ``afterSeq`` — are every one served
to the end, and each builds exactly the messages the database holds.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets

from chatql.gql.settings import Settings
from tests.client_reducer import client_apply
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import ALICE, CREATE, END, PUSH, START, Http, persisted, serve
from tests.gql.wsclient import CHAT_STREAM, check_continuity

SUBSCRIBERS = 320


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


class Reader:
    """One raw ``graphql-transport-ws`` socket with one chatStream subscription."""

    def __init__(self, ws: Any, after: int | None) -> None:
        self.ws = ws
        self.after = after
        self.chunks: list[dict[str, Any]] = []
        self.view: dict[str, Any] = {}
        self.ended = asyncio.Event()
        self.first = asyncio.Event()
        self.task = asyncio.create_task(self.read())

    @classmethod
    async def open(cls, server: str, chat: str, after: int | None = None) -> Reader:
        ws = await websockets.connect(f"ws://{server}/graphql",
                                      subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                      compression=None, max_queue=None)
        await ws.send(json.dumps({"type": "connection_init", "payload": ALICE}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
            "query": CHAT_STREAM, "variables": {"chat": chat, "after": after}}}))
        return cls(ws, after)

    async def read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if message["type"] == "ping":  # keep-alive
                continue
            assert message["type"] == "next", message
            assert not message["payload"].get("errors"), message
            chunk = message["payload"]["data"]["chatStream"]
            check_continuity(self.chunks[-1] if self.chunks else None, chunk, self.after)
            self.chunks.append(chunk)
            client_apply(self.view, chunk)
            self.first.set()
            if (chunk["props"] or {}).get("event") == "stream_end":
                self.ended.set()


async def test_hundreds_of_subscribers_are_all_served_to_the_end(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        chat = "fan"
        await http.data(CREATE, {"id": chat})
        early = await asyncio.gather(*(Reader.open(server, chat)
                                       for _ in range(SUBSCRIBERS // 2)))
        stream = (await http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        # Every early subscription is served its stream_start before anything else.
        async with asyncio.timeout(30):
            await asyncio.gather(*(r.first.wait() for r in early))
        late: list[Reader] = []
        for batch in range(10):
            chunks = [{"messageId": f"m{batch % 3}", "type": "text", "delta": True,
                       "props": {"content": f"{batch}.{i} "}} for i in range(20)]
            chunks.append({"messageId": f"tool{batch}", "type": "tool_call",
                           "props": {"name": "f", "n": batch}})
            await http.data(PUSH, {"id": stream, "chunks": chunks})
            if batch in (3, 6):
                # Late joiners (a snapshot) and resumers (the exact chunks after seq 1).
                joined = await asyncio.gather(*(Reader.open(server, chat)
                                                for _ in range(SUBSCRIBERS // 8)))
                joined += await asyncio.gather(*(Reader.open(server, chat, 1)
                                                 for _ in range(SUBSCRIBERS // 8)))
                # Joined while the stream runs (one joining after its end would
                # rightly get nothing until the chat's next stream).
                async with asyncio.timeout(30):
                    await asyncio.gather(*(r.first.wait() for r in joined))
                late += joined
        await http.data(END, {"id": stream, "status": "COMPLETED"})
        readers = [*early, *late]
        assert len(readers) == SUBSCRIBERS
        async with asyncio.timeout(60):
            await asyncio.gather(*(r.ended.wait() for r in readers))
        rows = await http.messages(chat)
        expected = persisted(rows)
        assert len(expected) == 13
        for reader in readers:
            shown = {mid: (m["type"], m["props"]) for mid, m in reader.view.items()}
            assert shown == expected
            assert reader.chunks[-1]["props"]["event"] == "stream_end"
        for reader in readers:
            await reader.ws.close()
            reader.task.cancel()


async def test_a_subscription_whose_fast_path_fails_is_still_served(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    import chatql.gql.plans.chat_stream

    async def pool_exhausted(*args: Any, **kwargs: Any) -> Any:
        raise PoolTimeout("QueuePool limit reached, connection timed out")

    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "busy"})
        monkeypatch.setattr(chatql.gql.plans.chat_stream, "get_chat", pool_exhausted)
        reader = await Reader.open(server, "busy")
        stream = (await http.data(START, {"input": {"chatId": "busy"}}))["startStream"]["id"]
        # Never left silent: the ordinary way serves it.
        async with asyncio.timeout(10):
            await reader.first.wait()
        assert reader.chunks[0]["props"]["event"] == "stream_start"
        await http.data(END, {"id": stream, "status": "COMPLETED"})
        async with asyncio.timeout(10):
            await reader.ended.wait()
        await reader.ws.close()
        reader.task.cancel()
