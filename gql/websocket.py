"""WebSocket protocol details beyond Strawberry's defaults.

Strawberry sends keep-alive messages (``ka``) only on the legacy ``graphql-ws``
protocol. Proxies and load balancers drop idle sockets on either protocol, so on
``graphql-transport-ws`` the server sends the protocol's own ``{"type": "ping"}`` every
``CHATQL_WS_KEEPALIVE`` seconds once the connection is acknowledged (clients answer
``pong``, which the handler accepts and ignores).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any

from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)

__all__ = ["KeepAliveTransportWSHandler"]


class KeepAliveTransportWSHandler(BaseGraphQLTransportWSHandler[Any, None]):
    """``graphql-transport-ws`` with server pings while the connection is open."""

    _ping_task: asyncio.Task[None] | None = None

    async def handle_connection_init(self, message: Any) -> None:
        await super().handle_connection_init(message)
        view: Any = self.view
        if self.connection_acknowledged and view.keep_alive and self._ping_task is None:
            self._ping_task = asyncio.create_task(self._ping(view.keep_alive_interval))

    async def _ping(self, interval: float) -> None:
        # A socket closing under the pinger is the normal way for it to end; the
        # handler's own shutdown cancels it too.
        with suppress(WebSocketDisconnected, RuntimeError):
            while True:
                await asyncio.sleep(interval)
                await self.send_message({"type": "ping"})

    async def shutdown(self) -> None:
        if self._ping_task is not None:
            self._ping_task.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await self._ping_task
        await super().shutdown()
