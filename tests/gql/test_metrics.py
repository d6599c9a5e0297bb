"""``/metrics`` over real HTTP: requests by operation and outcome, streams, subscribers,
chunks pushed and delivered, persist latency, pool use; parsed as Prometheus text."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import ALICE, CREATE, END, PUSH, START, serve, subscribed
from tests.gql.wsclient import ChunkView, connect


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def scrape(http: httpx.AsyncClient, base: str) -> dict[Any, float]:
    response = await http.get(f"{base}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_count_requests_streams_and_subscribers(settings: Settings) -> None:
    async with serve(settings) as (server, app), httpx.AsyncClient(timeout=30) as http, \
            connect(server, "graphql-transport-ws", ALICE) as viewer:
        base = f"http://{server}"
        before = await scrape(http, base)

        async def post(query: str, variables: dict[str, Any]) -> Any:
            response = await http.post(f"{base}/graphql", headers=ALICE,
                                        json={"query": query, "variables": variables})
            return response.json()

        await post(CREATE, {"id": "metered"})
        view = await ChunkView.open(viewer, "metered")
        await subscribed(app, "metered", 1)
        during = await scrape(http, base)
        assert value(during, "chatql_subscribers", transport="ws") == value(
            before, "chatql_subscribers", transport="ws") + 1
        sid = (await post(START, {"input": {"chatId": "metered"}}))["data"]["startStream"]["id"]
        pushed = await post(PUSH, {"id": sid, "chunks": [
            {"messageId": "m", "type": "text", "props": {"content": "a"}},
            {"messageId": "m", "type": "text", "props": {"content": "b"}, "delta": True}]})
        assert pushed["data"]["pushChunks"]["accepted"] == 2
        live = await scrape(http, base)
        assert value(live, "chatql_active_streams") >= 1
        await view.until_seq(3)
        missing = await post("query Missing { chat(id: 1) { nope } }", {})
        assert missing["errors"]
        await post(END, {"id": sid, "status": "COMPLETED"})
        await viewer.stop(view.op)
        for _ in range(200):
            after = await scrape(http, base)
            if value(after, "chatql_subscribers", transport="ws") == value(
                    before, "chatql_subscribers", transport="ws"):
                break
            await asyncio.sleep(0.02)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # Anonymous operations are named by their root fields; the push took the fast lane.
    assert moved("chatql_requests_total", operation="pushChunks", outcome="ok") == 1
    assert moved("chatql_requests_total", operation="createChat", outcome="ok") == 1
    assert moved("chatql_requests_total", operation="Missing",
                 outcome="INVALID_ARGUMENT") == 1
    assert moved("chatql_request_duration_seconds_count", operation="pushChunks") == 1
    assert moved("chatql_chunks_pushed_total") == 2
    assert moved("chatql_chunks_delivered_total") >= 2
    assert moved("chatql_stream_persist_seconds_count") == 1
    assert value(after, "chatql_subscribers", transport="ws") == value(
        before, "chatql_subscribers", transport="ws")
    assert ("chatql_db_pool_connections", (("state", "in_use"),)) in after or (
        settings.database_url.startswith("sqlite"))


async def test_metrics_can_be_switched_off(settings: Settings) -> None:
    async with serve(dataclasses.replace(settings, metrics=False)) as (server, _app), \
            httpx.AsyncClient(timeout=30) as http:
        response = await http.get(f"http://{server}/metrics")
    assert response.status_code == 404


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_websocket_operations_are_counted_by_name_and_outcome(
        settings: Settings, protocol: str) -> None:
    async with serve(settings) as (server, app), httpx.AsyncClient(timeout=30) as http, \
            connect(server, protocol, ALICE) as socket:
        base = f"http://{server}"
        before = await scrape(http, base)
        await socket.execute("mutation Open($id: ID!) { createChat(input: "
                             '{assistantId: "bot", id: $id}) { id } }', {"id": "counted"})
        # A push over the socket takes the push plan; a missing stream is STREAM_NOT_FOUND.
        op = await socket.start(PUSH, {"id": "no-such-stream", "chunks": [
            {"messageId": "m", "type": "text", "props": {"content": "a"}}]})
        refused = await socket.receive(op)
        assert refused is not None
        assert refused["errors"][0]["extensions"]["code"] == "STREAM_NOT_FOUND"
        assert await socket.receive(op) is None
        # A subscription (the chatStream plan) counts once, when it is stopped.
        view = await ChunkView.open(socket, "counted")
        await subscribed(app, "counted", 1)
        await socket.stop(view.op)
        await socket.execute("query Look { chat(id: \"counted\") { id } }")
        # A persisted query the server does not know is refused before it runs.
        socket._inbox["apq"] = asyncio.Queue()
        await socket.ws.send(json.dumps({
            "id": "apq", "type": "subscribe" if protocol == "graphql-transport-ws" else "start",
            "payload": {"extensions": {"persistedQuery": {"version": 1,
                                                          "sha256Hash": "0" * 64}}}}))
        unknown = await asyncio.wait_for(socket._inbox["apq"].get(), 10)
        assert unknown["type"] == "error", unknown
        expected = (("Open", "ok"), ("pushChunks", "STREAM_NOT_FOUND"), ("chatStream", "ok"),
                    ("Look", "ok"), ("unknown", "PERSISTED_QUERY_NOT_FOUND"))
        for _ in range(1000):
            after = await scrape(http, base)
            # An operation is counted once its answer is sent (the stopped subscription's
            # once its relay has wound down): wait for every one before comparing.
            if all(value(after, "chatql_ws_operations_total", operation=name, outcome=outcome)
                   > value(before, "chatql_ws_operations_total", operation=name,
                           outcome=outcome) for name, outcome in expected):
                break
            await asyncio.sleep(0.02)

    def moved(operation: str, outcome: str) -> float:
        labels = {"operation": operation, "outcome": outcome}
        return (value(after, "chatql_ws_operations_total", **labels)
                - value(before, "chatql_ws_operations_total", **labels))

    assert moved("Open", "ok") == 1
    assert moved("pushChunks", "STREAM_NOT_FOUND") == 1 and moved("pushChunks", "ok") == 0
    assert moved("chatStream", "ok") == 1
    assert moved("Look", "ok") == 1
    assert moved("unknown", "PERSISTED_QUERY_NOT_FOUND") == 1
    # Over HTTP nothing of these was counted.
    assert value(after, "chatql_requests_total", operation="Open", outcome="ok") == value(
        before, "chatql_requests_total", operation="Open", outcome="ok")
