"""The graphql-transport-ws protocol rules on a real socket (uvicorn + websockets).

Close codes: 4408 init timeout, 4429 duplicate init, 4401 subscribe before ack, 4409
duplicate operation id, 4400 malformed messages (on both protocols; 4403 for rejected
credentials is in tests/access/test_auth.py, which runs in jwt mode), plus ping/pong,
server keep-alive pings, the per-connection operation limit and a fuzz of random frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

from chatql.gql.settings import Settings
from tests.conftest import TEST_SECRET

# A query that reads the database, so its operation is still in flight when the next
# message (sent in the same burst) is handled.
READ = '{ chat(id: "nothing-here") { id messages { edges { cursor } } } }'


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Short timers and a small operation limit so the rules show quickly."""
    return Settings(database_url=database_url, secret=TEST_SECRET, migrate_on_start=False,
                    ws_init_timeout=0.3, ws_keepalive=0.2,
                    max_subscriptions_per_connection=2)


@pytest.fixture
async def connect(live_server: str) -> AsyncIterator[Any]:
    opened: list[Any] = []

    async def open_socket(protocol: str = "graphql-transport-ws") -> Any:
        ws = await websockets.connect(f"ws://{live_server}/graphql",
                                      subprotocols=[protocol])  # type: ignore[list-item]
        opened.append(ws)
        return ws

    yield open_socket
    for ws in opened:
        await ws.close()


async def _recv(ws: Any, timeout: float = 5.0) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


async def _closed_with(ws: Any) -> int:
    await asyncio.wait_for(ws.wait_closed(), 5)
    code: int = ws.close_code
    return code


async def _init(ws: Any, payload: Any = None) -> None:
    await ws.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    assert (await _recv(ws))["type"] == "connection_ack"


async def test_no_connection_init_closes_4408(connect: Any) -> None:
    ws = await connect()
    assert await _closed_with(ws) == 4408


async def test_second_connection_init_closes_4429(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    await ws.send(json.dumps({"type": "connection_init"}))
    assert await _closed_with(ws) == 4429


async def test_subscribe_before_ack_closes_4401(connect: Any) -> None:
    ws = await connect()
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": READ}}))
    assert await _closed_with(ws) == 4401


async def test_duplicate_operation_id_closes_4409(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    subscribe = json.dumps({"id": "same", "type": "subscribe", "payload": {"query": READ}})
    # One burst: the second message arrives while the first operation still runs.
    await ws.send(subscribe)
    await ws.send(subscribe)
    while True:
        try:
            message = await _recv(ws)
        except websockets.ConnectionClosed:
            break
        assert message["id"] == "same"  # the first operation may finish before the close
    assert ws.close_code == 4409


async def test_non_object_init_payload_closes_4400(connect: Any) -> None:
    ws = await connect()
    await ws.send(json.dumps({"type": "connection_init", "payload": "x"}))
    assert await _closed_with(ws) == 4400


async def test_ping_is_answered_with_pong(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    await ws.send(json.dumps({"type": "ping", "payload": {"n": 1}}))
    message = await _recv(ws)
    while message["type"] == "ping":  # a keep-alive ping may arrive first
        message = await _recv(ws)
    assert message["type"] == "pong"


async def test_server_sends_keepalive_pings_after_ack(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    pings = [await _recv(ws, timeout=2), await _recv(ws, timeout=2)]
    assert pings == [{"type": "ping"}, {"type": "ping"}]
    await ws.send(json.dumps({"type": "pong"}))
    # The connection stays usable after answering.
    await ws.send(json.dumps({"id": "q", "type": "subscribe",
                              "payload": {"query": "{ __typename }"}}))
    replies = [await _recv(ws) for _ in range(2)]
    replies = [r for r in replies if r["type"] != "ping"]
    assert {"id": "q", "type": "next", "payload": {"data": {"__typename": "Query"}}} in replies


async def test_legacy_protocol_sends_keepalive(connect: Any) -> None:
    ws = await connect("graphql-ws")
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert (await _recv(ws))["type"] == "connection_ack"
    assert (await _recv(ws, timeout=2))["type"] == "ka"


async def test_operation_limit_per_connection(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    for number in range(3):
        await ws.send(json.dumps({"id": f"op{number}", "type": "subscribe",
                                  "payload": {"query": READ}}))
    seen: dict[str, list[dict[str, Any]]] = {}
    while len([i for i, msgs in seen.items() if msgs[-1]["type"] in ("complete", "error")]) < 3:
        message = await _recv(ws)
        if message["type"] != "ping":
            seen.setdefault(message["id"], []).append(message)
    assert seen["op2"][0]["type"] == "error"
    assert "limit" in seen["op2"][0]["payload"][0]["message"].lower()
    assert seen["op0"][-1] == {"id": "op0", "type": "complete"}


async def test_operation_errors_over_the_socket_carry_codes(connect: Any) -> None:
    ws = await connect()
    await _init(ws, {"X-User-Id": "alice", "X-Tenant-Id": "acme"})
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
        "query": '{ messages(chatId: "missing") { edges { cursor } } }'}}))
    message = await _recv(ws)
    while message["type"] == "ping":
        message = await _recv(ws)
    assert message["payload"]["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    await ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": {
        "query": "{ " + " ".join(f"a{i}: __typename" for i in range(60)) + " }"}}))
    message = await _recv(ws)
    while message["type"] == "ping" or message.get("id") != "2":
        message = await _recv(ws)
    errors = message["payload"] if message["type"] == "error" else message["payload"]["errors"]
    assert errors[0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"


MALFORMED = [
    5, "text", [1, 2], None, {}, {"type": ["x"]}, {"type": "unknown"},
    {"type": "subscribe", "id": {"a": 1}, "payload": {"query": "{ __typename }"}},
    {"type": "subscribe", "id": "1"},
    {"type": "subscribe", "id": "1", "payload": "x"},
    {"type": "subscribe", "id": "1", "payload": {"query": 5}},
    {"type": "subscribe", "id": "1", "payload": {"query": "{ __typename }", "variables": [1]}},
    {"type": "subscribe", "id": "1", "payload": {"query": "{ __typename }",
                                                 "operationName": {"a": 1}}},
    {"type": "subscribe", "id": "1", "payload": {"query": "{ __typename }", "extensions": 5}},
    {"type": "complete", "id": [1]},
]


@pytest.mark.parametrize("frame", MALFORMED, ids=[json.dumps(f)[:40] for f in MALFORMED])
async def test_malformed_messages_close_4400(connect: Any, frame: Any) -> None:
    for protocol in ("graphql-transport-ws", "graphql-ws"):
        ws = await connect(protocol)
        await _init(ws)
        await ws.send(json.dumps(frame))
        if protocol == "graphql-ws" and isinstance(frame, dict) and frame.get("type") in (
            "unknown",
        ):
            continue  # the legacy protocol ignores unknown message types
        assert await _closed_with(ws) == 4400, protocol


async def test_unknown_operation_name_over_the_socket(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
        "query": "query A { __typename }", "operationName": "B"}}))
    assert await _closed_with(ws) == 4400


async def test_fuzz_random_frames_never_crash_the_handler(live_server: str) -> None:
    """Random frames after the handshake: an answer, or a 44xx close — never 1006/1011."""
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hypothesis_settings
    from hypothesis import strategies as st

    from tests.gql.test_fuzz import FUZZ_EXAMPLES, OPERATIONS, json_values

    loop = asyncio.get_running_loop()
    frames = st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"type": st.sampled_from(["subscribe", "complete", "ping", "pong",
                                      "connection_init"]) | json_values},
            optional={"id": st.sampled_from(["1", "2"]) | json_values,
                      "payload": json_values | st.fixed_dictionaries(
                          {"query": st.sampled_from(OPERATIONS) | json_values},
                          optional={"variables": json_values,
                                    "operationName": json_values})}),
    ).map(lambda frame: json.dumps(frame))

    async def exchange(frame: str) -> int | None:
        async with websockets.connect(
            f"ws://{live_server}/graphql", subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        ) as ws:
            await _init(ws)
            await ws.send(frame)
            await ws.send(json.dumps({"type": "ping"}))
            try:
                while (await _recv(ws))["type"] != "pong":
                    pass
            except websockets.ConnectionClosed:
                pass
            code: int | None = ws.close_code
            return code

    @hypothesis_settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))
    @given(frames)
    def run(frame: str) -> None:
        code = asyncio.run_coroutine_threadsafe(exchange(frame), loop).result(20)
        assert code is None or 4400 <= code < 4500, (code, frame[:300])

    await asyncio.to_thread(run)


async def test_long_close_reasons_are_cut_to_fit(connect: Any) -> None:
    ws = await connect()
    await _init(ws)
    await ws.send(json.dumps({"type": "é" * 200}))
    assert await _closed_with(ws) == 4400
    assert len(ws.close_reason.encode()) <= 123
    ws = await connect()
    await _init(ws)
    await ws.send(json.dumps({"type": "\ud800"}))  # a lone surrogate cannot be UTF-8
    assert await _closed_with(ws) == 4400
    ws = await connect()
    await _init(ws)
    long_id = "i" * 500
    subscribe = json.dumps({"id": long_id, "type": "subscribe", "payload": {"query": READ}})
    await ws.send(subscribe)
    await ws.send(subscribe)
    with contextlib.suppress(websockets.ConnectionClosed):
        while True:
            await _recv(ws)
    assert ws.close_code == 4409
