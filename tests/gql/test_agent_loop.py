"""The agent loop over a live server, both databases and both stream backends: a
request id names one stream of a chat, chats awaiting a reply are listed and followed,
and ``regenerate`` puts a question back in the queue."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import CREATE, END, PUSH, STOP, Http, delta, serve

START = """mutation($input: StartStreamInput!) { startStream(input: $input) { id requestId } }"""
APPEND = """mutation($chat: ID!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, messages: $messages) { id } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def question(text: str) -> dict[str, Any]:
    return {"role": "USER", "type": "text", "props": {"content": text}}


async def ask(http: Http, chat: str, text: str) -> str:
    data = await http.data(APPEND, {"chat": chat, "messages": [question(text)]})
    return str(data["appendMessages"][0]["id"])


async def test_a_request_id_streamed_before_in_the_chat_is_conflict(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "c1"})
        await http.data(CREATE, {"id": "c2"})
        first = await http.data(START, {"input": {"chatId": "c1", "requestId": "q1"}})
        sid = first["startStream"]["id"]
        # Active: a second start with the same request id is CONFLICT, not STREAM_ACTIVE.
        assert await http.code(START, {"input": {"chatId": "c1", "requestId": "q1"}}) \
            == "CONFLICT"
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "answer")]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        # Ended and persisted: still CONFLICT; the chat stays usable for other requests.
        assert await http.code(START, {"input": {"chatId": "c1", "requestId": "q1"}}) \
            == "CONFLICT"
        stopped = await http.data(START, {"input": {"chatId": "c1", "requestId": "q2"}})
        assert await http.data(STOP, {"chat": "c1"}) == {"stopStream": True}
        assert await http.code(START, {"input": {"chatId": "c1", "requestId": "q2"}}) \
            == "CONFLICT"
        assert stopped["startStream"]["requestId"] == "q2"
        # Another chat may use the same request id; streams without one never collide.
        other = await http.data(START, {"input": {"chatId": "c2", "requestId": "q1"}})
        await http.data(END, {"id": other["startStream"]["id"], "status": "COMPLETED"})
        for _ in range(2):
            plain = await http.data(START, {"input": {"chatId": "c2"}})
            await http.data(END, {"id": plain["startStream"]["id"], "status": "COMPLETED"})
        # A refused start wrote nothing: one answer in c1, none from the refused starts.
        rows = await http.messages("c1")
        assert [m["props"] for m in rows] == [{"content": "answer"}]


async def test_a_start_refused_for_another_reason_leaves_the_request_id_free(
    settings: Settings,
) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "busy"})
        running = await http.data(START, {"input": {"chatId": "busy", "requestId": "a"}})
        assert await http.code(START, {"input": {"chatId": "busy", "requestId": "b"}}) \
            == "STREAM_ACTIVE"
        await http.data(END, {"id": running["startStream"]["id"], "status": "COMPLETED"})
        assert await http.code(START, {"input": {"chatId": "busy", "requestId": "c",
                                                 "parentId": "missing"}}) == "NOT_FOUND"
        for request in ("b", "c"):
            again = await http.data(START, {"input": {"chatId": "busy", "requestId": request}})
            await http.data(END, {"id": again["startStream"]["id"], "status": "COMPLETED"})


async def test_racing_starts_with_one_request_id_admit_exactly_one(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        for round_ in range(3):
            chat = f"race{round_}"
            await http.data(CREATE, {"id": chat})
            answers = await asyncio.gather(*(
                http.execute(START, {"input": {"chatId": chat, "requestId": "q"}})
                for _ in range(8)))
            won = [a for a in answers if not a.get("errors")]
            lost = [a["errors"][0]["extensions"]["code"] for a in answers if a.get("errors")]
            assert len(won) == 1, answers
            assert lost == ["CONFLICT"] * 7
            await http.data(END, {"id": won[0]["data"]["startStream"]["id"],
                                  "status": "COMPLETED"})
