"""The agent loop's waits and walks end even when the service answers unexpectedly.

No live server: the HTTP side is a scripted transport answering each kit document, the
WebSocket side (where needed) a small graphql-transport-ws server of the test's own.

- counting a question's answers stops at a page that brings nothing new (a page walk
  that asked for the same page for ever once hung a test until pytest-timeout);
- ``ChatqlClient.chats`` stops likewise at a cursor it already followed;
- the WebSocket handshake has one deadline, however many pings come before the ack;
- a cancelled loop waits ``shutdown_timeout`` at most for its streams' ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from chatql_client import AgentLoop, ChatqlClient, StreamWriter, agent_loop, documents
from chatql_client.types import Message
from websockets.asyncio.server import ServerConnection, serve
from websockets.typing import Subprotocol

Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

QUESTION = {"id": "q", "role": "USER", "sequence": 10}


class Service(httpx.AsyncBaseTransport):
    """Answers each kit document (by its constant's name) with ``answers[name]``."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.names = {text: name for name, text in vars(documents).items()
                      if name.isupper() and isinstance(text, str)}
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        name = self.names[body["query"]]
        self.asked.append((name, body["variables"]))
        return httpx.Response(200, json={"data": await self.answers[name](body["variables"])})

    def count(self, name: str) -> int:
        return sum(1 for asked, _ in self.asked if asked == name)


def answer(data: dict[str, Any]) -> Answer:
    async def reply(_: dict[str, Any]) -> dict[str, Any]:
        return data

    return reply


def messages_page(nodes: list[dict[str, Any]], older: bool, cursor: str | None) -> Answer:
    return answer({"messages": {"edges": [{"node": node} for node in nodes],
                                "pageInfo": {"hasPreviousPage": older, "startCursor": cursor}}})


async def never_handled(context: list[Message], s: StreamWriter) -> None:
    raise AssertionError("no answer is expected")


@pytest.mark.parametrize("page", [
    pytest.param(messages_page([{"parentId": "q", "sequence": 12}], True, "c1"),
                 id="the-same-cursor-again"),
    pytest.param(messages_page([{"parentId": "q", "sequence": 12}], True, None),
                 id="no-cursor"),
    pytest.param(messages_page([], True, "c1"), id="no-messages"),
])
async def test_counting_answers_stops_at_a_page_that_brings_nothing_new(
        page: Answer, caplog: pytest.LogCaptureFixture) -> None:
    service = Service({"ANSWERS": page})
    async with ChatqlClient("http://127.0.0.1:1/graphql", transport=service) as client:
        loop = AgentLoop(client, "helper", never_handled)
        with caplog.at_level(logging.WARNING, logger="chatql_client"):
            count = await asyncio.wait_for(loop._answers("c", QUESTION), 5)
    assert service.count("ANSWERS") <= 2
    assert count == service.count("ANSWERS") * len(
        (await page({}))["messages"]["edges"])
    assert "bring nothing new" in caplog.text


async def test_counting_answers_still_walks_back_to_the_question() -> None:
    pages = {None: messages_page([{"parentId": "q", "sequence": 13},
                                  {"parentId": "q", "sequence": 14}], True, "c2"),
             "c2": messages_page([{"parentId": "p", "sequence": 11},
                                  {"parentId": "q", "sequence": 12}], True, "c1"),
             "c1": messages_page([{"parentId": None, "sequence": 10}], True, "c0")}

    async def by_cursor(variables: dict[str, Any]) -> dict[str, Any]:
        return await pages[variables["before"]](variables)

    service = Service({"ANSWERS": by_cursor})
    async with ChatqlClient("http://127.0.0.1:1/graphql", transport=service) as client:
        loop = AgentLoop(client, "helper", never_handled)
        assert await loop._answers("c", QUESTION) == 3
    assert [v["before"] for _, v in service.asked] == [None, "c2", "c1"]


async def test_listing_chats_stops_at_a_cursor_already_followed() -> None:
    page = answer({"chats": {"edges": [{"node": {"id": "a"}}],
                             "pageInfo": {"hasNextPage": True, "endCursor": "e1"}}})
    service = Service({"CHATS": page})
    async with ChatqlClient("http://127.0.0.1:1/graphql", transport=service) as client:
        chats = await asyncio.wait_for(_all(client.chats({"awaitingReply": True})), 5)
    assert [chat["id"] for chat in chats] == ["a", "a"]
    assert [v["after"] for _, v in service.asked] == [None, "e1"]


async def _all(chats: AsyncIterator[Any]) -> list[Any]:
    return [chat async for chat in chats]


@contextlib.asynccontextmanager
async def ws_service(handler: Callable[[ServerConnection], Awaitable[None]]
                     ) -> AsyncIterator[int]:
    async with serve(handler, "127.0.0.1", 0,
                     subprotocols=[Subprotocol("graphql-transport-ws")]) as server:
        yield next(iter(server.sockets)).getsockname()[1]


async def test_the_handshake_has_one_deadline_however_many_pings_come_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_loop, "HANDSHAKE_TIMEOUT", 0.3)
    connections = 0

    async def pings_and_no_ack(ws: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        await ws.recv()  # connection_init
        with contextlib.suppress(Exception):
            while True:
                await ws.send(json.dumps({"type": "ping"}))
                await asyncio.sleep(0.05)

    async with ws_service(pings_and_no_ack) as port, ChatqlClient(
            f"http://127.0.0.1:{port}/graphql", transport=Service({})) as client:
        loop = AgentLoop(client, "helper", never_handled, reconnect_delay=0.05)
        task = asyncio.create_task(loop.run())
        try:
            deadline = asyncio.get_running_loop().time() + 5
            while connections < 2:
                assert asyncio.get_running_loop().time() < deadline, "never reconnected"
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_cancelled_loop_waits_for_its_streams_ends_at_most_shutdown_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    """The service takes the answer's start but never answers its end: cancelling the
    loop returns after ``shutdown_timeout``, saying which answer is still ending."""
    release = asyncio.Event()
    started = asyncio.Event()

    async def end_stream(variables: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return {"endStream": {"stream": {"id": variables["id"], "chatId": "c1",
                                         "requestId": "q", "status": variables["status"]},
                              "messages": []}}

    async def one_event(ws: ServerConnection) -> None:
        await ws.recv()  # connection_init
        await ws.send(json.dumps({"type": "connection_ack"}))
        await ws.recv()  # subscribe
        await ws.send(json.dumps({"id": "events", "type": "next", "payload": {
            "data": {"chatEvents": {"type": "UPDATED", "chatId": "c1"}}}}))
        await ws.wait_closed()

    service = Service({
        "CHATS": answer({"chats": {"edges": [], "pageInfo": {"hasNextPage": False,
                                                             "endCursor": None}}}),
        "AWAITED_LEAF": answer({"chat": {"id": "c1", "assistantId": "helper",
                                         "activeLeafId": "q",
                                         "messages": {"edges": [{"node": QUESTION}]}}}),
        "ANSWERS": messages_page([{"parentId": None, "sequence": 10}], False, "c0"),
        "ACTIVE_LEAF": answer({"chat": {"activeLeafId": "q"}}),
        "START_STREAM": answer({"startStream": {"id": "s1", "chatId": "c1",
                                                "requestId": "q", "status": "ACTIVE",
                                                "idleTimeout": 60.0}}),
        "RECORD_STEP": answer({"recordStep": True}),
        "MODEL_CONTEXT": answer({"modelContext": [QUESTION]}),
        "END_STREAM": end_stream,
    })

    async def handler(context: list[Message], s: StreamWriter) -> None:
        started.set()
        await asyncio.sleep(60)

    async with ws_service(one_event) as port, ChatqlClient(
            f"http://127.0.0.1:{port}/graphql", transport=service) as client:
        loop = AgentLoop(client, "helper", handler, shutdown_timeout=0.3)
        task = asyncio.create_task(loop.run())
        answering: list[asyncio.Task[Any]] = []
        try:
            await asyncio.wait_for(started.wait(), 5)
            answering = [t for t in asyncio.all_tasks() if t.get_name() == "answer c1"]
            timer = asyncio.get_running_loop().time()
            with caplog.at_level(logging.WARNING, logger="chatql_client"):
                task.cancel()
                await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
            assert asyncio.get_running_loop().time() - timer < 3
            assert "still ending their stream" in caplog.text and "answer c1" in caplog.text
            # The end was asked for (INTERRUPTED), just never answered.
            assert [v["status"] for name, v in service.asked if name == "END_STREAM"] == [
                "INTERRUPTED"]
        finally:
            release.set()
            task.cancel()
            await asyncio.gather(task, *answering, return_exceptions=True)
