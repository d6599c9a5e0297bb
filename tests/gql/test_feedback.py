"""Feedback end to end over real HTTP, on both databases: rating a message (once per
person, replaced, cleared), who may rate, refused input that changes nothing, the
listing owners and admins page (with the question, the model and the request id), the
batched ``Message.myFeedback``/``feedbackSummary``, feedback going with its message and
chat, and ``chatql export-feedback``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from chatql.gql.cli import main
from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import feedback
from chatql.store.messages import feedback as store_feedback
from tests.access.snapshot import store_fingerprint
from tests.gql.test_streams_ws import serve

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
AGENT = {"X-User-Id": "bot", "X-Tenant-Id": "acme", "X-Roles": "agent"}
ADMIN = {"X-User-Id": "root", "X-Tenant-Id": "acme", "X-Roles": "admin"}
STRANGER = {"X-User-Id": "alice", "X-Tenant-Id": "globex", "X-Roles": "admin"}

CREATE = """mutation($id: ID!, $assistant: String!, $public: Boolean!) {
  createChat(input: {id: $id, assistantId: $assistant, public: $public}) { id } }"""
ASK = """mutation($chat: ID!, $aid: String!, $text: String!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: [
    {role: USER, type: "user_input", props: {content: $text}}]) { messageIds } }"""
START = """mutation($chat: ID!, $request: String!, $assistant: String!) {
  startStream(input: {chatId: $chat, requestId: $request, assistantId: $assistant}) { id } }"""
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted } }"""
END = """mutation($id: ID!, $model: String) { endStream(streamId: $id, status: COMPLETED,
  usage: {promptTokens: 5, completionTokens: 7, model: $model}) { messages { id type } } }"""
FEEDBACK_FIELDS = """id chatId messageId questionId rating comment tags ratedBy assistantId
  requestId model createdAt updatedAt"""
RATE = ("""mutation($message: ID!, $rating: Rating, $comment: String, $tags: [String!]) {
  rateMessage(messageId: $message, rating: $rating, comment: $comment, tags: $tags) { """
        + FEEDBACK_FIELDS + " } }")
PAGE = """query($chat: ID!) { messages(chatId: $chat, first: 200) { edges { node { id role
  myFeedback { rating comment } feedbackSummary { up down } } } } }"""
LIST = ("""query($filter: FeedbackFilter, $first: Int, $after: String) {
  feedback(filter: $filter, first: $first, after: $after) {
    edges { cursor node { """ + FEEDBACK_FIELDS + """
      message { id props } question { id props } } }
    pageInfo { hasNextPage endCursor } } }""")
DELETE_MESSAGES = """mutation($chat: ID!, $ids: [ID!]!) { deleteMessages(chatId: $chat,
  ids: $ids) }"""


class Client:
    """GraphQL over real HTTP to the live server."""

    def __init__(self, server: str) -> None:
        self.url = f"http://{server}/graphql"

    async def execute(self, query: str, variables: dict[str, Any],
                      who: dict[str, str]) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, json={"query": query, "variables": variables},
                                       headers=who)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any],
                   who: dict[str, str] = ALICE) -> Any:
        body = await self.execute(query, variables, who)
        assert not body.get("errors"), body
        return body["data"]

    async def code(self, query: str, variables: dict[str, Any],
                   who: dict[str, str] = ALICE) -> str:
        body = await self.execute(query, variables, who)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"])

    async def rate(self, message: str, rating: str | None, who: dict[str, str] = ALICE,
                   **extra: Any) -> Any:
        return (await self.data(RATE, {"message": message, "rating": rating, **extra},
                                who))["rateMessage"]

    async def listed(self, who: dict[str, str] = ALICE, **filter: Any) -> list[dict[str, Any]]:
        data = await self.data(LIST, {"filter": filter or None, "first": 100}, who)
        return [edge["node"] for edge in data["feedback"]["edges"]]

    async def answered(self, chat: str, question: str, *, assistant: str = "helper",
                       public: bool = False, model: str | None = "model-1",
                       request: str = "r1", owner: dict[str, str] = ALICE) -> tuple[str, str]:
        """A chat of ``owner``'s where they ask and the agent answers in steps (thinking,
        a tool call and its result, then text): the question's and the text's ids."""
        await self.data(CREATE, {"id": chat, "assistant": assistant, "public": public}, owner)
        asked = await self.data(ASK, {"chat": chat, "aid": "q", "text": question}, owner)
        stream = (await self.data(START, {"chat": chat, "request": request,
                                          "assistant": assistant}, AGENT))["startStream"]["id"]
        await self.data(PUSH, {"id": stream, "chunks": [
            {"messageId": "t", "type": "thinking", "role": "ASSISTANT",
             "props": {"content": "Let me look."}},
            {"messageId": "c", "type": "tool_call", "role": "ASSISTANT",
             "props": {"id": "c1", "name": "search", "arguments": "{}"}},
            {"messageId": "r", "type": "tool_result", "role": "TOOL",
             "props": {"content": "found", "tool_call_id": "c1"}},
            {"messageId": "a", "type": "text", "role": "ASSISTANT",
             "props": {"content": f"The answer to {question}"}},
        ]}, AGENT)
        ended = (await self.data(END, {"id": stream, "model": model}, AGENT))["endStream"]
        text = next(m["id"] for m in ended["messages"] if m["type"] == "text")
        return asked["appendMessages"]["messageIds"][0], text


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[str]:
    async with serve(settings) as (address, _app):
        yield address


async def count_rows(settings: Settings, chat: str | None = None) -> int:
    db = Database(settings.database_url)
    try:
        async with db.read() as conn:
            query = select(func.count()).select_from(feedback)
            if chat is not None:
                query = query.where(feedback.c.chat_id == chat)
            return int(await conn.scalar(query) or 0)
    finally:
        await db.dispose()


async def test_a_rating_is_kept_once_per_person_replaced_and_cleared(server: str) -> None:
    client = Client(server)
    question, answer = await client.answered("trip", "Weather in Oslo?", public=True)

    rated = await client.rate(answer, "DOWN", comment="Too vague", tags=["vague", "oslo",
                                                                           "vague"])
    assert {key: rated[key] for key in ("messageId", "chatId", "questionId", "rating",
                                        "comment", "tags", "ratedBy", "assistantId",
                                        "requestId", "model")} == {
        "messageId": answer, "chatId": "trip", "questionId": question, "rating": "DOWN",
        "comment": "Too vague", "tags": ["oslo", "vague"], "ratedBy": "alice",
        "assistantId": "helper", "requestId": "r1", "model": "model-1"}
    assert rated["createdAt"] == rated["updatedAt"]
    # The same again changes nothing; another person's rating is their own.
    again = await client.rate(answer, "DOWN", comment="Too vague", tags=["oslo", "vague"])
    assert again == rated
    carols = await client.rate(answer, "UP", CAROL)
    assert carols["id"] != rated["id"] and carols["ratedBy"] == "carol"

    page = (await client.data(PAGE, {"chat": "trip"}))["messages"]["edges"]
    mine = {edge["node"]["id"]: edge["node"] for edge in page}
    assert mine[answer]["myFeedback"] == {"rating": "DOWN", "comment": "Too vague"}
    assert mine[answer]["feedbackSummary"] == {"up": 1, "down": 1}
    assert mine[question]["myFeedback"] is None
    assert mine[question]["feedbackSummary"] == {"up": 0, "down": 0}
    hers = (await client.data(PAGE, {"chat": "trip"}, CAROL))["messages"]["edges"]
    assert [e["node"]["myFeedback"] for e in hers if e["node"]["id"] == answer] == [
        {"rating": "UP", "comment": None}]

    # Rated again: the rating, comment and tags are replaced (left out: cleared).
    changed = await client.rate(answer, "UP")
    assert (changed["id"], changed["rating"], changed["comment"], changed["tags"]) == (
        rated["id"], "UP", None, [])
    assert changed["createdAt"] == rated["createdAt"]
    assert changed["updatedAt"] > rated["updatedAt"]
    # A null rating clears the person's feedback, and only theirs.
    assert await client.rate(answer, None) is None
    assert await client.rate(answer, None) is None
    page = (await client.data(PAGE, {"chat": "trip"}))["messages"]["edges"]
    assert [(e["node"]["myFeedback"], e["node"]["feedbackSummary"]) for e in page
            if e["node"]["id"] == answer] == [(None, {"up": 1, "down": 0})]


async def test_who_may_rate_and_refused_input_change_nothing(
        server: str, settings: Settings) -> None:
    client = Client(server)
    question, answer = await client.answered("private", "Weather in Oslo?")
    await client.rate(answer, "UP", comment="good")
    db = Database(settings.database_url)
    try:
        before = await store_fingerprint(db)
        # A message the caller may not read is exactly a message that never existed.
        for who in (CAROL, STRANGER):
            hidden = await client.execute(RATE, {"message": answer, "rating": "UP"}, who)
            ghost = await client.execute(RATE, {"message": "never-made", "rating": "UP"}, who)
            assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
            assert (hidden["errors"][0]["message"].replace(repr(answer), "?")
                    == ghost["errors"][0]["message"].replace("'never-made'", "?"))
            assert hidden["data"] == ghost["data"] == {"rateMessage": None}
            cleared = await client.execute(RATE, {"message": answer, "rating": None}, who)
            assert cleared["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        # Bad input: a clear INVALID_ARGUMENT, before anything is looked at or written.
        refused = [
            {"rating": "UP", "comment": "x" * (store_feedback.MAX_COMMENT_CHARS + 1)},
            {"rating": "UP", "tags": [f"t{n}" for n in range(11)]},
            {"rating": "UP", "tags": ["x" * 65]},
            {"rating": "UP", "tags": [""]},
            {"rating": "UP", "tags": ["bad\ttag"]},
            {"rating": None, "comment": "a comment needs a rating"},
            {"rating": None, "tags": ["t"]},
        ]
        for variables in refused:
            body = await client.execute(RATE, {"message": answer, **variables}, ALICE)
            error = body["errors"][0]
            assert error["extensions"]["code"] == "INVALID_ARGUMENT", (variables, body)
            assert error["message"]
        assert await client.code(RATE, {"message": answer, "rating": "MEH"}) == (
            "INVALID_ARGUMENT")
        # Only an assistant's message is rated.
        body = await client.execute(RATE, {"message": question, "rating": "UP"}, ALICE)
        assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
        assert "only an ASSISTANT message is rated" in body["errors"][0]["message"]
        assert await store_fingerprint(db) == before
    finally:
        await db.dispose()
    # Whoever may read may rate: the agent too.
    assert (await client.rate(answer, "UP", AGENT))["ratedBy"] == "bot"


async def test_owners_and_admins_page_the_feedback_an_evaluation_starts_from(
        server: str) -> None:
    client = Client(server)
    question, answer = await client.answered("mine", "Best time for Lisbon?", public=True,
                                             model="model-2", request="r2")
    await client.answered("other", "Best time for Rome?", assistant="tutor")
    _, second = await client.answered("second", "Best time for Oslo?", model=None)
    _, carols = await client.answered("carols", "Best time for Porto?", owner=CAROL)
    await client.rate(answer, "DOWN", comment="Wrong month")
    await client.rate(answer, "UP", CAROL, tags=["helpful"])
    await client.rate(second, "UP")
    await client.rate(carols, "DOWN", CAROL)

    # The owner sees every rating on their chats (a reader's too), newest first, with
    # the question and the answer as they are, the model and the request id.
    listed = await client.listed()
    assert [(item["chatId"], item["ratedBy"], item["rating"]) for item in listed] == [
        ("second", "alice", "UP"), ("mine", "carol", "UP"), ("mine", "alice", "DOWN")]
    lisbon = listed[-1]
    assert (lisbon["questionId"], lisbon["model"], lisbon["requestId"]) == (
        question, "model-2", "r2")
    data = await client.data(LIST, {"filter": {"chatId": "mine", "rating": "DOWN"}})
    node = data["feedback"]["edges"][0]["node"]
    assert node["message"] == {"id": answer,
                               "props": {"content": "The answer to Best time for Lisbon?"}}
    assert node["question"] == {"id": question, "props": {"content": "Best time for Lisbon?"}}
    assert listed[0]["model"] is None  # that stream reported no model

    # Filters: by assistant, rating, chat and when the rating was last set.
    assert [i["ratedBy"] for i in await client.listed(rating="UP", chatId="mine")] == ["carol"]
    assert await client.listed(assistantId="tutor") == []
    since = listed[1]["updatedAt"]
    assert [i["chatId"] for i in await client.listed(since=since)] == ["second", "mine"]
    assert [i["ratedBy"] for i in await client.listed(until=since)] == ["alice"]
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert await client.listed(since=later) == []

    # Carol, a reader of "mine" but not its owner, sees her own chat's only; an agent
    # none; the tenant's admin all of it; another tenant's admin nothing.
    assert [(i["chatId"], i["ratedBy"]) for i in await client.listed(CAROL)] == [
        ("carols", "carol")]
    assert await client.listed(AGENT) == []
    assert len(await client.listed(ADMIN)) == 4
    assert await client.listed(STRANGER) == []

    # Keyset pages with signed cursors bound to the caller and the filter.
    first = (await client.data(LIST, {"first": 2}))["feedback"]
    assert [e["node"]["id"] for e in first["edges"]] == [item["id"] for item in listed[:2]]
    assert first["pageInfo"]["hasNextPage"] is True
    after = first["pageInfo"]["endCursor"]
    rest = (await client.data(LIST, {"first": 2, "after": after}))["feedback"]
    assert [e["node"]["id"] for e in rest["edges"]] == [listed[2]["id"]]
    assert rest["pageInfo"]["hasNextPage"] is False
    assert await client.code(LIST, {"first": 2, "after": after,
                                    "filter": {"rating": "UP"}}) == "INVALID_CURSOR"
    assert await client.code(LIST, {"first": 2, "after": after}, ADMIN) == "INVALID_CURSOR"
    assert await client.code(LIST, {"first": 0}) == "INVALID_ARGUMENT"
    assert await client.code(LIST, {"first": 101}) == "INVALID_ARGUMENT"
    assert await client.code(LIST, {"filter": {"since": "2026-01-01T00:00:00"}}) == (
        "INVALID_ARGUMENT")


async def test_a_page_of_messages_reads_its_feedback_in_one_batch(
        server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(server)
    await client.data(CREATE, {"id": "long", "assistant": "helper", "public": False})
    await client.data("""mutation { appendMessages(chatId: "long", appendId: "bulk",
      messages: [""" + ", ".join('{role: ASSISTANT, type: "text", props: {content: "a"}}'
                                 for _ in range(50)) + "]) { messageIds } }", {})
    ids = [e["node"]["id"] for e in (await client.data(PAGE, {"chat": "long"}))["messages"][
        "edges"]]
    for index, message in enumerate(ids[:10]):
        await client.rate(message, "UP" if index % 2 else "DOWN")
    calls: list[str] = []
    for name in ("feedback_of", "summaries"):
        real = getattr(store_feedback, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(store_feedback, name, counted)
    page = (await client.data(PAGE, {"chat": "long"}))["messages"]["edges"]
    assert len(page) == 50
    assert sorted(calls) == ["feedback_of", "summaries"]
    rated = [e["node"] for e in page if e["node"]["myFeedback"] is not None]
    assert len(rated) == 10
    assert sum(n["feedbackSummary"]["up"] + n["feedbackSummary"]["down"] for n in rated) == 10


async def test_feedback_goes_with_its_message_and_its_chat(
        server: str, settings: Settings) -> None:
    client = Client(server)
    _, answer = await client.answered("gone", "Weather in Oslo?")
    _, kept = await client.answered("kept", "Weather in Rome?")
    await client.rate(answer, "UP")
    await client.rate(kept, "DOWN")
    # Soft-deleted: out of the listing; restored: back.
    await client.data('mutation { deleteChat(id: "gone") }', {})
    assert [i["chatId"] for i in await client.listed(ADMIN)] == ["kept"]
    await client.data('mutation { restoreChat(id: "gone") { id } }', {})
    assert len(await client.listed(ADMIN)) == 2
    # A deleted message takes its feedback with it.
    assert (await client.data(DELETE_MESSAGES, {"chat": "kept", "ids": [kept]}))[
        "deleteMessages"] == 1
    assert await count_rows(settings, "kept") == 0
    # A purged chat takes all of it.
    assert await count_rows(settings, "gone") == 1
    await client.data('mutation { purgeChat(id: "gone") }', {})
    assert await count_rows(settings) == 0
    assert await client.listed(ADMIN) == []


async def cli(args: list[str]) -> int:
    """Runs the ``chatql`` command as an operator would, off the test's event loop."""
    return await asyncio.to_thread(main, args)


async def test_export_feedback_writes_json_lines(
        server: str, settings: Settings, tmp_path: Path,
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    client = Client(server)
    question, answer = await client.answered("x1", "Best time for Lisbon?\nIn May?")
    _, tutors = await client.answered("x2", "Explain fractions", assistant="tutor",
                                      request="r9", model="model-9")
    await client.rate(answer, "DOWN", comment="Wrong month", tags=["dates"])
    await client.rate(tutors, "UP")
    url = ["--database-url", settings.database_url]

    out = tmp_path / "feedback.jsonl"
    assert await cli(["export-feedback", "-o", str(out), *url]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["messageId"] for line in lines] == [answer, tutors]
    first = lines[0]
    assert {key: first[key] for key in ("chatId", "assistantId", "rating", "comment", "tags",
                                        "ratedBy", "question", "answer", "model", "requestId",
                                        "questionId", "tenantId")} == {
        "chatId": "x1", "assistantId": "helper", "rating": "DOWN", "comment": "Wrong month",
        "tags": ["dates"], "ratedBy": "alice", "question": "Best time for Lisbon?\nIn May?",
        "answer": "The answer to Best time for Lisbon?\nIn May?", "model": "model-1",
        "requestId": "r1", "questionId": question, "tenantId": "acme"}
    assert datetime.fromisoformat(first["createdAt"]) <= datetime.fromisoformat(
        first["updatedAt"])

    capsysbinary.readouterr()
    assert await cli(["export-feedback", "--assistant", "tutor", *url]) == 0
    tutor_lines = [json.loads(line) for line in capsysbinary.readouterr().out.splitlines()]
    assert [(line["messageId"], line["model"]) for line in tutor_lines] == [(tutors, "model-9")]
    assert await cli(["export-feedback", "--since", lines[1]["updatedAt"], *url]) == 0
    assert [json.loads(line)["messageId"]
            for line in capsysbinary.readouterr().out.splitlines()] == [tutors]
    assert await cli(["export-feedback", "--tenant", "globex", *url]) == 0
    assert capsysbinary.readouterr().out == b""
    assert await cli(["export-feedback", "--since", "yesterday", *url]) == 1
    assert b"--since must be an ISO 8601 time" in capsysbinary.readouterr().err
