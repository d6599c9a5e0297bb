"""A minimal GraphQL-over-WebSocket client for tests: both subprotocols.

``graphql-transport-ws``: connection_init/ack, subscribe, next, complete, ping/pong.
``graphql-ws`` (legacy): connection_init/ack, start, data, complete, ka.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import websockets

from tests.client_reducer import client_apply

__all__ = ["ChunkView", "WSClient", "check_continuity", "connect"]

TIMEOUT = 10.0


class WSClient:
    """One WebSocket connection speaking ``protocol``."""

    def __init__(self, ws: Any, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol
        self._ids = itertools.count(1)
        self._inbox: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def init(self, payload: dict[str, Any]) -> None:
        await self.ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
            if message["type"] == "connection_ack":
                break
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                assert isinstance(raw, str), "frames must be text"
                message = json.loads(raw)
                kind = message["type"]
                if kind == "ping":
                    await self.ws.send(json.dumps({"type": "pong"}))
                    continue
                if kind in ("ka", "pong"):
                    continue
                queue = self._inbox.get(message.get("id", ""))
                if queue is not None:
                    queue.put_nowait(message)
        except websockets.ConnectionClosed:
            pass
        for queue in self._inbox.values():
            queue.put_nowait({"type": "closed"})

    async def start(self, query: str, variables: dict[str, Any] | None = None) -> str:
        op = str(next(self._ids))
        self._inbox[op] = asyncio.Queue()
        kind = "subscribe" if self.protocol == "graphql-transport-ws" else "start"
        await self.ws.send(json.dumps({"id": op, "type": kind, "payload": {
            "query": query, "variables": variables or {}}}))
        return op

    async def receive(self, op: str, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        """The next result payload of ``op``; None when the operation completed."""
        message = await asyncio.wait_for(self._inbox[op].get(), timeout)
        kind = message["type"]
        if kind in ("next", "data"):
            payload: dict[str, Any] = message["payload"]
            return payload
        if kind in ("complete", "closed"):
            return None
        raise AssertionError(f"unexpected message {message}")

    async def execute(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        """Run a query or mutation over the socket; returns data (asserts no errors)."""
        op = await self.start(query, variables)
        payload = await self.receive(op)
        assert payload is not None and not payload.get("errors"), payload
        assert await self.receive(op) is None
        return payload["data"]

    async def stop(self, op: str) -> None:
        kind = "complete" if self.protocol == "graphql-transport-ws" else "stop"
        await self.ws.send(json.dumps({"id": op, "type": kind}))

    async def close(self) -> None:
        await self.ws.close()
        if self._reader is not None:
            await self._reader


@asynccontextmanager
async def connect(server: str, protocol: str,
                  payload: dict[str, Any] | None = None) -> AsyncIterator[WSClient]:
    async with websockets.connect(
        f"ws://{server}/graphql", subprotocols=[protocol],  # type: ignore[list-item]
        compression=None,
    ) as ws:
        client = WSClient(ws, protocol)
        await client.init(payload or {})
        try:
            yield client
        finally:
            await client.close()


CHAT_STREAM = """subscription($chat: ID!, $after: Int) {
  chatStream(chatId: $chat, afterSeq: $after) {
    streamId seq chunkId messageId blockId threadId type role props delta deltaPath deltaAction
    fromSeq snapshot
  } }"""


def check_continuity(previous: dict[str, Any] | None, chunk: dict[str, Any],
                     after: int | None = None) -> None:
    """The client's gap check: within a stream each chunk that is not part of a
    snapshot starts right after the previous chunk's seq; a replay after ``after``
    starts at ``after + 1``; a new stream starts at seq 1."""
    assert 1 <= chunk["fromSeq"] <= chunk["seq"], chunk
    if chunk["snapshot"]:
        assert chunk["fromSeq"] == 1 and not chunk["delta"], chunk
        return
    if previous is not None and previous["streamId"] == chunk["streamId"]:
        expected = previous["seq"] + 1
    elif previous is None and after is not None and chunk["seq"] > after >= 1 and not (
            chunk["type"] == "event" and chunk["fromSeq"] == 1):
        expected = after + 1
    else:
        expected = 1
    assert chunk["fromSeq"] == expected, (
        f"gap: chunk {chunk} should start at seq {expected} after {previous}")


class ChunkView:
    """What a front end shows: the chunks of a ``chatStream`` subscription applied."""

    def __init__(self, client: WSClient, op: str, after: int | None = None) -> None:
        self.client = client
        self.op = op
        self.after = after
        self.chunks: list[dict[str, Any]] = []
        self.messages: dict[str, dict[str, Any]] = {}
        self.last_seq = 0

    @classmethod
    async def open(cls, client: WSClient, chat: str, after: int | None = None) -> ChunkView:
        op = await client.start(CHAT_STREAM, {"chat": chat, "after": after})
        return cls(client, op, after)

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        payload = await self.client.receive(self.op, timeout)
        assert payload is not None, "the subscription ended"
        assert not payload.get("errors"), payload
        chunk: dict[str, Any] = payload["data"]["chatStream"]
        check_continuity(self.chunks[-1] if self.chunks else None, chunk, self.after)
        self.chunks.append(chunk)
        self.last_seq = chunk["seq"]
        client_apply(self.messages, chunk)
        return chunk

    async def until_event(self, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        while True:
            chunk = await self.next(timeout)
            if chunk["type"] == "event" and (chunk["props"] or {}).get("event") == name:
                return chunk

    async def until_seq(self, seq: int) -> None:
        while self.last_seq < seq:
            await self.next()
