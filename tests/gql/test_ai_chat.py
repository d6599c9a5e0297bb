"""The AI SDK's chat protocol over real HTTP: ``POST /ai/chat`` appends the person's
message and answers with the agent's reply as a UI message stream; ``GET
/ai/chat/{id}/stream`` resumes a live reply. On both databases and both brokers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import END, PUSH, START, STOP, Http, serve

PERSON = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
ALL = """query($chat: ID!) { messages(chatId: $chat, allBranches: true, first: 50) {
  edges { node { id parentId } } } }"""
PAGE = """query($chat: ID!) { chat(id: $chat) { assistantId activeLeafId
  messages(first: 50) { edges { node { id role type props parentId } } } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def ask(chat: str, message_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """The body the AI SDK's DefaultChatTransport sends for ``sendMessage``."""
    return {"id": chat, "trigger": "submit-message", "messageId": None, **extra,
            "messages": [{"id": message_id, "role": "user",
                          "parts": [{"type": "text", "text": text}]}]}


async def ui_chunks(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The UI message chunks of an SSE response (keep-alive comments skipped)."""
    async for line in response.aiter_lines():
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            return
        yield json.loads(line.removeprefix("data: "))


@asynccontextmanager
async def posted(server: str, body: Any, headers: dict[str, str] | None = None,
                 ) -> AsyncIterator[httpx.Response]:
    async with httpx.AsyncClient(timeout=30) as http, http.stream(
            "POST", f"http://{server}/ai/chat",
            content=body if isinstance(body, bytes) else json.dumps(body),
            headers={"content-type": "application/json", **(headers or PERSON)}) as response:
        yield response


async def awaiting(http: Http, chat: str, question: str) -> None:
    """Wait until the question is stored (the agent would see the chat awaiting)."""
    for _ in range(500):
        body = await http.execute(PAGE, {"chat": chat})
        if (body.get("data") or {}).get("chat") and \
                body["data"]["chat"]["activeLeafId"] == question:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the question was never stored")


async def answer(http: Http, chat: str, question: str, *, end: str = "COMPLETED",
                 stop: bool = False, request: str | None = None) -> str:
    """An agent's reply: thinking, a tool call whose arguments arrive in pieces, its
    result, text in two pieces."""
    await awaiting(http, chat, question)
    started = await http.data(START, {"input": {"chatId": chat,
                                                "requestId": request or question,
                                                "assistantId": "bot", "parentId": question}})
    sid = started["startStream"]["id"]
    block = {"blockId": "B1"}
    await http.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "t", "type": "thinking", "props": {"content": "Let me "}, "delta": True,
         **block},
        {"messageId": "t", "type": "thinking", "props": {"content": "look"}, "delta": True,
         **block},
        {"messageId": "c", "type": "tool_call",
         "props": {"id": "call-1", "name": "weather", "arguments": ""}, **block},
        {"messageId": "c", "type": "tool_call", "props": {"arguments": '{"city":'},
         "delta": True, "deltaPath": "arguments", **block},
        {"messageId": "c", "type": "tool_call", "props": {"arguments": '"Oslo"}'},
         "delta": True, "deltaPath": "arguments", **block},
    ]})
    await http.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "r", "role": "TOOL", "type": "tool_result",
         "props": {"tool_call_id": "call-1", "content": "4 °C"}, "blockId": "B2"},
        {"messageId": "a", "type": "text", "props": {"content": "It is **4 °C**"},
         "delta": True, "blockId": "B2"},
        {"messageId": "a", "type": "text", "props": {"content": " in Oslo."}, "delta": True,
         "blockId": "B2"},
        {"messageId": "s", "type": "sources", "props": {"urls": ["https://met.no"]},
         "blockId": "B2"},
    ]})
    if stop:
        await http.data(STOP, {"chat": chat})
    else:
        await http.data(END, {"id": sid, "status": end, "error": "model overloaded"})
    return str(sid)


def without_ids(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks with the service's message ids replaced by the order they came in,
    and runs of deltas of one part joined (a subscriber's queue may have merged them
    already; how they are cut is timing, what they add up to is not)."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        chunk = dict(chunk)
        for key in ("id", "messageId"):
            if key in chunk:
                base, _, generation = str(chunk[key]).partition(":")
                name = names.setdefault(base, f"m{len(names)}")
                chunk[key] = f"{name}:{generation}" if generation else name
        previous = out[-1] if out else {}
        key = "inputTextDelta" if chunk["type"] == "tool-input-delta" else "delta"
        if chunk["type"].endswith("-delta") and previous.get("type") == chunk["type"] and (
                previous.get("id", previous.get("toolCallId")) ==
                chunk.get("id", chunk.get("toolCallId"))):
            out[-1] = {**previous, key: previous[key] + chunk[key]}
            continue
        out.append(chunk)
    return out


async def test_a_question_is_stored_and_the_reply_streams_as_ui_chunks(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, ask("ui-1", "q1", "Weather in Oslo?")) as response:
            assert response.status_code == 200
            assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
            assert response.headers["content-type"].startswith("text/event-stream")
            agent = asyncio.create_task(answer(http, "ui-1", "q1"))
            chunks = [chunk async for chunk in ui_chunks(response)]
            await agent
        assert without_ids(chunks) == [
            {"type": "start", "messageId": "m0"},
            {"type": "start-step"},
            {"type": "reasoning-start", "id": "m0"},
            {"type": "reasoning-delta", "id": "m0", "delta": "Let me look"},
            {"type": "tool-input-start", "toolCallId": "call-1", "toolName": "weather",
             "providerExecuted": True},
            {"type": "tool-input-delta", "toolCallId": "call-1",
             "inputTextDelta": '{"city":"Oslo"}'},
            {"type": "reasoning-end", "id": "m0"},
            {"type": "tool-input-available", "toolCallId": "call-1", "toolName": "weather",
             "input": {"city": "Oslo"}, "providerExecuted": True},
            {"type": "finish-step"},
            {"type": "start-step"},
            {"type": "tool-output-available", "toolCallId": "call-1", "output": "4 °C"},
            {"type": "text-start", "id": "m1"},
            {"type": "text-delta", "id": "m1", "delta": "It is **4 °C** in Oslo."},
            {"type": "data-sources", "id": "m2", "data": {"urls": ["https://met.no"]}},
            {"type": "text-end", "id": "m1"},
            {"type": "finish-step"},
            {"type": "finish"},
        ]
        chat = (await http.data(PAGE, {"chat": "ui-1"}))["chat"]
        nodes = [edge["node"] for edge in chat["messages"]["edges"]]
        # The question is stored under the UI message's id, the reply below it.
        assert nodes[0] == {"id": "q1", "role": "USER", "type": "user_input",
                            "props": {"content": "Weather in Oslo?"}, "parentId": None}
        assert chat["assistantId"] == "assistant"
        assert [node["type"] for node in nodes[1:]] == [
            "thinking", "tool_call", "tool_result", "text", "sources"]
        # The UI message's id is the reply's first stored message.
        assert chunks[0]["messageId"] == nodes[1]["id"]


async def test_regenerate_answers_the_question_again_beside_the_first_answer(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, ask("ui-6", "q1", "Weather?")) as response:
            agent = asyncio.create_task(answer(http, "ui-6", "q1"))
            first = [chunk async for chunk in ui_chunks(response)]
            await agent
        # What useChat's regenerate() sends: the messages up to the question, and the
        # id of the assistant message to answer again.
        again = {"id": "ui-6", "trigger": "regenerate-message",
                 "messageId": first[0]["messageId"],
                 "messages": ask("ui-6", "q1", "Weather?")["messages"]}
        async with posted(server, again) as response:
            assert response.status_code == 200
            agent = asyncio.create_task(answer(http, "ui-6", "q1", request="q1.1"))
            second = [chunk async for chunk in ui_chunks(response)]
            await agent
        assert without_ids(second) == without_ids(first)
        assert second[0]["messageId"] != first[0]["messageId"]
        every = (await http.data(ALL, {"chat": "ui-6"}))["messages"]["edges"]
        # Both answers hang below the question; the new one is the active branch.
        answers = [edge["node"]["id"] for edge in every if edge["node"]["parentId"] == "q1"]
        assert answers == [first[0]["messageId"], second[0]["messageId"]]
        page = (await http.data(PAGE, {"chat": "ui-6"}))["chat"]
        shown = [edge["node"]["id"] for edge in page["messages"]["edges"]]
        assert shown[:2] == ["q1", second[0]["messageId"]] and len(shown) == 6
        # Regenerating an unknown message, or none named at all, is a 400/404.
        for body, status in (({**again, "messageId": "nope"}, 404),
                             ({**again, "messageId": None, "messages": []}, 400)):
            async with posted(server, body) as response:
                assert response.status_code == status, await response.aread()


async def test_a_retried_request_appends_nothing_twice(settings: Settings) -> None:
    settings = dataclasses.replace(settings, agent_reply_timeout=0.3)
    async with serve(settings) as (server, _app):
        http = Http(server)
        body = ask("ui-2", "q1", "Hello", assistantId="helper")
        for _ in range(2):
            async with posted(server, body) as response:
                chunks = [chunk async for chunk in ui_chunks(response)]
            # Nobody answered: the stream says so instead of hanging.
            assert chunks == [{"type": "start"},
                              {"type": "error", "errorText": "no agent answered within 0.3 s"},
                              {"type": "finish"}]
        chat = (await http.data(PAGE, {"chat": "ui-2"}))["chat"]
        assert chat["assistantId"] == "helper"
        assert [edge["node"]["id"] for edge in chat["messages"]["edges"]] == ["q1"]


async def test_stopped_and_failed_replies_end_with_abort_and_error(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, ask("ui-3", "q1", "Hi")) as response:
            agent = asyncio.create_task(answer(http, "ui-3", "q1", stop=True))
            stopped = [chunk async for chunk in ui_chunks(response)]
            await agent
        assert stopped[-2:] == [{"type": "finish-step"}, {"type": "abort"}]
        async with posted(server, ask("ui-3", "q2", "Again")) as response:
            agent = asyncio.create_task(answer(http, "ui-3", "q2", end="FAILED"))
            failed = [chunk async for chunk in ui_chunks(response)]
            await agent
        assert failed[-3:] == [{"type": "finish-step"},
                               {"type": "error", "errorText": "model overloaded"},
                               {"type": "finish"}]


async def test_resume_gives_the_reply_so_far_then_live_or_204(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data('mutation { createChat(input: {id: "ui-4", assistantId: "bot"}) { id } }')
        async with httpx.AsyncClient(timeout=30) as client:
            idle = await client.get(f"http://{server}/ai/chat/ui-4/stream", headers=PERSON)
            assert idle.status_code == 204
            started = await http.data(START, {"input": {"chatId": "ui-4", "requestId": "r"}})
            sid = started["startStream"]["id"]
            await http.data(PUSH, {"id": sid, "chunks": [
                {"messageId": "a", "type": "text", "props": {"content": "Hel"}, "delta": True}]})
            async with client.stream("GET", f"http://{server}/ai/chat/ui-4/stream",
                                     headers=PERSON) as response:
                assert response.status_code == 200
                assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
                chunks = ui_chunks(response)
                first = [await anext(chunks) for _ in range(4)]
                await http.data(PUSH, {"id": sid, "chunks": [
                    {"messageId": "a", "type": "text", "props": {"content": "lo"},
                     "delta": True}]})
                await http.data(END, {"id": sid, "status": "COMPLETED"})
                rest = [chunk async for chunk in chunks]
        assert without_ids(first + rest) == [
            {"type": "start", "messageId": "m0"},
            {"type": "start-step"},
            {"type": "text-start", "id": "m0"},
            {"type": "text-delta", "id": "m0", "delta": "Hello"},
            {"type": "text-end", "id": "m0"},
            {"type": "finish-step"},
            {"type": "finish"},
        ]


@pytest.mark.parametrize("settings", ["memory"], indirect=True)
async def test_bad_requests_are_400_with_a_message_and_append_nothing(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data('mutation { createChat(input: {id: "ui-5", assistantId: "bot"}) { id } }')
        cases: list[tuple[Any, int, str]] = [
            (b"{not json", 400, "must be JSON"),
            ([1, 2], 400, "JSON object"),
            ({"messages": []}, 400, "'id'"),
            ({"id": "bad id!", "messages": []}, 400, "chat id"),
            ({"id": "ui-5", "trigger": "resume", "messages": []}, 400, "trigger"),
            ({"id": "ui-5", "messages": []}, 400, "non-empty list"),
            ({"id": "ui-5", "messages": [{"id": "x", "role": "assistant", "parts": []}]},
             400, "role 'user'"),
            ({"id": "ui-5", "messages": [{"role": "user", "parts": []}]}, 400, "'id'"),
            ({"id": "ui-5", "messages": [{"id": "x", "role": "user", "parts": "hi"}]},
             400, "'parts'"),
            ({"id": "ui-5", "messages": [{"id": "x", "role": "user",
                                          "parts": [{"type": "step-start"}]}]},
             400, "no text or file parts"),
            ({"id": "ui-5", "messages": [{"id": "x", "role": "user",
                                          "parts": [{"type": "text", "text": 3}]}]},
             400, "text must be a string"),
        ]
        for body, status, message in cases:
            async with posted(server, body) as response:
                text = (await response.aread()).decode()
                assert response.status_code == status, (body, text)
                error = json.loads(text)["errors"][0]
                assert message in error["message"], (body, error)
                assert error["extensions"]["code"] == "INVALID_ARGUMENT"
        # Another tenant's chat is not found; nothing is written anywhere.
        async with posted(server, ask("ui-5", "q", "hi"),
                          headers={"X-User-Id": "eve", "X-Tenant-Id": "other"}) as response:
            assert response.status_code == 404
        chat = (await http.data(PAGE, {"chat": "ui-5"}))["chat"]
        assert chat["messages"]["edges"] == []
        async with httpx.AsyncClient(timeout=30) as client:
            missing = await client.get(f"http://{server}/ai/chat/nope/stream", headers=PERSON)
            assert missing.status_code == 404
