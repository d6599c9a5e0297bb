"""The stream writer against a live server, on both databases and both stream backends:
what it stores, how it ends, Stop, retried pushes, heartbeats and misuse."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import ANY

import httpx
import pytest
from chatql_client import ChatqlClient, StreamEndedError, StreamStopped

from tests.client.conftest import AGENT


async def new_question(person: ChatqlClient, text: str = "Weather in Oslo?") -> tuple[str, str]:
    chat = await person.create_chat("helper", title="kit")
    question = await person.say(chat["id"], text)
    return chat["id"], question


async def test_writer_stores_every_kind_of_message_exactly(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, question = await new_question(person)
    before = kit.requests_sent
    async with kit.stream(chat_id, parent_id=question, request_id="r1") as s:
        for piece in ("Let me ", "check ", "the forecast."):
            await s.thinking(piece)
        await s.tool_call("call-1", "weather", '{"ci', block_id="B1")
        for piece in ('ty": ', '"Oslo"', "}"):
            await s.tool_arguments("call-1", piece)
        await s.tool_result("call-1", {"temperature": 21})
        await s.event("block_end", {"reason": "tool"}, block_id="B1")
        for token in ["Sunny", " and", " **21 °C**", " in", " Oslo."]:
            await s.text(token)
        await s.message("card", {"title": "Oslo", "icon": "sun"})
        s.usage(prompt_tokens=12, completion_tokens=30, model="m1")
        s.usage(prompt_tokens=3, completion_tokens=4)
    # 16 chunks within 20 ms of each other: start, one push, end.
    assert kit.requests_sent - before == 3
    assert s.status == "COMPLETED"
    stored = [(m["role"], m["type"], m["props"], m["status"], m["blockId"])
              for m in await person.messages(chat_id)]
    assert stored == [
        ("USER", "user_input", {"content": "Weather in Oslo?"}, "COMPLETED", None),
        ("ASSISTANT", "thinking", {"content": "Let me check the forecast."}, "COMPLETED", None),
        ("ASSISTANT", "tool_call", {"id": "call-1", "name": "weather",
                                    "arguments": '{"city": "Oslo"}'}, "COMPLETED", "B1"),
        ("TOOL", "tool_result", {"content": {"temperature": 21}, "tool_call_id": "call-1",
                                 "name": "weather"}, "COMPLETED", "B1"),
        ("ASSISTANT", "text", {"content": "Sunny and **21 °C** in Oslo."}, "COMPLETED", None),
        ("ASSISTANT", "card", {"title": "Oslo", "icon": "sun"}, "COMPLETED", None),
    ]
    # The answer hangs below the question; usage went with the end.
    messages = await person.messages(chat_id)
    assert messages[1]["parentId"] == question
    assert s.result is not None and [m["type"] for m in s.result["messages"]][-1] == "card"
    usage = await person.execute("query($c: ID!) { chat(id: $c) { usage { promptTokens "
                                 "completionTokens } } }", {"c": chat_id})
    assert usage["chat"]["usage"] == {"promptTokens": 15, "completionTokens": 34}


async def test_max_batch_flushes_at_once(kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    before = kit.requests_sent
    async with kit.stream(chat_id, flush_interval=60, max_batch=10) as s:
        for i in range(25):
            await s.text(f"{i} ")
        # Two full batches went without waiting for the interval.
        assert kit.requests_sent - before == 1 + 2
    assert kit.requests_sent - before == 1 + 3 + 1
    text = (await person.messages(chat_id))[-1]["props"]["content"]
    assert text == "".join(f"{i} " for i in range(25))


async def test_an_exception_ends_the_stream_failed_and_propagates(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    with pytest.raises(RuntimeError, match="model exploded"):
        async with kit.stream(chat_id) as s:
            await s.text("Half an ans")
            raise RuntimeError("model exploded")
    assert s.status == "FAILED"
    last = (await person.messages(chat_id))[-1]
    assert (last["type"], last["props"], last["status"]) == (
        "text", {"content": "Half an ans"}, "FAILED")
    # The chat is free again.
    async with kit.stream(chat_id) as again:
        await again.text("Retried.")
    assert again.status == "COMPLETED"


async def test_stop_raises_stream_stopped_at_the_next_write(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    seen: list[str] = []
    async with kit.stream(chat_id, flush_interval=0) as s:
        await s.text("Once upon ")
        await s.flush()
        assert await person.stop_stream(chat_id)
        try:
            for _ in range(100):
                await s.text("a time ")
                await s.flush()
        except StreamStopped as stop:
            seen.append(stop.code or "")
        with pytest.raises(StreamStopped):
            await s.text("more")
    assert seen == ["STREAM_CLOSED"]
    assert s.status == "INTERRUPTED"
    last = (await person.messages(chat_id))[-1]
    assert (last["props"]["content"], last["status"]) == ("Once upon ", "INTERRUPTED")


class LoseFirstPushAnswer(httpx.AsyncBaseTransport):
    """Forwards every request; drops the answer of the first non-empty pushChunks after
    the server has processed it (as a connection cut at the wrong moment would)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.dropped = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = json.loads(request.content or b"{}")
        if (not self.dropped and "pushChunks" in body.get("query", "")
                and body["variables"].get("chunks")):
            await response.aread()
            assert "errors" not in json.loads(response.content)
            self.dropped += 1
            raise httpx.ReadError("connection lost before the answer", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_push_retried_after_a_lost_answer_stores_no_duplicate(
        server_url: str, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    transport = LoseFirstPushAnswer()
    async with ChatqlClient(server_url, headers=AGENT, transport=transport,
                            retry_backoff=0.01) as kit, kit.stream(chat_id) as s:
        await s.text("Exactly ")
        await s.flush()
        await s.text("once.")
    assert transport.dropped == 1
    assert s.status == "COMPLETED"
    assert (await person.messages(chat_id))[-1]["props"] == {"content": "Exactly once."}


class RecordPushes(httpx.AsyncBaseTransport):
    """Forwards every request; keeps the chunks of every pushChunks."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.pushes: list[list[dict[str, Any]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        if "pushChunks" in body.get("query", ""):
            self.pushes.append(body["variables"]["chunks"])
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_run_of_deltas_to_one_place_goes_as_one_chunk(
        server_url: str, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    transport = RecordPushes()
    async with ChatqlClient(server_url, headers=AGENT, transport=transport) as kit, \
            kit.stream(chat_id, flush_interval=60) as s:
        for i in range(100):
            await s.text(f"t{i} ")
        await s.tool_call("c1", "lookup", '{"q":')
        for piece in (' "os', 'lo"', "}"):
            await s.tool_arguments("c1", piece)
        await s.text("A", thread_id="side")
        await s.text("B")  # another place: a new message, a new chunk
        await s.text("C")
        await s.flush()
        await s.text("D")  # after the flush: sent is never grown again
    sent = [(c.get("type"), c.get("deltaPath"), c.get("threadId"), c["props"])
            for push in transport.pushes for c in push]
    assert sent == [
        ("text", None, None, {"content": "".join(f"t{i} " for i in range(100))}),
        ("tool_call", None, None, {"id": "c1", "name": "lookup", "arguments": '{"q":'}),
        ("tool_call", "arguments", None, {"arguments": ' "oslo"}'}),
        ("text", None, "side", {"content": "A"}),
        ("text", None, None, {"content": "BC"}),
        ("text", None, None, {"content": "D"}),
    ]
    # Every chunk keeps its own id; the run's id is its first call's.
    ids = [c["chunkId"] for push in transport.pushes for c in push]
    assert ids == ["1", "101", "102", "105", "106", "108"]
    stored = [(m["type"], m["threadId"], m["props"]) for m in await person.messages(chat_id)][1:]
    assert stored == [
        ("text", None, {"content": "".join(f"t{i} " for i in range(100))}),
        ("tool_call", None, {"id": "c1", "name": "lookup", "arguments": '{"q": "oslo"}'}),
        ("text", "side", {"content": "A"}),
        ("text", None, {"content": "BCD"}),
    ]


class FailTwice(httpx.AsyncBaseTransport):
    """Answers the first two pushChunks with 503 without forwarding them."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.failed = 0
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.content or b"")
        if self.failed < 2 and b"pushChunks" in (request.content or b""):
            self.failed += 1
            return httpx.Response(503, text="unavailable")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_5xx_is_retried_but_a_graphql_error_is_not(
        server_url: str, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    transport = FailTwice()
    async with ChatqlClient(server_url, headers=AGENT, transport=transport,
                            retry_backoff=0.01) as kit:
        async with kit.stream(chat_id) as s:
            await s.text("Through.")
        assert transport.failed == 2 and s.status == "COMPLETED"
        with pytest.raises(StreamStopped) as closed:
            async with kit.stream(chat_id) as s2:
                await s2.text("x")
                await s2.flush()
                await person.stop_stream(chat_id)
                await s2.text("y")
                await s2.flush()
        assert closed.value.code == "STREAM_CLOSED"
        # The refused push was sent once: no retry of a GraphQL error.
        assert sum(b'"content":"y"' in body for body in transport.bodies) == 1
    assert (await person.messages(chat_id))[-1]["props"] == {"content": "x"}


async def test_a_call_after_the_stream_ended_raises_a_clear_error(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    async with kit.stream(chat_id) as s:
        await s.text("Done.")
        with pytest.raises(ValueError, match="tool_call first"):
            await s.tool_arguments("never-started", "{}")
    for call in (s.text("late"), s.thinking("late"), s.tool_call("c", "n"),
                 s.message("text", {"content": "late"}), s.event("late")):
        with pytest.raises(StreamEndedError, match="has ended \\(COMPLETED\\)"):
            await call
    # Nothing after the end reached the chat.
    stored: list[Any] = [m["props"] for m in await person.messages(chat_id)]
    assert stored[-1] == {"content": "Done."}


async def test_set_title_names_the_chat_unless_a_person_did(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat = await person.create_chat("helper")
    await person.say(chat["id"], "weather in oslo, tomorrow morning?")
    assert await person.chat(chat["id"]) == {**chat, "title": "weather in oslo, tomorrow morning",
                                             "titleSource": "AUTO",
                                             "lastMessageAt": ANY, "activeLeafId": ANY}
    async with kit.stream(chat["id"]) as s:
        assert await s.set_title("  Oslo: tomorrow's weather ") is True
        await s.text("Sunny.")
        assert await s.set_title("Oslo forecast") is True
    named = await person.chat(chat["id"])
    assert named is not None
    assert (named["title"], named["titleSource"]) == ("Oslo forecast", "AGENT")

    # A person's title stays; the writer says its own was not taken.
    mine = await person.create_chat("helper", title="My trip")
    await person.say(mine["id"], "weather in oslo?")
    async with kit.stream(mine["id"]) as s:
        assert await s.set_title("Oslo forecast") is False
        await s.text("Sunny.")
    kept = await person.chat(mine["id"])
    assert kept is not None and (kept["title"], kept["titleSource"]) == ("My trip", "USER")
    # Only an open stream names its chat.
    with pytest.raises(StreamEndedError, match="has ended"):
        await s.set_title("late")
