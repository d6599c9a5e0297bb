"""Listening: one GraphQL subscription over a WebSocket (``graphql-transport-ws``).

The kit's one way to listen to the service: the agent loop follows ``chatEvents`` with
it, and so does an inline ask waiting for a person's decision
(:meth:`StreamWriter.ask_approval`, ``ask(wait=True)``). ``async with
client.subscribe(query, variables) as events:`` connects (with the client's identity
headers, also sent as the ``connection_init`` payload), waits for the service's
``connection_ack`` and subscribes; ``await events.receive()`` is the ``data`` of the next
result (``None`` once the service completed the subscription). Pings are answered on the
way; an error the service sends raises :class:`~chatql_client.errors.ChatqlError`, and
so does a connection the service refuses at ``connection_init`` (close code 4401:
``UNAUTHENTICATED``; 4403: ``FORBIDDEN``, what it answers credentials it does not
accept). Any other lost connection raises what websockets raises (``OSError``,
``WebSocketException``): reconnecting is the caller's choice, since only it knows what
it may have missed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from chatql_client.errors import ChatqlError

if TYPE_CHECKING:
    from chatql_client.client import ChatqlClient

__all__ = ["HANDSHAKE_TIMEOUT", "Subscription"]

#: Seconds the service has to acknowledge the WebSocket (``connection_ack``), pings and
#: other messages before it included.
HANDSHAKE_TIMEOUT = 10.0
#: What a close at ``connection_init`` means: the identity was refused.
REFUSALS = {4401: "UNAUTHENTICATED", 4403: "FORBIDDEN"}
#: The subprotocol spoken.
PROTOCOL = Subprotocol("graphql-transport-ws")


class Subscription:
    """One subscription on a WebSocket of its own; made by :meth:`ChatqlClient.subscribe`."""

    def __init__(self, client: ChatqlClient, query: str,
                 variables: Mapping[str, Any] | None = None, *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT,
                 operation_id: str = "events") -> None:
        self.client = client
        self.query = query
        self.variables = dict(variables or {})
        self.handshake_timeout = handshake_timeout
        self.operation_id = operation_id
        self._stack: AsyncExitStack | None = None
        self._ws: ClientConnection | None = None

    async def __aenter__(self) -> Subscription:
        client = self.client
        stack = AsyncExitStack()
        try:
            ws = await stack.enter_async_context(connect(
                client.ws_url, subprotocols=[PROTOCOL], additional_headers=client.headers,
                open_timeout=self.handshake_timeout))
            await ws.send(json.dumps({"type": "connection_init", "payload": client.headers}))
            # One deadline for the acknowledgement: a service that keeps sending anything
            # else (pings) must not hold the caller here.
            async with asyncio.timeout(self.handshake_timeout):
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("type") == "connection_ack":
                        break
                    await self._ping(ws, message)
            await ws.send(json.dumps({"id": self.operation_id, "type": "subscribe",
                                      "payload": {"query": self.query,
                                                  "variables": self.variables}}))
        except ConnectionClosed as exc:
            await stack.aclose()
            close = exc.rcvd
            if close is not None and close.code in REFUSALS:
                reason = close.reason or str(close.code)
                raise ChatqlError(f"the service refused the connection: {reason}",
                                  REFUSALS[close.code]) from exc
            raise
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._ws = stack, ws
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        stack, self._stack, self._ws = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def receive(self) -> dict[str, Any] | None:
        """The ``data`` of the subscription's next result; None when the service
        completed it. Cancelling a receive loses nothing (the next one gets the result)."""
        ws = self._ws
        if ws is None:
            raise RuntimeError("the subscription is not open: use `async with`")
        while True:
            message = json.loads(await ws.recv())
            kind = message.get("type")
            if kind == "next":
                payload = message.get("payload") or {}
                if payload.get("errors"):
                    raise ChatqlError.from_error(payload["errors"][0])
                return cast(dict[str, Any], payload.get("data") or {})
            if kind == "error":
                raise ChatqlError.from_error((message.get("payload") or [{}])[0])
            if kind == "complete":
                return None
            await self._ping(ws, message)

    @staticmethod
    async def _ping(ws: ClientConnection, message: dict[str, Any]) -> None:
        if message.get("type") == "ping":
            await ws.send(json.dumps({"type": "pong"}))
