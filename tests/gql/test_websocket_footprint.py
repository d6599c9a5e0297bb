"""What an open GraphQL WebSocket keeps alive while it waits: only its own state.

A server with thousands of live sidebars holds every open socket's call stack, and the
garbage collector walks all of it in each full collection. The HTTP-only layers (CORS,
the body limit, exception handling, routing) pass a WebSocket through and must not stay
suspended on its stack, and the connection-init timeout, cancelled by the init, must
not stay referenced (with its exception, traceback and frames) for the socket's life.
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import websockets

from chatql.gql.settings import Settings
from tests.gql.test_streams_ws import serve

IDENTITY = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
HTTP_ONLY = {"starlette.middleware.cors", "starlette.middleware.exceptions",
             "starlette.routing", "starlette._exception_handler", "chatql.gql.transport.bodylimit"}
SOCKETS = 4


def _stack(task: asyncio.Task[Any]) -> list[tuple[str, str]]:
    """(module, qualified name) of each coroutine a task is suspended in, outermost first."""
    chain = []
    coro: Any = task.get_coro()
    while coro is not None and hasattr(coro, "cr_code"):
        chain.append((coro.cr_frame.f_globals.get("__name__", "") if coro.cr_frame else "",
                      coro.cr_code.co_qualname))
        coro = coro.cr_await
    return chain


async def test_an_open_socket_keeps_neither_http_layers_nor_its_init_timeout(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        sockets = []
        try:
            for protocol in ["graphql-transport-ws", "graphql-ws"] * (SOCKETS // 2):
                ws = await websockets.connect(f"ws://{server}/graphql",
                                              subprotocols=[protocol])  # type: ignore[list-item]
                await ws.send(json.dumps({"type": "connection_init", "payload": IDENTITY}))
                assert json.loads(await ws.recv())["type"] == "connection_ack"
                sockets.append(ws)
            await asyncio.sleep(0.05)
            gc.collect()
            stacks = [_stack(task) for task in asyncio.all_tasks()]
            served = [stack for stack in stacks
                      if any(name == "GraphQLEndpoint.__call__" for _, name in stack)]
            assert len(served) == SOCKETS, stacks
            for stack in served:
                assert not HTTP_ONLY & {module for module, _ in stack}, stack
            timeouts = [o for o in gc.get_objects() if isinstance(o, asyncio.Task)
                        and getattr(o.get_coro(), "__qualname__", "").endswith(
                            "connection_init_timeout")]
            assert timeouts == []
            # Still served as ever: an operation on each socket.
            for n, ws in enumerate(sockets):
                kind = "subscribe" if ws.subprotocol == "graphql-transport-ws" else "start"
                await ws.send(json.dumps({"id": str(n), "type": kind, "payload": {
                    "query": "{ chats { edges { cursor } } }"}}))
                reply = json.loads(await ws.recv())
                while reply["type"] in ("ka", "ping"):  # keep-alives
                    reply = json.loads(await ws.recv())
                assert reply["type"] in ("next", "data") and not reply["payload"].get("errors")
        finally:
            for ws in sockets:
                await ws.close()
