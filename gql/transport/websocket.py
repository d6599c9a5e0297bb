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
- **Plans first.** Every operation is offered to the app's plans
  (:mod:`gql.plans.planner`) before the executor: a ``pushChunks`` plan answers with one
  result message, a ``chatStream`` or ``chatEvents`` plan with a relay that writes each
  result to a :class:`~gql.plans.plan.Socket`.
- **Frames written straight to the socket.** Server frames are not masked, so a plan
  can build one frame for every subscriber. :class:`FrameWriter` writes such frames to
  the uvicorn (websockets-sansio) transport directly, below Starlette's and the
  middlewares' send wrappers (:class:`ServerSendMiddleware` keeps the server's own
  ``send`` for that). A closing socket, a transport above its high-water mark, another
  server or an extension such as per-message deflate take the ordinary send, which
  waits for the buffer to drain.
- **A document that does not parse is an error, not a closed socket.** Strawberry
  closes a ``graphql-transport-ws`` socket with 4400 on a syntax error, dropping every
  other operation on it, and the legacy handler answered nothing. Here both protocols
  answer that one operation with an ``error`` message (``INVALID_ARGUMENT``; a document
  over the token limit ``QUERY_TOO_COMPLEX``) and the socket stays open. (An unknown
  ``operationName`` still closes with 4400, as the protocol describes.)
- **Every operation on the legacy protocol.** Strawberry's ``graphql-ws`` handler
  runs only subscriptions; producers may send queries and mutations there as well.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import orjson
from graphql import (
    GraphQLSyntaxError,
    parse,
)
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import CompleteMessage, ErrorMessage
from strawberry.types.execution import ExecutionResult, PreExecutionError

from chatql.gql.context import Context
from chatql.gql.library_adapters import (
    UvicornFrameTransport,
    uvicorn_ws_protocol,
)
from chatql.gql.ops.operations import classify
from chatql.gql.ops.persisted_queries import PersistedQueryError
from chatql.gql.ops.rate_limits import RateLimited
from chatql.gql.plans.plan import Call, Socket, text_frame

__all__ = [
    "ChatqlLegacyWSHandler",
    "ChatqlTransportWSHandler",
    "ChatqlWebSocketAdapter",
    "FrameWriter",
    "ServerSendMiddleware",
    "fit_close_reason",
    "message_problem",
    "serve_planned",
]

logger = logging.getLogger("chatql.websocket")

Send = Callable[[str], Awaitable[None]]

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


def resolve_persisted(view: Any, message: Any) -> dict[str, Any] | None:
    """Put the document a start message's persisted query names in its payload; the
    GraphQL error when it cannot be resolved (None: nothing to do, or done)."""
    persisted = getattr(view, "persisted", None)
    if persisted is None or not isinstance(message, dict):
        return None
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in _STARTS or not isinstance(
            message.get("id"), str):
        return None
    payload = message.get("payload")
    if not isinstance(payload, dict):
        return None
    try:
        query = persisted.resolve(payload.get("query"), payload.get("extensions"))
    except PersistedQueryError as error:
        return error.error()
    if query is not None:
        payload["query"] = query
    return None


async def admit_operation(handler: Any, query: str, operation_name: str | None) -> str:
    """Count a socket's operation against its caller's limits (:class:`RateLimited`
    beyond them); its limit class (a subscription stays counted open until
    ``subscription_closed``)."""
    view = handler.view
    identity = handler.context.identity
    limit_class = classify(query, operation_name).limit_class
    if limit_class == "subscriptions":
        await view.subscription_opened(identity, "ws")
    elif view.limiter is not None:
        await view.limiter.check(identity, limit_class)
    return limit_class


def error_code(message: Any) -> str | None:
    """The code of the first error an operation's message carries (None: no error)."""
    kind = message.get("type")
    payload = message.get("payload")
    if kind == "error":
        errors = payload if isinstance(payload, list) else [payload]
    elif kind in ("next", "data") and isinstance(payload, dict):
        errors = payload.get("errors") or []
    else:
        return None
    for error in errors:
        extensions = error.get("extensions") if isinstance(error, dict) else None
        return str((extensions or {}).get("code") or "INTERNAL")
    return None


class OperationOutcomes:
    """Counts a socket's operations in ``chatql_ws_operations_total``: each ends ``ok``
    or with the code of the first error a message of it carried. Mixed into both
    subprotocols' handlers, whose every message to the client passes ``send_message``
    (the fast plans' relays write only results, never errors). Every message with an
    error names an operation that ends (a refused persisted query ends at once, as
    ``unknown``), so the codes noted never outlive their operations."""

    _outcomes: dict[str, str] | None = None
    view: Any

    def note_outcome(self, message: Any) -> None:
        code = error_code(message)
        if code is not None:
            if self._outcomes is None:
                self._outcomes = {}
            self._outcomes.setdefault(str(message.get("id")), code)

    def operation_ended(self, operation_id: str, query: str | None,
                        operation_name: str | None) -> None:
        outcome = "ok" if self._outcomes is None else self._outcomes.pop(operation_id, "ok")
        metrics = self.view.metrics
        if metrics is not None:
            metrics.observe_ws_operation(classify(query, operation_name).name, outcome)


def fit_close_reason(reason: str) -> str:
    """``reason`` made encodable (lone surrogates become ``?``) and cut, on a character
    boundary, to fit in a close frame."""
    encoded = reason.encode("utf-8", "replace")
    if len(encoded) <= MAX_CLOSE_REASON_BYTES:
        return encoded.decode()
    return encoded[: MAX_CLOSE_REASON_BYTES - 3].decode(errors="ignore") + "..."


#: Where :class:`ServerSendMiddleware` leaves the server's own ``send`` in the scope.
SERVER_SEND_KEY = "chatql.server_send"


class ServerSendMiddleware:
    """Outermost ASGI layer: keeps the server's own ``send`` of a WebSocket in the scope,
    so frames can be written below the middlewares' send wrappers (see
    :class:`FrameWriter`), and hands a WebSocket for ``path`` straight to
    ``websocket_app``.

    The layers in between have nothing to do for that socket — CORS and the body limit
    act on HTTP only, the endpoint raises none of the exceptions Starlette's handlers
    map, and its route is known — yet each would stay suspended on the socket's call
    stack for as long as it is open: some forty objects (coroutines, closures, send
    wrappers) per socket that the garbage collector walks in every full collection,
    with thousands of sidebars open. Only the exact path of the GraphQL
    WebSocket route, served at the root, is handed over; any other socket (and an app
    mounted under a root path) goes through the stack as before.
    """

    def __init__(self, app: Any, websocket_app: Any = None, path: str = "/graphql") -> None:
        self.app = app
        self.websocket_app = websocket_app
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope[SERVER_SEND_KEY] = send
            if (self.websocket_app is not None and scope["path"] == self.path
                    and not scope.get("root_path")):
                await self.websocket_app(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _sansio_protocol(websocket: Any) -> Any:
    """uvicorn's websockets-sansio connection behind ``websocket`` when frames may be
    written to its transport directly (no extension such as per-message deflate
    transforms them); None otherwise."""
    scope = getattr(websocket, "scope", None)
    server_send = scope.get(SERVER_SEND_KEY) if isinstance(scope, dict) else None
    return None if server_send is None else uvicorn_ws_protocol(server_send)


class FrameWriter(UvicornFrameTransport):
    """Sends text frames over one WebSocket, written straight to the transport.

    The ordinary way (Starlette's ``send_text``, the middlewares' send wrappers, uvicorn's
    ``send``, websockets' framing) costs more than the frame itself when one payload
    goes to thousands of sockets. While the connection is open and its transport below
    the high-water mark, a frame is written directly: the bytes are exactly what
    uvicorn would write (server frames are not masked). Anything else — a closing or
    closed socket, a transport paused by flow control, a frame in progress — takes the
    ordinary way, which waits for the buffer to drain and raises as it always does, so
    backpressure holds (the subscriber's queue coalesces or snapshots what waits) and
    nothing is written after a close. Pings, pongs and the close itself always go
    through the server. (When a frame may be written directly, and the write itself,
    are :class:`~chatql.gql.library_adapters.UvicornFrameTransport`'s.)
    """

    __slots__ = ("_fallback",)

    def __init__(self, protocol: Any, fallback: Send) -> None:
        super().__init__(protocol)
        self._fallback = fallback

    async def __call__(self, text: str) -> None:
        if not self.write(text_frame(text.encode())):
            await self._fallback(text)


def _sender(websocket: Any) -> Send:
    raw = getattr(websocket, "ws", None)
    if raw is not None and hasattr(raw, "send_text"):
        send_text: Send = raw.send_text
        protocol = _sansio_protocol(raw)
        return send_text if protocol is None else FrameWriter(protocol, send_text)

    async def send(text: str) -> None:  # pragma: no cover - other integrations
        await websocket.send_json(json.loads(text))

    return send


async def serve_planned(handler: Any, operation_id: str, kind: str, query: str,
                        operation_name: str | None, variables: dict[str, Any] | None,
                        send_message: Callable[[Any], Awaitable[None]],
                        completed: Callable[[], bool]) -> bool:
    """Serve one operation on a socket with the app's plans, on either subprotocol
    (``kind``: ``next`` for graphql-transport-ws, ``data`` for graphql-ws), up to but
    not including its ``complete``; False (having done nothing) when the executor must
    run it."""
    planned = handler.view.planner.find("ws", query, operation_name)
    if planned is None:
        return False
    answer = await planned.run(Call("ws", handler.context, variables))
    if answer is None:
        return False
    if isinstance(answer, dict):
        await send_message({"id": operation_id, "type": "next", "payload": answer}
                           if kind == "next" else
                           {"type": "data", "id": operation_id, "payload": answer})
        return True
    send = _sender(handler.websocket)
    frames = send if isinstance(send, FrameWriter) else None

    async def send_open(text: str) -> None:
        if not completed():
            await send(text)

    await answer.serve(Socket(_frame_prefix(operation_id, kind), send_open, frames,
                              completed))
    return True


def _frame_prefix(operation_id: str, kind: str) -> str:
    """What a result frame says before its payload, members in the order each
    protocol's ordinary messages have them."""
    op = orjson.dumps(operation_id).decode()
    if kind == "next":
        return '{"id":' + op + ',"type":"next","payload":'
    return '{"type":"data","id":' + op + ',"payload":'


class ChatqlWebSocketAdapter(ASGIWebSocketAdapter):
    """Strawberry's Starlette socket adapter with close reasons that always fit."""

    async def close(self, code: int, reason: str) -> None:
        await super().close(code, fit_close_reason(reason))


class ChatqlTransportWSHandler(OperationOutcomes, BaseGraphQLTransportWSHandler[Any, None]):
    """``graphql-transport-ws`` with message checks, server pings and counted operations."""

    _ping_task: asyncio.Task[None] | None = None
    #: The connection-init timer: this handler keeps its own, so that once the init
    #: cancels it nothing of it (its CancelledError, traceback and frames) stays
    #: referenced for the socket's lifetime, with thousands of sockets open.
    _init_timer: asyncio.Task[None] | None = None

    def on_request_accepted(self) -> None:
        self._init_timer = asyncio.create_task(self.handle_connection_init_timeout())
        self._init_timer.add_done_callback(_retrieve_outcome)

    async def send_message(self, message: Any) -> None:
        self.note_outcome(message)
        await super().send_message(message)

    async def handle_message(self, message: Any) -> None:
        unresolved = resolve_persisted(self.view, message)
        if unresolved is not None:
            error: Any = {"id": message["id"], "type": "error", "payload": [unresolved]}
            await self.send_message(error)
            self.operation_ended(message["id"], None, None)
            return
        problem = message_problem(message)
        if problem is not None:
            await self.handle_invalid_message(problem)
            return
        await super().handle_message(message)

    async def handle_connection_init(self, message: Any) -> None:
        timer, self._init_timer = self._init_timer, None
        if timer is not None:
            timer.cancel()
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

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        try:
            await self._run_counted(operation)
        finally:
            self.operation_ended(operation.id, operation.query, operation.operation_name)

    async def _run_counted(self, operation: Operation[Context, None]) -> None:
        try:
            limit_class = await admit_operation(self, operation.query,
                                                operation.operation_name)
        except RateLimited as error:
            refusal: Any = {"id": operation.id, "type": "error", "payload": [error.error()]}
            await operation.send_operation_message(refusal)
            return
        try:
            if await serve_planned(self, operation.id, "next", operation.query,
                                   operation.operation_name, operation.variables,
                                   operation.send_operation_message,
                                   lambda: operation.completed):
                await operation.send_operation_message({"id": operation.id,
                                                        "type": "complete"})
                return
            syntax_error = self._syntax_error(operation.query)
            if syntax_error is not None:
                # Answered with ``error``; the socket stays (the executor would close it).
                await operation.send_initial_errors([syntax_error])
                return
            await super().run_operation(operation)
        finally:
            if limit_class == "subscriptions":
                view: Any = self.view
                await view.subscription_closed(self.context.identity, "ws")

    def _syntax_error(self, query: str) -> GraphQLSyntaxError | None:
        """Why ``query`` does not parse, as the executor would say it (the same parser
        limits, the same error codes); None when it parses."""
        max_tokens = self.view.planner.settings.max_query_tokens
        try:
            parse(query, max_lexical_tokens=max_tokens, max_comments=max_tokens)
        except GraphQLSyntaxError as error:
            self.schema.process_errors([error])
            return error
        return None

    async def shutdown(self) -> None:
        for task in (self._init_timer, self._ping_task):
            if task is not None:
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task
        self._init_timer = None
        await super().shutdown()


def _retrieve_outcome(task: asyncio.Task[Any]) -> None:
    """Done callback: take a background task's error, so asyncio never reports it as
    never retrieved (the task handles and logs its own)."""
    if not task.cancelled():
        task.exception()


class ChatqlLegacyWSHandler(OperationOutcomes, BaseGraphQLWSHandler[Any, None]):
    """Legacy ``graphql-ws`` with the same message checks and counted operations."""

    async def send_message(self, message: Any) -> None:
        self.note_outcome(message)
        await super().send_message(message)

    async def handle_message(self, message: Any) -> None:
        unresolved = resolve_persisted(self.view, message)
        if unresolved is not None:
            await self.send_message(ErrorMessage(type="error", id=message["id"],
                                                 payload=unresolved))  # type: ignore[typeddict-item]
            self.operation_ended(message["id"], None, None)
            return
        problem = message_problem(message)
        if problem is not None:
            await self.websocket.close(code=4400, reason=problem)
            return
        await super().handle_message(message)

    async def handle_async_results(
        self,
        operation_id: str,
        query: str,
        operation_name: str | None,
        variables: dict[str, object] | None,
    ) -> None:
        limit_class = ""
        try:
            try:
                limit_class = await admit_operation(self, query, operation_name)
            except RateLimited as error:
                await self.send_message(ErrorMessage(
                    type="error", id=operation_id,
                    payload=error.error()))  # type: ignore[typeddict-item]
                return
            if not await serve_planned(self, operation_id, "data", query, operation_name,
                                       variables, self.send_message, lambda: False) and (
                    not await self._run_ordinary(operation_id, query, operation_name,
                                                 variables)):
                return
            await self.send_message(CompleteMessage(type="complete", id=operation_id))
        except asyncio.CancelledError:
            await self.send_message(CompleteMessage(type="complete", id=operation_id))
        finally:
            self.subscriptions.pop(operation_id, None)
            self.tasks.pop(operation_id, None)
            self.operation_ended(operation_id, query, operation_name)
            if limit_class == "subscriptions":
                view: Any = self.view
                await view.subscription_closed(self.context.identity, "ws")

    async def _run_ordinary(self, operation_id: str, query: str, operation_name: str | None,
                            variables: dict[str, object] | None) -> bool:
        """Run any operation; False when it failed before execution (no complete)."""
        # ``stream`` (unlike ``subscribe``) accepts queries and mutations too.
        result_source = await self.schema.stream(
            query,
            variable_values=variables,
            context_value=self.context,
            root_value=self.root_value,
            operation_name=operation_name,
        )
        self.subscriptions[operation_id] = result_source
        first = True
        async for result in result_source:
            if first and isinstance(result, PreExecutionError):
                assert result.errors
                await self.send_message(ErrorMessage(
                    type="error", id=operation_id, payload=result.errors[0].formatted))
                return False
            if not isinstance(result, ExecutionResult):
                # @defer/@stream frames have no graphql-ws representation.
                raise TypeError("incremental delivery is not supported over graphql-ws")
            await self.send_data_message(result, operation_id)
            first = False
        return True
