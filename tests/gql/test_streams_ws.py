"""Live streams end to end over a real WebSocket and real HTTP, both backends.

Producers and subscribers talk to a real uvicorn server; every scenario ends by
comparing what subscribers built from their chunks with what the database holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from chatql.gql.app import create_app
from chatql.gql.document_shapes import PlanCache
from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend, uvicorn_serving
from tests.gql.wsclient import ChunkView, connect

PROTOCOLS = ["graphql-transport-ws", "graphql-ws"]
# An agent: the producer mutations need the agent (or admin) role.
ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent"}

CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = """mutation($input: StartStreamInput!) { startStream(input: $input) { id status } }"""
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted duplicates lastSeq } }"""
END = """mutation($id: ID!, $status: StreamStatus!, $error: String) {
  endStream(streamId: $id, status: $status, error: $error) {
    stream { id status } messages { id type props status sequence } resume { type status } } }"""
STOP = "mutation($chat: ID!) { stopStream(chatId: $chat) }"
STEP = "mutation($id: ID!, $step: StepInput!) { recordStep(streamId: $id, step: $step) }"
MESSAGES = """query($chat: ID!) { messages(chatId: $chat, first: 200) {
  edges { node { id role type props status sequence blockId threadId } } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """Every test here runs on each live-stream backend and each database."""
    return on_backend(request, settings)


@asynccontextmanager
async def serve(settings: Settings) -> AsyncIterator[tuple[str, Any]]:
    """A real uvicorn server for ``settings``; yields its address and the app."""
    app = create_app(settings)
    async with uvicorn_serving(app) as port:
        yield f"127.0.0.1:{port}", app


async def subscribed(app: Any, chat: str, count: int) -> None:
    """Wait until ``count`` subscriptions of ``chat`` reached the broker."""
    for _ in range(500):
        if app.state.services.streams.backend.subscriber_count(chat) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the subscriptions never arrived")


class Http:
    """GraphQL over real HTTP to the live server."""

    def __init__(self, server: str) -> None:
        self.url = f"http://{server}/graphql"

    async def execute(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, json={"query": query,
                                                       "variables": variables or {}},
                                       headers=ALICE)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        body = await self.execute(query, variables)
        assert not body.get("errors"), body
        return body["data"]

    async def code(self, query: str, variables: dict[str, Any] | None = None) -> str:
        body = await self.execute(query, variables)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"])

    async def messages(self, chat: str) -> list[dict[str, Any]]:
        data = await self.data(MESSAGES, {"chat": chat})
        return [edge["node"] for edge in data["messages"]["edges"]]


def shown(view: ChunkView) -> dict[str, tuple[str, Any]]:
    return {mid: (m["type"], m["props"]) for mid, m in view.messages.items()}


def persisted(rows: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    return {m["id"]: (m["type"], m["props"]) for m in rows if m["type"] != "user_input"}


def delta(mid: str, text: str, *, kind: str = "text", path: str | None = None,
          block: str = "B1", thread: str = "T1") -> dict[str, Any]:
    chunk = {"messageId": mid, "type": kind, "props": {(path or "content"): text},
             "delta": True, "blockId": block, "threadId": thread}
    if path:
        chunk["deltaPath"] = path
    return chunk


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_two_subscribers_late_join_and_reconnect_end_with_the_persisted_messages(
    settings: Settings, protocol: str,
) -> None:
    async with serve(settings) as (server, app), \
            connect(server, protocol, ALICE) as producer, \
            connect(server, protocol, ALICE) as early:
        http = Http(server)
        await producer.execute(CREATE, {"id": "live"})
        first = await ChunkView.open(early, "live")
        await subscribed(app, "live", 1)
        started = await producer.execute(START, {"input": {
            "chatId": "live", "requestId": "req", "assistantId": "bot",
            "input": {"role": "USER", "type": "user_input", "props": {"content": "weather?"}}}})
        sid = started["startStream"]["id"]
        start = await first.until_event("stream_start")
        assert (start["seq"], start["streamId"]) == (1, sid)
        assert start["props"]["input"]["props"] == {"content": "weather?"}

        async def push(*chunks: dict[str, Any]) -> dict[str, Any]:
            result: dict[str, Any] = (await producer.execute(
                PUSH, {"id": sid, "chunks": list(chunks)}))["pushChunks"]
            return result

        await push({"type": "event", "props": {"event": "block_start"}, "blockId": "B1"},
                   delta("think", "Let me ", kind="thinking"),
                   delta("think", "check.", kind="thinking"),
                   {"messageId": "call", "type": "tool_call", "blockId": "B1", "threadId": "T1",
                    "props": {"name": "weather", "arguments": ""}})
        for part in ['{"city"', ': "Oslo', '"}']:
            await push(delta("call", part, kind="tool_call", path="arguments"))
        # A subscriber that will drop and reconnect joins mid-stream.
        async with connect(server, protocol, ALICE) as flaky_socket:
            flaky = await ChunkView.open(flaky_socket, "live")
            # stream_start, then the snapshot: one chunk per message, all at seq 8.
            for _ in range(3):
                await flaky.next()
            seen_before_drop = flaky.last_seq
            flaky_messages = dict(flaky.messages)
        assert seen_before_drop == 8
        # Late joiner: gets the state so far as one chunk per message.
        async with connect(server, protocol, ALICE) as late_socket:
            late = await ChunkView.open(late_socket, "live")
            snapshot_start = await late.next()
            assert snapshot_start["props"]["event"] == "stream_start"
            snapshot = [await late.next() for _ in range(2)]
            assert {c["seq"] for c in snapshot} == {8}
            assert not any(c["delta"] for c in snapshot)
            assert {c["type"] for c in snapshot} == {"thinking", "tool_call"}
            await push(delta("t1", "Sunny ", block="B2"),
                       delta("t2", "Also: ", block="B3", thread="T2"),
                       delta("t1", "in Oslo.", block="B2"),
                       delta("t2", "no rain.", block="B3", thread="T2"),
                       {"type": "event", "props": {"event": "message_end"}, "messageId": "t1"})
            # Reconnect with afterSeq: exactly the chunks after it, none twice.
            async with connect(server, protocol, ALICE) as back_socket:
                back = await ChunkView.open(back_socket, "live", after=seen_before_drop)
                back.messages.update(flaky_messages)
                await back.until_seq(13)
                # Exactly the chunks after seq 8, none twice, none missing (these
                # alternate between messages, so none could be coalesced).
                assert [c["seq"] for c in back.chunks] == [9, 10, 11, 12, 13]
                ended = await producer.execute(END, {"id": sid, "status": "COMPLETED"})
                end_chunk = await back.until_event("stream_end")
            await first.until_event("stream_end")
            await late.until_event("stream_end")
        props = end_chunk["props"]
        assert (props["status"], props["messageCount"]) == ("completed", 5)
        assert isinstance(props["durationMs"], int) and end_chunk["seq"] == 14
        rows = await http.messages("live")
        assert [m["id"] for m in rows] == [m["id"] for m in ended["endStream"]["messages"]]
        stored = persisted(rows)
        assert stored[next(m["id"] for m in rows if m["type"] == "tool_call")] == (
            "tool_call", {"name": "weather", "arguments": '{"city": "Oslo"}'})
        assert [m["type"] for m in rows] == [
            "user_input", "thinking", "tool_call", "text", "text"]
        assert {(m["blockId"], m["threadId"]) for m in rows[3:]} == {("B2", "T1"),
                                                                     ("B3", "T2")}
        for name, view in (("first", first), ("late", late), ("back", back)):
            assert shown(view) == stored, (name, view.chunks)
        # Subscribers saw service ids, never the producer's.
        assert not {"think", "call", "t1", "t2"} & {c["messageId"] for c in first.chunks}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_subscription_spans_streams_and_sees_stop(settings: Settings,
                                                        protocol: str) -> None:
    async with serve(settings) as (server, app), connect(server, protocol, ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": "span"})
        view = await ChunkView.open(ws, "span")
        await subscribed(app, "span", 1)
        for round_ in range(2):
            sid = (await http.data(START, {"input": {"chatId": "span"}}))["startStream"]["id"]
            await http.data(PUSH, {"id": sid, "chunks": [delta("m", f"part {round_}")]})
            if round_ == 0:
                assert (await http.data(STOP, {"chat": "span"}))["stopStream"] is True
            else:
                await http.data(END, {"id": sid, "status": "FAILED", "error": "model down"})
            end = await view.until_event("stream_end")
            assert end["streamId"] == sid
            assert end["props"]["status"] == ("interrupted" if round_ == 0 else "failed")
        rows = await http.messages("span")
        assert [m["status"] for m in rows] == ["INTERRUPTED", "FAILED"]
        assert shown(view) == persisted(rows)
        assert await http.code(PUSH, {"id": sid, "chunks": [delta("m", "x")]}) == "STREAM_CLOSED"


async def test_a_regenerated_answer_announces_its_parent(settings: Settings) -> None:
    async with serve(settings) as (server, app), connect(server, PROTOCOLS[0], ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": "regen"})
        receipt = await http.data(
            'mutation { appendMessages(chatId: "regen", appendId: "q", messages: [{role: USER,'
            ' type: "user_input", props: {content: "q"}}, {role: ASSISTANT, type: "text",'
            ' props: {content: "a"}}]) { messageIds } }')
        question = receipt["appendMessages"]["messageIds"][0]
        view = await ChunkView.open(ws, "regen")
        await subscribed(app, "regen", 1)
        sid = (await http.data(START, {"input": {"chatId": "regen", "parentId": question}}))[
            "startStream"]["id"]
        start = await view.until_event("stream_start")
        assert start["streamId"] == sid and start["props"]["parentId"] == question
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "again")]})
        await http.data(END, {"id": sid, "status": "COMPLETED", "error": None})
        await view.until_event("stream_end")
        assert [m["props"]["content"] for m in await http.messages("regen")] == ["q", "again"]


async def test_subscribing_to_an_unreadable_chat_is_not_found(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        await Http(server).data(CREATE, {"id": "secret"})
        async with connect(server, "graphql-transport-ws",
                           {"X-User-Id": "eve", "X-Tenant-Id": "acme"}) as ws:
            op = await ws.start("subscription { chatStream(chatId: \"secret\") { seq } }")
            payload = await ws.receive(op)
            assert payload is not None
            assert payload["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_idle_stream_ends_interrupted(settings: Settings) -> None:
    # Long enough that a loaded machine still pushes in time, short enough for a test.
    quick = dataclasses.replace(settings, stream_idle_timeout=1.5)
    async with serve(quick) as (server, _app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": "idle"})
        view = await ChunkView.open(ws, "idle")
        sid = (await http.data(START, {"input": {"chatId": "idle"}}))["startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "half a thou")]})
        end = await view.until_event("stream_end", timeout=15)
        assert end["props"]["status"] == "interrupted"
        for _ in range(100):
            rows = await http.messages("idle")
            if rows:
                break
            await asyncio.sleep(0.05)
        assert [(m["props"], m["status"]) for m in rows] == [
            ({"content": "half a thou"}, "INTERRUPTED")]
        assert await http.code(PUSH, {"id": sid, "chunks": [delta("m", "x")]}) == "STREAM_CLOSED"


@pytest.mark.parametrize("plan", ["push", "executor"])
async def test_heartbeats_keep_a_quiet_stream_alive_past_the_idle_timeout(
    settings: Settings, plan: str,
) -> None:
    # Both paths a push takes: the push plan, and the executor with the plan off.
    quick = dataclasses.replace(settings, stream_idle_timeout=1.0,
                                disabled_plans=("push",) if plan == "executor" else ())
    async with serve(quick) as (server, app):
        http = Http(server)
        await http.data(CREATE, {"id": "quiet"})
        await http.data(CREATE, {"id": "gone"})
        start = ("mutation($input: StartStreamInput!) { startStream(input: $input) "
                 "{ id idleTimeout } }")
        quiet = (await http.data(start, {"input": {"chatId": "quiet"}}))["startStream"]
        gone = (await http.data(start, {"input": {"chatId": "gone"}}))["startStream"]
        assert quiet["idleTimeout"] == gone["idleTimeout"] == 1.0
        await http.data(PUSH, {"id": quiet["id"], "chunks": [delta("m", "thinking…")]})
        before = app.state.planner.served["push"]
        # Three idle timeouts of heartbeats only, each answered like a push.
        for _ in range(12):
            beat = await http.data(PUSH, {"id": quiet["id"], "chunks": []})
            assert beat["pushChunks"] == {"accepted": 0, "duplicates": 0, "lastSeq": 2}
            await asyncio.sleep(0.25)
        assert (app.state.planner.served["push"] > before) == (plan == "push")
        # The stream that got nothing ended INTERRUPTED; the quiet one is still live.
        assert await http.code(PUSH, {"id": gone["id"], "chunks": []}) == "STREAM_CLOSED"
        done = await http.data(END, {"id": quiet["id"], "status": "COMPLETED"})
        assert done["endStream"]["stream"]["status"] == "COMPLETED"
        assert [(m["props"], m["status"]) for m in done["endStream"]["messages"]] == [
            ({"content": "thinking…"}, "COMPLETED")]
        # A heartbeat after the end is refused like any push.
        assert await http.code(PUSH, {"id": quiet["id"], "chunks": []}) == "STREAM_CLOSED"
        stop = "mutation($input: StartStreamInput!) { startStream(input: $input) { id } }"
        sid = (await http.data(stop, {"input": {"chatId": "quiet"}}))["startStream"]["id"]
        assert await http.data(STOP, {"chat": "quiet"}) == {"stopStream": True}
        assert await http.code(PUSH, {"id": sid, "chunks": []}) == "STREAM_CLOSED"


async def test_idle_timeout_is_null_when_the_sweeper_is_off(settings: Settings) -> None:
    async with serve(dataclasses.replace(settings, stream_idle_timeout=0)) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "forever"})
        started = await http.data("mutation { startStream(input: {chatId: \"forever\"}) "
                                  "{ idleTimeout } }")
        assert started["startStream"] == {"idleTimeout": None}


async def test_database_down_at_end_then_retry_persists_once(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings) as (server, app):
        http = Http(server)
        await http.data(CREATE, {"id": "down"})
        sid = (await http.data(START, {"input": {"chatId": "down", "input": {
            "role": "USER", "type": "user_input", "props": {"content": "q"}}}}))[
            "startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "kept")]})
        db = app.state.services.db
        streams = app.state.services.streams
        streams.retry_initial = 0.2
        real_engine = db.engine
        broken = ("sqlite+aiosqlite:////nonexistent/dir/x.db" if db.is_sqlite
                  else "postgresql+asyncpg://nobody@127.0.0.1:1/none")
        db.engine = create_async_engine(broken)
        try:
            assert await http.code(END, {"id": sid, "status": "COMPLETED"}) == "PERSIST_FAILED"
            assert streams.buffered(sid) is not None  # nothing lost
            assert await http.code(END, {"id": sid, "status": "COMPLETED"}) == "PERSIST_FAILED"
        finally:
            await db.engine.dispose()
            db.engine = real_engine
        # The service's own retry writes it; endStream then returns that result.
        for _ in range(400):
            if streams.buffered(sid) is None:
                break
            await asyncio.sleep(0.05)
        assert streams.buffered(sid) is None
        again = await http.data(END, {"id": sid, "status": "COMPLETED"})
        rows = await http.messages("down")
        assert [(m["type"], m["props"]) for m in rows] == [
            ("user_input", {"content": "q"}), ("text", {"content": "kept"})]
        assert [m["id"] for m in again["endStream"]["messages"]] == [m["id"] for m in rows]
        assert (await http.data(END, {"id": sid, "status": "COMPLETED"})) == again


async def test_caller_retry_after_database_recovers(settings: Settings) -> None:
    async with serve(settings) as (server, app):
        http = Http(server)
        await http.data(CREATE, {"id": "down2"})
        sid = (await http.data(START, {"input": {"chatId": "down2"}}))["startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "x")]})
        db = app.state.services.db
        app.state.services.streams.retry_initial = 60.0  # only the caller retries here
        real_engine = db.engine
        db.engine = create_async_engine(
            "sqlite+aiosqlite:////nonexistent/dir/x.db" if db.is_sqlite
            else "postgresql+asyncpg://nobody@127.0.0.1:1/none")
        try:
            assert await http.code(END, {"id": sid, "status": "FAILED"}) == "PERSIST_FAILED"
        finally:
            await db.engine.dispose()
            db.engine = real_engine
        result = (await http.data(END, {"id": sid, "status": "FAILED"}))["endStream"]
        assert result["stream"]["status"] == "FAILED"
        assert [m["status"] for m in await http.messages("down2")] == ["FAILED"]
        # Long after (the in-memory result is gone, as after a restart) the stored
        # write answers a retried endStream; a late push is still STREAM_CLOSED.
        app.state.services.streams._finished.clear()
        again = (await http.data(END, {"id": sid, "status": "FAILED"}))["endStream"]
        assert again["messages"] == result["messages"]
        assert again["stream"] == result["stream"]
        assert await http.code(PUSH, {"id": sid, "chunks": [delta("m", "x")]}) == "STREAM_CLOSED"


SLOW_STREAM = """subscription($chat: ID!) { chatStream(chatId: $chat) { ...C } }
fragment C on Chunk {
  streamId seq @include(if: true) chunkId messageId blockId threadId type role props delta
  deltaPath deltaAction fromSeq snapshot }"""
# The same selection as a client's generated document shares it (a named fragment).
FRAGMENT_STREAM = """subscription($chat: ID!) { chatStream(chatId: $chat) { ...C } }
fragment C on Chunk {
  streamId seq chunkId messageId blockId threadId type role props delta deltaPath deltaAction
  fromSeq snapshot }"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_fast_path_frames_equal_full_graphql_execution(settings: Settings,
                                                             protocol: str) -> None:
    from chatql.gql.schema.root import build_schema

    schema = build_schema()
    from chatql.gql.plans.chat_stream import plan_for
    from tests.gql.wsclient import CHAT_STREAM

    assert plan_for(schema, CHAT_STREAM, None, PlanCache(16)) is not None
    assert plan_for(schema, SLOW_STREAM, None, PlanCache(16)) is None
    assert plan_for(schema, FRAGMENT_STREAM, None, PlanCache(16)).fields == tuple(  # type: ignore[union-attr]
        (name, name) for name in ("streamId", "seq", "chunkId", "messageId", "blockId", "threadId",
                                  "type", "role", "props", "delta", "deltaPath", "deltaAction",
                                  "fromSeq", "snapshot"))
    async with serve(settings) as (server, app), connect(server, protocol, ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": "same"})
        fast = await ChunkView.open(ws, "same")
        slow_op = await ws.start(SLOW_STREAM, {"chat": "same"})
        await subscribed(app, "same", 2)
        sid = (await http.data(START, {"input": {"chatId": "same"}}))["startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [
            delta("m", "a"), {"type": "event", "props": {"event": "x"}},
            {"messageId": "t", "type": "tool_call", "role": "TOOL", "props": {"n": 1}}]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        await fast.until_event("stream_end")
        slow: list[dict[str, Any]] = []
        while not slow or slow[-1]["props"].get("event") != "stream_end":
            payload = await ws.receive(slow_op)
            assert payload is not None
            slow.append(payload["data"]["chatStream"])
        assert slow == fast.chunks
        assert [c["role"] for c in fast.chunks] == [None, None, None, "TOOL", None]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_push_refused_over_a_socket_is_the_executors_answer_and_pushed_once(
    settings: Settings, protocol: str, pushes: list[tuple[Any, ...]],
) -> None:
    payloads = []
    for disabled in ((), ("push",)):
        async with serve(dataclasses.replace(settings, disabled_plans=disabled)) as (
                server, app):
            http = Http(server)
            chat = f"refused-{len(payloads)}"
            await http.data(CREATE, {"id": chat})
            sid = (await http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
            await http.data(PUSH, {"id": sid, "chunks": [
                {"messageId": "m", "type": "text", "props": {"content": ["a list"]}}]})
            pushes.clear()
            served = app.state.planner.served["push"]
            async with connect(server, protocol, ALICE) as ws:
                op = await ws.start(PUSH, {"id": sid, "chunks": [delta("m", "onto a list")]})
                payloads.append(await ws.receive(op))
                assert await ws.receive(op) is None
            # Tried once, by the plan when it is on, by the executor when it is off.
            assert len(pushes) == 1
            assert (app.state.planner.served["push"] > served) == (not disabled)
    refused, executed = payloads
    assert refused is not None and refused["errors"][0]["extensions"]["code"] == "INVALID_DELTA"
    assert refused == executed
