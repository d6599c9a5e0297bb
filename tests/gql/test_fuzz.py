"""Hypothesis-driven fuzzing of ``/graphql`` over HTTP, on both backends.

Random documents (token soup, deep nesting, oversized), the real operations with random
variables (wrong types, huge strings, NUL and lone surrogates, random JSON), random
JSON bodies and random bytes (invalid UTF-8) are posted to the app. For every request:

- the answer comes within ``REQUEST_SECONDS`` (no hang);
- the status is never 5xx, and the body is JSON whose errors all carry one of the documented
  codes (never ``INTERNAL``) and no trace or SQL;
- a rejected request (errors, no data) leaves every table exactly as it was.

Hypothesis runs in a worker thread and submits each request to the test's event loop,
so the ``client`` and ``db`` fixtures are used as they are. Example counts are modest
(``FUZZ_EXAMPLES`` per strategy) to keep the suite fast; raise them locally to dig.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

# Shrinking a failure over a 300 kB string makes Hypothesis warn about the repr it prints.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

FUZZ_EXAMPLES = int(os.environ.get("CHATQL_FUZZ_EXAMPLES", "40"))
REQUEST_SECONDS = 20.0
ERROR_CODES = {
    "NOT_FOUND", "INVALID_ARGUMENT", "INVALID_CURSOR", "CONFLICT", "APPEND_CONFLICT",
    "CHAT_CLOSED", "STREAM_NOT_FOUND", "STREAM_CLOSED", "STREAM_ACTIVE", "INVALID_DELTA",
    "WINDOW_TOO_SMALL", "PAYLOAD_TOO_LARGE", "UNAUTHENTICATED", "FORBIDDEN",
    "QUERY_TOO_COMPLEX", "PERSIST_FAILED",
}
LEAKS = ("Traceback", "SELECT ", "INSERT ", "sqlalchemy", "asyncpg", "sqlite3", 'File "')

OPERATIONS = (
    'query($id: ID!) { chat(id: $id) { id title metadata messages(last: 3) { edges { '
    "cursor node { id props } } } } }",
    "query($c: ID!, $f: Int, $a: String, $l: Int, $b: String, $flt: MessageFilter) { "
    "messages(chatId: $c, first: $f, after: $a, last: $l, before: $b, filter: $flt) { "
    "edges { cursor node { id sequence } } pageInfo { hasNextPage } } }",
    "mutation($in: CreateChatInput!) { createChat(input: $in) { id } }",
    "mutation($id: ID!, $in: UpdateChatInput!) { updateChat(id: $id, input: $in) { id } }",
    "mutation($c: ID!, $a: String!, $m: [MessageInput!]!) { "
    "appendMessages(chatId: $c, appendId: $a, messages: $m) { digest } }",
    "mutation($id: ID!, $in: UpdateMessageInput!) { updateMessage(id: $id, input: $in) "
    "{ id } }",
    "mutation($c: ID!, $ids: [ID!]!) { deleteMessages(chatId: $c, ids: $ids) }",
    "mutation($id: ID!) { deleteChat(id: $id) }",
    "mutation($id: ID!) { restoreChat(id: $id) { id } }",
    "mutation($id: ID!) { purgeChat(id: $id) }",
    "query($flt: ChatFilter, $f: Int, $a: String, $b: String, $l: Int) { chats(filter: $flt, "
    "first: $f, after: $a, timezone: $b, orderBy: LAST_MESSAGE_AT) { totalCount edges { cursor "
    "node { id } } groups { key count totalCount } pageInfo { endCursor } } }",
    "query($b: String!, $f: Int, $c: ID, $l: Int) { searchMessages(query: $b, first: $f, "
    "chatId: $c, window: $l) { score chat { id } message { id } window { id } } }",
    "query($c: ID!, $l: Int!) { modelContext(chatId: $c, limit: $l) { id } }",
    "mutation($c: ID!) { startOver(chatId: $c) { id } }",
    "mutation($c: ID!, $b: String!) { compactChat(chatId: $c, summary: $b) { id } }",
)
VARIABLE_NAMES = ("id", "c", "f", "a", "l", "b", "flt", "in", "m", "ids")
TOKENS = (
    "query", "mutation", "subscription", "fragment", "on", "{", "}", "(", ")", ":", "$x",
    "...", "chat", "messages", "createChat", "appendMessages", "id", "edges", "node",
    "@include(if: true)", '"s"', '"\\u0000"', '"\\ud800"', "1", "-1", "1e999", "[", "]",
    "=", "!", "ID", "String", "Int", "__typename", "__schema", "#c\n", '"""b"""', "null",
    "input:", "{assistantId: \"a\"}", "chatId:", '"seed"', ",", "&", "\x00", "é", "😀",
)

huge_strings = st.builds(
    lambda char, size: char * size,
    st.sampled_from(["a", "é", "😀", "\x00", "\ud800", " ", "\\", '"']),
    st.integers(min_value=0, max_value=300_000),
)
scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats() | st.text(max_size=30) | huge_strings)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=12,
)
ids = st.sampled_from(["seed", "ghost", "", " ", "a/b", "x" * 65, "seed\x00"]) | st.text(
    max_size=70)
roles = st.sampled_from(["USER", "ASSISTANT", "SYSTEM", "TOOL", "user", "NOBODY", ""])
message_inputs = st.fixed_dictionaries(
    {"role": roles | json_values, "type": st.sampled_from(["text", "event", "x" * 65]) | scalars,
     "props": json_values},
    optional={"id": ids, "requestId": scalars, "blockId": scalars, "metadata": json_values},
)
plausible_variables = st.fixed_dictionaries({}, optional={
    "id": ids, "c": ids, "f": scalars, "l": scalars, "a": scalars, "b": scalars,
    "flt": json_values | st.fixed_dictionaries({}, optional={"role": roles, "type": scalars}),
    "in": json_values | st.fixed_dictionaries({"assistantId": scalars}, optional={
        "id": ids, "title": scalars, "metadata": json_values, "share": scalars,
        "public": scalars, "sort": scalars, "props": json_values, "status": scalars}),
    "m": st.lists(message_inputs, max_size=3) | json_values,
    "ids": st.lists(ids, max_size=3) | json_values,
})
random_variables = st.dictionaries(st.sampled_from(VARIABLE_NAMES), json_values, max_size=4)


def nested(depth: int, kind: str) -> str:
    if kind == "selection":
        return "{ chat(id: \"seed\") " + "{ id " * depth + "}" * (depth + 1)
    if kind == "list":
        return ('mutation { createChat(input: {assistantId: "a", metadata: '
                + "[" * depth + "]" * depth + "}) { id } }")
    return "{" * depth + "}" * depth


documents = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join),
    st.builds(nested, st.integers(min_value=1, max_value=4000),
              st.sampled_from(["selection", "list", "braces"])),
    st.sampled_from(OPERATIONS),
    st.text(max_size=200),
)


class Fuzzer:
    """Sends requests from Hypothesis' thread to the app on the test's event loop."""

    def __init__(self, client: GraphQLClient, db: Database,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.http: httpx.AsyncClient = client.http
        self.db = db
        self.loop = loop

    def run(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(REQUEST_SECONDS)

    def check(self, send: Callable[[], Coroutine[Any, Any, httpx.Response]]) -> Any:
        """Send, check the invariants, and return the answer's body."""
        before = self.run(lambda: store_fingerprint(self.db))
        response: httpx.Response = self.run(send)
        assert response.status_code < 500, response.text[:500]
        assert response.status_code in (200, 400, 404, 405, 413), response.status_code
        body = response.json()
        for leak in LEAKS:
            assert leak not in response.text, response.text[:500]
        errors = body.get("errors") if isinstance(body, dict) else None
        if not errors:
            assert response.status_code == 200
            return body
        for error in errors:
            code = (error.get("extensions") or {}).get("code")
            assert code in ERROR_CODES, (code, error)
        data = body.get("data")
        if data is None or all(value is None for value in data.values()):
            after = self.run(lambda: store_fingerprint(self.db))
            assert after == before, f"a rejected request changed the store: {errors}"
        return body

    def post_json(self, payload: Any, headers: dict[str, str] | None = None) -> Any:
        text = json.dumps(payload)  # NaN/Infinity and lone surrogates are sent as they come
        return self.check(lambda: self.http.post(
            "/graphql", content=text.encode(),
            headers={"content-type": "application/json", **(headers or {})}))

    def post_bytes(self, body: bytes) -> None:
        self.check(lambda: self.http.post("/graphql", content=body,
                                          headers={"content-type": "application/json"}))

    def get(self, query: str, variables: Any) -> None:
        params = {"query": query, "variables": json.dumps(variables)}
        self.check(lambda: self.http.get("/graphql", params=params))


def _hypothesis(**extra: Any) -> Any:
    return settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                    derandomize=False, suppress_health_check=list(HealthCheck), **extra)


async def _fuzz(client: GraphQLClient, db: Database, body: Callable[[Fuzzer], None]) -> None:
    await client.data('mutation { createChat(input: {id: "seed", assistantId: "a"}) { id } }')
    await client.data('mutation { appendMessages(chatId: "seed", appendId: "s", messages: '
                      '[{role: USER, type: "text", props: {}}]) { digest } }')
    fuzzer = Fuzzer(client, db, asyncio.get_running_loop())
    await asyncio.to_thread(body, fuzzer)


async def test_fuzz_real_operations_with_random_variables(
    client: GraphQLClient, db: Database
) -> None:
    def body(fuzzer: Fuzzer) -> None:
        @_hypothesis()
        @given(st.sampled_from(OPERATIONS), plausible_variables | random_variables)
        def run(query: str, variables: dict[str, Any]) -> None:
            fuzzer.post_json({"query": query, "variables": variables})

        run()

    await _fuzz(client, db, body)


async def test_fuzz_random_documents(client: GraphQLClient, db: Database) -> None:
    def body(fuzzer: Fuzzer) -> None:
        @_hypothesis()
        @given(documents, random_variables | st.none(), st.booleans())
        def run(query: str, variables: Any, use_get: bool) -> None:
            # httpx refuses URLs over 64 kB before sending; big documents go by POST.
            if use_get and len(query) + len(json.dumps(variables)) < 20_000:
                fuzzer.get(query, variables)
            else:
                fuzzer.post_json({"query": query, "variables": variables})

        run()

    await _fuzz(client, db, body)


async def test_fuzz_random_bodies(client: GraphQLClient, db: Database) -> None:
    def body(fuzzer: Fuzzer) -> None:
        @_hypothesis()
        @given(st.one_of(
            st.binary(max_size=300),
            st.binary(max_size=100).map(lambda b: b'{"query": "{ chat(id: \\"' + b + b'\\") '
                                                  b'{ id } }"}'),
            json_values.map(lambda v: json.dumps(v).encode()),
            st.builds(lambda depth: b'{"query": "{ __typename }", "variables": {"x": '
                      + b"[" * depth + b"]" * depth + b"}}",
                      st.integers(min_value=1, max_value=100_000)),
        ))
        def run(raw: bytes) -> None:
            fuzzer.post_bytes(raw)

        run()

    await _fuzz(client, db, body)


# ---- live streams -------------------------------------------------------------------

#: The seed chat's creator with the agent role: the producer mutations need it.
PRODUCER = {"X-User-Id": "dev", "X-Tenant-Id": "default", "X-Roles": "agent"}
CURRENT = "@current"  # stands for the stream the fuzzer keeps open on "seed"
STREAM_OPERATIONS = (
    "mutation($s: ID!, $k: [ChunkInput!]!) { pushChunks(streamId: $s, chunks: $k) "
    "{ accepted duplicates lastSeq } }",
    "mutation($s: ID!, $st: StepInput!) { recordStep(streamId: $s, step: $st) }",
    "mutation($s: ID!, $e: StreamStatus!, $b: String) { endStream(streamId: $s, status: $e, "
    "error: $b) { stream { id status } messages { id props } resume { id } } }",
    "mutation($in: StartStreamInput!) { startStream(input: $in) { id } }",
    "mutation($c: ID!) { stopStream(chatId: $c) }",
)
PROBE = "mutation($s: ID!) { pushChunks(streamId: $s, chunks: []) { lastSeq } }"
stream_ids = st.sampled_from([CURRENT, CURRENT, CURRENT, "ghost"]) | ids
chunk_inputs = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "event", "tool_call", "", "x" * 65]) | scalars},
    optional={
        "chunkId": st.sampled_from(["k1", "k2"]) | ids | scalars,
        "messageId": st.sampled_from(["m1", "m2"]) | ids | scalars,
        "blockId": scalars, "threadId": scalars, "role": roles | scalars,
        "props": json_values | st.fixed_dictionaries({}, optional={
            "content": scalars | json_values, "items": json_values, "a": json_values}),
        "delta": st.booleans() | scalars,
        "deltaPath": st.sampled_from(["content", "a.b", "items.0", "items.9", "", "a..b",
                                      "content.x"]) | scalars,
        "deltaAction": st.sampled_from(["append", "replace", "merge", "set", "bogus"]) | scalars,
    },
)
step_inputs = st.fixed_dictionaries(
    {"id": ids | scalars, "type": st.sampled_from(["llm", "tool", "delegate", "bogus"]) | scalars},
    optional={"status": st.sampled_from(["running", "completed", "failed", "nope"]) | scalars,
              "stackId": ids | scalars, "stackParentId": ids | scalars,
              "stackDepth": scalars, "input": json_values, "spaceSnapshot": json_values,
              "error": scalars},
)
stream_variables = st.fixed_dictionaries({}, optional={
    "s": stream_ids | scalars,
    "k": st.lists(chunk_inputs, max_size=5) | json_values,
    "st": step_inputs | json_values,
    "e": st.sampled_from(["COMPLETED", "INTERRUPTED", "FAILED", "completed", "BOGUS"]) | scalars,
    "b": scalars,
    "in": json_values | st.fixed_dictionaries({"chatId": st.sampled_from(["seed"]) | ids},
                                              optional={"requestId": scalars,
                                                        "assistantId": scalars,
                                                        "streamId": ids | scalars,
                                                        "input": message_inputs}),
    "c": st.sampled_from(["seed"]) | ids,
})


async def test_fuzz_stream_operations(client: GraphQLClient, db: Database) -> None:
    """Random chunks, steps, statuses and ids against an open stream on "seed".

    Besides the usual invariants (no 5xx or INTERNAL, rejected requests leave the
    database as it was), a rejected request leaves the open stream as it was: its
    ``lastSeq`` (probed with an empty push) does not move.
    """
    serial = iter(range(10**6))
    current: list[str] = []

    def body(fuzzer: Fuzzer) -> None:
        def probe() -> int | None:
            """The open stream's lastSeq; None when it has ended."""
            answer = fuzzer.post_json({"query": PROBE, "variables": {"s": current[0]}},
                                      PRODUCER)
            return None if answer.get("errors") else answer["data"]["pushChunks"]["lastSeq"]

        def reopen() -> None:
            # Whatever the fuzzer started or left open on "seed" is stopped first.
            fuzzer.post_json({"query": "mutation { stopStream(chatId: \"seed\") }"},
                             PRODUCER)
            current[:] = [f"fz{next(serial)}"]
            answer = fuzzer.post_json({"query": STREAM_OPERATIONS[3], "variables": {
                # Its own request id: a chat refuses a second stream for one request.
                "in": {"chatId": "seed", "streamId": current[0],
                       "requestId": f"r-{current[0]}"}}},
                PRODUCER)
            assert not answer.get("errors"), answer
            assert probe() == 1, "the probe must see the new stream (seq 1: stream_start)"

        reopen()

        @_hypothesis()
        @given(st.sampled_from(STREAM_OPERATIONS), stream_variables)
        def run(query: str, variables: dict[str, Any]) -> None:
            if probe() is None:
                reopen()
            if variables.get("s") == CURRENT:
                variables = {**variables, "s": current[0]}
            seq = probe()
            answer = fuzzer.post_json({"query": query, "variables": variables}, PRODUCER)
            data = answer.get("data")
            if answer.get("errors") and (data is None or all(v is None for v in data.values())):
                assert probe() == seq, f"a rejected request moved the stream: {answer}"

        run()

    await _fuzz(client, db, body)
