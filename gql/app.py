"""``create_app(settings)``: the Starlette application serving ``/graphql`` and ``/healthz``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.types.execution import ExecutionResult

from gql.auth import identity_from_credentials
from gql.context import Context, Services
from gql.push_fastpath import fast_push
from gql.schema import schema
from gql.settings import Settings
from gql.websocket import GraphQLTransportWSHandler, GraphQLWSHandler
from store.broker import broker_from_url
from store.cursors import CursorSigner, load_or_create_secret
from store.database import Database
from store.migrate import migrate
from store.streams import StreamService

__all__ = ["GraphQLEndpoint", "create_app"]

logger = logging.getLogger("chatql")


class GraphQLEndpoint(GraphQL[Context, None]):
    """Strawberry's ASGI view with chatql's context, identity and JSON encoding."""

    graphql_transport_ws_handler_class = GraphQLTransportWSHandler
    graphql_ws_handler_class = GraphQLWSHandler

    def __init__(self, services_of: Any, settings: Settings) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.playground else None,
            keep_alive=settings.ws_keepalive > 0,
            keep_alive_interval=settings.ws_keepalive or 1,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout),
            max_subscriptions_per_connection=settings.max_subscriptions_per_connection,
        )
        self._services_of = services_of
        self._settings = settings

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        services: Services = self._services_of(request)
        headers = dict(request.headers)
        return Context(
            services=services,
            identity=identity_from_credentials(self._settings, headers),
            request=request,
            response=response,
        )

    async def on_ws_connect(self, context: Context) -> Any:
        # The connection_init payload names the caller over WebSocket (SPEC §10);
        # the handshake headers stand in only when the payload names no one.
        params = context.connection_params or {}
        if params:
            context.identity = identity_from_credentials(self._settings, params)
        return await super().on_ws_connect(context)

    async def execute_single(self, request: Any, request_adapter: Any, sub_response: Any,
                             context: Context, root_value: Any,
                             request_data: Any) -> Any:
        # pushChunks is sent thousands of times per stream: see gql/push_fastpath.py.
        if request_adapter.method == "POST":
            pushed = await fast_push(self.schema, context, request_data.query,
                                     request_data.operation_name, request_data.variables)
            if pushed is not None:
                return ExecutionResult(data=pushed["data"], errors=None)
        return await super().execute_single(request, request_adapter, sub_response, context,
                                            root_value, request_data)

    def decode_json(self, data: str | bytes) -> object:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            # Valid JSON orjson refuses, such as an escaped lone surrogate.
            return json.loads(data)

    def encode_json(self, data: object) -> str:
        # Text, not bytes: WebSocket frames must be text (graphql-ws JS clients close
        # the socket on binary frames), and HTTP encodes str the same way.
        return orjson.dumps(data).decode()


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; with no settings they are read from ``CHATQL_*`` variables."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        db = Database(settings.database_url)
        try:
            if settings.migrate_on_start:
                await migrate(db)
            key = settings.secret.encode() if settings.secret else await load_or_create_secret(db)
            broker = broker_from_url(settings.broker_url)
            streams = StreamService(db, broker, idle_timeout=settings.stream_idle_timeout,
                                    max_bytes=settings.max_stream_bytes)
            app.state.services = Services(settings=settings, db=db, cursors=CursorSigner(key),
                                          broker=broker, streams=streams)
            await streams.start()
            try:
                yield
            finally:
                # Shutdown (SIGTERM/SIGINT): end and persist every active stream first.
                await streams.close()
                await broker.close()
        finally:
            await db.dispose()

    def services_of(connection: Request | WebSocket) -> Services:
        services: Services = connection.app.state.services
        return services

    graphql = GraphQLEndpoint(services_of, settings)

    async def healthz(request: Request) -> Response:
        services = services_of(request)
        if await services.db.ping():
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": "database unreachable"}, status_code=503)

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
        ],
        lifespan=lifespan,
    )
