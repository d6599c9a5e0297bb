"""The differential harness: every registered plan answers as the general executor does.

For each plan in ``gql/plans/planner.py``'s ``PLANS`` and each transport it runs on, generated
documents — aliases, ``__typename``, fragments, variables and literals, documents that
fail — are sent to one live server twice: with the plan in use, and with it switched
off (the executor alone). The two answers must be the same bytes, on both databases and
both stream backends. Documents a plan is made for must have been answered by it (the
planner counts what each plan served), and each plan's canonical document selects
*every* field the schema gives its type: a field added to a type either flows through
the plan or fails here — a plan can never switch itself off unnoticed.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from graphql import GraphQLEnumType, GraphQLObjectType, GraphQLScalarType, get_named_type

from chatql.gql.plans.planner import PLAN_NAMES, PLANS
from chatql.gql.schema.root import build_schema
from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_chat_events import listening
from tests.gql.test_streams_ws import PROTOCOLS, serve, subscribed

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Team-Id": "red", "X-Roles": "agent"}
SCHEMA = build_schema()
TIMEOUT = 20.0

#: The transports the harness drives for each plan; a plan registered without a case
#: here, or on a transport not listed, fails :func:`test_every_plan_is_checked`.
COVERED = {
    "reads": {"http"},
    "push": {"http", "ws"},
    "append": {"http"},
    "chat_events": {"sse", "ws"},
    "chat_stream": {"ws"},
    "shared_chat": {"http"},
}


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def test_every_plan_is_checked() -> None:
    assert {plan.name: set(plan.transports) for plan in PLANS} == COVERED


def leaf_fields(type_name: str) -> list[str]:
    """Every field of ``type_name`` without arguments whose value is a scalar or enum
    (or a list of them): what a document can select without a sub-selection."""
    kind = SCHEMA._schema.type_map[type_name]
    assert isinstance(kind, GraphQLObjectType)
    return sorted(name for name, field in kind.fields.items() if not field.args
                  and isinstance(get_named_type(field.type),
                                 GraphQLScalarType | GraphQLEnumType))


def pick(rng: random.Random, names: list[str], everything: bool) -> str:
    """A selection of ``names`` (all of them when ``everything``), some aliased, in a
    random order, maybe with ``__typename``."""
    chosen = list(names) if everything else rng.sample(names, rng.randint(1, len(names)))
    rng.shuffle(chosen)
    if rng.random() < 0.5:
        chosen.insert(rng.randint(0, len(chosen)), "__typename")
    return " ".join(f"a{i}_{name}: {name}" if rng.random() < 0.25 else name
                    for i, name in enumerate(chosen))


@contextmanager
def switched_off(app: Any, name: str) -> Iterator[None]:
    """The executor alone answers what plan ``name`` would."""
    planner = app.state.planner
    before = planner.enabled
    planner.enabled = before - {name}
    try:
        yield
    finally:
        planner.enabled = before


def served(app: Any, name: str) -> int:
    return int(app.state.planner.served[name])


async def post(server: str, query: str, variables: dict[str, Any] | None = None,
               headers: dict[str, str] = ALICE) -> str:
    """One GraphQL POST: the status, content type and body as sent."""
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"http://{server}/graphql", headers=headers,
                                   json={"query": query, "variables": variables})
    return f"{response.status_code} {response.headers['content-type']} {response.text}"


async def get(server: str, query: str, variables: dict[str, Any]) -> str:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(f"http://{server}/graphql", headers=ALICE, params={
            "query": query, "variables": json.dumps(variables)})
    return f"{response.status_code} {response.headers['content-type']} {response.text}"


async def data(server: str, query: str, variables: dict[str, Any]) -> Any:
    body = json.loads((await post(server, query, variables)).split(" ", 2)[2])
    assert not body.get("errors"), body
    return body["data"]


class Socket:
    """A GraphQL WebSocket whose frames are kept as sent, by operation id."""

    def __init__(self, ws: Any, protocol: str) -> None:
        self.ws, self.protocol = ws, protocol
        self.frames: dict[str, list[str]] = {}
        self.ended: dict[str, asyncio.Event] = {}
        self.arrived = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    @asynccontextmanager
    async def open(cls, server: str, protocol: str) -> AsyncIterator[Socket]:
        async with websockets.connect(f"ws://{server}/graphql",
                                      subprotocols=[protocol],  # type: ignore[list-item]
                                      compression=None) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": ALICE}))
            while json.loads(await ws.recv())["type"] != "connection_ack":
                pass
            socket = cls(ws, protocol)
            try:
                yield socket
            finally:
                await ws.close()
                await socket.reader

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                assert isinstance(raw, str)
                message = json.loads(raw)
                if message.get("type") in ("ping", "ka"):
                    if message["type"] == "ping":
                        await self.ws.send('{"type":"pong"}')
                    continue
                op = message.get("id")
                if op is None:
                    continue
                self.frames.setdefault(op, []).append(raw)
                if message["type"] in ("complete", "error"):
                    self.ended.setdefault(op, asyncio.Event()).set()
                self.arrived.set()
        except websockets.ConnectionClosed:
            pass

    async def start(self, op: str, query: str, variables: dict[str, Any] | None) -> None:
        kind = "subscribe" if self.protocol == "graphql-transport-ws" else "start"
        self.ended.setdefault(op, asyncio.Event())
        await self.ws.send(json.dumps({"id": op, "type": kind, "payload": {
            "query": query, "variables": variables}}))

    async def run(self, op: str, query: str, variables: dict[str, Any] | None) -> list[str]:
        """The frames of a query or mutation, up to and with its last one."""
        await self.start(op, query, variables)
        await asyncio.wait_for(self.ended[op].wait(), TIMEOUT)
        return self.frames[op]

    async def until(self, op: str, count: int) -> list[str]:
        async def wait() -> None:
            while len(self.frames.get(op, [])) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(wait(), TIMEOUT)
        return self.frames[op]


# -- reads: pages of messages, the chat list, a chat with its newest message ------------

MESSAGE_LEAVES = leaf_fields("Message")
CHAT_LEAVES = leaf_fields("Chat")
PAGE_INFO = ["hasNextPage", "hasPreviousPage", "startCursor", "endCursor"]


def read_documents(seed: int) -> list[tuple[str, dict[str, Any], bool]]:
    """``(document, variables, made for the plan)``: generated pages, chat lists and
    chats, the canonical ones selecting every leaf field, and documents the executor
    answers (fragments, errors)."""
    rng = random.Random(seed)
    documents: list[tuple[str, dict[str, Any], bool]] = []
    for n in range(8):
        everything = n == 0
        root = "page: messages" if rng.random() < 0.3 else "messages"
        node = pick(rng, MESSAGE_LEAVES, everything)
        info = pick(rng, PAGE_INFO, everything)
        if rng.random() < 0.5:
            args, variables = "chatId: $c, first: $n", {"c": "r1", "n": rng.randint(1, 7)}
            header = "query($c: ID!, $n: Int)"
        else:
            args, variables, header = f'chatId: "r1", last: {rng.randint(1, 7)}', {}, "query"
        documents.append((f"{header} {{ {root}({args}) {{ edges {{ cursor node {{ {node} }} }}"
                          f" pageInfo {{ {info} }} }} }}", variables, True))
        chats = pick(rng, CHAT_LEAVES, everything)
        documents.append((f"{{ chats(first: {rng.randint(1, 3)}) {{ edges {{ cursor node "
                          f"{{ {chats} }} }} pageInfo {{ {info} }} }} }}", {}, True))
        last = pick(rng, MESSAGE_LEAVES, everything)
        documents.append((f'query($id: ID!) {{ chat(id: $id) {{ id title lastMessage '
                          f'{{ {last} }} }} }}', {"id": "r1"}, True))
    documents += [
        # Fragments are resolved by the plan; a bad cursor, a page size out of range, an
        # unknown chat, a variable that does not coerce are the executor's to answer.
        ("query { messages(chatId: \"r1\", first: 2) { ...P } } fragment P on MessageConnection"
         " { edges { node { id ... on Message { role } } } }", {}, True),
        ('{ messages(chatId: "r1", first: 2, after: "bogus") { edges { node { id } } } }',
         {}, False),
        ('{ messages(chatId: "r1", first: -3) { edges { node { id } } } }', {}, False),
        ('{ messages(chatId: "none", first: 3) { edges { node { id } } } }', {}, False),
        ('query($n: Int) { messages(chatId: "r1", first: $n) { edges { node { id } } } }',
         {"n": "three"}, False),
    ]
    return documents


# Reads and appends answer without the stream broker: both databases, one broker.
@pytest.mark.parametrize("settings", ["memory"], indirect=True)
async def test_reads_answer_as_the_executor_does(settings: Settings) -> None:
    async with serve(settings) as (server, app):
        await data(server, 'mutation { createChat(input: {id: "r1", assistantId: "bot", '
                   'title: "Reads ✓"}) { id } }', {})
        await data(server, 'mutation { createChat(input: {id: "r2", assistantId: "bot"}) '
                   '{ id } }', {})
        for n in range(3):
            await data(server, """mutation($c: ID!, $a: String!, $m: [MessageInput!]!) {
                appendMessages(chatId: $c, appendId: $a, messages: $m) { lastSequence } }""",
                       {"c": "r1", "a": f"a{n}", "m": [
                           {"role": "USER", "type": "text", "props": {"text": f"q{n} ü"},
                            "blockId": "b1", "threadId": f"t{n}", "tokens": 3,
                            "metadata": {"n": n}},
                           {"role": "ASSISTANT", "type": "text", "props": {"text": f"a{n}"},
                            "requestId": f"r{n}"}]})
        for document, variables, made_for in read_documents(seed=1):
            for method in (post, get):
                before = served(app, "reads")
                planned = await method(server, document, variables)
                assert served(app, "reads") == before + made_for, (
                    "the reads plan did not serve a document it is made for"
                    if made_for else "the reads plan served a document it must leave",
                    document)
                with switched_off(app, "reads"):
                    executed = await method(server, document, variables)
                assert served(app, "reads") == before + made_for
                assert planned == executed, document


# -- push: a producer's chunks ---------------------------------------------------------

CHUNK_INPUT = {
    # Every field ChunkInput has (checked below): a new one must be added here, and
    # then flows through the plan or fails the comparison.
    "type": "text", "chunkId": "c1", "messageId": "m1", "blockId": "b1", "threadId": "t1",
    "role": "ASSISTANT", "props": {"content": "He", "n": [1, 2.5, None]}, "delta": True,
    "deltaPath": "content", "deltaAction": "append", "tokens": 2,
}


def chunk_batches() -> list[list[dict[str, Any]]]:
    return [
        [CHUNK_INPUT],
        [],  # a heartbeat: keeps the stream alive, stores nothing
        [{**CHUNK_INPUT, "chunkId": "c2", "props": {"content": "llo ✓"}}, {"type": "text",
         "chunkId": "c3", "messageId": "m2", "props": {"content": "x"}}],
        [CHUNK_INPUT],  # a retried batch: duplicates
        [{"type": "text", "chunkId": "c4", "messageId": "m1", "delta": True,
          "deltaPath": "content", "deltaAction": "explode", "props": {"content": "?"}}],
    ]


def push_documents(seed: int) -> list[tuple[str, bool]]:
    rng = random.Random(seed)
    results = ["accepted", "duplicates", "lastSeq"]
    documents = [(f"mutation($s: ID!, $k: [ChunkInput!]!) {{ "
                  f"{'p: ' if rng.random() < 0.5 else ''}pushChunks(streamId: $s, chunks: $k)"
                  f" {{ {pick(rng, results, n == 0)} }} }}", True) for n in range(4)]
    documents.append(("mutation($s: ID!, $k: [ChunkInput!]!) { pushChunks(streamId: $s, "
                      "chunks: $k) { ...R } } fragment R on PushResult { accepted lastSeq }",
                      True))
    documents.append(("mutation($s: ID!, $k: [ChunkInput!]!) { pushChunks(streamId: $s, "
                      "chunks: $k) { ... on PushResult { accepted } lastSeq @skip(if: false) } }",
                      False))
    return documents


async def _stream(server: str, chat: str) -> str:
    await data(server, 'mutation($c: ID!) { createChat(input: {id: $c, assistantId: "bot"})'
               ' { id } }', {"c": chat})
    started = await data(server, "mutation($c: ID!) { startStream(input: {chatId: $c}) "
                         "{ id } }", {"c": chat})
    return str(started["startStream"]["id"])


def test_the_push_case_sends_every_chunk_input_field() -> None:
    fields = SCHEMA._schema.type_map["ChunkInput"].fields  # type: ignore[union-attr]
    assert set(CHUNK_INPUT) == set(fields)


@pytest.mark.parametrize("transport", ["http", *PROTOCOLS])
async def test_pushes_answer_as_the_executor_does(settings: Settings, transport: str) -> None:
    async with serve(settings) as (server, app):
        for number, (document, made_for) in enumerate(push_documents(seed=2)):
            answers = []
            for plan_on in (True, False):
                stream = await _stream(server, f"p{number}{'on' if plan_on else 'off'}")
                before = served(app, "push")
                with switched_off(app, "push") if not plan_on else _nothing():
                    frames = []
                    for batch in chunk_batches():
                        frames.append(await _send(server, transport, document,
                                                  {"s": stream, "k": batch}))
                    frames.append(await _send(server, transport, document,
                                              {"s": "no-such-stream", "k": [CHUNK_INPUT]}))
                    frames.append(await _send(server, transport, document,
                                              {"s": "no-such-stream", "k": []}))
                answers.append(frames)
                if plan_on and made_for:
                    assert served(app, "push") >= before + 2, document
                else:
                    assert served(app, "push") == before, document
            assert answers[0] == answers[1], document


@contextmanager
def _nothing() -> Iterator[None]:
    yield


async def _send(server: str, transport: str, document: str,
                variables: dict[str, Any]) -> Any:
    if transport == "http":
        return await post(server, document, variables)
    async with Socket.open(server, transport) as socket:
        return await socket.run("1", document, variables)


# -- append: idempotent appends --------------------------------------------------------

#: The values the harness sends for MessageInput's fields that need particular ones.
MESSAGE_INPUT_VALUES = {
    "role": "USER", "type": "text", "props": {"text": "hello ✓", "n": [1, None]},
    "id": None, "requestId": "req-1", "blockId": "b1", "threadId": "t1",
    "assistantId": "bot", "metadata": {"source": "harness"}, "tokens": 4,
}
#: A value of each scalar for a field the harness has no particular value for.
SAMPLES: dict[str, Any] = {"String": "{name}-1", "Int": 3, "Float": 1.5, "Boolean": True,
                           "JSON": {"field": "{name}"}}


def _sample(name: str, field: Any) -> Any:
    """A value of the field's type: a field added to MessageInput is sent with one."""
    kind = get_named_type(field.type)
    if isinstance(kind, GraphQLEnumType):
        return next(iter(kind.values))
    if kind.name not in SAMPLES:
        raise AssertionError(f"MessageInput.{name}: no sample of {kind.name}; give the "
                             "harness a value in MESSAGE_INPUT_VALUES")
    return json.loads(json.dumps(SAMPLES[kind.name]).replace("{name}", name))


#: Every field MessageInput has, each with a value.
MESSAGE_INPUT = {name: MESSAGE_INPUT_VALUES[name] if name in MESSAGE_INPUT_VALUES
                 else _sample(name, field)
                 for name, field in SCHEMA._schema.type_map[  # type: ignore[union-attr]
                     "MessageInput"].fields.items()}
DIGEST = re.compile(r'"[0-9a-f]{64}"')
RECEIPT = ["chatId", "appendId", "digest", "messageIds", "firstSequence", "lastSequence"]


def test_the_append_case_sends_every_message_input_field() -> None:
    """Every field is sent with a value; a field the harness names no value for gets
    one of its type, so a new one is compared on both paths with no edit here."""
    fields = SCHEMA._schema.type_map["MessageInput"].fields  # type: ignore[union-attr]
    assert set(MESSAGE_INPUT) == set(fields)
    assert {name for name, value in MESSAGE_INPUT.items() if value is None} == {"id"}
    assert _sample("language", fields["type"]) == "language-1"
    assert _sample("flags", fields["metadata"]) == {"field": "flags"}


def append_documents(seed: int) -> list[tuple[str, bool]]:
    rng = random.Random(seed)
    documents = [(f"mutation($c: ID!, $a: String!, $m: [MessageInput!]!) {{ "
                  f"{'r: ' if rng.random() < 0.5 else ''}appendMessages(chatId: $c, "
                  f"appendId: $a, messages: $m) {{ {pick(rng, RECEIPT, n == 0)} }} }}", True)
                 for n in range(4)]
    documents.append(("mutation($c: ID!, $a: String!, $m: [MessageInput!]!) { appendMessages("
                      "chatId: $c, appendId: $a, messages: $m) { ...R } } fragment R on "
                      "AppendReceipt { chatId lastSequence }", True))
    documents.append(("mutation($c: ID!, $a: String!, $m: [MessageInput!]!) { appendMessages("
                      "chatId: $c, appendId: $a, messages: $m) { ...R } } fragment R on "
                      "AppendReceipt @skip(if: false) { chatId lastSequence }", False))
    return documents


@pytest.mark.parametrize("settings", ["memory"], indirect=True)
async def test_appends_answer_as_the_executor_does(settings: Settings) -> None:
    """The same append to twin chats, one written by the plan and one by the executor:
    the receipts match once the twins' ids are swapped, each one's retry is answered
    with the same bytes by the other path, and the stored messages are the same."""
    async with serve(settings) as (server, app):
        for number, (document, made_for) in enumerate(append_documents(seed=3)):
            sent: dict[bool, tuple[dict[str, Any], str]] = {}
            for plan_on in (True, False):
                twin = f"{'pa' if plan_on else 'pb'}{number}"
                await data(server, 'mutation($c: ID!) { createChat(input: {id: $c, '
                           'assistantId: "bot"}) { id } }', {"c": twin})
                variables = {"c": twin, "a": f"{twin}-x", "m": [
                    {**MESSAGE_INPUT, "id": f"{twin}-m1"},
                    {**MESSAGE_INPUT, "id": f"{twin}-m2", "role": "ASSISTANT",
                     "requestId": None, "props": {"text": "hi"}}]}
                before = served(app, "append")
                with switched_off(app, "append") if not plan_on else _nothing():
                    sent[plan_on] = (variables, await post(server, document, variables))
                assert served(app, "append") == before + (plan_on and made_for), document
            (on_vars, on_answer), (off_vars, off_answer) = sent[True], sent[False]
            # A retry of each is answered by the other path with the very same bytes.
            with switched_off(app, "append"):
                assert await post(server, document, on_vars) == on_answer, document
            assert await post(server, document, off_vars) == off_answer, document
            # The digests differ with the twins' ids (the retries above compared them).
            assert DIGEST.sub("#", on_answer.replace(f"pa{number}", f"pb{number}")) == (
                DIGEST.sub("#", off_answer)), document
            stored = []
            for twin in (f"pa{number}", f"pb{number}"):
                page = await post(server, "query($c: ID!) { messages(chatId: $c, first: 9) { "
                                  "edges { node { " + " ".join(
                                      f for f in MESSAGE_LEAVES
                                      if f not in ("createdAt", "updatedAt")) + " } } } }",
                                  {"c": twin})
                stored.append(page.replace(twin, "twin"))
            assert stored[0] == stored[1]


# -- chat_events: the live chat list ---------------------------------------------------

EVENT_LEAVES = leaf_fields("ChatEvent")


def event_documents(seed: int) -> list[str]:
    rng = random.Random(seed)
    documents = []
    for n in range(4):
        chat = pick(rng, CHAT_LEAVES, n == 0)
        event = pick(rng, EVENT_LEAVES, n == 0)
        root = "list: chatEvents" if rng.random() < 0.3 else "chatEvents"
        documents.append(f"subscription($f: ChatFilter) {{ {root}(filter: $f) {{ {event} "
                         f"chat {{ {chat} }} }} }}")
    # A client's generated document: named and inline fragments, one key selected twice.
    documents.append("subscription($f: ChatFilter) { chatEvents(filter: $f) { ...E chat { id } } }"
                     " fragment E on ChatEvent { type chatId chat { ...S } }"
                     " fragment S on Chat { title ... on Chat { createdAt } }")
    return documents


async def _chat_changes(server: str, chat: str) -> None:
    """Writes every listed chat sees: created, updated, messages, deleted, restored."""
    await data(server, 'mutation($c: ID!) { createChat(input: {id: $c, assistantId: "bot", '
               'title: "Änderung", tags: ["b", "a"], metadata: {n: [1, 2.5]}}) { id } }',
               {"c": chat})
    await data(server, 'mutation($c: ID!) { updateChat(id: $c, input: {title: null, '
               'sort: -2}) { id } }', {"c": chat})
    await data(server, 'mutation($c: ID!) { appendMessages(chatId: $c, appendId: "e1", '
               'messages: [{role: USER, type: "text", props: {text: "hi"}}]) { chatId } }',
               {"c": chat})
    await data(server, "mutation($c: ID!) { deleteChat(id: $c) }", {"c": chat})
    await data(server, "mutation($c: ID!) { restoreChat(id: $c) { id } }", {"c": chat})


EXPECTED_EVENTS = 5


@pytest.mark.parametrize("transport", ["sse", *PROTOCOLS])
async def test_chat_events_answer_as_the_executor_does(settings: Settings,
                                                      transport: str) -> None:
    documents = event_documents(seed=4)
    async with serve(settings) as (server, app):
        before = served(app, "chat_events")
        async with _subscribers(server, app, transport, documents) as (planned, executed):
            assert served(app, "chat_events") == before + len(documents)
            await _chat_changes(server, "ev1")
            for fast, slow in zip(planned, executed, strict=True):
                assert await fast(EXPECTED_EVENTS) == await slow(EXPECTED_EVENTS)


@asynccontextmanager
async def _subscribers(server: str, app: Any, transport: str,
                       documents: list[str]) -> AsyncIterator[tuple[list[Any], list[Any]]]:
    """Each document subscribed twice, with the plan and without: for each, a function
    waiting for its first ``count`` event payloads as sent."""
    if transport == "sse":
        async with httpx.AsyncClient(timeout=30) as http:
            readers: list[tuple[asyncio.Task[None], list[str], asyncio.Event]] = []

            async def read(document: str, into: list[str], arrived: asyncio.Event) -> None:
                async with http.stream("POST", f"http://{server}/graphql", json={
                        "query": document, "variables": {"f": None}}, headers={
                        **ALICE, "Accept": "text/event-stream"}) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data: ") and line != "data: ":
                            into.append(line)
                            arrived.set()

            def subscribe(document: str) -> Any:
                into: list[str] = []
                arrived = asyncio.Event()
                readers.append((asyncio.create_task(read(document, into, arrived)), into,
                                arrived))

                async def until(count: int) -> list[str]:
                    async def wait() -> None:
                        while len(into) < count:
                            arrived.clear()
                            await arrived.wait()
                    await asyncio.wait_for(wait(), TIMEOUT)
                    return into[:count]
                return until

            planned = [subscribe(document) for document in documents]
            await listening(app, len(documents))
            with switched_off(app, "chat_events"):
                executed = [subscribe(document) for document in documents]
                await listening(app, 2 * len(documents))
            try:
                yield planned, executed
            finally:
                for task, _, _ in readers:
                    task.cancel()
                await asyncio.gather(*(task for task, _, _ in readers),
                                     return_exceptions=True)
        return
    async with Socket.open(server, transport) as fast, Socket.open(server, transport) as slow:
        for n, document in enumerate(documents):
            await fast.start(str(n), document, {"f": None})
        await listening(app, len(documents))
        with switched_off(app, "chat_events"):
            for n, document in enumerate(documents):
                await slow.start(str(n), document, {"f": None})
            await listening(app, 2 * len(documents))

        def waiter(socket: Socket, op: str) -> Any:
            async def until(count: int) -> list[str]:
                return (await socket.until(op, count))[:count]
            return until

        yield ([waiter(fast, str(n)) for n in range(len(documents))],
               [waiter(slow, str(n)) for n in range(len(documents))])


# -- chat_stream: a live stream --------------------------------------------------------

CHUNK_LEAVES = leaf_fields("Chunk")


@pytest.mark.parametrize("transport", PROTOCOLS)
async def test_chat_streams_answer_as_the_executor_does(settings: Settings,
                                                       transport: str) -> None:
    rng = random.Random(5)
    documents = [f"subscription($c: ID!) {{ {'s: ' if rng.random() < 0.4 else ''}chatStream("
                 f"chatId: $c) {{ {pick(rng, CHUNK_LEAVES, n == 0)} }} }}" for n in range(4)]
    documents.append("subscription($c: ID!) { chatStream(chatId: $c) { ...K seq } }"
                     " fragment K on Chunk { seq type props ... on Chunk { messageId } }")
    async with serve(settings) as (server, app):
        stream = await _stream(server, "cs1")
        before = served(app, "chat_stream")
        async with Socket.open(server, transport) as fast, Socket.open(server,
                                                                       transport) as slow:
            for n, document in enumerate(documents):
                await fast.start(str(n), document, {"c": "cs1"})
            await subscribed(app, "cs1", len(documents))
            assert served(app, "chat_stream") == before + len(documents)
            with switched_off(app, "chat_stream"):
                for n, document in enumerate(documents):
                    await slow.start(str(n), document, {"c": "cs1"})
                await subscribed(app, "cs1", 2 * len(documents))
            assert served(app, "chat_stream") == before + len(documents)
            pushed = 0
            for batch in chunk_batches()[:2]:
                answer = await data(server, "mutation($s: ID!, $k: [ChunkInput!]!) { "
                                    "pushChunks(streamId: $s, chunks: $k) { accepted } }",
                                    {"s": stream, "k": batch})
                pushed += answer["pushChunks"]["accepted"]
            for n in range(len(documents)):
                assert (await fast.until(str(n), pushed)) == (
                    await slow.until(str(n), pushed)), documents[n]


# -- shared_chat: a share link's branch ----------------------------------------------------

SHARED_LEAVES = leaf_fields("SharedChat")
SHARED_MESSAGE_LEAVES = leaf_fields("SharedMessage")


def shared_documents(seed: int, public: str, tenant: str
                     ) -> list[tuple[str, dict[str, Any], dict[str, str], bool]]:
    """``(document, variables, headers, made for the plan)``: generated reads of a
    link, the canonical one selecting every leaf field, read by the tenant and by no
    one; and documents the executor answers (a link that does not open, a directive, a
    variable that does not coerce)."""
    rng = random.Random(seed)
    documents: list[tuple[str, dict[str, Any], dict[str, str], bool]] = []
    for n in range(6):
        everything = n == 0
        root = "link: sharedChat" if rng.random() < 0.3 else "sharedChat"
        chat = pick(rng, SHARED_LEAVES, everything)
        messages = pick(rng, SHARED_MESSAGE_LEAVES, everything)
        who = ALICE if n % 2 == 0 else {}
        if rng.random() < 0.5:
            header, args, variables = "query($t: String!)", "token: $t", {"t": public}
        else:
            header, args, variables = "query", f'token: "{public}"', {}
        documents.append((f"{header} {{ {root}({args}) {{ {chat} messages {{ {messages} }} }} }}",
                          variables, who, True))
    documents += [
        ("query($t: String!) { sharedChat(token: $t) { ...S } } fragment S on SharedChat"
         " { title messages { ... on SharedMessage { id role } } }", {"t": tenant}, ALICE, True),
        ("query($t: String!) { sharedChat(token: $t) { title } }", {"t": tenant}, {}, False),
        ('{ sharedChat(token: "never-issued-but-well-formed") { title } }', {}, ALICE, False),
        ("query($t: String!) { sharedChat(token: $t) { title messages { id @include(if: true)"
         " } } }", {"t": public}, ALICE, False),
        ("query($t: String!) { sharedChat(token: $t) { title } }", {"t": 3}, ALICE, False),
    ]
    return documents


@pytest.mark.parametrize("settings", ["memory"], indirect=True)
async def test_shared_chats_answer_as_the_executor_does(settings: Settings) -> None:
    async with serve(settings) as (server, app):
        await data(server, 'mutation { createChat(input: {id: "s1", assistantId: "bot", '
                   'title: "Shared ✓"}) { id } }', {})
        await data(server, """mutation($m: [MessageInput!]!) { appendMessages(chatId: "s1",
            appendId: "a", messages: $m) { lastSequence } }""", {"m": [
            {"role": "USER", "type": "text", "props": {"text": "q ü", "n": [1, 2.5, None]}},
            {"role": "ASSISTANT", "type": "text", "props": {"text": "a"},
             "assistantId": "bot", "metadata": {"hidden": True}}]})
        links = [(await data(server, """mutation($a: ShareAudience!) { shareChat(
            chatId: "s1", audience: $a) { token } }""", {"a": audience}))["shareChat"]["token"]
                 for audience in ("PUBLIC", "TENANT")]
        for document, variables, who, made_for in shared_documents(7, *links):
            methods = [lambda d, v, who=who: post(server, d, v, who)]
            if who:
                methods.append(lambda d, v: get(server, d, v))
            for method in methods:
                before = served(app, "shared_chat")
                planned = await method(document, variables)
                assert served(app, "shared_chat") == before + made_for, (
                    "the shared_chat plan did not serve a document it is made for"
                    if made_for else "the shared_chat plan served a document it must leave",
                    document)
                with switched_off(app, "shared_chat"):
                    executed = await method(document, variables)
                assert served(app, "shared_chat") == before + made_for
                assert planned == executed, document


# -- the switch ------------------------------------------------------------------------


def test_plans_are_switched_off_by_name_from_the_environment() -> None:
    from chatql.gql.app import create_app

    settings = Settings.from_env({"CHATQL_DISABLED_PLANS": "reads, chat_events"})
    assert settings.disabled_plans == ("reads", "chat_events")
    app = create_app(settings)
    assert app.state.planner.enabled == PLAN_NAMES - {"reads", "chat_events"}


def test_the_docs_list_the_plans_as_they_are_registered() -> None:
    """The architecture's table of plans is written from the registry by ``make
    reference`` (a plan added, renamed or moved to another transport fails here until it
    is run); it names every plan and each of its root fields once."""
    from tests.scripts import load_script

    root = Path(__file__).resolve().parents[2] / "docs"
    generator = load_script(root / "reference" / "_generate_plans.py", "chatql_docs_plans")
    page = (root / "architecture.md").read_text(encoding="utf-8")
    assert generator.rewritten(page) == page, (
        "docs/architecture.md's table of plans is stale: run `make reference`")
    table = generator.table()
    for plan in PLANS:
        assert table.count(f"| `{plan.name}` |") == 1
        assert all(f"`{name}`" in table for name in plan.fields)


def test_an_unknown_plan_name_stops_the_server_from_starting() -> None:
    from chatql.gql.app import create_app
    from chatql.gql.auth import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown plans compiled_reads; the plans are"):
        create_app(Settings(disabled_plans=("compiled_reads",)))
