"""A small blocking facade for scripts: the reads and writes beside streams.

    with SyncChatqlClient("http://127.0.0.1:8000/graphql", headers={...}) as client:
        chat = client.create_chat("helper", title="From a script")
        client.say(chat["id"], "Hello")

Each call runs the async client's method on an event loop the facade owns. Streams and
the agent loop are async only (they keep background work — batching, heartbeats — going
between calls).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from chatql_client.client import ChatqlClient

__all__ = ["SyncChatqlClient"]

T = TypeVar("T")

_METHODS = ("execute", "create_chat", "chat", "chat_for", "chats_page", "append", "say",
            "messages", "model_context", "search", "write_memory", "recent_memory",
            "search_memory", "update_memory", "delete_memory", "stop_stream", "regenerate")


class SyncChatqlClient:
    """Blocking calls with the same names and arguments as :class:`ChatqlClient`'s."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None,
                 token: str | None = None, **options: Any) -> None:
        self._runner = asyncio.Runner()
        self._async = ChatqlClient(url, headers, token, **options)

    def __enter__(self) -> SyncChatqlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._runner.run(self._async.aclose())
        self._runner.close()

    def _run(self, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        async def run() -> T:
            return await call(*args, **kwargs)

        return self._runner.run(run())

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in _METHODS:
            raise AttributeError(name)
        method = getattr(self._async, name)
        return lambda *args, **kwargs: self._run(method, *args, **kwargs)

    def chats(self, filter: Mapping[str, Any] | None = None) -> list[Any]:
        """Every chat matching ``filter`` (all pages)."""
        async def collect() -> list[Any]:
            return [chat async for chat in self._async.chats(filter)]

        return self._runner.run(collect())
