"""Rate limits per identity and class over real HTTP and WebSocket, in memory and shared
through Redis."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest

from chatql.gql.app import create_app
from chatql.gql.auth import ConfigurationError
from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend, uvicorn_serving
from tests.gql.test_streams_ws import ALICE, CREATE, PUSH, START
from tests.gql.wsclient import CHAT_STREAM, connect

BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme", "X-Roles": "agent"}
READ = 'query { chat(id: "none") { id } }'


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def limited(settings: Settings, rules: str) -> Settings:
    return dataclasses.replace(settings, rate_limits=rules)


async def test_a_flood_from_one_identity_is_limited_while_another_is_served(
        settings: Settings) -> None:
    limits = limited(settings, "reads=3/minute;pushes=2/minute;writes=100/minute")
    async with uvicorn_serving(create_app(limits)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        answers = [await http.post("/graphql", json={"query": READ}, headers=ALICE)
                   for _ in range(4)]
        assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
        refused = answers[-1]
        retry = int(refused.headers["retry-after"])
        assert 1 <= retry <= 60
        error = refused.json()["errors"][0]
        assert error["extensions"] == {"code": "RATE_LIMITED", "retryAfter": retry}
        # Bob is counted on his own.
        bob = await http.post("/graphql", json={"query": READ}, headers=BOB)
        assert bob.status_code == 200 and bob.json() == {"data": {"chat": None}}
        # Pushes (the fast lane) have their own count; other writes are not pushes.
        await http.post("/graphql", json={"query": CREATE, "variables": {"id": "rl"}},
                        headers=ALICE)
        started = await http.post("/graphql", headers=ALICE, json={
            "query": START, "variables": {"input": {"chatId": "rl"}}})
        sid = started.json()["data"]["startStream"]["id"]
        push = {"query": PUSH, "variables": {"id": sid, "chunks": [
            {"type": "text", "props": {"content": "x"}}]}}
        pushes = [await http.post("/graphql", json=push, headers=ALICE) for _ in range(3)]
        assert [answer.status_code for answer in pushes] == [200, 200, 429]
        assert pushes[2].json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"


async def test_a_websocket_operation_beyond_the_limit_is_refused(settings: Settings) -> None:
    limits = limited(settings, "reads=1/minute;subscriptions=1")
    async with uvicorn_serving(create_app(limits)) as port:
        # A chat of alice's, so a subscription to it stays open (one to a chat that is
        # not there would end at once, and stop counting).
        async with httpx.AsyncClient(timeout=30) as http:
            made = await http.post(f"http://127.0.0.1:{port}/graphql", headers=ALICE,
                                   json={"query": CREATE, "variables": {"id": "followed"}})
            assert made.json()["data"]["createChat"]["id"] == "followed"
        async with connect(f"127.0.0.1:{port}", "graphql-transport-ws", ALICE) as ws:
            await ws.execute(READ)
            op = await ws.start(READ)
            message = await ws._inbox[op].get()
            assert message["type"] == "error"
            assert message["payload"][0]["extensions"]["code"] == "RATE_LIMITED"
            # One open subscription is allowed, the second is refused while it lasts.
            first = await ws.start(CHAT_STREAM, {"chat": "followed"})
            second = await ws.start(CHAT_STREAM, {"chat": "followed"})
            refused = await ws._inbox[second].get()
            assert refused["type"] == "error", refused
            assert refused["payload"][0]["extensions"]["code"] == "RATE_LIMITED"
            await ws.stop(first)
        # Closed, the subscription no longer counts — once the server has seen the close,
        # which it learns a moment after the client (sooner or later under load).
        async with connect(f"127.0.0.1:{port}", "graphql-ws", ALICE) as legacy:
            for _ in range(100):
                again = await legacy.start(CHAT_STREAM, {"chat": "followed"})
                try:
                    early = await asyncio.wait_for(legacy._inbox[again].get(), 0.2)
                except TimeoutError:
                    break  # open: an idle chat's stream sends nothing
                assert early["payload"]["extensions"]["code"] == "RATE_LIMITED", early
            else:
                raise AssertionError("the closed socket's subscription kept counting")
            third = await legacy.start(CHAT_STREAM, {"chat": "followed"})
            message = await legacy._inbox[third].get()
            assert message["type"] == "error"
            assert message["payload"]["extensions"]["code"] == "RATE_LIMITED"
            assert legacy._inbox[again].empty()


async def test_two_instances_share_the_limit_through_redis(settings: Settings) -> None:
    if settings.broker_url == "memory://":
        pytest.skip("memory counts are one process's")
    limits = limited(settings, "reads=4/minute")
    async with uvicorn_serving(create_app(limits)) as one, \
            uvicorn_serving(create_app(limits)) as other, \
            httpx.AsyncClient(timeout=30) as http:
        codes = []
        for port in (one, other, one, other, one, other):
            answer = await http.post(f"http://127.0.0.1:{port}/graphql",
                                     json={"query": READ}, headers=ALICE)
            codes.append(answer.status_code)
    assert codes == [200, 200, 200, 200, 429, 429]


@pytest.mark.parametrize("rules", ["reads", "reads=fast", "everything=1/second",
                                   "subscriptions=many"])
def test_a_malformed_setting_stops_the_server(rules: str, settings: Settings) -> None:
    with pytest.raises(ConfigurationError, match="CHATQL_RATE_LIMITS"):
        create_app(limited(settings, rules))


def test_the_documented_example_parses() -> None:
    from chatql.gql.ops.rate_limits import parse_rate_limits

    rules = parse_rate_limits("pushes=200/second;writes=30/second;reads=100/second;"
                              "subscriptions=20")
    # Share-link reads are limited even where the setting does not name them.
    assert sorted(rules.rates) == ["pushes", "reads", "shares", "writes"]
    assert str(rules.rates["shares"]) == "300 per 1 minute"
    assert rules.subscriptions == 20
    assert rules.rates["pushes"].amount == 200
