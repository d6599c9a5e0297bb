"""What ``gql/library_adapters.py`` relies on in Strawberry, graphql-core, uvicorn and
websockets, pinned against the installed versions.

Each test names the internal it pins: when an upgrade changes one, the failure here
says which, before a fast path or a protocol fix misbehaves somewhere less obvious.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import strawberry
from graphql import (
    GraphQLObjectType,
    GraphQLSchema,
    execute,
    parse,
    validate,
)
from strawberry.http.streaming import SSETransport
from strawberry.permission import BasePermission
from strawberry.resolvers import is_default_resolver
from strawberry.subscriptions import (
    GRAPHQL_SSE_PROTOCOL,
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
)
from strawberry.types import get_object_definition
from strawberry.types.arguments import InputContext
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

from chatql.gql.library_adapters import (
    GraphQLViewHooks,
    UvicornFrameTransport,
    build_input_with,
    graphql_core_schema,
    uvicorn_ws_protocol,
)
from chatql.gql.plans.plan import text_frame
from chatql.gql.schema.root import build_schema
from chatql.gql.schema.streams import ChunkInput, chunk_from_input
from tests.conftest import uvicorn_serving

# -- a small schema ------------------------------------------------------------------


class Denied(BasePermission):
    message = "no"

    def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Item:
    plain: str
    guarded: str = strawberry.field(permission_classes=[Denied])

    @strawberry.field
    def computed(self) -> str:
        return self.plain.upper()


@strawberry.type
class Query:
    @strawberry.field
    def item(self) -> Item:
        return Item(plain="a", guarded="g")

    @strawberry.field
    def hello(self) -> str:
        return "world"


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def count(self, to: int = 2) -> AsyncGenerator[int, None]:
        for n in range(to):
            yield n


SCHEMA = strawberry.Schema(query=Query, subscription=Subscription)


# -- Strawberry's schema ---------------------------------------------------------------


def test_graphql_core_schema_is_the_schema_strawberry_executes_with() -> None:
    """Pins ``strawberry.Schema._schema``: the graphql-core schema, resolvers attached."""
    graphql_schema = graphql_core_schema(SCHEMA)
    assert isinstance(graphql_schema, GraphQLSchema), (
        "strawberry.Schema._schema is no longer graphql-core's GraphQLSchema: "
        "graphql_core_schema needs another way to reach it")
    # Built once: resolving it when a plan is made is as good as per request.
    assert graphql_core_schema(SCHEMA) is graphql_schema
    item = graphql_schema.type_map["Item"]
    assert isinstance(item, GraphQLObjectType)
    assert set(item.fields) == {"plain", "guarded", "computed"}
    document = parse("{ hello item { plain computed } }")
    assert validate(graphql_schema, document) == []
    result = execute(graphql_schema, document)
    assert not isinstance(result, Awaitable)
    assert result.data == SCHEMA.execute_sync("{ hello item { plain computed } }").data == {
        "hello": "world", "item": {"plain": "a", "computed": "A"}}


def test_strawberrys_default_resolvers_are_told_apart_by_its_public_function() -> None:
    """Public API the fast paths use: ``strawberry.resolvers.is_default_resolver`` is
    True for the resolver Strawberry makes for a field without a resolver function (the
    fast paths read such a field as an attribute) and False for a resolver function."""
    item = graphql_core_schema(SCHEMA).type_map["Item"]
    assert isinstance(item, GraphQLObjectType)
    fields = item.fields
    plain, computed = fields["plain"].resolve, fields["computed"].resolve
    assert plain is not None and computed is not None
    assert is_default_resolver(plain)
    assert not is_default_resolver(computed)
    # A permission class keeps the mark: the fast paths check permission_classes
    # themselves, on the Strawberry field the graphql-core field carries.
    strawberry_field = fields["guarded"].extensions["strawberry-definition"]
    assert strawberry_field.permission_classes == [Denied]


# -- building input values --------------------------------------------------------------


@strawberry.input
class Built:
    count: int
    some_name: str = "fallback"
    maybe: str | None = None


@strawberry.input
class Refused:
    count: int


@strawberry.type
class EchoQuery:
    @strawberry.field
    def echo(self, values: list[Built]) -> str:
        return json.dumps(values)


def test_build_input_with_hands_the_builder_graphql_cores_coerced_values() -> None:
    """Pins ``StrawberryObjectDefinition.from_input``: Strawberry builds each value of the
    input type (each item of a list too) with it, from graphql-core's coerced value keyed
    by GraphQL names with the schema's defaults filled, in place of its own conversion."""
    calls: list[tuple[type, dict[str, Any], Any]] = []

    def builder(cls: type, value: Mapping[str, Any], context: InputContext) -> dict[str, Any]:
        calls.append((cls, dict(value), context))
        return {"built": dict(value)}

    build_input_with(Built, builder)
    schema = strawberry.Schema(query=EchoQuery)
    result = schema.execute_sync(
        '{ echo(values: [{count: 1}, {count: 2, someName: "n", maybe: null}]) }')
    assert result.errors is None, result.errors
    assert result.data is not None
    assert json.loads(result.data["echo"]) == [
        {"built": {"count": 1, "someName": "fallback", "maybe": None}},
        {"built": {"count": 2, "someName": "n", "maybe": None}},
    ], "Strawberry no longer builds input values with StrawberryObjectDefinition.from_input"
    assert [call[0] for call in calls] == [Built, Built]
    assert all(isinstance(call[2], InputContext) for call in calls)


def test_build_input_with_refuses_what_it_cannot_do_honestly() -> None:
    def builder(cls: type, value: Mapping[str, Any], context: InputContext) -> Any:
        return value

    build_input_with(Refused, builder)
    build_input_with(Refused, builder)  # the same builder again: nothing changes
    assert get_object_definition(Refused, strict=True).from_input is builder
    with pytest.raises(ValueError, match="already built"):
        build_input_with(Refused, lambda cls, value, context: None)
    with pytest.raises(TypeError, match="not a Strawberry input type"):
        build_input_with(Item, builder)


def test_chatqls_schema_builds_chunk_inputs_with_chunk_from_input() -> None:
    # gql/schema/root.py sets it, explicitly, when it builds a schema (gql/schema/streams.py, where
    # the type is declared, changes nothing of Strawberry's: see test_private_names.py).
    built = build_schema()
    definition = get_object_definition(ChunkInput, strict=True)
    assert definition.from_input is chunk_from_input
    assert built.get_type_by_name("ChunkInput") is definition


# -- Strawberry's HTTP view -------------------------------------------------------------


def _view(cls: type[GraphQLViewHooks[Any, None]] = GraphQLViewHooks) -> Any:
    return cls(SCHEMA, subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,
                                               GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL))


ACCEPTS = [
    {"accept": "text/event-stream"}, {"Accept": "text/event-stream"},
    {"accept": "text/event-stream; charset=utf-8"}, {"ACCEPT": "Text/Event-Stream"},
    {"accept": "application/json, text/event-stream;q=0.9"},
    {"accept": "application/json"}, {"accept": "*/*"}, {"accept": ""}, {},
    {"accept": "text/event-streamx"}, {"accept": "text/html,text/event-stream"},
    {"accept": "multipart/mixed;subscriptionSpec=1.0,application/json"},
    {"accept": "multipart/mixed;subscriptionSpec=\"1.0\";boundary=graphql"},
    {"accept": "multipart/mixed;boundary=other;subscriptionSpec=1.0"},
]


@pytest.mark.parametrize("protocols", [
    (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL),
    (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL, "multipart-subscription"),
    (GRAPHQL_TRANSPORT_WS_PROTOCOL,),
])
def test_stream_transport_for_decides_as_the_view_does(protocols: tuple[str, ...]) -> None:
    """Pins that the view's own decision (``AsyncBaseHTTPView``'s private
    ``_get_stream_transport_from_headers``, which reads the request's Accept) is the
    first offered transport whose public ``accepts`` takes it, for every transport the
    view offers."""
    view = GraphQLViewHooks(SCHEMA, subscription_protocols=protocols)
    for headers in ACCEPTS:
        own = view.stream_transport_for(headers)
        strawberrys = view._get_stream_transport_from_headers(headers)
        assert type(own) is type(strawberrys), (protocols, headers, own, strawberrys)
    sse = view.stream_transport_for({"accept": "text/event-stream"})
    assert isinstance(sse, SSETransport) == (GRAPHQL_SSE_PROTOCOL in protocols)
    assert view.stream_transport_for({"accept": "application/json"}) is None


async def _sse_body(view: Any) -> str:
    transport = httpx.ASGITransport(app=view)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.post("/graphql", json={"query": "subscription { count }"},
                                   headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    return response.text


async def test_subscription_stream_replaces_the_views_stream_when_it_answers() -> None:
    """Pins that Strawberry's view writes a streamed subscription's response through
    ``create_streaming_response`` (the public method each integration overrides), once
    per response, with the transport's headers."""
    seen: list[Any] = []

    class Custom(GraphQLViewHooks[Any, None]):
        def subscription_stream(self, request: Any) -> Any:
            transport = self.stream_transports[SSETransport.protocol]
            seen.append(request.url.path)

            async def stream() -> AsyncGenerator[str, None]:
                yield transport.encode_event("next", '{"data":{"count":"relayed"}}')
                yield transport.encode_complete()

            return stream

    body = await _sse_body(_view(Custom))
    assert '{"data":{"count":"relayed"}}' in body, body
    assert '"count":0' not in body
    assert seen == ["/graphql"]


async def test_without_an_answer_the_views_own_stream_is_sent() -> None:
    body = await _sse_body(_view())
    assert '{"data":{"count":0}}' in body and '{"data":{"count":1}}' in body, body
    assert "event: complete" in body


# -- a real uvicorn server -------------------------------------------------------------

Asgi = Callable[[Any, Any, Any], Awaitable[None]]


@asynccontextmanager
async def served(app: Asgi, per_message_deflate: bool = False) -> AsyncIterator[str]:
    """``app`` served by uvicorn (websockets-sansio, as chatql runs) on a free port."""
    async with uvicorn_serving(app, lifespan="off",
                               per_message_deflate=per_message_deflate) as port:
        yield f"ws://127.0.0.1:{port}/graphql"


async def _message(ws: ClientConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
    return message


async def _transport_ws(url: str) -> ClientConnection:
    ws = await connect(url, subprotocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL])  # type: ignore[list-item]
    await ws.send(json.dumps({"type": "connection_init"}))
    assert (await _message(ws))["type"] == "connection_ack"
    return ws


# -- uvicorn's WebSocket connection -----------------------------------------------------


def _capturing_app(actions: Callable[[Any, Any, Any], Awaitable[None]]) -> Asgi:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "websocket"
        await actions(scope, receive, send)

    return app


async def test_uvicorn_ws_protocol_is_behind_uvicorns_send() -> None:
    """Pins uvicorn's ``send`` being a bound method of its ``WebSocketsSansIOProtocol``
    (``send.__self__``), whose websockets ``conn`` lists no extension without deflate."""
    found: list[Any] = []

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()  # websocket.connect
        found.append(uvicorn_ws_protocol(send))
        await send({"type": "websocket.accept"})
        await receive()

    async with served(_capturing_app(actions)) as url, connect(url) as ws:
        await ws.close()
    assert found and found[0] is not None, (
        "uvicorn's send is no longer a method of WebSocketsSansIOProtocol")
    assert type(found[0]).__name__ == "WebSocketsSansIOProtocol"


async def test_uvicorn_ws_protocol_refuses_sockets_whose_frames_are_transformed() -> None:
    found: list[Any] = []

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        found.append(uvicorn_ws_protocol(send))
        await receive()

    async with served(_capturing_app(actions), per_message_deflate=True) as url, connect(
            url, extensions=[ClientPerMessageDeflateFactory()]) as ws:
        await ws.close()
    assert found == [None], "per-message deflate is no longer seen in conn.extensions"

    class Other:
        async def send(self, message: Any) -> None:
            return None

    async def plain(message: Any) -> None:
        return None

    assert uvicorn_ws_protocol(Other().send) is None
    assert uvicorn_ws_protocol(plain) is None


async def test_frames_written_to_the_transport_arrive_as_uvicorns_own() -> None:
    """Pins the protocol state :class:`UvicornFrameTransport` reads (``writable``,
    ``disconnected``, ``conn.state``, ``transport``): writable only between the
    handshake and the close, not while flow control pauses writing, and frames written
    directly reach the client like those uvicorn sends."""
    states: dict[str, bool] = {}
    done = asyncio.Event()

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        protocol = uvicorn_ws_protocol(send)
        assert protocol is not None
        writer = UvicornFrameTransport(protocol)
        states["before accept"] = writer.writable()
        await send({"type": "websocket.accept"})
        states["open"] = writer.writable()
        await send({"type": "websocket.send", "text": "ordinary ü"})
        states["written"] = writer.write(text_frame("direct ü".encode()))
        protocol.pause_writing()  # what the transport calls above its high-water mark
        states["paused"] = writer.writable()
        protocol.resume_writing()
        states["resumed"] = writer.writable()
        big = "x" * 70_000
        states["written big"] = writer.write(text_frame(big.encode()))
        await receive()  # the client's "closing"
        await send({"type": "websocket.close", "code": 1000})
        states["closed"] = writer.writable()
        states["refused"] = not writer.write(text_frame(b"late"))
        done.set()

    async with served(_capturing_app(actions)) as url, connect(url, max_size=None) as ws:
        assert await asyncio.wait_for(ws.recv(), 10) == "ordinary ü"
        assert await asyncio.wait_for(ws.recv(), 10) == "direct ü"
        assert await asyncio.wait_for(ws.recv(), 10) == "x" * 70_000
        await ws.send("closing")
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        await asyncio.wait_for(done.wait(), 10)
    assert states == {"before accept": False, "open": True, "written": True,
                      "paused": False, "resumed": True, "written big": True,
                      "closed": False, "refused": True}, states


async def test_a_socket_the_client_dropped_is_not_writable() -> None:
    states: list[bool] = []
    gone = asyncio.Event()

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        protocol = uvicorn_ws_protocol(send)
        writer = UvicornFrameTransport(protocol)
        await send({"type": "websocket.accept"})
        states.append(writer.writable())
        assert (await receive())["type"] == "websocket.disconnect"
        states.append(writer.writable())
        gone.set()

    async with served(_capturing_app(actions)) as url:
        async with connect(url) as ws:
            for _ in range(500):
                if states:
                    break
                await asyncio.sleep(0.01)
            ws.transport.abort()  # no close frame: the connection is simply lost
        await asyncio.wait_for(gone.wait(), 10)
    assert states == [True, False]


async def test_a_socket_answered_with_a_denial_response_is_never_writable() -> None:
    """Pins that websockets' ``conn.state`` is not OPEN while uvicorn sends a denial
    response (the ASGI ``websocket.http.response`` extension) in place of the 101:
    the frame writer needs no state of uvicorn's own for it."""
    states: list[bool] = []

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        writer = UvicornFrameTransport(uvicorn_ws_protocol(send))
        await send({"type": "websocket.http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain")]})
        states.append(writer.writable())
        await send({"type": "websocket.http.response.body", "body": b"no"})
        states.append(writer.writable())

    async with served(_capturing_app(actions)) as url:
        with pytest.raises(InvalidStatus) as refused:
            await connect(url)
    assert refused.value.response.status_code == 403
    assert states == [False, False]


async def test_a_socket_the_server_closed_is_not_writable_before_the_client_answers() -> None:
    """Pins that the close uvicorn sends for the app moves ``conn.state`` out of OPEN at
    once, while the client has not answered it yet."""
    states: list[bool] = []
    done = asyncio.Event()

    async def actions(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        writer = UvicornFrameTransport(uvicorn_ws_protocol(send))
        await send({"type": "websocket.accept"})
        states.append(writer.writable())
        await send({"type": "websocket.close", "code": 4000})
        states.append(writer.writable())
        states.append(writer.write(text_frame(b"late")))
        done.set()

    async with served(_capturing_app(actions)) as url, connect(url) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
        await asyncio.wait_for(done.wait(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000
    assert states == [True, False, False]
