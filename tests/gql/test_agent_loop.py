"""The agent loop over a live server, both databases and both stream backends: a
request id names one stream of a chat, chats awaiting a reply are listed and followed,
and ``regenerate`` puts a question back in the queue."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_chat_events import Sidebar, listening
from tests.gql.test_streams_ws import ALICE, CREATE, END, PUSH, STOP, Http, delta, serve
from tests.gql.wsclient import connect

START = """mutation($input: StartStreamInput!) { startStream(input: $input) { id requestId } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { messageIds } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def question(text: str) -> dict[str, Any]:
    return {"role": "USER", "type": "text", "props": {"content": text}}


async def ask(http: Http, chat: str, text: str) -> str:
    data = await http.data(APPEND, {"chat": chat, "aid": f"ask-{text}",
                                    "messages": [question(text)]})
    return str(data["appendMessages"]["messageIds"][0])


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
        # A refused start wrote nothing: in c1 the answer and the stopped stream's note
        # (a stream that wrote nothing still answers), none from the refused starts.
        rows = await http.messages("c1")
        assert [(m["type"], m["props"]) for m in rows] == [
            ("text", {"content": "answer"}),
            ("error", {"content": "Stopped before the agent wrote anything."})]


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


AWAITING = """query($filter: ChatFilter, $after: String) {
  chats(filter: $filter, first: 2, after: $after) {
    edges { node { id activeLeafId } } pageInfo { hasNextPage endCursor } } }"""
REGENERATE = "mutation($id: ID!) { regenerate(messageId: $id) { id activeLeafId } }"
SIBLINGS = """query($chat: ID!) { messages(chatId: $chat, first: 50) {
  edges { node { id role parentId siblings { index count } } } } }"""


async def listed(http: Http, chat_filter: dict[str, Any]) -> list[str]:
    """Every chat the filter selects, page by page (two a page)."""
    found: list[str] = []
    after = None
    while True:
        page = (await http.data(AWAITING, {"filter": chat_filter, "after": after}))["chats"]
        found += [edge["node"]["id"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


async def test_chats_awaiting_a_reply_are_listed_until_a_stream_answers(
    settings: Settings,
) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        for chat in ("empty", "w1", "w2", "w3"):
            await http.data(CREATE, {"id": chat})
        other = 'mutation { createChat(input: {assistantId: "other", id: "o1"}) { id } }'
        await http.data(other)
        questions = {chat: await ask(http, chat, f"question in {chat}")
                     for chat in ("w1", "w2", "w3", "o1")}
        waiting = {"assistantId": "bot", "awaitingReply": True}
        answered = {"assistantId": "bot", "awaitingReply": False}
        assert sorted(await listed(http, waiting)) == ["w1", "w2", "w3"]
        assert sorted(await listed(http, answered)) == ["empty"]
        assert sorted(await listed(http, {"awaitingReply": True})) == ["o1", "w1", "w2", "w3"]

        # Claimed: a live stream answers it, so it is no longer awaiting.
        sid = (await http.data(START, {"input": {"chatId": "w2", "requestId": questions["w2"],
                                                 "parentId": questions["w2"]}}))[
            "startStream"]["id"]
        assert sorted(await listed(http, waiting)) == ["w1", "w3"]
        await http.data(PUSH, {"id": sid, "chunks": [delta("a", "first answer")]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        # Answered: the leaf is the assistant's message.
        assert sorted(await listed(http, waiting)) == ["w1", "w3"]
        assert sorted(await listed(http, answered)) == ["empty", "w2"]
        # A stream that was stopped before answering leaves the chat answered too.
        stopped = await http.data(START, {"input": {"chatId": "w3", "requestId": "r"}})
        await http.data(PUSH, {"id": stopped["startStream"]["id"],
                               "chunks": [delta("b", "partial")]})
        assert await http.data(STOP, {"chat": "w3"}) == {"stopStream": True}
        for _ in range(100):
            if sorted(await listed(http, waiting)) == ["w1"]:
                break
            await asyncio.sleep(0.05)
        assert sorted(await listed(http, waiting)) == ["w1"]


async def test_regenerate_puts_the_question_back_and_the_next_answer_is_a_sibling(
    settings: Settings,
) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "rg"})
        q = await ask(http, "rg", "what is 2 + 2?")
        first = await http.data(START, {"input": {"chatId": "rg", "requestId": q,
                                                  "parentId": q}})
        await http.data(PUSH, {"id": first["startStream"]["id"],
                               "chunks": [delta("a1", "5")]})
        ended = await http.data(END, {"id": first["startStream"]["id"], "status": "COMPLETED"})
        answer = ended["endStream"]["messages"][0]["id"]
        waiting = {"assistantId": "bot", "awaitingReply": True}
        assert await listed(http, waiting) == []

        # Bad input first: nothing changes.
        assert await http.code(REGENERATE, {"id": answer}) == "INVALID_ARGUMENT"
        assert await http.code(REGENERATE, {"id": "no-such-message"}) == "NOT_FOUND"
        assert await listed(http, waiting) == []

        chat = (await http.data(REGENERATE, {"id": q}))["regenerate"]
        assert chat == {"id": "rg", "activeLeafId": q}
        assert await listed(http, waiting) == ["rg"]
        # The same request id is taken; the worker's next one (the question's second
        # answer) is not.
        assert await http.code(START, {"input": {"chatId": "rg", "requestId": q,
                                                 "parentId": q}}) == "CONFLICT"
        second = await http.data(START, {"input": {"chatId": "rg", "requestId": f"{q}.1",
                                                   "parentId": q}})
        await http.data(PUSH, {"id": second["startStream"]["id"],
                               "chunks": [delta("a2", "4")]})
        await http.data(END, {"id": second["startStream"]["id"], "status": "COMPLETED"})
        assert await listed(http, waiting) == []
        rows = (await http.data(SIBLINGS, {"chat": "rg"}))["messages"]["edges"]
        # The active branch: the question, then the new answer, second of two.
        assert [(m["node"]["role"], m["node"]["parentId"], m["node"]["siblings"])
                for m in rows] == [("USER", None, {"index": 0, "count": 1}),
                                   ("ASSISTANT", q, {"index": 1, "count": 2})]


async def test_regenerate_needs_the_right_to_write(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "mine"})
        q = await ask(http, "mine", "private question")
        async with httpx.AsyncClient(timeout=30) as client:
            body = (await client.post(f"http://{server}/graphql", json={
                "query": REGENERATE, "variables": {"id": q}},
                headers={"X-User-Id": "eve", "X-Tenant-Id": "acme"})).json()
        assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("plan", ["chat_events", "executor"])
async def test_a_worker_following_chat_events_sees_questions_arrive_and_leave(
    settings: Settings, plan: str,
) -> None:
    if plan == "executor":
        settings = dataclasses.replace(settings, disabled_plans=("chat_events",))
    async with serve(settings) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        http = Http(server)
        worker = await Sidebar.open(ws, {"assistantId": "bot", "awaitingReply": True})
        await listening(app)
        await http.data(CREATE, {"id": "ev"})
        q = await ask(http, "ev", "hello?")
        arrived = await worker.next()
        assert (arrived["type"], arrived["chatId"]) == ("MESSAGES", "ev")
        sid = (await http.data(START, {"input": {"chatId": "ev", "requestId": q}}))[
            "startStream"]["id"]
        assert await worker.take(1) == [("DELETED", "ev")]
        await http.data(PUSH, {"id": sid, "chunks": [delta("a", "hi")]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        await http.data(REGENERATE, {"id": q})
        # Nothing about the answered chat while it is answered. An event of the answer
        # delivered only after the regenerate committed reads the chat as it is then
        # (awaiting again), so it may come just before the regenerate's own UPDATED.
        seen = []
        while not seen or seen[-1] != "UPDATED":
            back = await worker.next()
            assert back["chatId"] == "ev", back
            seen.append(back["type"])
            assert seen[-1] in ("MESSAGES", "STREAM_ENDED", "UPDATED"), seen
