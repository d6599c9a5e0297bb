"""Request body limit (``CHATQL_MAX_BODY_BYTES``) as pure ASGI middleware.

The body is counted while it streams in, so a client cannot make the service buffer
more than the limit by lying about (or leaving out) ``Content-Length``. An oversized
request is answered with HTTP 413 and a GraphQL-shaped error whose
``extensions.code`` is ``PAYLOAD_TOO_LARGE``; nothing behind it runs, so nothing is
written. Paths under an ``exempt`` prefix (the file uploads, which count their bodies
against their own limit as they stream) are passed through.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimitMiddleware", "error_body"]


def error_body(message: str, code: str) -> dict[str, Any]:
    """A GraphQL response carrying one error, for answers given outside the schema."""
    return {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """Refuses HTTP requests whose body is larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt = exempt

    def _exempt(self, path: str) -> bool:
        return any(path == prefix or path.startswith(prefix + "/") for prefix in self.exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0 or self._exempt(scope["path"]):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.max_bytes:
                    await self._refuse(scope, receive, send)
                    return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if started:  # pragma: no cover - the app never answers before reading
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            error_body(f"the request body is larger than {self.max_bytes} bytes",
                       "PAYLOAD_TOO_LARGE"),
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
