"""``awaitingRetry``: the chats whose reply was cut off because its producer went away,
for a worker that was not running at that moment to find them. Over real HTTP (and SSE
for the live chat list), on SQLite and Postgres, both stream backends."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_chat_events import events_over_sse, listening
from tests.gql.test_interrupts import AGENT, STOP, Client, person_asks
from tests.gql.test_streams_ws import END, PUSH, START, serve

STEP = """mutation($id: ID!, $step: StepInput!) { recordStep(streamId: $id, step: $step) }"""
LEAF = """query($id: ID!) { chat(id: $id) {
  messages(last: 1) { edges { node { status requestId } } } } }"""
RETRYING = "subscription { chatEvents(filter: {awaitingRetry: true}) { type chatId } }"


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    # A producer that goes silent is noticed within a couple of seconds.
    return dataclasses.replace(on_backend(request, settings), stream_idle_timeout=1.0)


async def answering(client: Client, chat: str, request: str) -> str:
    """A worker's answer under way: its stream, the step it records as it starts, and a
    first word. Returns the stream's id."""
    started = await client.data(START, {"input": {"chatId": chat, "requestId": request}},
                                AGENT)
    stream = str(started["startStream"]["id"])
    await client.data(STEP, {"id": stream, "step": {"id": f"{request}-answer",
                                                   "type": "llm"}}, AGENT)
    await client.data(PUSH, {"id": stream, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "Half an ans"}}]}, AGENT)
    return stream


async def leaf_status(client: Client, chat: str) -> str:
    data = await client.data(LEAF, {"id": chat})
    return str(data["chat"]["messages"]["edges"][0]["node"]["status"])


async def test_a_reply_cut_off_by_a_silent_producer_awaits_a_retry(settings: Settings) -> None:
    heard: list[tuple[str, str]] = []
    async with serve(settings) as (server, app):
        client = Client(server)
        for chat in ("cut", "stopped", "done"):
            await person_asks(client, chat)

        async def listen() -> None:
            async for event in events_over_sse(server, RETRYING, AGENT):
                heard.append((event["type"], event["chatId"]))
                if event["type"] == "DELETED":
                    return

        listener = asyncio.create_task(listen())
        try:
            await walk(client, app, listener)
        finally:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
    # The live list of chats awaiting a retry saw only the cut-off chat, come and go.
    assert {chat for _type, chat in heard} == {"cut"}, heard
    assert heard[-1] == ("DELETED", "cut"), heard


async def walk(client: Client, app: Any, listener: asyncio.Task[None]) -> None:
    """Three answers under way, ended three ways; then the cut-off one retried."""
    await listening(app, 1)

    done = await answering(client, "done", "q1")
    await client.data(END, {"id": done, "status": "COMPLETED"}, AGENT)
    await answering(client, "stopped", "q1")
    assert (await client.data(STOP, {"chat": "stopped"}))["stopStream"] is True
    await answering(client, "cut", "q1")
    # While the producer could still come back, the chat does not await a retry.
    assert await client.listed({"awaitingRetry": True}, AGENT) == set()

    # The producer went silent: the service ends its stream for want of it.
    for _ in range(600):
        if await leaf_status(client, "cut") == "INTERRUPTED":
            break
        await asyncio.sleep(0.05)
    assert await leaf_status(client, "cut") == "INTERRUPTED"
    assert await leaf_status(client, "stopped") == "INTERRUPTED"
    assert await client.listed({"awaitingRetry": True}, AGENT) == {"cut"}
    assert await client.listed({"awaitingRetry": False}, AGENT) == {"stopped", "done"}
    # Neither a question waiting nor one whose reply a person stopped.
    assert await client.listed({"awaitingReply": True}, AGENT) == set()
    assert await client.listed({"assistantId": "bot", "awaitingRetry": True},
                               AGENT) == {"cut"}
    assert await client.listed({"assistantId": "other", "awaitingRetry": True},
                               AGENT) == set()

    # A worker claims the retry: the chat leaves the list while it answers, and for
    # good once the answer is complete.
    retry = await client.data(
        START, {"input": {"chatId": "cut", "requestId": "q1.retry.1"}}, AGENT)
    assert await client.listed({"awaitingRetry": True}, AGENT) == set()
    await client.data(END, {"id": retry["startStream"]["id"], "status": "COMPLETED"},
                      AGENT)
    assert await client.listed({"awaitingRetry": True}, AGENT) == set()
    await asyncio.wait_for(asyncio.shield(listener), 60)
