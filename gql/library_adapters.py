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

from collections.abc import AsyncIterator, Callable, Mapping
from functools import cached_property
from typing import Any, TypeVar

from graphql import GraphQLSchema
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.http.streaming import AsyncTextStream, HTTPStreamTransport
from strawberry.types import get_object_definition
from strawberry.types.arguments import InputContext
from websockets.protocol import State

__all__ = [
    "GraphQLViewHooks",
    "InputBuilder",
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
    """Strawberry's ASGI view, with the two steps chatql takes part in: which streaming
    transport a request's headers ask for, and the text stream a subscription's
    response is written from.

    Public API only: the view's ``protocols`` and ``stream_transport_classes_by_protocol``
    (the transports it offers), each transport's ``accepts(accept)``, and
    ``create_streaming_response``, the method Strawberry hands every streamed
    response's text stream to (each integration overrides it)."""

    # As Strawberry's view declares it (its own declaration overrides the base's type).
    websocket_adapter_class = ASGIWebSocketAdapter

    @cached_property
    def stream_transports(self) -> dict[str, HTTPStreamTransport]:
        """The streaming transports the view offers, by protocol (``sse``,
        ``multipart-subscription``), in the order it tries them."""
        return {cls.protocol: cls() for protocol in self.protocols
                if (cls := self.stream_transport_classes_by_protocol.get(protocol))}

    def stream_transport_for(self, headers: Mapping[str, str]) -> HTTPStreamTransport | None:
        """The streaming transport the view answers a request with these headers with;
        None for one plain JSON response. Decided as the view decides it: the first
        offered transport that accepts the request's ``Accept``. The HTTP lane answers
        a request only when the view would have answered it with one JSON response."""
        accept = next((value for key, value in headers.items() if key.lower() == "accept"), "")
        return next((transport for transport in self.stream_transports.values()
                     if transport.accepts(accept)), None)

    def subscription_stream(self, request: Any) -> AsyncTextStream | None:
        """The text stream to send for the subscription ``request`` streams; None (as
        here) sends Strawberry's own. A subclass overrides it."""
        return None

    async def create_streaming_response(self, request: Any,
                                        stream: Callable[[], AsyncIterator[str]],
                                        sub_response: Any, headers: Mapping[str, str]) -> Any:
        own = self.subscription_stream(request)
        return await super().create_streaming_response(
            request, stream if own is None else own, sub_response, headers)


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
    ``disconnected``, and its websockets ``conn``, whose ``state`` is OPEN only from
    the 101 response (so the handshake is done and no denial response is pending)
    until uvicorn sends or fails a close (every close path of uvicorn's goes through
    ``send_close`` or ``fail``, which leave OPEN). uvicorn sends each message whole
    (``fin`` set), so no fragmented message is ever in progress between two of its
    sends. While these say the socket is open and below the high-water mark, bytes
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
        return (protocol.writable.is_set() and not protocol.disconnected
                and protocol.conn.state is State.OPEN
                and not self._transport.is_closing())

    def write(self, frames: bytes) -> bool:
        """Write already framed ``frames`` when the transport takes them now."""
        if not self.writable():
            return False
        self._transport.write(frames)
        return True
