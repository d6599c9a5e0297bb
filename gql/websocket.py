"""WebSocket protocol details beyond Strawberry's defaults.

- **Keep-alive on graphql-transport-ws.** Strawberry sends keep-alive messages (``ka``)
  only on the legacy ``graphql-ws`` protocol. Proxies and load balancers drop idle
  sockets on either protocol, so on ``graphql-transport-ws`` the server sends the
  protocol's own ``{"type": "ping"}`` every ``CHATQL_WS_KEEPALIVE`` seconds once the
  connection is acknowledged (clients answer ``pong``, which is accepted and ignored).
- **Malformed messages close with 4400.** Strawberry's handlers index into messages
  without checking their shape, so a frame such as ``5`` or ``{"type": "subscribe",
  "id": {}}`` crashed the connection handler (abnormal close 1006 and a logged
  traceback). Every message is checked first: it must be an object with a string
  ``type``; operations need a string ``id``; ``subscribe``/``start`` need an object
  payload with a string ``query`` and, when present, an object ``variables`` /
  ``extensions`` and a string ``operationName``. Anything else closes the socket with
  4400 and the reason, on both protocols.
- **Close reasons fit the frame.** A close reason may hold at most 123 bytes (RFC 6455
  §5.5); Strawberry puts caller text in some (``Unknown message type: …``,
  ``Subscriber for … already exists``), and a longer one broke the close itself. The
  socket adapter cuts every reason to fit.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any

from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler

__all__ = [
    "ChatqlLegacyWSHandler",
    "ChatqlTransportWSHandler",
    "ChatqlWebSocketAdapter",
    "fit_close_reason",
    "message_problem",
]

#: RFC 6455 §5.5: control frames carry at most 125 bytes, 2 of them the close code.
MAX_CLOSE_REASON_BYTES = 123

_OPERATION_TYPES = frozenset({"subscribe", "complete", "start", "stop"})
_STARTS = frozenset({"subscribe", "start"})


def message_problem(message: Any) -> str | None:
    """Why ``message`` is not a well-formed protocol message (None when it is)."""
    if not isinstance(message, dict):
        return "a message must be a JSON object"
    kind = message.get("type")
    if not isinstance(kind, str):
        return "a message needs a string 'type'"
    if kind in _OPERATION_TYPES and not isinstance(message.get("id"), str):
        return f"a {kind} message needs a string 'id'"
    if kind in _STARTS:
        payload = message.get("payload")
        if not isinstance(payload, dict):
            return f"a {kind} message needs an object 'payload'"
        if not isinstance(payload.get("query"), str):
            return "payload.query must be a string"
        for key in ("variables", "extensions"):
            if payload.get(key) is not None and not isinstance(payload[key], dict):
                return f"payload.{key} must be an object"
        name = payload.get("operationName")
        if name is not None and not isinstance(name, str):
            return "payload.operationName must be a string"
    return None


def fit_close_reason(reason: str) -> str:
    """``reason`` made encodable (lone surrogates become ``?``) and cut, on a character
    boundary, to fit in a close frame."""
    encoded = reason.encode("utf-8", "replace")
    if len(encoded) <= MAX_CLOSE_REASON_BYTES:
        return encoded.decode()
    return encoded[: MAX_CLOSE_REASON_BYTES - 3].decode(errors="ignore") + "..."


class ChatqlWebSocketAdapter(ASGIWebSocketAdapter):
    """Strawberry's Starlette socket adapter with close reasons that always fit."""

    async def close(self, code: int, reason: str) -> None:
        await super().close(code, fit_close_reason(reason))


class ChatqlTransportWSHandler(BaseGraphQLTransportWSHandler[Any, None]):
    """``graphql-transport-ws`` with message checks and server pings."""

    _ping_task: asyncio.Task[None] | None = None

    async def handle_message(self, message: Any) -> None:
        problem = message_problem(message)
        if problem is not None:
            await self.handle_invalid_message(problem)
            return
        await super().handle_message(message)

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


class ChatqlLegacyWSHandler(BaseGraphQLWSHandler[Any, None]):
    """Legacy ``graphql-ws`` with the same message checks."""

    async def handle_message(self, message: Any) -> None:
        problem = message_problem(message)
        if problem is not None:
            await self.websocket.close(code=4400, reason=problem)
            return
        await super().handle_message(message)
