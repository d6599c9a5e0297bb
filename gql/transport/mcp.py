"""``/mcp``: chatql as a Model Context Protocol server (streamable HTTP).

An MCP client — an IDE, a desktop assistant, an agent framework — lists and calls the
tools and reads the resource of :mod:`chatql.gql.transport.mcp_tools`, as the caller its
request names. The protocol is the official ``mcp`` SDK's (its low-level ``Server`` and
its ``StreamableHTTPSessionManager``); chatql adds three things around it:

- **The caller.** Each HTTP request is identified exactly as on ``/graphql`` (the dev
  headers, or ``Authorization: Bearer <token>`` in JWT mode) before the SDK sees it. A
  request without a valid identity is answered **401** with ``WWW-Authenticate:
  Bearer`` and a JSON-RPC error whose message is ``UNAUTHENTICATED:`` and the reason
  (what an MCP client shows for it); the SDK never runs it. Every tool call then acts
  as that identity and nothing else, whichever MCP session (if any) it names.
- **One door.** A tool runs its GraphQL operation in-process with a
  :class:`~chatql.gql.context.Context` for the caller: offered to the app's planner as a
  plain HTTP request is, else executed by the schema; it counts against the caller's
  rate limits as an operation on ``/graphql`` does. Its result is the operation's data,
  renamed; its errors are the operation's errors. So access, limits and error codes are
  the GraphQL API's own, and no chat can be read here that could not be read there.
- **Stateless.** The session manager runs statelessly and answers in JSON: any worker
  or instance answers any request, since chatql never asks the client anything back.
  For the same reason only ``POST`` is served: ``GET`` (a stream for messages the
  server would start) and ``DELETE`` (ending a session) are 405, as the protocol allows
  a server without them. Its lifecycle is the app's lifespan
  (:meth:`McpEndpoint.running`).

A tool's failure is an MCP tool result with ``isError`` whose text starts with the
error code (``NOT_FOUND: chat 'x' not found``) and whose ``structuredContent`` is
``{"error": {"code", "message", …}}``: arguments that break the tool's input schema are
``INVALID_ARGUMENT``, a chat that does not exist or is not the caller's to read is
``NOT_FOUND`` — the same answer for both. An unknown tool or resource is a JSON-RPC
``INVALID_PARAMS`` error, as the protocol has it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Context, Services
from chatql.gql.errors import code_for
from chatql.gql.ops.operations import classify
from chatql.gql.ops.rate_limits import RateLimited, RateLimiter
from chatql.gql.ops.request_log import current_record
from chatql.gql.plans.plan import Call
from chatql.gql.plans.planner import Planner
from chatql.gql.settings import Settings
from chatql.gql.transport.mcp_tools import (
    CHAT_URI_PREFIX,
    CHAT_URI_TEMPLATE,
    INSTRUCTIONS,
    LIST_CHATS,
    READ_CHAT,
    RESOURCE_MESSAGES,
    Operation,
    ToolSpec,
    chat_markdown,
    chat_page_variables,
    chat_summary,
    chat_uri,
    message_view,
    tool_specs,
)
from chatql.store.errors import ChatqlError, Unauthenticated
from chatql.store.records import Identity

__all__ = ["MCP_PATH", "McpEndpoint", "ToolFailure"]

MCP_PATH = "/mcp"
#: Chats per page of ``resources/list``.
_RESOURCES_PAGE = 50
#: Where the caller, identified once per HTTP request, waits for the handlers.
_CALLER = "chatql_mcp_caller"


def _release() -> str:
    try:
        return version("chatql")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout without install
        return "0"


class ToolFailure(Exception):
    """A tool's operation failed: its code, message and the error's other extensions."""

    def __init__(self, code: str, message: str, extensions: Mapping[str, Any] | None = None
                 ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extensions = dict(extensions or {})

    def result(self) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(text=str(self))], is_error=True,
            structured_content={"error": {"code": self.code, "message": self.message,
                                          **self.extensions}})


class McpEndpoint:
    """The ``/mcp`` ASGI endpoint of one app (see the module docstring)."""

    def __init__(self, *, schema: Any, planner: Planner, settings: Settings,
                 services_of: Callable[[Request], Services],
                 limiter: RateLimiter | None = None) -> None:
        self._schema = schema
        self._planner = planner
        self._settings = settings
        self._services_of = services_of
        self._limiter = limiter
        self.tools: dict[str, ToolSpec] = tool_specs(settings)
        self._validators = {name: Draft202012Validator(spec.input_schema)
                            for name, spec in self.tools.items()}
        self._listed = ListToolsResult(tools=[
            Tool(name=spec.name, title=spec.title, description=spec.description,
                 input_schema=spec.input_schema,
                 annotations=ToolAnnotations(title=spec.title, read_only_hint=spec.read_only,
                                             destructive_hint=False,
                                             idempotent_hint=spec.idempotent,
                                             open_world_hint=False))
            for spec in self.tools.values()])
        self.server: Server[Any] = Server(
            "chatql", version=_release(), title="chatql",
            description="Chat history and agent memory, as the caller may see them.",
            instructions=INSTRUCTIONS,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )
        self._manager: StreamableHTTPSessionManager | None = None

    # -- the HTTP side ------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve while the app runs: a session manager per lifespan (one may run once)."""
        manager = StreamableHTTPSessionManager(
            self.server, json_response=True, stateless=True,
            max_request_body_size=self._settings.max_body_bytes)
        # The manager's task group is entered and left by one task of its own: the
        # lifespan's start and end may run in different tasks (a test harness's
        # fixtures do), and a task group must be left by the task that entered it.
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            async with manager.run():
                self._manager = manager
                started.set()
                try:
                    await stop.wait()
                finally:
                    self._manager = None

        task = asyncio.create_task(serve(), name="chatql-mcp")
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiting.cancel()
            task.result()  # the manager failed to start: raise why
        try:
            yield
        finally:
            stop.set()
            await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            caller = identity_from_credentials(self._settings, dict(request.headers))
        except Unauthenticated as error:
            await _refusal(401, "UNAUTHENTICATED", str(error),
                           {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        record = current_record()
        if record is not None:
            record.user, record.tenant = caller.user_id, caller.tenant_id
        manager = self._manager
        if manager is None:
            # Only without the app's lifespan (which runs the session manager).
            await _refusal(503, "INTERNAL", "the MCP server is not running")(scope, receive,
                                                                              send)
            return
        setattr(request.state, _CALLER, caller)
        await manager.handle_request(scope, receive, send)

    # -- running an operation as the caller ----------------------------------------------

    async def execute(self, request: Request, caller: Identity, operation: Operation,
                      variables: dict[str, Any]) -> dict[str, Any]:
        """The operation's data as ``caller``; :class:`ToolFailure` for its first error."""
        kind = classify(operation.document, operation.name)
        record = current_record()
        if record is not None:
            record.operation = kind.name
        if self._limiter is not None:
            try:
                await self._limiter.check(caller, kind.limit_class)
            except RateLimited as error:
                refused = error.error()
                extensions = dict(refused["extensions"])
                raise ToolFailure(extensions.pop("code"), refused["message"],
                                  extensions) from None
        context = Context(services=self._services_of(request), identity=caller,
                          request=request)
        answer: Mapping[str, Any] | None = None
        planned = self._planner.find("http", operation.document, operation.name)
        if planned is not None:
            answered = await planned.run(Call("http", context, variables))
            if answered is not None:
                assert isinstance(answered, dict)
                answer = answered
            else:
                context.planned = True
        if answer is None:
            result = await self._schema.execute(operation.document, variable_values=variables,
                                                context_value=context,
                                                operation_name=operation.name)
            answer = {"data": result.data,
                      "errors": [error.formatted for error in result.errors or ()]}
        errors = answer.get("errors")
        if errors:
            first = errors[0]
            extensions = dict(first.get("extensions") or {})
            code = str(extensions.pop("code", "INTERNAL"))
            raise ToolFailure(code, str(first.get("message")), extensions)
        data: dict[str, Any] = answer["data"]
        return data

    # -- the MCP handlers ------------------------------------------------------------------

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        spec = self.tools.get(name)
        return None if spec is None else spec.input_schema

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any],
                          params: PaginatedRequestParams | None) -> ListToolsResult:
        return self._listed

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: CallToolRequestParams) -> CallToolResult:
        spec = self.tools.get(params.name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are"
                           f" {', '.join(self.tools)}")
        request, caller = _caller_of(ctx)
        arguments = dict(params.arguments or {})
        try:
            invalid = best_match(self._validators[spec.name].iter_errors(arguments))
            if invalid is not None:
                where = ".".join(str(part) for part in invalid.absolute_path)
                raise ToolFailure("INVALID_ARGUMENT",
                                  f"{where}: {invalid.message}" if where else invalid.message)
            for name, schema in spec.input_schema["properties"].items():
                if "default" in schema and name not in arguments:
                    arguments[name] = schema["default"]
            data = await self.execute(request, caller, spec.operation,
                                      spec.variables(arguments))
            structured = spec.result(data, arguments)
        except ToolFailure as failure:
            return failure.result()
        except ChatqlError as error:
            return ToolFailure(code_for(error) or "INVALID_ARGUMENT", str(error)).result()
        return CallToolResult(content=[TextContent(text=orjson.dumps(structured).decode())],
                              structured_content=structured)

    async def _list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                       params: PaginatedRequestParams | None
                                       ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[ResourceTemplate(
            name="chat", title="A chat", uri_template=CHAT_URI_TEMPLATE,
            mime_type="text/markdown",
            description=f"The newest {RESOURCE_MESSAGES} messages of a chat's current"
            " branch as Markdown (read_chat pages further back).")])

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                              params: PaginatedRequestParams | None) -> ListResourcesResult:
        request, caller = _caller_of(ctx)
        cursor = None if params is None else params.cursor
        try:
            data = await self.execute(request, caller, LIST_CHATS, {
                "first": _RESOURCES_PAGE, "after": cursor, "filter": None})
        except ToolFailure as failure:
            raise MCPError(INVALID_PARAMS, str(failure)) from None
        connection = data["chats"]
        resources = []
        for edge in connection["edges"]:
            chat = chat_summary(edge["node"])
            resources.append(Resource(
                name=chat["id"], title=chat["title"] or f"Chat {chat['id']}",
                uri=chat_uri(chat["id"]), mime_type="text/markdown",
                description=f"Chat with assistant {chat['assistant_id']}, last message"
                f" {chat['last_message_at'] or 'none yet'}"))
        page = connection["pageInfo"]
        return ListResourcesResult(
            resources=resources, next_cursor=page["endCursor"] if page["hasNextPage"] else None)

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any],
                             params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        chat_id = uri.removeprefix(CHAT_URI_PREFIX)
        if chat_id == uri or not chat_id:
            raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}; chats are"
                           f" {CHAT_URI_TEMPLATE}")
        request, caller = _caller_of(ctx)
        arguments = {"chat_id": chat_id, "limit": RESOURCE_MESSAGES}
        try:
            data = await self.execute(request, caller, READ_CHAT,
                                      chat_page_variables(arguments))
            if data["chat"] is None:
                raise ToolFailure("NOT_FOUND", f"chat {chat_id!r} not found")
        except ToolFailure as failure:
            raise MCPError(INVALID_PARAMS, str(failure)) from None
        connection = data["messages"]
        text = chat_markdown(chat_summary(data["chat"]),
                             [message_view(edge["node"]) for edge in connection["edges"]],
                             older=connection["pageInfo"]["hasPreviousPage"])
        return ReadResourceResult(contents=[TextResourceContents(
            uri=uri, mime_type="text/markdown", text=text)])


def _refusal(status: int, code: str, message: str,
             headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An answer given before the SDK runs: a JSON-RPC error (no request id), which MCP
    clients surface as the error of the request they sent, whose message starts with
    chatql's code and whose ``data.code`` is that code."""
    body = {"jsonrpc": "2.0", "id": None,
            "error": {"code": INVALID_REQUEST, "message": f"{code}: {message}",
                      "data": {"code": code}}}
    return JSONResponse(body, status_code=status, headers=headers)


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> tuple[Request, Identity]:
    """The HTTP request a message came in and the caller :class:`McpEndpoint` found."""
    request = ctx.request
    caller = None if not isinstance(request, Request) else getattr(request.state, _CALLER,
                                                                  None)
    if not isinstance(caller, Identity):  # pragma: no cover - every request is identified
        raise MCPError(INVALID_PARAMS, "the request names no caller")
    assert isinstance(request, Request)
    return request, caller
