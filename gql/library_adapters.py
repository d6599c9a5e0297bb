"""The one door from chatql's GraphQL layer to library internals.

Strawberry, graphql-core, uvicorn, websockets and Starlette keep the right to change
anything that is not their public API in any release. Where chatql's fast paths and
protocol fixes need such an internal, they reach it through a small function or class
here, and nowhere else (``tests/test_private_names.py`` holds every other module to
that). Each says what it relies on and why chatql needs it; where a public API does the
job it is used instead, and its docstring says so. ``tests/gql/test_library_adapters.py``
pins the behaviour each relies on against the installed libraries, so an upgrade that
changes one fails there first, naming it.

Callers resolve what they can once — when a plan is made, a reader built or a socket
accepted — so none of this adds a call to a request's or a frame's path that was not
there before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from graphql import GraphQLError, GraphQLSchema
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.http.streaming import AsyncTextStream, HTTPStreamTransport
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.types import get_object_definition
from strawberry.types.arguments import InputContext
from websockets.protocol import State

__all__ = [
    "GraphQLViewHooks",
    "InputBuilder",
    "TransportWSHandlerHooks",
    "UvicornFrameTransport",
    "build_input_with",
    "graphql_core_schema",
    "uvicorn_ws_protocol",
]

ContextT = TypeVar("ContextT")
RootValueT = TypeVar("RootValueT")

#: What Strawberry calls to build an input value: (the input class, graphql-core's
#: coerced value keyed by GraphQL field names, Strawberry's conversion context).
InputBuilder = Callable[[type, Mapping[str, Any], InputContext], Any]


# -- Strawberry's schema ---------------------------------------------------------------


def graphql_core_schema(schema: Any) -> GraphQLSchema:
    """The graphql-core schema a Strawberry schema validates and executes with.

    Relies on ``strawberry.Schema._schema``: Strawberry offers no public accessor for
    it, and graphql-core's public functions the fast paths call — ``validate``,
    ``execute``, ``get_variable_values`` — and the shapes they read (a type's fields,
    its resolvers, its serialisers) take this object. Validating a document against it
    is what Strawberry's own validation does, so a plan made from it agrees with the
    ordinary path. Strawberry builds it once, in the schema's constructor: callers
    resolve it when they make a plan or build a reader, not per request.
    """
    graphql_schema: GraphQLSchema = schema._schema
    return graphql_schema


def build_input_with(input_type: type, builder: InputBuilder) -> None:
    """Have Strawberry build values of the input type ``input_type`` with ``builder``.

    Public API: ``StrawberryObjectDefinition.from_input`` is Strawberry's documented
    hook for building an input value straight from graphql-core's coerced one (keyed
    by GraphQL field names, defaults filled, every field's type already checked), in
    place of its generic conversion — for a list of a thousand chunks that conversion
    is most of a ``pushChunks``. Strawberry documents the hook for integrations that
    make their own type definitions; here it is set on the definition
    ``strawberry.input`` made (found with the public ``get_object_definition``).

    Call it explicitly from the code that builds the schema, before building it
    (Strawberry also builds input defaults with the hook), never as a side effect of
    importing the type. A type that already has another builder is refused.
    """
    definition = get_object_definition(input_type, strict=True)
    if not definition.is_input:
        raise TypeError(f"{input_type.__name__} is not a Strawberry input type")
    if definition.from_input not in (None, builder):
        raise ValueError(f"{input_type.__name__} is already built by {definition.from_input!r}")
    definition.from_input = builder


# -- Strawberry's HTTP view ------------------------------------------------------------


class GraphQLViewHooks(GraphQL[ContextT, RootValueT]):
    """Strawberry's ASGI view, with public names for the private steps chatql takes
    part in: which streaming transport a request's headers ask for, and the stream a
    subscription's result is written as."""

    # As Strawberry's view declares it (its own declaration overrides the base's type).
    websocket_adapter_class = ASGIWebSocketAdapter

    def stream_transport_for(self, headers: Mapping[str, str]) -> HTTPStreamTransport | None:
        """The streaming transport (graphql-sse, multipart) the view would answer a
        request with these headers with; None for one plain JSON response.

        Relies on ``AsyncBaseHTTPView._get_stream_transport_from_headers``, the step
        the view itself takes when it reads a request: the HTTP lane answers a request
        only when the view would have answered it with one JSON response, and asking
        the view is the only way to decide exactly as it does.
        """
        return self._get_stream_transport_from_headers(headers)

    def subscription_stream(self, request: Any, result: Any,
                            transport: HTTPStreamTransport) -> AsyncTextStream | None:
        """The text stream to send for a subscription's ``result`` over ``transport``;
        None (as here) sends Strawberry's own. A subclass overrides it."""
        return None

    def _stream_result(self, request: Any, result: Any,
                       transport: HTTPStreamTransport) -> AsyncTextStream:
        """Relies on ``AsyncBaseHTTPView._stream_result(request, result, transport)``:
        the one step that turns what ``execute_operation`` returned for a streamed
        subscription into the response's text stream. A relayed subscription (one
        served from pre-serialised events, not an execution per event) is written by
        :meth:`subscription_stream` instead; there is no public hook for it."""
        stream = self.subscription_stream(request, result, transport)
        if stream is None:
            return super()._stream_result(request, result, transport)
        return stream


# -- Strawberry's graphql-transport-ws handler -----------------------------------------


class TransportWSHandlerHooks(BaseGraphQLTransportWSHandler[ContextT, RootValueT]):
    """Strawberry's ``graphql-transport-ws`` handler, with public names for the
    internals chatql adjusts: which errors before execution close the socket, and the
    connection-init timer it keeps."""

    @staticmethod
    def pre_execution_close_reason(error: GraphQLError) -> str | None:
        """The close reason for an operation that failed before execution; None answers
        the operation with an ``error`` message and keeps the socket. Strawberry's own
        choice here (a subclass overrides it)."""
        return BaseGraphQLTransportWSHandler._get_pre_execution_close_reason(error)

    def _get_pre_execution_close_reason(self, error: GraphQLError) -> str | None:  # type: ignore[override]
        """Relies on ``BaseGraphQLTransportWSHandler._get_pre_execution_close_reason``
        (a static method Strawberry calls on the handler) deciding, for the first error
        of an operation that failed before execution, whether the whole socket closes
        (4400 with the returned reason) or only that operation is answered with an
        ``error`` message; chatql keeps the socket for a syntax error. No public hook
        decides it."""
        return self.pre_execution_close_reason(error)

    def release_init_timer(self) -> None:
        """Forget the connection-init timer once the init has cancelled it.

        Relies on ``BaseGraphQLTransportWSHandler.connection_init_timeout_task``: the
        task that closes a socket with no ``connection_init`` in time, which Strawberry
        cancels at the init but keeps referenced (with its ``CancelledError``,
        traceback and frames) for the socket's lifetime — some objects per socket the
        garbage collector walks, with thousands of sockets open. Its ``shutdown``
        accepts None there. Call it right after the handler's own
        ``handle_connection_init``.
        """
        timeout = self.connection_init_timeout_task
        if timeout is not None and (timeout.cancelling() or timeout.cancelled()):
            self.connection_init_timeout_task = None


# -- uvicorn's WebSocket connection ----------------------------------------------------


def uvicorn_ws_protocol(server_send: object) -> Any | None:
    """uvicorn's websockets-sansio connection behind the ASGI ``send`` it gave a
    WebSocket, when frames may be written to its transport directly; None otherwise
    (another server or WebSocket implementation, or an extension such as per-message
    deflate that transforms frames).

    Relies on uvicorn's ``send`` being a bound method of its
    ``uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol``
    (its ``__self__``) and on that protocol's ``conn``, the websockets
    ``ServerProtocol`` whose ``extensions`` are the negotiated ones. chatql writes one
    run of frames, built once, to thousands of sockets; going through each socket's
    ASGI ``send`` (and websockets' framing) costs more than the write itself.
    """
    protocol = getattr(server_send, "__self__", None)
    if protocol is None:
        return None
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import (
            WebSocketsSansIOProtocol,
        )
    except ImportError:  # pragma: no cover - uvicorn without it
        return None
    if type(protocol) is not WebSocketsSansIOProtocol or protocol.conn.extensions:
        return None
    return protocol


class UvicornFrameTransport:
    """Writes already framed bytes straight to the transport of a uvicorn
    websockets-sansio connection (see :func:`uvicorn_ws_protocol`), while that is safe.

    :meth:`writable` relies on the protocol's state as uvicorn keeps it: ``writable``
    (an ``asyncio.Event`` cleared while the transport is above its high-water mark),
    ``handshake_complete``, ``close_sent``, ``disconnected``, ``initial_response``
    (a denial response in progress), and its websockets ``conn`` (``state`` and
    ``expect_continuation_frame``, a fragmented message being sent). While all say
    the socket is open, idle between frames and below the high-water mark, bytes
    written to the transport are exactly what uvicorn would write (server frames are
    not masked). The check is one method call, as cheap as the attribute reads it
    makes, since it runs for every run of frames to every socket.
    """

    __slots__ = ("_protocol", "_transport")

    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol
        self._transport = protocol.transport

    def writable(self) -> bool:
        """Whether a frame may be written to the transport now."""
        protocol = self._protocol
        return (protocol.writable.is_set() and protocol.handshake_complete
                and not protocol.close_sent and not protocol.disconnected
                and protocol.initial_response is None
                and protocol.conn.state is State.OPEN
                and not protocol.conn.expect_continuation_frame
                and not self._transport.is_closing())

    def write(self, frames: bytes) -> bool:
        """Write already framed ``frames`` when the transport takes them now."""
        if not self.writable():
            return False
        self._transport.write(frames)
        return True
