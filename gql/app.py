"""``create_app(settings)``: the Starlette application serving ``/graphql``, ``/healthz``,
``/readyz`` and ``/metrics``."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

import orjson
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.parse_content_type import parse_content_type
from strawberry.http.streaming import SSETransport
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.types.execution import ExecutionResult

from chatql.gql.auth import (
    CREDENTIAL_KEYS,
    ConfigurationError,
    authenticator_for,
    identity_from_credentials,
    names_caller,
)
from chatql.gql.context import Context, Services
from chatql.gql.library_adapters import GraphQLViewHooks
from chatql.gql.ops.health import Readiness
from chatql.gql.ops.logs import request_lines_for
from chatql.gql.ops.metrics import Metrics, MetricsFeed, process_metrics
from chatql.gql.ops.operations import classify
from chatql.gql.ops.persisted_queries import PersistedQueries, PersistedQueryError
from chatql.gql.ops.rate_limits import RateLimited, RateLimiter, parse_rate_limits
from chatql.gql.ops.request_log import RequestObserver, current_record
from chatql.gql.ops.tracing import instrument_engine, start_tracing, traced, tracing_enabled
from chatql.gql.plans.plan import Call, TextRelay
from chatql.gql.plans.planner import Planner
from chatql.gql.schema.root import build_schema
from chatql.gql.settings import Settings
from chatql.gql.transport.ag_ui import run_agent
from chatql.gql.transport.ai_chat import resume_reply, send_messages
from chatql.gql.transport.bodylimit import BodyLimitMiddleware, error_body
from chatql.gql.transport.export import export_endpoint, import_endpoint
from chatql.gql.transport.files import file_routes, file_service_for
from chatql.gql.transport.sse import (
    GRAPHQL_SSE_PROTOCOL,
    RelayedSubscription,
    execute_plain_http,
    relayed_stream,
)
from chatql.gql.transport.web import page_response, web_routes
from chatql.gql.transport.websocket import (
    ChatqlLegacyWSHandler,
    ChatqlTransportWSHandler,
    ChatqlWebSocketAdapter,
    ServerSendMiddleware,
)
from chatql.store.cursors import CursorSigner, load_or_create_secret
from chatql.store.db.database import Database
from chatql.store.db.migrate import migrate
from chatql.store.errors import Unauthenticated
from chatql.store.keeping.archive import ChatArchive
from chatql.store.keeping.retention import RetentionSweeper
from chatql.store.keeping.shares import ShareViews
from chatql.store.lists.events import ChatEvents
from chatql.store.records import Identity
from chatql.store.streams import StreamService, backend_from_url

__all__ = ["GraphQLEndpoint", "create_app"]

logger = logging.getLogger("chatql")


#: Stands in for the caller until authentication succeeds; never reaches a resolver
#: (HTTP answers 401 first, a WebSocket is closed with 4403 at ``connection_init``).
_NOBODY = Identity(user_id="", tenant_id="")
#: Distinct (Content-Type, Accept) pairs remembered by the HTTP lane.
_PLAIN_JSON_CACHE_SIZE = 64


class _AuthFailed(Exception):
    """Raised inside the view when an HTTP request carries no valid identity."""


def _unauthenticated(failure: _AuthFailed) -> Response:
    return JSONResponse(error_body(str(failure), "UNAUTHENTICATED"), status_code=401,
                        headers={"WWW-Authenticate": "Bearer"})


def _refused(error: HTTPException) -> Response:
    return JSONResponse(error_body(error.reason, "INVALID_ARGUMENT"),
                        status_code=error.status_code)


def _rate_limited(error: RateLimited) -> Response:
    return JSONResponse({"data": None, "errors": [error.error()]}, status_code=429,
                        headers={"Retry-After": str(error.retry_after)})


def _not_persisted(error: PersistedQueryError) -> Response:
    return JSONResponse({"errors": [error.error()]}, status_code=error.status)


def _replay(body: bytes) -> Receive:
    """A ``receive`` that hands over ``body`` (a request's body, rewritten) at once."""
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


class GraphQLEndpoint(GraphQLViewHooks[Context, None]):
    """Strawberry's ASGI view with chatql's context, identity and JSON encoding.

    Authentication failures over HTTP answer **401** with a GraphQL-shaped body
    (``errors[0].extensions.code == "UNAUTHENTICATED"``) and ``WWW-Authenticate:
    Bearer``, so HTTP-level clients and proxies see them as what they are. Requests the
    transport itself refuses (bad JSON, wrong content type or method) keep their 4xx
    status and get the same error shape with ``INVALID_ARGUMENT``.
    """

    graphql_transport_ws_handler_class = ChatqlTransportWSHandler
    graphql_ws_handler_class = ChatqlLegacyWSHandler
    websocket_adapter_class = ChatqlWebSocketAdapter

    def __init__(self, services_of: Any, settings: Settings, *,
                 metrics: Metrics | None = None, limiter: RateLimiter | None = None,
                 persisted: PersistedQueries | None = None) -> None:
        schema = build_schema(settings)
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.playground else None,
            keep_alive=settings.ws_keepalive > 0,
            keep_alive_interval=settings.ws_keepalive or 1,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL,
                                    GRAPHQL_SSE_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout),
            max_subscriptions_per_connection=settings.max_subscriptions_per_connection,
        )
        self._services_of = services_of
        self._settings = settings
        #: The app's registered fast plans (gql/plans/planner.py): every transport asks it.
        self.planner = Planner(schema, settings)
        self._plain_json_cache: dict[tuple[bytes, bytes | None], bool] = {}
        #: Subscribers by transport, counted when metrics are on.
        self.metrics = metrics
        #: Rate limits per identity and operation class, when configured.
        self.limiter = limiter
        #: Persisted documents (automatic persisted queries and the safelist).
        self.persisted = persisted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope=scope, receive=receive)
        try:
            if self.persisted is not None:
                request = await self._with_persisted_documents(request)
            declined = None
            if scope["method"] == "POST":
                declined = await self._lane(request, send)
                if declined is True:
                    return
            response = await (self.run(request, context=declined)
                              if isinstance(declined, Context) else self.run(request))
        except _AuthFailed as failure:
            response = _unauthenticated(failure)
        except HTTPException as error:
            response = _refused(error)
        except RateLimited as error:
            response = _rate_limited(error)
        except PersistedQueryError as error:
            response = _not_persisted(error)
        try:
            await response(scope, receive, send)
        finally:
            opened = getattr(request.state, "sse_subscriber", None)
            if opened is not None:
                await self.subscription_closed(opened, "sse")

    async def _with_persisted_documents(self, request: Request) -> Request:
        """The request with every persisted document it names in place of its hash
        (:class:`PersistedQueryError` when one cannot be resolved); the same request
        when it names none."""
        persisted = self.persisted
        assert persisted is not None
        scope = request.scope
        if scope["method"] == "GET":
            raw = scope["query_string"]
            if not persisted.persisted_only and b"persistedQuery" not in raw:
                return request
            params = dict(parse_qsl(raw.decode("latin-1")))
            if "query" not in params and "extensions" not in params:
                return request  # the playground page
            extensions = None
            if "extensions" in params:
                try:
                    extensions = json.loads(params["extensions"])
                except ValueError:
                    raise HTTPException(400, "extensions must be JSON") from None
            query = persisted.resolve(params.get("query"), extensions)
            if query is None:
                return request
            params["query"] = query
            return Request({**scope, "query_string": urlencode(params).encode()},
                           receive=request.receive)
        if scope["method"] != "POST":
            return request
        body = await request.body()
        if not persisted.persisted_only and b"persistedQuery" not in body:
            return request
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            if persisted.persisted_only:
                raise HTTPException(400, "Unable to parse request body as JSON") from None
            return request
        operations = data if isinstance(data, list) else [data]
        for operation in operations:
            if isinstance(operation, dict):
                query = persisted.resolve(operation.get("query"), operation.get("extensions"))
                if query is not None:
                    operation["query"] = query
            elif persisted.persisted_only:
                raise HTTPException(400, "The request body must be a JSON object")
        return Request(scope, receive=_replay(orjson.dumps(data)))

    def observe_operation(self, query: str | None, operation_name: str | None,
                          identity: Identity) -> str:
        """Note the operation and caller on the request's record; its limit class."""
        kind = classify(query, operation_name)
        record = current_record()
        if record is not None:
            record.operation = kind.name
            record.user = identity.user_id
            record.tenant = identity.tenant_id
        return kind.limit_class

    async def subscription_opened(self, identity: Identity, transport: str) -> None:
        """Count an open subscription (:class:`RateLimited` beyond the identity's)."""
        if self.limiter is not None:
            await self.limiter.open_subscription(identity)
        if self.metrics is not None:
            self.metrics.subscribers.labels(transport).inc()

    async def subscription_closed(self, identity: Identity, transport: str) -> None:
        if self.metrics is not None:
            self.metrics.subscribers.labels(transport).dec()
        if self.limiter is not None:
            await self.limiter.close_subscription(identity)

    async def _lane(self, request: Request, send: Send) -> bool | Context:
        """Answer a plain POST a plan serves without Strawberry's request machinery.

        A producer sends thousands of ``pushChunks`` per stream, a chat appends every
        message and front ends read the same pages again and again, and the view's
        generic steps (request adapter, content negotiation, request data, result
        processing, argument conversion) cost about as much as the work itself. Only a
        request the view would execute as one plain HTTP operation is answered here,
        with the same bytes and headers it would send; anything else — another content
        type or a streaming ``Accept``, a body that is not a JSON object with a
        document a plan compiled, a caller without a valid identity — returns False and
        goes through the view as before (the body read here stays cached on
        ``request``). True: answered.

        A context: the plan declined it after it was counted against the caller's
        limits. Declining is always safe — nothing was done — and the view runs it on
        the executor with that context, marked :attr:`~gql.context.Context.planned`, so
        it is neither counted nor offered to the plans again. A write the plan *tried*
        is never declined afterwards: its failure is the plan's answer, the error the
        executor would give (:func:`gql.errors.failed_root_field`).
        """
        content_type = accept = None
        for name, value in request.scope["headers"]:
            if name == b"content-type":
                if content_type is None:
                    content_type = value
            elif name == b"accept" and accept is None:
                accept = value
        if content_type is None or not self._plain_json(content_type, accept):
            return False
        body = await request.body()
        if not self.planner.may_answer(body):
            return False
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return False
        if type(data) is not dict:
            return False
        query, variables = data.get("query"), data.get("variables")
        extensions = data.get("extensions")
        operation_name = data.get("operationName")
        if type(query) is not str or not (variables is None or type(variables) is dict) or not (
            extensions is None or type(extensions) is dict
        ) or not (operation_name is None or type(operation_name) is str):
            return False
        planned = self.planner.find("http", query, operation_name)
        if planned is None:
            return False
        try:
            identity = identity_from_credentials(self._settings, dict(request.headers))
        except Unauthenticated:
            # In jwt mode a caller who names no one may still read a share link.
            if names_caller(request.headers) or not classify(query, operation_name).open:
                return False
            identity = _NOBODY
        limit_class = self.observe_operation(query, operation_name, identity)
        # Only a share read asks whether the caller named anyone at all.
        anonymous = limit_class == "shares" and not names_caller(request.headers)
        if self.limiter is not None:
            await self.limiter.check(identity, limit_class,
                                     address=_address(request) if anonymous else None)
        # Counted once: should the view run it after all, it is not counted again.
        context = Context(services=self._services_of(request), identity=identity,
                          request=request, anonymous=anonymous)
        answered = await planned.run(Call("http", context, variables,
                                          nul_free=b"\\u0000" not in body))
        if answered is None:
            # Declined before anything was written: the view runs it on the executor,
            # with this context, neither counted nor planned again.
            context.planned = True
            return context
        assert isinstance(answered, dict)
        content = orjson.dumps(answered)
        await send({
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(content)).encode()),
                        (b"content-type", b"application/json")],
        })
        await send({"type": "http.response.body", "body": content})
        record = current_record()
        if record is not None:
            errors = answered.get("errors")
            record.outcome = "ok" if not errors else str(errors[0]["extensions"]["code"])
        return True

    def _plain_json(self, content_type: bytes, accept: bytes | None) -> bool:
        """Whether the view would read this request as a JSON body and answer it with
        one JSON response (not a stream), decided as the view decides, once per pair
        of header values."""
        key = (content_type, accept)
        known = self._plain_json_cache.get(key)
        if known is None:
            media_type, _ = parse_content_type(content_type.decode("latin-1"))
            known = "application/json" in media_type and self.stream_transport_for(
                {"accept": accept.decode("latin-1")} if accept is not None else {}) is None
            if len(self._plain_json_cache) >= _PLAIN_JSON_CACHE_SIZE:
                self._plain_json_cache.clear()
            self._plain_json_cache[key] = known
        return known

    async def render_graphql_ide(self, request: Request) -> Response:
        # GraphiQL bundled with chatql (gql/transport/web.py): no CDN, dev identity headers offered.
        return page_response("playground.html", self._settings, request)

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        services: Services = self._services_of(request)
        identity = _NOBODY
        auth_error: str | None = None
        try:
            identity = identity_from_credentials(self._settings, dict(request.headers))
        except Unauthenticated as error:
            # Decided later: HTTP refuses before executing (the GraphiQL page itself
            # needs no identity); a WebSocket may still authenticate in connection_init.
            auth_error = str(error)
        return Context(services=services, identity=identity, request=request, response=response,
                       auth_error=auth_error, anonymous=not names_caller(request.headers))

    async def execute_operation(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # The single door from HTTP into the schema: no identity, no execution.
        context: Context = kwargs["context"] if "context" in kwargs else args[2]
        request_data = kwargs["request_data"] if "request_data" in kwargs else args[1]
        if context.auth_error is not None and not (
                context.anonymous and _open_to_anyone(request_data)):
            raise _AuthFailed(context.auth_error)
        await self._admit(request, *args, **kwargs)
        relayed = await self._relayed(request, *args, **kwargs)
        if relayed is not None:
            return relayed
        return await super().execute_operation(request, *args, **kwargs)

    async def _admit(self, request: Any, request_adapter: Any, request_data: Any,
                     context: Context, *_args: Any, **_kwargs: Any) -> None:
        """Note each operation of the request and count it against the caller's limits
        (:class:`RateLimited` beyond them); an event stream's subscription is counted
        open until its response ends."""
        if context.planned:
            return
        identity = context.identity
        for data in request_data if isinstance(request_data, list) else [request_data]:
            limit_class = self.observe_operation(data.query, data.operation_name, identity)
            if limit_class == "subscriptions":
                if getattr(data, "protocol", None) == "sse":
                    await self.subscription_opened(identity, "sse")
                    request.state.sse_subscriber = identity
            elif self.limiter is not None:
                # A share read by someone who names no one counts for their address.
                anonymous = context.anonymous and limit_class == "shares"
                await self.limiter.check(identity, limit_class,
                                         address=_address(request) if anonymous else None)

    async def _relayed(self, request: Any, request_adapter: Any, request_data: Any,
                       context: Context, *_args: Any,
                       **_kwargs: Any) -> RelayedSubscription | None:
        """A ``chatEvents`` subscription POSTed for Server-Sent Events, relayed the
        fast way (see gql/plans/chat_events.py); None: the ordinary way runs it."""
        if (request_adapter.method != "POST" or isinstance(request_data, list)
                or getattr(request_data, "protocol", None) != "sse"
                or request_data.extensions):
            return None
        planned = self.planner.find("sse", request_data.query, request_data.operation_name)
        relay = None if planned is None else await planned.run(
            Call("sse", context, request_data.variables))
        if relay is None:
            return None
        assert isinstance(relay, TextRelay)
        relayed = RelayedSubscription(relay)
        request.state.relayed_subscription = relayed
        return relayed

    def subscription_stream(self, request: Any) -> Any:
        relayed = getattr(request.state, "relayed_subscription", None)
        if relayed is None:
            return None
        return relayed_stream(relayed, self.stream_transports[SSETransport.protocol])

    async def on_ws_connect(self, context: Context) -> Any:
        # The connection_init payload names the caller over WebSocket;
        # the handshake headers stand in only when the payload names no one.
        params = context.connection_params or {}
        if any(str(key).lower() in CREDENTIAL_KEYS for key in params):
            try:
                context.identity = identity_from_credentials(self._settings, params)
            except Unauthenticated:
                raise ConnectionRejectionError({"message": "invalid credentials"}) from None
            context.anonymous = False
            context.name_caller()
        elif context.auth_error is not None:
            raise ConnectionRejectionError({"message": "missing credentials"})
        return await super().on_ws_connect(context)

    def parse_json(self, data: str | bytes) -> Any:
        # Invalid UTF-8, NaN/Infinity, runaway nesting and bodies that are JSON but not an
        # object (or a batch list) are 400s, never a 500.
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = _lenient_json(data)
        if not isinstance(value, dict | list):
            raise HTTPException(400, "The request body must be a JSON object")
        return value

    async def execute_single(self, request: Any, request_adapter: Any, sub_response: Any,
                             context: Context, root_value: Any,
                             request_data: Any) -> Any:
        # The app's registered plans first (gql/plans/planner.py), then the executor; a read
        # a lane already declined goes straight to the executor.
        if (request_adapter.method == "POST" or self.allow_queries_via_get) and not (
                context.planned):
            planned = self.planner.find("http", request_data.query,
                                        request_data.operation_name, operation="query")
            answered = None if planned is None else await planned.run(
                Call("http", context, request_data.variables))
            if answered is not None:
                assert isinstance(answered, dict)
                return ExecutionResult(data=answered["data"], errors=None)
        # Subscriptions run over WebSocket or SSE only (see gql/transport/sse.py).
        return await execute_plain_http(self, request_adapter.method, context, root_value,
                                        request_data)

    async def process_result(self, request: Any, result: ExecutionResult) -> Any:
        processed: Any = await super().process_result(request, result)
        record = current_record()
        if record is not None and not record.outcome:
            errors = processed.get("errors")
            record.outcome = "ok" if not errors else str(
                (errors[0].get("extensions") or {}).get("code") or "INTERNAL")
        return processed

    def encode_json(self, data: object) -> str:
        # Text, not bytes: WebSocket frames must be text (graphql-ws JS clients close
        # the socket on binary frames), and HTTP encodes str the same way.
        return orjson.dumps(data).decode()


def _address(request: Request) -> str:
    """The client's address, as the server sees it (behind a proxy, the proxy's unless
    uvicorn is told to trust its forwarding headers)."""
    return request.client.host if request.client is not None else ""


def _open_to_anyone(request_data: Any) -> bool:
    """Whether every operation of a request only reads what anyone may read without
    naming a caller (a share link: gql/ops/operations.py, ``OPEN_FIELDS``)."""
    operations = request_data if isinstance(request_data, list) else [request_data]
    return all(classify(data.query, data.operation_name).open for data in operations)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _bounded_int(text: str) -> int:
    # The same range orjson (and so the store's JSON reader) accepts.
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError("integer out of range")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def _lenient_json(data: str | bytes) -> Any:
    """JSON that orjson refused only for lone surrogate escapes (``"\\ud800"``).

    The JSON grammar allows them and browsers send them, but they are not Unicode text
    and no database driver can encode them; each becomes U+FFFD, as a decoder would
    replace invalid UTF-8. Everything else orjson refused (invalid UTF-8, NaN,
    numbers out of its range, deep nesting) stays refused.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int,
                           parse_float=_finite_float)
    except (ValueError, RecursionError):
        raise HTTPException(400, "Unable to parse request body as JSON") from None
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, element in enumerate(item):
                if isinstance(element, str):
                    item[index] = _LONE_SURROGATE.sub("\ufffd", element)
                else:
                    stack.append(element)
        elif isinstance(item, dict):
            for key in list(item):
                element = item.pop(key)
                clean_key = _LONE_SURROGATE.sub("\ufffd", key)
                if isinstance(element, str):
                    element = _LONE_SURROGATE.sub("\ufffd", element)
                else:
                    stack.append(element)
                item[clean_key] = element
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    return value


def traced_middleware(app: Any) -> Any:
    """The ASGI tracing layer (imported only when tracing is on)."""
    return traced(app)


_startup_frozen = False


def freeze_startup_objects() -> None:
    """Take what the process built before serving — modules, the schema, the engine —
    out of the cyclic collector's full collections, once per process.

    Those objects live as long as the process, and a full collection walks every
    tracked object: with a thousand sockets open it already has ~300,000 to walk
    (~200 ms on a small machine, a stall every subscriber feels), ~130,000 of them
    from startup. Frozen objects are still freed when nothing refers to them; only a
    cycle among them would outlive its use, and startup's objects are not garbage."""
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.collect()
        gc.freeze()


class _LazyMcp:
    """``/mcp``, loaded on its first request: the MCP SDK (and the OpenTelemetry it
    imports) stays out of a service no MCP client calls. Its session manager runs
    from then until the app stops."""

    def __init__(self, build: Any) -> None:
        self._build = build
        self._endpoint: Any = None
        self._running: Any = None
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._endpoint is None:
            async with self._lock:
                if self._endpoint is None:
                    from chatql.gql.transport.mcp import McpEndpoint

                    endpoint = self._build(McpEndpoint)
                    running = endpoint.running()
                    await running.__aenter__()
                    self._running, self._endpoint = running, endpoint
        await self._endpoint(scope, receive, send)

    async def close(self) -> None:
        running, self._running, self._endpoint = self._running, None, None
        if running is not None:
            await running.__aexit__(None, None, None)


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; with no settings they are read from ``CHATQL_*`` variables.

    Settings that cannot work (e.g. ``CHATQL_AUTH=jwt`` without a key) raise
    :class:`~gql.auth.ConfigurationError` here, so the server refuses to start.
    """
    settings = settings or Settings.from_env()
    authenticator_for(settings)
    if settings.log_format not in ("text", "json"):
        raise ConfigurationError(
            f"CHATQL_LOG_FORMAT must be text or json, got {settings.log_format!r}")
    rules = parse_rate_limits(settings.rate_limits)
    limiter = None if rules.empty else RateLimiter(rules, settings.broker_url)
    persisted = PersistedQueries(settings.persisted_queries, settings.persisted_only)
    metrics = process_metrics() if settings.metrics else None
    feed = MetricsFeed(metrics) if metrics is not None else None
    tracing = tracing_enabled()
    if tracing:
        start_tracing()
    request_lines = request_lines_for(settings.log_format)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        db = Database(settings.database_url, replica_urls=settings.database_replica_urls,
                      replica_max_lag=settings.replica_max_lag)
        if tracing:
            instrument_engine(db.engine)
        readiness.watch_signals()
        try:
            if settings.migrate_on_start:
                # A database with rows is converted to partitions by `chatql migrate`
                # (batch by batch), never while the server starts.
                await migrate(db, pg_partitions=settings.pg_partitions)
            key = settings.secret.encode() if settings.secret else await load_or_create_secret(db)
            streams = StreamService(db, backend_from_url(settings.broker_url),
                                    idle_timeout=settings.stream_idle_timeout,
                                    max_bytes=settings.max_stream_bytes)
            archive = ChatArchive(settings.archive_url)
            files = file_service_for(settings, db, key)
            events = ChatEvents(db, streams.backend)
            streams.events = events
            share_views = ShareViews(db)
            app.state.services = Services(settings=settings, db=db, cursors=CursorSigner(key),
                                          streams=streams, archive=archive, events=events,
                                          files=files, share_views=share_views)
            share_views.start()
            await events.start()
            await streams.start()
            retention = RetentionSweeper(db, interval=settings.sweep_interval,
                                         trash_days=settings.trash_days, archive=archive,
                                         archive_after_days=settings.archive_after_days,
                                         events=events, files=files)
            retention.start()
            if feed is not None:
                feed.start(app.state.services, {"retention": retention})
            freeze_startup_objects()
            try:
                try:
                    yield
                finally:
                    await mcp.close()
            finally:
                # Draining: /readyz answers 503 from here on.
                readiness.close()
                if feed is not None:
                    await feed.close()
                if limiter is not None:
                    await limiter.close()
                await retention.close()
                await share_views.close()
                # Shutdown (SIGTERM/SIGINT): end the live lists, then persist or hand
                # over every stream.
                await events.close()
                await streams.close()
        finally:
            await db.dispose()

    def services_of(connection: Request | WebSocket) -> Services:
        services: Services = connection.app.state.services
        return services

    graphql = GraphQLEndpoint(services_of, settings, metrics=metrics, limiter=limiter,
                              persisted=persisted)
    mcp = _LazyMcp(lambda endpoint: endpoint(schema=graphql.schema, planner=graphql.planner,
                                             settings=settings, services_of=services_of,
                                             limiter=limiter))
    readiness = Readiness(services_of)
    operational = [Route("/healthz", readiness.healthz), Route("/readyz", readiness.readyz)]
    if feed is not None:
        operational.append(Route("/metrics", feed.endpoint, methods=["GET"]))

    app = Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            *operational,
            *web_routes(settings),
            Route("/chats/{chat_id}/export", export_endpoint, methods=["GET"]),
            Route("/chats/import", import_endpoint, methods=["POST"]),
            *file_routes(),
            Route("/ai/chat", send_messages, methods=["POST"]),
            Route("/ag-ui", run_agent, methods=["POST"]),
            Route("/ai/chat/{chat_id}/stream", resume_reply, methods=["GET"]),
            Route("/mcp", mcp, methods=["POST"]),
        ],
        lifespan=lifespan,
        middleware=[
            # Outermost: the server's own WebSocket send, for frames written directly;
            # the GraphQL WebSocket goes straight to its endpoint (the layers below act
            # on HTTP only).
            Middleware(ServerSendMiddleware, websocket_app=graphql, path="/graphql"),
            # Then, for HTTP: a trace per request (when tracing is on), and the request's
            # id, metrics and log line, which see every answer below (fast lanes,
            # refusals, limits).
            *([Middleware(traced_middleware)] if tracing else []),
            Middleware(RequestObserver, metrics=metrics, lines=request_lines),
            # Then: preflights are answered before anything reads the body.
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "PUT", "OPTIONS"],
                allow_headers=["*"],
                max_age=600,
            ),
            Middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes,
                       exempt=("/files", "/chats/import")),
        ],
    )
    app.state.planner = graphql.planner
    return app
