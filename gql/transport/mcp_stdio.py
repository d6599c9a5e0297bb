"""``chatql mcp``: a running chatql's ``/mcp`` tools over stdio, for desktop clients.

Claude Desktop, IDEs and other MCP hosts often start a server as a command and speak
to it over its stdin and stdout. ``chatql mcp --url URL`` is that command: an MCP
server on stdio (the ``mcp`` SDK's low-level ``Server``) whose every request is passed
to the chatql server at URL (its ``/mcp``, with the SDK's streamable HTTP client) and
whose every answer is that server's. The tools, their descriptions and schemas, the
resources and the errors are the remote server's, so nothing runs or is decided here;
the identity is the headers this process sends (``--header 'X-User-Id: bob'`` in dev
mode, ``--token`` for a bearer token in JWT mode).

It connects before it serves: a server that cannot be reached or refuses the identity
ends the command with one line on stderr (:class:`RemoteRefused`). Once serving, a
call the remote server does not answer is a tool error (``UNAVAILABLE: …``), so the
host can retry it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
)

__all__ = ["MCP_PATH", "RemoteRefused", "mcp_endpoint", "proxy_server", "remote_server",
           "serve_stdio"]

#: Where chatql serves MCP (``gql.transport.mcp.MCP_PATH``, the same; not imported, so
#: this command starts without loading the server's modules).
MCP_PATH = "/mcp"

#: Seconds to connect, write or wait for a free connection; a call may take longer.
_CONNECT_TIMEOUT = 30.0
_CALL_TIMEOUT = 300.0


class RemoteRefused(Exception):
    """The chatql server could not be reached, or refused this identity."""


def mcp_endpoint(url: str) -> str:
    """The MCP endpoint of the server at ``url``: its ``/mcp`` when ``url`` names no
    path (``http://host:8000``), else ``url`` as given (behind a proxy's prefix)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--url must be an http(s) address, got {url!r}")
    if parts.path in ("", "/"):
        parts = parts._replace(path=MCP_PATH)
    return urlunsplit(parts)


def _reason(error: BaseException) -> str:
    """What went wrong, from an error the SDK's client raised (perhaps in a group)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return error.message
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@asynccontextmanager
async def remote_server(url: str, headers: Mapping[str, str]) -> AsyncIterator[Client]:
    """An MCP client of the chatql server at ``url``, connected as ``headers`` name the
    caller; :class:`RemoteRefused` when it cannot be."""
    endpoint = mcp_endpoint(url)
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=_CALL_TIMEOUT)
    async with httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as http, \
            AsyncExitStack() as stack:
        try:
            remote = await stack.enter_async_context(
                Client(streamable_http_client(endpoint, http_client=http)))
        except Exception as error:
            raise RemoteRefused(f"{endpoint}: {_reason(error)}") from None
        yield remote


def proxy_server(remote: Client) -> Server[Any]:
    """A stdio-side MCP server that answers every request with ``remote``'s answer."""

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: PaginatedRequestParams | None) -> ListToolsResult:
        listed = await remote.list_tools(cursor=None if params is None else params.cursor)
        return ListToolsResult(tools=listed.tools, next_cursor=listed.next_cursor)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: CallToolRequestParams) -> CallToolResult:
        try:
            result = await remote.call_tool(params.name, params.arguments)
        except MCPError:
            raise  # the remote server's answer (an unknown tool, say), passed on
        except Exception as error:
            return CallToolResult(content=[TextContent(
                text=f"UNAVAILABLE: the chatql server did not answer ({_reason(error)})")],
                is_error=True)
        return CallToolResult(content=result.content,
                              structured_content=result.structured_content,
                              is_error=result.is_error)

    async def list_resources(ctx: ServerRequestContext[Any, Any],
                             params: PaginatedRequestParams | None) -> ListResourcesResult:
        listed = await remote.list_resources(cursor=None if params is None else params.cursor)
        return ListResourcesResult(resources=listed.resources, next_cursor=listed.next_cursor)

    async def list_resource_templates(ctx: ServerRequestContext[Any, Any],
                                      params: PaginatedRequestParams | None
                                      ) -> ListResourceTemplatesResult:
        listed = await remote.list_resource_templates(
            cursor=None if params is None else params.cursor)
        return ListResourceTemplatesResult(resource_templates=listed.resource_templates,
                                           next_cursor=listed.next_cursor)

    async def read_resource(ctx: ServerRequestContext[Any, Any],
                            params: ReadResourceRequestParams) -> ReadResourceResult:
        read = await remote.read_resource(params.uri)
        return ReadResourceResult(contents=read.contents)

    info = remote.server_info
    return Server(
        info.name if info is not None else "chatql",
        version=info.version if info is not None else "",
        title=info.title if info is not None else None,
        description=info.description if info is not None else None,
        instructions=remote.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


async def serve_stdio(url: str, headers: Mapping[str, str]) -> None:
    """Serve the tools of the chatql server at ``url`` on stdin and stdout until the
    host closes them; :class:`RemoteRefused` before serving when it cannot connect."""
    async with remote_server(url, headers) as remote:
        server = proxy_server(remote)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream,
                             server.create_initialization_options())
