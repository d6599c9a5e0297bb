"""Subscriptions over plain HTTP: ``chatStream`` as Server-Sent Events (the graphql-sse
protocol, distinct connections) against a real uvicorn server on both databases, and the
INVALID_ARGUMENT answer every other HTTP subscription gets."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.client_reducer import client_apply
from tests.conftest import GraphQLClient
from tests.gql.test_streams_ws import ALICE, CREATE, END, PUSH, START, Http, delta, serve
from tests.gql.wsclient import CHAT_STREAM

EVENT_STREAM = {"Accept": "text/event-stream", **ALICE}


class SSEStream:
    """One graphql-sse operation: the ``next``/``complete`` events of a response."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def event(self, timeout: float = 10.0) -> tuple[str, Any]:
        """The next event as (name, parsed data); comment lines (heartbeats) skipped."""
        name, data = "message", ""
        while True:
            line = await asyncio.wait_for(anext(self._lines), timeout)
            if line == "":
                if data or name != "message":
                    return name, json.loads(data) if data else None
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data += value

    async def chunk(self) -> dict[str, Any]:
        name, payload = await self.event()
        assert name == "next", (name, payload)
        assert not payload.get("errors"), payload
        chunk: dict[str, Any] = payload["data"]["chatStream"]
        return chunk


@asynccontextmanager
async def sse(server: str, chat: str, after: int | None = None,
              headers: dict[str, str] | None = None) -> AsyncIterator[SSEStream]:
    async with httpx.AsyncClient(timeout=30) as http, http.stream(
        "POST", f"http://{server}/graphql",
        json={"query": CHAT_STREAM, "variables": {"chat": chat, "after": after}},
        headers=EVENT_STREAM if headers is None else headers,
    ) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield SSEStream(response)


async def test_chat_stream_over_sse_replays_after_seq_then_follows_live(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "sse"})
        started = await http.data(START, {"input": {"chatId": "sse", "requestId": "r",
                                                    "assistantId": "bot"}})
        sid = started["startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [
            delta("a", "Hel"), delta("a", "lo"), delta("b", "Thinking", kind="thinking")]})
        async with sse(server, "sse", after=2) as stream:
            # Exactly what followed seq 2: the replayed chunks, then live ones.
            replayed = [await stream.chunk(), await stream.chunk()]
            assert [(c["seq"], c["delta"]) for c in replayed] == [(3, True), (4, True)]
            await http.data(PUSH, {"id": sid, "chunks": [delta("a", ", world")]})
            live = await stream.chunk()
            assert (live["seq"], live["props"]) == (5, {"content": ", world"})
            ended = await http.data(END, {"id": sid, "status": "COMPLETED"})
            end = await stream.chunk()
            assert end["props"]["event"] == "stream_end" and end["seq"] == 6
        # Applied on top of what the client held at seq 2 (message a = "Hel" at seq 2,
        # re-read here from the first replayed chunk's message id), the SSE chunks give
        # exactly the persisted messages.
        first_id = replayed[0]["messageId"]
        view: dict[str, dict[str, Any]] = {first_id: {"type": "text", "props": {"content": "Hel"}}}
        for chunk in [*replayed, live]:
            client_apply(view, chunk)
        stored = {m["id"]: (m["type"], m["props"]) for m in ended["endStream"]["messages"]}
        assert {mid: (m["type"], m["props"]) for mid, m in view.items()} == stored
        assert stored[first_id] == ("text", {"content": "Hello, world"})


async def test_sse_follows_the_access_rules(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "private"})
        mallory = {"Accept": "text/event-stream", "X-User-Id": "mallory", "X-Tenant-Id": "acme"}
        async with sse(server, "private", headers=mallory) as stream:
            name, payload = await stream.event()
            assert name == "next"
            assert payload["errors"][0]["extensions"]["code"] == "NOT_FOUND"
            assert (await stream.event())[0] == "complete"


@pytest.mark.parametrize("accept", [
    "application/json",
    "multipart/mixed;subscriptionSpec=1.0,application/json",
    None,
])
async def test_subscription_over_plain_http_is_invalid_argument(
        client: GraphQLClient, accept: str | None, caplog: pytest.LogCaptureFixture) -> None:
    headers = {} if accept is None else {"Accept": accept}
    with caplog.at_level(logging.INFO):
        response = await client.http.post(
            "/graphql", json={"query": CHAT_STREAM, "variables": {"chat": "any"}},
            headers=headers)
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "INVALID_ARGUMENT"
    assert "WebSocket" in error["message"] and "Server-Sent Events" in error["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def test_queries_and_mutations_over_plain_http_still_run(client: GraphQLClient) -> None:
    created = await client.data(CREATE, {"id": "plain"}, headers=ALICE)
    assert created == {"createChat": {"id": "plain"}}
    response = await client.http.get(
        "/graphql", params={"query": "{ chat(id: \"plain\") { id } }"}, headers=ALICE)
    assert response.json() == {"data": {"chat": {"id": "plain"}}}
    response = await client.http.get(
        "/graphql", params={"query": 'mutation { deleteChat(id: "plain") }'}, headers=ALICE)
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
