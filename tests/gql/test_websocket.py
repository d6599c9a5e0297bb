"""GraphQL over a real WebSocket (uvicorn + the websockets client), both subprotocols."""

from __future__ import annotations

import json
from typing import Any

import websockets

from chatql.gql.settings import Settings


async def _recv(ws: Any) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await ws.recv())
    return message


async def test_graphql_transport_ws_runs_operations_as_the_init_payload_caller(
    live_server: str,
) -> None:
    async with websockets.connect(
        f"ws://{live_server}/graphql", subprotocols=["graphql-transport-ws"]  # type: ignore[list-item]
    ) as ws:
        assert ws.subprotocol == "graphql-transport-ws"
        await ws.send(json.dumps({"type": "connection_init",
                                  "payload": {"X-User-Id": "wsuser", "X-Tenant-Id": "acme"}}))
        assert (await _recv(ws))["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
            "query": 'mutation { createChat(input: {assistantId: "a", id: "w1"}) '
                     "{ id createdBy tenantId } }"}}))
        reply = await _recv(ws)
        assert reply == {"id": "1", "type": "next", "payload": {"data": {"createChat": {
            "id": "w1", "createdBy": "wsuser", "tenantId": "acme"}}}}
        assert await _recv(ws) == {"id": "1", "type": "complete"}
        await ws.send(json.dumps({"type": "ping"}))
        assert (await _recv(ws))["type"] == "pong"


async def test_legacy_graphql_ws_protocol_handshake(live_server: str) -> None:
    async with websockets.connect(
        f"ws://{live_server}/graphql", subprotocols=["graphql-ws"]  # type: ignore[list-item]
    ) as ws:
        assert ws.subprotocol == "graphql-ws"
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert (await _recv(ws))["type"] == "connection_ack"
        await ws.send(json.dumps({"type": "connection_terminate"}))
        await ws.wait_closed()
        assert ws.close_code == 1000


async def test_unknown_subprotocol_is_refused(live_server: str) -> None:
    try:
        async with websockets.connect(
            f"ws://{live_server}/graphql", subprotocols=["nope"]  # type: ignore[list-item]
        ) as ws:
            await ws.recv()
    except (websockets.InvalidHandshake, websockets.ConnectionClosed) as error:
        assert "4406" in str(error) or "nope" in str(error) or "subprotocol" in str(error)
    else:  # pragma: no cover - reaching here is the failure
        raise AssertionError("a socket without a known subprotocol must be refused")


async def test_healthz_over_real_http(live_server: str, settings: Settings) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://{live_server}/healthz")
    assert response.json() == {"status": "ok"}
