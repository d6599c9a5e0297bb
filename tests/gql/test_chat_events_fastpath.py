"""The ``chatEvents`` fast path sends, frame for frame, the bytes the general executor
sends: generated selections (aliases, ``__typename``, any order, any plain field of
the event and of the chat) are subscribed twice on one live server — once taking the
fast path, once with it turned off — and every frame of every event, including one
the schema's serialisers refuse, must be byte-identical on both WebSocket protocols and
over Server-Sent Events, on both databases and both brokers."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import httpx
import pytest
import websockets
from graphql import GraphQLEnumType, GraphQLScalarType, get_named_type
from sqlalchemy import update

from chatql.gql.document_shapes import PlanCache
from chatql.gql.plans import chat_events as chat_events_fastpath
from chatql.gql.schema.root import build_schema
from chatql.gql.settings import Settings
from chatql.store.db.tables import chats
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_chat_events import (
    ALICE,
    APPEND,
    BOB,
    DELETE,
    PURGE,
    RESTORE,
    UPDATE,
    call,
    create,
    listening,
)
from tests.gql.test_sse import EVENT_STREAM
from tests.gql.test_streams_ws import PROTOCOLS, serve

#: A schema as an app builds it, for the plans these tests make themselves.
schema = build_schema()

# Fields whose value comes from a resolver of their own: the fast path leaves them to
# the executor (checked below), so generated selections take the rest.
TIMEOUT = 20.0


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def _fields(type_name: str) -> list[str]:
    """The fields of ``type_name`` a document selects without a sub-selection (scalars
    and enums, lists of them): objects such as ``Chat.usage`` or ``Chat.interrupts``
    need one and are left out."""
    fields = schema._schema.type_map[type_name].fields  # type: ignore[union-attr]
    return sorted(name for name, field in fields.items()
                  if isinstance(get_named_type(field.type), GraphQLScalarType | GraphQLEnumType))


def selections(seed: int, count: int) -> list[str]:
    """``count`` chatEvents documents with random plain selections."""
    rng = random.Random(seed)
    event_fields = [*_fields("ChatEvent"), "__typename"]
    chat_fields = [*_fields("Chat"), "__typename"]
    documents = []
    for n in range(count):
        def pick(names: list[str], at_least: int) -> list[str]:
            chosen = rng.sample(names, rng.randint(at_least, len(names)))
            return [f"a{i}_{name}: {name}" if rng.random() < 0.3 else name
                    for i, name in enumerate(chosen)]

        event = pick(event_fields, 1)
        if n % 4 != 3:  # most select the chat too, somewhere in the list
            event.insert(rng.randint(0, len(event)), "chat { " + " ".join(
                pick(chat_fields, 1)) + " }")
        root = "chatEvents" if rng.random() < 0.7 else "list: chatEvents"
        documents.append("subscription($filter: ChatFilter) { " + root
                         + "(filter: $filter) { " + " ".join(event) + " } }")
    return documents


class RawSocket:
    """A WebSocket that keeps every frame's text as sent, by operation id."""

    def __init__(self, ws: Any, protocol: str) -> None:
        self.ws, self.protocol = ws, protocol
        self.frames: dict[str, list[str]] = {}
        self.arrived = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, server: str, protocol: str, headers: dict[str, str]) -> RawSocket:
        ws = await websockets.connect(f"ws://{server}/graphql",
                                      subprotocols=[protocol],  # type: ignore[list-item]
                                      compression=None)
        await ws.send(json.dumps({"type": "connection_init", "payload": headers}))
        while json.loads(await ws.recv())["type"] != "connection_ack":
            pass
        return cls(ws, protocol)

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                assert isinstance(raw, str)
                message = json.loads(raw)
                if message.get("type") in ("next", "data"):
                    self.frames.setdefault(message["id"], []).append(raw)
                    self.arrived.set()
                elif message.get("type") == "ping":
                    await self.ws.send('{"type":"pong"}')
        except websockets.ConnectionClosed:
            pass

    async def start(self, op: str, query: str) -> None:
        kind = "subscribe" if self.protocol == "graphql-transport-ws" else "start"
        await self.ws.send(json.dumps({"id": op, "type": kind, "payload": {
            "query": query, "variables": {"filter": None}}}))

    async def until(self, ops: list[str], count: int) -> None:
        async def wait() -> None:
            while any(len(self.frames.get(op, [])) < count for op in ops):
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(wait(), TIMEOUT)

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_fast_frames_are_the_executors_bytes(
        settings: Settings, protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = selections(seed=PROTOCOLS.index(protocol), count=12)
    limits = {"max_depth": settings.max_query_depth, "max_aliases": settings.max_query_aliases,
              "max_tokens": settings.max_query_tokens}
    for document in documents:
        assert chat_events_fastpath.chat_events_plan_for(schema, document, None, PlanCache(16),
                                                         **limits) is not None, document
    ops = [str(n) for n in range(len(documents))]
    async with serve(settings) as (server, app):
        fast = await RawSocket.open(server, protocol, BOB)
        ordinary = await RawSocket.open(server, protocol, BOB)
        try:
            for op, document in zip(ops, documents, strict=True):
                await fast.start(op, document)
            await listening(app, len(documents))
            with monkeypatch.context() as patched:
                patched.setattr(chat_events_fastpath, "chat_events_plan_for",
                                lambda *args, **kwargs: None)
                for op, document in zip(ops, documents, strict=True):
                    await ordinary.start(op, document)
                await listening(app, 2 * len(documents))

            chat = await create(server, ALICE, title="Ünïcødé ✓ \"plans\"", share="TEAM",
                                tags=["b", "a"], metadata={"n": [1, 2.5, None], "s": "x"},
                                expiresAt="2099-01-01T00:00:00+00:00", pinned=True)
            await call(server, UPDATE, {"id": chat, "input": {"title": None, "sort": -7}},
                       ALICE)
            await call(server, APPEND, {"chat": chat, "aid": "a1"}, ALICE)
            await call(server, DELETE, {"id": chat}, ALICE)
            await call(server, RESTORE, {"id": chat}, ALICE)
            # A status the schema does not know (only a damaged row holds one): the
            # executor's error, coded as everywhere, on the fast path too.
            services = app.state.services
            async with services.db.write() as conn:
                await conn.execute(update(chats).where(chats.c.id == chat).values(
                    status="BOGUS"))
            await services.events.publish("UPDATED", chat, "acme")
            await call(server, UPDATE, {"id": chat, "input": {"share": "PRIVATE"}}, ALICE)
            await call(server, PURGE, {"id": chat}, ALICE)
            await create(server, BOB, title=None)
            expected = 7  # created, updated, messages, deleted, restored, updated, deleted
            await fast.until(ops, expected + 1)
            await ordinary.until(ops, expected + 1)
        finally:
            await fast.close()
            await ordinary.close()
    refused = 0
    for op, document in zip(ops, documents, strict=True):
        plan = chat_events_fastpath.chat_events_plan_for(
            app.state.planner.schema, document, None, app.state.planner.plans["chat_events"].plans,
            **limits)
        assert plan is not None and plan.frames, "the fast path served none of its events"
        assert fast.frames[op] == ordinary.frames[op], document
        refused += any('"errors"' in frame for frame in fast.frames[op])
    # The damaged row reached every selection of the chat's status as an error.
    assert refused and refused == sum(1 for d in documents if "status" in d.split("chat {", 1)[-1]
                          and "chat {" in d)


async def test_selections_the_fast_path_leaves_to_the_executor(settings: Settings) -> None:
    limits = {"max_depth": settings.max_query_depth, "max_aliases": settings.max_query_aliases,
              "max_tokens": settings.max_query_tokens}
    plain = "subscription { chatEvents { type chatId chat { id title } } }"
    assert chat_events_fastpath.chat_events_plan_for(schema, plain, None, PlanCache(16),
                                                     **limits)
    # Fragments (a client's generated document) are expanded, and a key selected twice
    # merged, as the executor would.
    for shared in ["subscription { chatEvents { type type chat { id } chat { title } } }",
                   "subscription { chatEvents { ...E } } fragment E on ChatEvent { type chatId "
                   "chat { ...S } } fragment S on Chat { id ... on Chat { title } }",
                   "subscription { chatEvents { type ...E chat { id } } } fragment E on "
                   "ChatEvent { chatId chat { title } }"]:
        assert chat_events_fastpath.chat_events_plan_for(schema, shared, None, PlanCache(16),
                                                         **limits), shared
    for document in [
        "subscription { chatEvents { type chat { id usage { messageTokens } } } }",
        "subscription { chatEvents { type chat { lastMessage { id } } } }",
        "subscription { chatEvents { type chat { messages(first: 1) { edges { cursor } } } } }",
        "subscription { chatEvents { type @include(if: true) chatId } }",
        "subscription { chatEvents { ...F @include(if: true) } } fragment F on ChatEvent { type }",
        "subscription { chatEvents { type chat { } } }",
        "subscription { chatEvents { type nope } }",
        "subscription { chatStream(chatId: \"x\") { seq } }",
        "query { chats { edges { cursor } } }",
    ]:
        assert chat_events_fastpath.chat_events_plan_for(schema, document, None, PlanCache(16),
                                                         **limits) is None, document
    # Deeper than the limits allow: the executor's QUERY_TOO_COMPLEX, never a plan.
    assert chat_events_fastpath.chat_events_plan_for(schema, plain, None, PlanCache(16), **{
        **limits, "max_depth": 1}) is None
    assert chat_events_fastpath.chat_events_plan_for(schema, plain, None, PlanCache(16), **{
        **limits, "max_tokens": 5}) is None
    assert chat_events_fastpath.chat_events_plan_for(schema, plain, None, PlanCache(16), **{
        **limits, "max_aliases": 0}) is not None  # it has no alias


class SSEEvents:
    """One graphql-sse ``chatEvents`` response whose ``next`` events' data lines are kept
    as sent."""

    def __init__(self, http: httpx.AsyncClient, server: str, query: str) -> None:
        self.data: list[str] = []
        self.arrived = asyncio.Event()
        self.started = asyncio.Event()
        self.reader = asyncio.create_task(self._read(http, server, query))

    async def _read(self, http: httpx.AsyncClient, server: str, query: str) -> None:
        async with http.stream("POST", f"http://{server}/graphql", headers={
                **EVENT_STREAM, **BOB}, json={"query": query,
                                              "variables": {"filter": None}}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            self.started.set()
            name = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: ") and name == "next":
                    self.data.append(line.removeprefix("data: "))
                    self.arrived.set()

    async def until(self, count: int) -> None:
        async def wait() -> None:
            while len(self.data) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(wait(), TIMEOUT)


async def test_sse_fast_events_are_the_executors_bytes(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = selections(seed=7, count=4)
    limits = {"max_depth": settings.max_query_depth, "max_aliases": settings.max_query_aliases,
              "max_tokens": settings.max_query_tokens}
    async with serve(settings) as (server, app), httpx.AsyncClient(timeout=30) as http:
        fast = [SSEEvents(http, server, document) for document in documents]
        await listening(app, len(documents))
        with monkeypatch.context() as patched:
            patched.setattr(chat_events_fastpath, "chat_events_plan_for",
                            lambda *args, **kwargs: None)
            ordinary = [SSEEvents(http, server, document) for document in documents]
            await listening(app, 2 * len(documents))
        try:
            chat = await create(server, ALICE, title="Ünïcødé ✓ \"plans\"", share="TEAM",
                                tags=["b", "a"], metadata={"n": [1, 2.5]})
            await call(server, APPEND, {"chat": chat, "aid": "a1"}, ALICE)
            services = app.state.services
            async with services.db.write() as conn:
                await conn.execute(update(chats).where(chats.c.id == chat).values(
                    status="BOGUS"))
            await services.events.publish("UPDATED", chat, "acme")
            await call(server, DELETE, {"id": chat}, ALICE)
            for stream in fast + ordinary:
                await stream.until(4)  # created, messages, updated (refused), deleted
        finally:
            for stream in fast + ordinary:
                stream.reader.cancel()
            await asyncio.gather(*(s.reader for s in fast + ordinary), return_exceptions=True)
        # Closing each response ended its subscription.
        for _ in range(500):
            if app.state.services.events.subscriber_count() == 0:
                break
            await asyncio.sleep(0.01)
        assert app.state.services.events.subscriber_count() == 0
    for document, quick, slow in zip(documents, fast, ordinary, strict=True):
        plan = chat_events_fastpath.chat_events_plan_for(
            app.state.planner.schema, document, None, app.state.planner.plans["chat_events"].plans,
            **limits)
        assert plan is not None and plan.frames, "the fast path served none of its events"
        assert quick.data == slow.data, document
    assert any('"errors"' in line for stream in fast for line in stream.data)
