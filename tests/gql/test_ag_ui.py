"""``POST /ag-ui`` over real HTTP and SSE: every event parsed by the AG-UI protocol's own
models, the text equal to the stored reply, tool calls present, the interrupt outcome
and its resumption, idempotent re-posts answered with ``MESSAGES_SNAPSHOT``, another
person's chat refused, malformed bodies a clear 400. On both databases and brokers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import END, PUSH, START, Http, serve

PERSON = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
STORED = """query($c: ID!) { chat(id: $c) { activeLeafId
  messages(first: 50) { edges { node { id role type props } } }
  interrupts { id state kind toolCallId decision { approved reason response } }
  resumption { requestId } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def run_input(thread: str, message_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """A RunAgentInput as an AG-UI client (CopilotKit's HttpAgent) posts it."""
    return {"threadId": thread, "runId": f"run-{message_id}", "state": {}, "tools": [],
            "context": [], "forwardedProps": {"assistantId": "bot"},
            "messages": [{"id": message_id, "role": "user", "content": text}], **extra}


@asynccontextmanager
async def posted(server: str, body: Any, headers: dict[str, str] | None = None,
                 ) -> AsyncIterator[httpx.Response]:
    async with httpx.AsyncClient(timeout=30) as http, http.stream(
            "POST", f"http://{server}/ag-ui",
            content=body if isinstance(body, bytes) else json.dumps(body),
            headers={"content-type": "application/json", "accept": "text/event-stream",
                     **(headers or PERSON)}) as response:
        yield response


async def events(response: httpx.Response) -> list[Any]:
    """Every event of the SSE response, parsed by the protocol's own models."""
    out = []
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            out.append(EVENTS.validate_python(json.loads(line.removeprefix("data: "))))
    return out


async def stored(http: Http, chat: str) -> dict[str, Any]:
    return dict((await http.data(STORED, {"c": chat}))["chat"] or {})


async def reply(http: Http, chat: str, request: str, chunks: list[dict[str, Any]], *,
                parent: str | None = None, status: str = "COMPLETED") -> None:
    """An agent's stream answering ``request``."""
    for _ in range(500):
        body = await http.execute("query($c: ID!) { chat(id: $c) { id } }", {"c": chat})
        if (body.get("data") or {}).get("chat"):
            break
        await asyncio.sleep(0.01)
    started = await http.data(START, {"input": {"chatId": chat, "requestId": request,
                                                "assistantId": "bot", "parentId": parent}})
    sid = started["startStream"]["id"]
    for chunk in chunks:
        await http.data(PUSH, {"id": sid, "chunks": [chunk]})
    await http.data(END, {"id": sid, "status": status, "error": "model overloaded"})


WEATHER = [
    {"messageId": "t", "type": "thinking", "props": {"content": "Let me "}, "delta": True,
     "blockId": "B1"},
    {"messageId": "t", "type": "thinking", "props": {"content": "look"}, "delta": True,
     "blockId": "B1"},
    {"messageId": "c", "type": "tool_call", "blockId": "B1",
     "props": {"id": "call-1", "name": "weather", "arguments": '{"city":'}},
    {"messageId": "c", "type": "tool_call", "props": {"arguments": '"Oslo"}'},
     "delta": True, "deltaPath": "arguments", "blockId": "B1"},
    {"messageId": "r", "role": "TOOL", "type": "tool_result", "blockId": "B2",
     "props": {"tool_call_id": "call-1", "content": "4 °C"}},
    {"messageId": "a", "type": "text", "props": {"content": "It is **4 °C**"},
     "delta": True, "blockId": "B2"},
    {"messageId": "a", "type": "text", "props": {"content": " in Oslo."}, "delta": True,
     "blockId": "B2"},
]


def types(run: list[Any]) -> list[str]:
    return [event.type.value for event in run]


async def test_a_run_appends_the_message_and_streams_the_reply_as_ag_ui_events(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, run_input("ag-1", "q1", "Weather in Oslo?")) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            agent = asyncio.create_task(reply(http, "ag-1", "q1", WEATHER, parent="q1"))
            run = await events(response)
            await agent
        assert run[0].type == EventType.RUN_STARTED
        assert (run[0].thread_id, run[0].run_id) == ("ag-1", "run-q1")
        assert run[-1].type == EventType.RUN_FINISHED
        assert run[-1].outcome.type == "success"
        # Thinking, the tool call, its result and the text, in order, each closed.
        kinds = [t for t in types(run) if not t.endswith("_CONTENT") and t != "TOOL_CALL_ARGS"]
        assert kinds == [
            "RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "TOOL_CALL_START",
            "REASONING_MESSAGE_END", "REASONING_END", "TOOL_CALL_END", "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED"]
        start = next(e for e in run if e.type == EventType.TOOL_CALL_START)
        assert (start.tool_call_id, start.tool_call_name) == ("call-1", "weather")
        args = "".join(e.delta for e in run if e.type == EventType.TOOL_CALL_ARGS)
        assert json.loads(args) == {"city": "Oslo"}
        result = next(e for e in run if e.type == EventType.TOOL_CALL_RESULT)
        assert (result.tool_call_id, result.content) == ("call-1", "4 °C")
        text = "".join(e.delta for e in run if e.type == EventType.TEXT_MESSAGE_CONTENT)
        # The text is the stored reply's, under the stored message's id.
        chat = await stored(http, "ag-1")
        nodes = [edge["node"] for edge in chat["messages"]["edges"]]
        assert nodes[0] == {"id": "q1", "role": "USER", "type": "user_input",
                            "props": {"content": "Weather in Oslo?"}}
        answer = next(n for n in nodes if n["type"] == "text")
        assert text == answer["props"]["content"] == "It is **4 °C** in Oslo."
        assert next(e for e in run if e.type == EventType.TEXT_MESSAGE_START
                    ).message_id == answer["id"]

        # Posted again (a client retrying or reconnecting): nothing is appended twice;
        # the run says where the chat is with MESSAGES_SNAPSHOT and finishes.
        async with posted(server, run_input("ag-1", "q1", "Weather in Oslo?")) as response:
            again = await events(response)
        assert types(again) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        snapshot = again[1].messages
        assert [(m.role, m.id) for m in snapshot] == [
            ("user", "q1"), ("assistant", nodes[2]["id"]), ("tool", nodes[3]["id"]),
            ("assistant", answer["id"])]
        assert snapshot[1].tool_calls[0].id == "call-1"
        assert snapshot[3].content == "It is **4 °C** in Oslo."
        assert [n["id"] for n in [e["node"] for e in (await stored(http, "ag-1"))[
            "messages"]["edges"]]] == [n["id"] for n in nodes]


async def test_failed_and_stopped_runs_end_with_run_error_and_cancelled(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, run_input("ag-2", "q1", "Hello?")) as response:
            agent = asyncio.create_task(reply(http, "ag-2", "q1", [
                {"messageId": "a", "type": "text", "props": {"content": "Wor"}}],
                parent="q1", status="FAILED"))
            run = await events(response)
            await agent
        assert run[-1].type == EventType.RUN_ERROR
        assert run[-1].message == "model overloaded"
        async with posted(server, run_input("ag-2", "q2", "Again?")) as response:
            agent = asyncio.create_task(reply(http, "ag-2", "q2", [
                {"messageId": "a", "type": "text", "props": {"content": "Once"}}],
                parent="q2", status="INTERRUPTED"))
            run = await events(response)
            await agent
        assert run[-1].type == EventType.RUN_FINISHED
        assert run[-1].outcome.type == "cancelled"


async def test_an_approval_and_a_question_end_the_run_with_the_interrupt_outcome_and_resume(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, run_input("ag-3", "q1", "Mail the CEO")) as response:
            agent = asyncio.create_task(reply(http, "ag-3", "q1", [
                {"messageId": "c", "type": "tool_call", "props": {
                    "id": "call-mail", "name": "send_email", "arguments": '{"to":"ceo"}',
                    "needsApproval": True, "reason": "sends mail outside"}},
                {"messageId": "k", "type": "question", "props": {
                    "prompt": "Which subject?", "responseSchema": {"type": "string"}}},
            ], parent="q1"))
            run = await events(response)
            await agent
        finished = run[-1]
        assert finished.type == EventType.RUN_FINISHED
        assert finished.outcome.type == "interrupt"
        chat = await stored(http, "ag-3")
        ids = {i["kind"]: i["id"] for i in chat["interrupts"]}
        asked = {i.reason: i for i in finished.outcome.interrupts}
        assert asked["tool_approval"].id == ids["TOOL_APPROVAL"]
        assert asked["tool_approval"].tool_call_id == "call-mail"
        assert asked["tool_approval"].message == "sends mail outside"
        assert asked["input"].id == ids["INPUT"]
        assert (asked["input"].message, asked["input"].response_schema) == (
            "Which subject?", {"type": "string"})

        # Posted again (a reload): the snapshot, and the run ends with what still waits.
        async with posted(server, run_input("ag-3", "q1", "Mail the CEO")) as response:
            again = await events(response)
        assert types(again) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert {i.id for i in again[-1].outcome.interrupts} == set(ids.values())

        # A resume entry the chat never issued decides nothing, and neither does a
        # malformed one.
        forged = {**run_input("ag-3", "q1", "x"), "messages": [], "resume": [
            {"interruptId": ids["TOOL_APPROVAL"], "status": "resolved", "payload": True},
            {"interruptId": "forged", "status": "resolved", "payload": True}]}
        async with posted(server, forged) as response:
            assert response.status_code == 404
            assert "never requested" in (await response.aread()).decode()
        assert {i["state"] for i in (await stored(http, "ag-3"))["interrupts"]} == {"PENDING"}

        # Approving only the call: the run finishes at once, the question still asked.
        first = {**forged, "runId": "run-2", "resume": [
            {"interruptId": ids["TOOL_APPROVAL"], "status": "resolved", "payload": True}]}
        async with posted(server, first) as response:
            partial = await events(response)
        assert types(partial) == ["RUN_STARTED", "RUN_FINISHED"]
        assert [i.id for i in partial[-1].outcome.interrupts] == [ids["INPUT"]]

        # Answering the question: the resumed reply streams in this run.
        second = {**forged, "runId": "run-3", "resume": [
            {"interruptId": ids["INPUT"], "status": "resolved", "payload": "Q3 report"}]}
        async with posted(server, second) as response:
            resumed = asyncio.create_task(events(response))
            chat = await stored(http, "ag-3")
            for _ in range(500):
                if chat["resumption"] is not None:
                    break
                await asyncio.sleep(0.01)
                chat = await stored(http, "ag-3")
            await reply(http, "ag-3", chat["resumption"]["requestId"], [
                {"messageId": "r", "role": "TOOL", "type": "tool_result",
                 "props": {"tool_call_id": "call-mail", "content": "sent"}},
                {"messageId": "d", "type": "text", "props": {"content": "Sent: Q3 report."}}])
            run = await resumed
        assert run[0].type == EventType.RUN_STARTED
        assert run[-1].type == EventType.RUN_FINISHED and run[-1].outcome.type == "success"
        assert "".join(e.delta for e in run if e.type == EventType.TEXT_MESSAGE_CONTENT) == (
            "Sent: Q3 report.")
        assert [(e.tool_call_id, e.content) for e in run
                if e.type == EventType.TOOL_CALL_RESULT] == [("call-mail", "sent")]
        decided = {i["kind"]: i["decision"] for i in (await stored(http, "ag-3"))["interrupts"]}
        assert decided["TOOL_APPROVAL"]["approved"] is True
        assert decided["INPUT"]["response"] == "Q3 report"


async def test_another_persons_chat_and_bad_bodies_are_refused_and_write_nothing(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, run_input("ag-4", "q1", "Mine")) as response:
            agent = asyncio.create_task(reply(http, "ag-4", "q1", [
                {"messageId": "a", "type": "text", "props": {"content": "Yours."}}],
                parent="q1"))
            await events(response)
            await agent
        before = await stored(http, "ag-4")
        for who in ({"X-User-Id": "mallory", "X-Tenant-Id": "acme"},
                    {"X-User-Id": "alice", "X-Tenant-Id": "other"}):
            async with posted(server, run_input("ag-4", "q9", "Let me in"), who) as response:
                assert response.status_code == 404
                assert "not found" in (await response.aread()).decode()
        bad_bodies: list[Any] = [
            b"{not json",
            [1, 2],
            {"threadId": "ag-4", "messages": []},  # no runId
            {**run_input("ag-4", "q8", "x"), "messages": [{"id": "q8", "role": "wizard"}]},
            {**run_input("ag-4", "q8", "x"), "messages": [
                {"id": "a8", "role": "assistant", "content": "not the person's"}]},
            run_input("ag-4", "q8", ""),
            {**run_input("bad id with spaces", "q8", "x")},
        ]
        for body in bad_bodies:
            async with posted(server, body) as response:
                text = (await response.aread()).decode()
                assert response.status_code == 400, (body, text)
                error = json.loads(text)["errors"][0]
                assert error["message"] and error["extensions"]["code"] == "INVALID_ARGUMENT"
        assert await stored(http, "ag-4") == before
