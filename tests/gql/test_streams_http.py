"""Stream producer mutations and resume queries over HTTP, both backends."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from chatql.gql.document_shapes import PlanCache
from chatql.gql.settings import Settings
from chatql.store.db import rows as store_rows
from tests.conftest import BACKENDS, GraphQLClient, on_backend, running_app

CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = """mutation($input: StartStreamInput!) {
  startStream(input: $input) { id chatId requestId status startedAt } }"""
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted duplicates lastSeq } }"""
STEP = """mutation($id: ID!, $step: StepInput!) { recordStep(streamId: $id, step: $step) }"""
END = """mutation($id: ID!, $status: StreamStatus!, $error: String) {
  endStream(streamId: $id, status: $status, error: $error) {
    stream { id status }
    messages { id role type props status sequence requestId assistantId blockId threadId }
    resume { type status stackId stackParentId stackDepth error sequence input output }
  } }"""
STOP = "mutation($chat: ID!) { stopStream(chatId: $chat) }"
MESSAGES = """query($chat: ID!) { messages(chatId: $chat, first: 200) {
  edges { node { id role type props status sequence } } } }"""
LAST = """query($chat: ID!) { lastResume(chatId: $chat) { type status stackId } }"""
RECORDS = """query($chat: ID!) { resumeRecords(chatId: $chat) { type status stackId sequence } }"""

AGENT = {"X-User-Id": "dev", "X-Tenant-Id": "default", "X-Roles": "agent"}


class AgentClient(GraphQLClient):
    """Calls without headers come from the default user with the agent role: the
    producer mutations need ``agent`` or ``admin``."""

    async def execute(self, query: str, variables: dict[str, Any] | None = None,
                      headers: dict[str, str] | None = None) -> dict[str, Any]:
        return await super().execute(query, variables, AGENT if headers is None else headers)


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """Every test here runs on each live-stream backend and each database."""
    return on_backend(request, settings)


@pytest.fixture
def client(client: GraphQLClient) -> GraphQLClient:
    return AgentClient(client.http)


async def stored(client: GraphQLClient, chat: str) -> list[dict[str, Any]]:
    data = await client.data(MESSAGES, {"chat": chat})
    return [edge["node"] for edge in data["messages"]["edges"]]


async def start(client: GraphQLClient, chat: str, **extra: Any) -> str:
    await client.data(CREATE, {"id": chat})
    data = await client.data(START, {"input": {"chatId": chat, "requestId": "r1",
                                                "assistantId": "bot", **extra}})
    stream_id: str = data["startStream"]["id"]
    return stream_id


async def test_stream_persists_merged_messages_in_order(client: GraphQLClient) -> None:
    sid = await start(client, "c1", input={"role": "USER", "type": "user_input",
                                           "props": {"content": "hi"}})
    push = await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m1", "type": "text", "props": {"content": "Hel"}, "delta": True},
        {"messageId": "m2", "type": "thinking", "props": {"content": "hmm"}},
        {"messageId": "m1", "type": "text", "props": {"content": "lo"}, "delta": True},
        {"type": "event", "props": {"event": "message_end"}},
    ]})
    assert push["pushChunks"] == {"accepted": 4, "duplicates": 0, "lastSeq": 5}
    assert await stored(client, "c1") == []  # nothing is written during the stream
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert result["stream"] == {"id": sid, "status": "COMPLETED"}
    got = [(m["type"], m["props"], m["status"], m["sequence"]) for m in result["messages"]]
    assert got == [("user_input", {"content": "hi"}, "COMPLETED", 1),
                   ("text", {"content": "Hello"}, "COMPLETED", 2),
                   ("thinking", {"content": "hmm"}, "COMPLETED", 3)]
    assert result["messages"][1]["requestId"] == "r1"
    assert result["messages"][1]["assistantId"] == "bot"
    assert result["resume"] == []
    assert [m["id"] for m in await stored(client, "c1")] == [m["id"] for m in result["messages"]]


async def test_end_stream_twice_returns_the_same_result_once(client: GraphQLClient) -> None:
    sid = await start(client, "c2")
    await client.data(PUSH, {"id": sid, "chunks": [{"type": "text", "props": {"content": "x"}}]})
    first = await client.data(END, {"id": sid, "status": "COMPLETED"})
    second = await client.data(END, {"id": sid, "status": "COMPLETED"})
    assert first == second
    assert len(await stored(client, "c2")) == 1
    code = await client.error_code(PUSH, {"id": sid, "chunks": [{"type": "text"}]})
    assert code == "STREAM_CLOSED"


async def test_one_active_stream_per_chat_and_unknown_streams(client: GraphQLClient) -> None:
    await start(client, "c3")
    code = await client.error_code(START, {"input": {"chatId": "c3"}})
    assert code == "STREAM_ACTIVE"
    assert await client.error_code(PUSH, {"id": "nope", "chunks": []}) == "STREAM_NOT_FOUND"
    assert await client.error_code(END, {"id": "nope", "status": "FAILED"}) == "STREAM_NOT_FOUND"
    assert await client.error_code(START, {"input": {"chatId": "absent"}}) == "NOT_FOUND"


async def test_invalid_delta_rejects_the_batch_and_keeps_the_stream(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c4")
    await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "a"}}]})
    code = await client.error_code(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "b"}, "delta": True},
        {"messageId": "m", "type": "text", "props": {"content": {"x": 1}}, "delta": True}]})
    assert code == "INVALID_DELTA"
    code = await client.error_code(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "b"}, "delta": True,
         "deltaAction": "explode"}]})
    assert code == "INVALID_DELTA"
    push = await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "c"}, "delta": True}]})
    assert push["pushChunks"]["lastSeq"] == 3  # the rejected batches took no seq
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert [m["props"] for m in result["messages"]] == [{"content": "ac"}]


async def test_push_limits_are_payload_too_large_and_leave_the_stream(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c5")
    too_many = [{"type": "text", "props": {"content": "x"}}] * 1001
    assert await client.error_code(PUSH, {"id": sid, "chunks": too_many}) == "PAYLOAD_TOO_LARGE"
    ok = await client.data(PUSH, {"id": sid, "chunks": too_many[:2]})
    assert ok["pushChunks"]["accepted"] == 2
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert len(result["messages"]) == 2


async def test_failed_stream_writes_resume_steps_newest_running_takes_status(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c6")
    steps = [
        {"id": "s1", "type": "input", "status": "completed", "stackId": "root"},
        {"id": "s2", "type": "delegate", "stackId": "root", "input": {"agent": "x"}},
        {"id": "s3", "type": "llm", "stackId": "child", "stackParentId": "root",
         "stackDepth": 1},
    ]
    for step in steps:
        assert (await client.data(STEP, {"id": sid, "step": step}))["recordStep"] is True
    await client.data(STEP, {"id": sid, "step": {"id": "s3", "type": "llm",
                                                 "output": {"partial": "ab"}}})
    result = (await client.data(END, {"id": sid, "status": "FAILED", "error": "boom"}))
    resume = result["endStream"]["resume"]
    assert [(r["type"], r["status"], r["stackDepth"], r["sequence"]) for r in resume] == [
        ("input", "completed", 0, 1), ("delegate", "running", 0, 2), ("llm", "failed", 1, 3)]
    assert resume[2]["error"] == "boom" and resume[2]["output"] == {"partial": "ab"}
    assert resume[2]["stackParentId"] == "root"
    assert (await client.data(LAST, {"chat": "c6"}))["lastResume"] == {
        "type": "llm", "status": "failed", "stackId": "child"}
    assert len((await client.data(RECORDS, {"chat": "c6"}))["resumeRecords"]) == 3


async def test_completed_stream_leaves_no_resume_records(client: GraphQLClient) -> None:
    sid = await start(client, "c7")
    await client.data(STEP, {"id": sid, "step": {"id": "s1", "type": "llm"}})
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert result["resume"] == []
    assert (await client.data(LAST, {"chat": "c7"}))["lastResume"] is None


async def test_stop_stream_interrupts_and_closes(client: GraphQLClient) -> None:
    sid = await start(client, "c8")
    await client.data(PUSH, {"id": sid, "chunks": [{"type": "text", "props": {"content": "p"}}]})
    assert (await client.data(STOP, {"chat": "c8"}))["stopStream"] is True
    assert (await client.data(STOP, {"chat": "c8"}))["stopStream"] is False
    assert [m["status"] for m in await stored(client, "c8")] == ["INTERRUPTED"]
    code = await client.error_code(PUSH, {"id": sid, "chunks": [{"type": "text"}]})
    assert code == "STREAM_CLOSED"
    end = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert end["stream"]["status"] == "INTERRUPTED"


BY_STACK = """query($s: String!) { resumeByStack(stackId: $s) { type status stackId } }"""
PATH = """query($s: String!) { stackPath(stackId: $s) }"""
DELETE_RESUME = "mutation($chat: ID!) { deleteResume(chatId: $chat) }"


async def test_interrupted_delegation_resumes_from_the_nested_stack(
    client: GraphQLClient, make_headers: Any,
) -> None:
    sid = await start(client, "a2a")
    steps = [
        {"id": "1", "type": "input", "status": "completed", "stackId": "root"},
        {"id": "2", "type": "llm", "status": "completed", "stackId": "root"},
        {"id": "3", "type": "delegate", "stackId": "root", "input": {"agent": "expense"},
         "spaceSnapshot": {"choose_prompt": "query"}},
        {"id": "4", "type": "hook_create", "status": "completed", "stackId": "child",
         "stackParentId": "root", "stackDepth": 1, "assistantId": "expense"},
        {"id": "5", "type": "llm", "stackId": "child", "stackParentId": "root",
         "stackDepth": 1, "assistantId": "expense"},
    ]
    for step in steps:
        await client.data(STEP, {"id": sid, "step": step})
    assert (await client.data(STOP, {"chat": "a2a"}))["stopStream"] is True
    last = (await client.data(LAST, {"chat": "a2a"}))["lastResume"]
    assert last == {"type": "llm", "status": "interrupted", "stackId": "child"}
    child = (await client.data(BY_STACK, {"s": "child"}))["resumeByStack"]
    assert [(r["type"], r["status"]) for r in child] == [
        ("hook_create", "completed"), ("llm", "interrupted")]
    root = (await client.data(BY_STACK, {"s": "root"}))["resumeByStack"]
    assert [(r["type"], r["status"]) for r in root] == [
        ("input", "completed"), ("llm", "completed"), ("delegate", "running")]
    assert (await client.data(PATH, {"s": "child"}))["stackPath"] == ["root", "child"]
    assert (await client.data(PATH, {"s": "root"}))["stackPath"] == ["root"]
    assert (await client.data(PATH, {"s": "nothing"}))["stackPath"] == []
    # Another tenant sees none of it.
    stranger = make_headers(user="eve", tenant="other")
    assert (await client.data(BY_STACK, {"s": "child"}, stranger))["resumeByStack"] == []
    assert (await client.data(PATH, {"s": "child"}, stranger))["stackPath"] == []
    assert await client.error_code(LAST, {"chat": "a2a"}, stranger) == "NOT_FOUND"
    assert await client.error_code(DELETE_RESUME, {"chat": "a2a"}, stranger) == "NOT_FOUND"
    assert (await client.data(DELETE_RESUME, {"chat": "a2a"}))["deleteResume"] == 5
    assert (await client.data(RECORDS, {"chat": "a2a"}))["resumeRecords"] == []


async def test_bad_steps_are_invalid_argument_and_change_nothing(client: GraphQLClient) -> None:
    sid = await start(client, "badstep")
    for step in ({"id": "1", "type": "dance"}, {"id": "1", "type": "llm", "status": "odd"},
                 {"id": "1", "type": "llm", "stackDepth": -1}):
        assert await client.error_code(STEP, {"id": sid, "step": step}) == "INVALID_ARGUMENT"
    result = (await client.data(END, {"id": sid, "status": "FAILED"}))["endStream"]
    assert result["resume"] == []


async def test_producer_mutations_need_agent_or_admin_and_stop_needs_write(
    client: GraphQLClient, make_headers: Any,
) -> None:
    owner = make_headers(user="alice", tenant="acme")
    reader = make_headers(user="bob", tenant="acme")
    agent = make_headers(user="bot", tenant="acme", roles="agent")
    await client.data('mutation { createChat(input: {assistantId: "a", id: "pub",'
                      " public: true}) { id } }", None, owner)
    assert await client.error_code(START, {"input": {"chatId": "pub"}}, reader) == "FORBIDDEN"
    stranger = make_headers(user="eve", tenant="other")
    assert await client.error_code(START, {"input": {"chatId": "pub"}}, stranger) == "NOT_FOUND"
    sid = (await client.data(START, {"input": {"chatId": "pub"}}, agent))["startStream"]["id"]
    chunk = [{"type": "text", "props": {"content": "x"}}]
    assert await client.error_code(PUSH, {"id": sid, "chunks": chunk}, reader) == "FORBIDDEN"
    assert await client.error_code(PUSH, {"id": sid, "chunks": chunk},
                                   stranger) == "STREAM_NOT_FOUND"
    # The creator may append but is no producer (agent or admin).
    assert await client.error_code(PUSH, {"id": sid, "chunks": chunk}, owner) == "FORBIDDEN"
    admin = make_headers(user="root", tenant="acme", roles="admin")
    await client.data(PUSH, {"id": sid, "chunks": chunk}, admin)
    assert await client.error_code(STOP, {"chat": "pub"}, stranger) == "NOT_FOUND"
    # A read-only viewer of the public chat may not stop its owner's stream: it runs on.
    assert await client.error_code(STOP, {"chat": "pub"}, reader) == "FORBIDDEN"
    assert (await client.data(PUSH, {"id": sid, "chunks": chunk}, agent))["pushChunks"][
        "accepted"] == 1
    assert (await client.data(MESSAGES, {"chat": "pub"}, owner))["messages"]["edges"] == []
    # Its creator may (and so may agents and admins).
    assert (await client.data(STOP, {"chat": "pub"}, owner))["stopStream"] is True
    rows = (await client.data(MESSAGES, {"chat": "pub"}, owner))["messages"]["edges"]
    assert [e["node"]["status"] for e in rows] == ["INTERRUPTED", "INTERRUPTED"]


async def test_stream_buffer_bound_is_payload_too_large(settings: Any) -> None:
    import dataclasses

    import httpx

    from tests.conftest import running_app

    small = dataclasses.replace(settings, max_stream_bytes=4_000)
    async with running_app(small) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            client = AgentClient(http)
            sid = await start(client, "big")
            chunk = {"messageId": "m", "type": "text", "props": {"content": "x" * 1_000},
                     "delta": True}
            for _ in range(3):
                await client.data(PUSH, {"id": sid, "chunks": [chunk]})
            assert await client.error_code(PUSH, {"id": sid, "chunks": [chunk]}) == (
                "PAYLOAD_TOO_LARGE")
            small_chunk = {**chunk, "props": {"content": "!"}}
            assert (await client.data(PUSH, {"id": sid, "chunks": [small_chunk]}))[
                "pushChunks"]["lastSeq"] == 5
            result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
            assert result["messages"][0]["props"] == {"content": "x" * 3_000 + "!"}


async def test_stream_id_reuse_is_conflict(client: GraphQLClient) -> None:
    sid = await start(client, "reuse", streamId="fixed-id")
    assert sid == "fixed-id"
    await client.data(END, {"id": sid, "status": "COMPLETED"})
    code = await client.error_code(START, {"input": {"chatId": "reuse", "streamId": "fixed-id"}})
    assert code == "CONFLICT"


async def test_a_large_stream_persists_in_one_write_with_exact_sequences(
    client: GraphQLClient,
) -> None:
    # Past the size where Postgres switches to COPY: both paths must write the same.
    sid = await start(client, "big2", input={"id": "u-1", "role": "USER", "type": "user_input",
                                              "props": {"content": "go"}, "metadata": {"k": 1}})
    chunks = [{"type": "text", "blockId": f"b{i % 3}", "props": {"content": f"m{i}", "n": i}}
              for i in range(260)]
    await client.data(PUSH, {"id": sid, "chunks": chunks})
    result = (await client.data(END, {"id": sid, "status": "INTERRUPTED"}))["endStream"]
    got = result["messages"]
    assert len(got) == 261 and got[0]["id"] == "u-1"
    assert [m["sequence"] for m in got] == list(range(1, 262))
    assert {m["status"] for m in got} == {"INTERRUPTED"}
    assert got[1]["props"] == {"content": "m0", "n": 0} and got[-1]["blockId"] == "b1"
    stored_rows = (await client.data(
        """query { messages(chatId: "big2", last: 200) { edges { node {
            id sequence props status requestId assistantId } } } }"""))["messages"]["edges"]
    nodes = [edge["node"] for edge in stored_rows]
    assert [n["id"] for n in nodes] == [m["id"] for m in got[-200:]]
    assert nodes[-1]["props"] == {"content": "m259", "n": 259}
    assert (nodes[-1]["requestId"], nodes[-1]["assistantId"]) == ("r1", "bot")
    assert (await client.data(END, {"id": sid, "status": "INTERRUPTED"}))["endStream"] == result
    chat = (await client.data('query { chat(id: "big2") { lastMessageAt } }'))["chat"]
    assert chat["lastMessageAt"] is not None
    # The next stream continues the sequence; a taken input id is refused at the start.
    code = await client.error_code(START, {"input": {"chatId": "big2", "input": {
        "id": "u-1", "role": "USER", "type": "user_input", "props": {}}}})
    assert code == "CONFLICT"


async def test_push_fast_path_matches_ordinary_execution(client: GraphQLClient) -> None:
    from chatql.gql.plans.push import push_plan_for
    from chatql.gql.schema.root import build_schema
    from chatql.store.streams.buffer import PushResult

    schema = build_schema()

    aliased = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
      r: pushChunks(streamId: $id, chunks: $chunks) { n: accepted lastSeq __typename } }"""
    ordinary = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
      r: pushChunks(streamId: $id, chunks: $chunks) { ...P } }
      fragment P on PushResult { n: accepted lastSeq @include(if: true) __typename }"""
    # A fragment is expanded as the executor would: the same plan as the written-out form.
    spread = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
      r: pushChunks(streamId: $id, chunks: $chunks) { ...P ... on PushResult { n: accepted } } }
      fragment P on PushResult { n: accepted lastSeq __typename }"""
    assert push_plan_for(schema, aliased, None, PlanCache(16)) is not None
    sample = PushResult(accepted=3, duplicates=1, last_seq=7)
    filled = push_plan_for(schema, spread, None, PlanCache(16)).result(  # type: ignore[union-attr]
        sample)
    assert filled == push_plan_for(schema, aliased, None, PlanCache(16)).result(  # type: ignore[union-attr]
        sample) == {"n": 3, "lastSeq": 7, "__typename": "PushResult"}
    assert push_plan_for(schema, ordinary, None, PlanCache(16)) is None
    sid = await start(client, "fast")
    one = [{"messageId": "m", "type": "text", "role": "ASSISTANT", "props": {"content": "a"},
            "delta": True, "chunkId": "k1"}]
    fast = await client.data(aliased, {"id": sid, "chunks": one})
    assert fast == {"r": {"n": 1, "lastSeq": 2, "__typename": "PushResult"}}
    two = [{**one[0], "chunkId": "k2", "props": {"content": "b"}}]
    assert await client.data(ordinary, {"id": sid, "chunks": two}) == {
        "r": {"n": 1, "lastSeq": 3, "__typename": "PushResult"}}
    # Values the fast path does not take go the ordinary way, with the ordinary errors.
    for bad in ({"type": 5}, {"type": "text", "role": "ROBOT"}, {"type": "text", "odd": 1},
                {"type": "text", "delta": "yes"}):
        body = await client.execute(aliased, {"id": sid, "chunks": [bad]})
        assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT", bad
    assert await client.error_code(aliased, {"id": sid, "chunks": [
        {"type": "text", "messageId": "m", "props": {"content": 1}, "delta": True}]}) == (
        "INVALID_DELTA")
    dup = await client.data(aliased, {"id": sid, "chunks": one})
    assert dup["r"]["n"] == 0
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert [m["props"] for m in result["messages"]] == [{"content": "ab"}]


async def test_concurrent_starts_on_one_chat_admit_exactly_one(client: GraphQLClient) -> None:
    import asyncio

    await client.data(CREATE, {"id": "race"})
    bodies = await asyncio.gather(*(client.execute(START, {"input": {"chatId": "race"}})
                                    for _ in range(5)))
    winners = [b for b in bodies if not b.get("errors")]
    assert len(winners) == 1
    assert {b["errors"][0]["extensions"]["code"] for b in bodies if b.get("errors")} == {
        "STREAM_ACTIVE"}


async def test_concurrent_pushes_get_distinct_gapless_seqs(client: GraphQLClient) -> None:
    import asyncio

    sid = await start(client, "pushes")
    results = await asyncio.gather(*(client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": f"m{i}", "type": "text", "props": {"content": str(i)}},
        {"messageId": f"m{i}", "type": "text", "props": {"content": "!"}, "delta": True}]})
        for i in range(8)))
    assert sorted(r["pushChunks"]["lastSeq"] for r in results) == list(range(3, 18, 2))
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert sorted(m["props"]["content"] for m in result["messages"]) == [
        f"{i}!" for i in range(8)]


async def test_push_with_nul_is_invalid_argument_on_the_fast_path_too(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "nul")
    code = await client.error_code(PUSH, {"id": sid, "chunks": [
        {"type": "text", "props": {"content": "a\x00b"}}]})
    assert code == "INVALID_ARGUMENT"
    for chunk in ({"type": "text", "messageId": "m", "props": {"a\x00": 1}, "delta": True},
                  {"type": "text", "props": {"content": "ok", "deep": [{"x": "\x00"}]}}):
        assert await client.error_code(PUSH, {"id": sid, "chunks": [chunk]}) == (
            "INVALID_ARGUMENT")
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    # Nothing of the refused pushes was kept: the stream's only message is the note
    # that it wrote nothing.
    assert [(m["type"], m["props"]) for m in result["messages"]] == [
        ("error", {"content": "The agent ended its reply without writing anything."})]


async def test_a_backslash_before_u0000_is_text_not_nul(client: GraphQLClient) -> None:
    sid = await start(client, "not-nul")
    await client.data(PUSH, {"id": sid, "chunks": [
        {"type": "text", "messageId": "m", "props": {"content": "\\u0000"}}]})
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert [m["props"] for m in result["messages"]] == [{"content": "\\u0000"}]


# ---- the pushChunks lane: plain pushes skip the view, answered with its bytes --------


async def post_raw(client: GraphQLClient, content: bytes | str,
                   headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    response = await client.http.post("/graphql", content=content, headers={
        **AGENT, "content-type": "application/json", **(headers or {})})
    kept = {name: response.headers[name] for name in
            ("content-type", "content-length", "www-authenticate") if name in response.headers}
    return response.status_code, kept, response.content


def push_body(stream_id: str, content: str, **extra: Any) -> bytes:
    import orjson

    return orjson.dumps({"query": PUSH, "variables": {"id": stream_id, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": content}, "delta": True}]},
        **extra})


async def test_a_push_takes_the_lane_and_answers_with_the_views_bytes(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chatql.gql.app import GraphQLEndpoint

    sid = await start(client, "lane")
    runs: list[object] = []
    run = GraphQLEndpoint.run

    async def counted_run(self: GraphQLEndpoint, request: Any, *args: Any) -> Any:
        runs.append(request)
        return await run(self, request, *args)

    monkeypatch.setattr(GraphQLEndpoint, "run", counted_run)
    lane = await post_raw(client, push_body(sid, "a"))
    assert runs == []  # answered without the view
    monkeypatch.setattr(GraphQLEndpoint, "_lane", _no_lane)
    view = await post_raw(client, push_body(sid, "b"))
    assert len(runs) == 1
    assert lane[2] == b'{"data":{"pushChunks":{"accepted":1,"duplicates":0,"lastSeq":2}}}'
    assert view[2] == lane[2].replace(b'"lastSeq":2', b'"lastSeq":3')
    assert lane[:2] == view[:2] == (200, {"content-type": "application/json",
                                          "content-length": str(len(lane[2]))})
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert [m["props"] for m in result["messages"]] == [{"content": "ab"}]


async def _no_lane(*args: Any) -> bool:
    return False


async def test_a_push_refused_on_the_lane_is_answered_there_as_the_view_would_and_once(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch, pushes: list[tuple[Any, ...]],
) -> None:
    from chatql.gql.app import GraphQLEndpoint

    sid = await start(client, "refused")
    await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": ["a list"]}}]})
    pushes.clear()
    lane = await post_raw(client, push_body(sid, "text onto a list"))
    status, headers, body = lane
    assert status == 200 and headers["content-type"] == "application/json"
    assert b'"INVALID_DELTA"' in body
    assert len(pushes) == 1
    # The executor's answer to the same refused push, byte for byte.
    with monkeypatch.context() as patch:
        patch.setattr(GraphQLEndpoint, "_lane", _no_lane)
        assert await post_raw(client, push_body(sid, "text onto a list")) == lane
    assert len(pushes) == 2
    pushes.clear()
    # A chunk the fast path does not convert is pushed once, the ordinary way.
    pushes.clear()
    odd = await client.execute(PUSH, {"id": sid, "chunks": [
        {"messageId": "n", "type": "text", "props": {"content": "x"}, "tokens": 2**40}]})
    assert odd["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert pushes == []  # refused by GraphQL's Int before any push
    await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "n", "type": "text", "props": {"content": "x"}, "role": "TOOL"}]})
    assert len(pushes) == 1


@pytest.mark.parametrize(("content", "headers"), [
    (b'{"query": "mutation { pushChunks(', {}),  # not JSON
    (b'[{"query": "mutation { pushChunks(streamId: 1, chunks: []) { accepted } }"}]', {}),
    (b'{"query": "pushChunks", "variables": []}', {}),
    (b'{"query": "pushChunks", "variables": {}, "extensions": 1}', {}),
    (None, {"content-type": "text/plain"}),
    (None, {"content-type": "application/json; charset=utf-8"}),
    (None, {"accept": "text/event-stream"}),
    (None, {"accept": "application/graphql-response+json, application/json"}),
    (None, {"x-roles": "reader"}),
])
async def test_requests_the_lane_declines_get_the_views_answer(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch, content: bytes | None,
    headers: dict[str, str],
) -> None:
    from chatql.gql.app import GraphQLEndpoint

    sid = await start(client, "declined")
    one = await post_raw(client, content or push_body(sid, "a"), headers)
    monkeypatch.setattr(GraphQLEndpoint, "_lane", _no_lane)
    two = await post_raw(client, content or push_body(sid, "a"), headers)
    if two[0] == 200 and b'"lastSeq":3' in two[2]:  # both pushed: the second numbers on
        two = (two[0], two[1], two[2].replace(b'"lastSeq":3', b'"lastSeq":2'))
    assert one == two


async def test_an_unauthenticated_push_is_401_with_or_without_the_lane(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import httpx

    from chatql.gql.app import GraphQLEndpoint
    from tests.conftest import TEST_SECRET, running_app

    jwt = dataclasses.replace(settings, auth="jwt", jwt_secret=TEST_SECRET * 2)
    async with running_app(jwt) as app, httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://chatql") as http:
        client = GraphQLClient(http)
        one = await post_raw(client, push_body("s", "a"))
        monkeypatch.setattr(GraphQLEndpoint, "_lane", _no_lane)
        two = await post_raw(client, push_body("s", "a"))
    assert one == two
    assert one[0] == 401 and one[1]["www-authenticate"] == "Bearer"
    assert b'"UNAUTHENTICATED"' in one[2]


async def test_end_stream_after_a_restart_answers_from_the_stored_write(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A retried endStream that only the database can answer returns what the first
    one did: a long stream (COPY on Postgres, in several batches) and the empty stream
    after it (whose only message is the note that it wrote nothing)."""
    monkeypatch.setattr(store_rows, "COPY_BATCH", 64)
    many = store_rows.COPY_THRESHOLD + 5
    async with running_app(settings) as app:
        client = AgentClient(httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                               base_url="http://chatql"))
        full = await start(client, "restart", input={
            "role": "USER", "type": "user_input", "props": {"content": "q"}})
        for first in range(0, many, 100):
            await client.data(PUSH, {"id": full, "chunks": [
                {"messageId": f"m{n}", "type": "text", "props": {"content": f"part {n}"}}
                for n in range(first, min(many, first + 100))]})
        await client.data(STEP, {"id": full, "step": {"id": "s1", "type": "llm"}})
        written = await client.data(END, {"id": full, "status": "INTERRUPTED"})
        empty = (await client.data(START, {"input": {"chatId": "restart"}}))[
            "startStream"]["id"]
        nothing = await client.data(END, {"id": empty, "status": "COMPLETED"})
        await client.http.aclose()
    assert len(written["endStream"]["messages"]) == many + 1
    assert len(written["endStream"]["resume"]) == 1
    assert [m["type"] for m in nothing["endStream"]["messages"]] == ["error"]
    async with running_app(settings) as app:
        client = AgentClient(httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                               base_url="http://chatql"))
        assert await client.data(END, {"id": full, "status": "INTERRUPTED"}) == written
        assert await client.data(END, {"id": empty, "status": "COMPLETED"}) == nothing
        await client.http.aclose()


UPDATE_RESUME = """mutation($id: ID!, $status: String, $output: JSON) {
  updateResume(id: $id, status: $status, output: $output) {
    id type status output createdAt updatedAt } }"""
RESUME_TIMES = """query($chat: ID!) { resumeRecords(chatId: $chat) {
  id type status output createdAt updatedAt } }"""


async def test_update_resume_marks_a_step_done(client: GraphQLClient,
                                               make_headers: Any) -> None:
    sid = await start(client, "upd")
    for step in ({"id": "s1", "type": "input", "status": "completed"},
                 {"id": "s2", "type": "tool", "input": {"q": 1}}):
        await client.data(STEP, {"id": sid, "step": step})
    await client.data(END, {"id": sid, "status": "INTERRUPTED"})
    before = (await client.data(RESUME_TIMES, {"chat": "upd"}))["resumeRecords"]
    tool = before[1]
    assert tool["status"] == "interrupted" and tool["updatedAt"] == tool["createdAt"]
    updated = (await client.data(UPDATE_RESUME, {
        "id": tool["id"], "status": "completed", "output": {"rows": 3}}))["updateResume"]
    assert updated["status"] == "completed" and updated["output"] == {"rows": 3}
    assert updated["updatedAt"] > tool["updatedAt"]
    assert updated["createdAt"] == tool["createdAt"]
    # Output alone leaves the status; the change is what the chat's records show.
    again = (await client.data(UPDATE_RESUME, {"id": tool["id"], "output": {"rows": 4}}))[
        "updateResume"]
    assert (again["status"], again["output"]) == ("completed", {"rows": 4})
    after = (await client.data(RESUME_TIMES, {"chat": "upd"}))["resumeRecords"]
    assert after == [before[0], again]
    # Another tenant's caller (even an agent) finds no such record and changes nothing.
    stranger = make_headers("mallory", tenant="elsewhere", roles="agent")
    assert await client.error_code(UPDATE_RESUME, {"id": tool["id"], "status": "failed"},
                                   stranger) == "NOT_FOUND"
    assert await client.error_code(UPDATE_RESUME, {"id": "missing", "status": "failed"}) == (
        "NOT_FOUND")
    # Bad input is refused and changes nothing.
    assert await client.error_code(UPDATE_RESUME, {"id": tool["id"], "status": "done"}) == (
        "INVALID_ARGUMENT")
    assert await client.error_code(UPDATE_RESUME, {"id": tool["id"]}) == "INVALID_ARGUMENT"
    assert (await client.data(RESUME_TIMES, {"chat": "upd"}))["resumeRecords"] == after
