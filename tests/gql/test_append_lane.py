"""The appendMessages lane: plain appends skip the view and answer with its bytes.

Every case compares the lane's answer (status, headers, body) with the view's for the
same request, on both databases; appends are idempotent by appendId, so the second of
two identical requests is a replay and must answer with the same bytes.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest

from chatql.gql.app import GraphQLEndpoint
from chatql.store.messages import message as store_messages
from tests.conftest import GraphQLClient

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme"}
CREATE = "mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"
APPEND = ("mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {"
          " appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { %s } }")
ALL = "chatId appendId digest messageIds firstSequence lastSequence __typename"
STATE = ("query($id: ID!) { chat(id: $id) { lastMessageAt messages(allBranches: true) {"
         " edges { node { id sequence role type props parentId requestId tokens metadata"
         " } } } } }")

Answer = tuple[int, dict[str, str], bytes]


def hello(content: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"role": "USER", "type": "text", "props": {"content": content}, **extra}


async def post_raw(client: GraphQLClient, content: bytes,
                   headers: dict[str, str] | None = None) -> Answer:
    response = await client.http.post("/graphql", content=content, headers={
        **ALICE, "content-type": "application/json", **(headers or {})})
    kept = {name: response.headers[name] for name in
            ("content-type", "content-length", "www-authenticate") if name in response.headers}
    return response.status_code, kept, response.content


def body(query: str, variables: dict[str, Any], **extra: Any) -> bytes:
    return orjson.dumps({"query": query, "variables": variables, **extra})


async def _no_lane(*args: Any) -> bool:
    return False


class Counts:
    """How often the view ran and how often the store was asked to append."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.views = 0
        self.appends = 0
        run, append = GraphQLEndpoint.run, store_messages.append_messages

        async def counted_run(endpoint: GraphQLEndpoint, *args: Any, **kwargs: Any) -> Any:
            self.views += 1
            return await run(endpoint, *args, **kwargs)

        async def counted_append(*args: Any, **kwargs: Any) -> Any:
            self.appends += 1
            return await append(*args, **kwargs)

        monkeypatch.setattr(GraphQLEndpoint, "run", counted_run)
        monkeypatch.setattr(store_messages, "append_messages", counted_append)

    def take(self) -> tuple[int, int]:
        seen = (self.views, self.appends)
        self.views = self.appends = 0
        return seen


async def new_chat(client: GraphQLClient, headers: dict[str, str] = ALICE,
                   **input: Any) -> str:
    data = await client.data(CREATE, {"input": {"assistantId": "helper", **input}}, headers)
    chat_id: str = data["createChat"]["id"]
    return chat_id


async def state(client: GraphQLClient, chat_id: str) -> Any:
    return await client.data(STATE, {"id": chat_id}, ALICE)


@pytest.mark.parametrize("selection", [
    ALL,
    "lastSequence",
    "__typename messageIds",
    "a: lastSequence b: lastSequence firstSequence digest",
    "chatId appendId",
])
async def test_the_lane_answers_with_the_views_bytes_for_every_selection(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch, selection: str,
) -> None:
    counts = Counts(monkeypatch)
    chat = await new_chat(client)
    first, second = (body(APPEND % selection, {"chat": chat, "aid": aid, "messages": [
        hello(aid), hello(aid + "!", requestId="r", tokens=3, metadata={"k": [1]})]})
        for aid in ("one", "two"))
    counts.take()
    # The lane writes; the view replays that append id (and the other way round).
    lane = await post_raw(client, first)
    assert counts.take() == (0, 1)
    lane_replay = await post_raw(client, second)
    assert counts.take() == (0, 1)
    monkeypatch.setattr(GraphQLEndpoint, "_lane", _no_lane)
    view_replay = await post_raw(client, first)
    assert counts.take() == (1, 1)
    view = await post_raw(client, second)
    assert lane == view_replay and lane_replay == view
    assert lane[:2] == (200, {"content-type": "application/json",
                              "content-length": str(len(lane[2]))})
    assert b"errors" not in lane[2]
    messages = (await state(client, chat))["chat"]["messages"]["edges"]
    assert [edge["node"]["props"]["content"] for edge in messages] == [
        "one", "one!", "two", "two!"]


async def test_literal_arguments_and_an_explicit_parent_take_the_lane(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = Counts(monkeypatch)
    chat = await new_chat(client)
    literal = ('mutation($chat: ID!) { appendMessages(chatId: $chat, appendId: "lit", '
               'messages: [{role: ASSISTANT, type: "text", props: {content: "x", n: [1.5, '
               'null, true]}, id: "m-lit", tokens: 7}]) { %s } }').replace("%s", ALL)
    counts.take()
    lane = await post_raw(client, body(literal, {"chat": chat}))
    assert counts.take() == (0, 1)
    branch = ("mutation($chat: ID!, $aid: String!, $parent: ID) { appendMessages(chatId:"
              " $chat, appendId: $aid, parentId: $parent, messages: [{role: USER, type:"
              " \"text\", props: {content: \"y\"}}]) { %s } }").replace("%s", ALL)
    after_leaf, sibling = (body(branch, {"chat": chat, "aid": aid, "parent": parent})
                           for aid, parent in (("b", None), ("c", "m-lit")))
    lanes = [await post_raw(client, after_leaf), await post_raw(client, sibling)]
    assert counts.take() == (0, 2)
    monkeypatch.setattr(GraphQLEndpoint, "_lane", _no_lane)
    assert await post_raw(client, body(literal, {"chat": chat})) == lane
    assert [await post_raw(client, after_leaf), await post_raw(client, sibling)] == lanes
    assert counts.take() == (3, 3)
    nodes = [e["node"] for e in (await state(client, chat))["chat"]["messages"]["edges"]]
    assert [(n["id"], n["parentId"], n["tokens"]) for n in nodes] == [
        ("m-lit", None, 7), (nodes[1]["id"], "m-lit", None), (nodes[2]["id"], "m-lit", None)]
    assert nodes[0]["props"] == {"content": "x", "n": [1.5, None, True]}


def declined_requests(chat: str) -> list[tuple[bytes, dict[str, str]]]:
    """Requests the lane leaves to the view (each valid or each an error there)."""
    plain = APPEND % "lastSequence"
    ok = {"chat": chat, "aid": "d", "messages": [hello()]}
    return [
        (body(plain, ok), {"content-type": "text/plain"}),
        (body(plain, ok), {"accept": "text/event-stream"}),
        (body(plain, {**ok, "messages": [hello(tokens=2.0)]}), {}),
        (body(plain, {**ok, "messages": [hello(id=True)]}), {}),
        (body(plain, {**ok, "messages": [hello(role="user")]}), {}),
        (body(plain, {**ok, "messages": [hello(role=["USER"])]}), {}),
        (body(plain, {**ok, "messages": [hello(tokens=2**31)]}), {}),
        (body(plain, {**ok, "messages": [hello(extra=1)]}), {}),
        (body(plain, {**ok, "messages": [{"role": "USER", "type": "text"}]}), {}),
        (body(plain, {**ok, "messages": hello()}), {}),  # GraphQL makes it a list
        (body(plain, {**ok, "messages": [hello("a\x00b")]}), {}),
        (body(plain, {"chat": chat, "messages": [hello()]}), {}),
        (body(plain, {**ok, "chat": None}), {}),
        (body(plain, {**ok, "chat": 1.5}), {}),
        (body("mutation($chat: ID!, $aid: String! = \"d\", $m: [MessageInput!]!) {"
              " appendMessages(chatId: $chat, appendId: $aid, messages: $m) { lastSequence }"
              " }", {"chat": chat, "m": [hello()]}), {}),
        (body("mutation($chat: ID!, $c: JSON!) { appendMessages(chatId: $chat, appendId:"
              " \"d\", messages: [{role: USER, type: \"text\", props: $c}]) { lastSequence"
              " } }", {"chat": chat, "c": {"content": "hello"}}), {}),
        (body("mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {"
              " ...on Mutation { appendMessages(chatId: $chat, appendId: $aid, messages:"
              " $messages) { lastSequence } } }", ok), {}),
        (body(plain.replace("lastSequence", "lastSequence @include(if: true)"), ok), {}),
        (body(plain, ok, operationName="Other"), {}),
        (body(plain.replace("lastSequence", "lastSequence nope"), ok), {}),
        (body(plain.replace("mutation(", "mutation M("), ok, operationName="M"), {}),
        (body(plain, ok), {"X-User-Id": ""}),
    ]


async def test_requests_the_lane_declines_get_the_views_answer(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = await new_chat(client)
    for content, headers in declined_requests(chat):
        before = await state(client, chat)
        one = await post_raw(client, content, headers)
        after_one = await state(client, chat)
        with monkeypatch.context() as patch:
            patch.setattr(GraphQLEndpoint, "_lane", _no_lane)
            two = await post_raw(client, content, headers)
        assert one == two, content
        assert await state(client, chat) == after_one, content
        if b"errors" in one[2]:
            assert after_one == before, content


async def test_a_declined_document_is_executed_by_the_view(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = await new_chat(client)
    counts = Counts(monkeypatch)
    answer = await post_raw(client, body(APPEND % "lastSequence", {
        "chat": chat, "aid": "t", "messages": [hello(tokens=2.0)]}))
    assert answer[2] == b'{"data":{"appendMessages":{"lastSequence":1}}}'
    assert counts.take() == (1, 1)


async def test_errors_on_the_lane_are_the_views_and_the_store_is_unchanged(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    chat = await new_chat(client)
    public = await new_chat(client, BOB, public=True)
    await post_raw(client, body(APPEND % "lastSequence", {
        "chat": chat, "aid": "used", "messages": [hello()]}))
    cases = {
        "NOT_FOUND": {"chat": "c-missing", "aid": "x", "messages": [hello()]},
        "FORBIDDEN": {"chat": public, "aid": "x", "messages": [hello()]},
        "INVALID_ARGUMENT": {"chat": chat, "aid": "x", "messages": []},
        "APPEND_CONFLICT": {"chat": chat, "aid": "used", "messages": [hello("other")]},
    }
    invalid = [
        {"chat": chat, "aid": "", "messages": [hello()]},
        {"chat": chat, "aid": "x", "messages": [{**hello(), "type": "event"}]},
        {"chat": chat, "aid": "x", "messages": [{**hello(), "props": ["a list"]}]},
        {"chat": chat, "aid": "x", "messages": [hello(tokens=-1)]},
        {"chat": chat, "aid": "x", "messages": [hello(id="m1"), hello(id="m1")]},
        {"chat": "not an id!", "aid": "x", "messages": [hello()]},
    ]
    counts = Counts(monkeypatch)
    caplog.set_level(logging.INFO)
    for code, variables in [*cases.items(), *(("INVALID_ARGUMENT", v) for v in invalid)]:
        content = body(APPEND % ALL, variables)
        before = (await state(client, chat), await client.data(
            STATE, {"id": public}, BOB))
        counts.take()
        lane = await post_raw(client, content)
        # Tried once, and answered by the lane itself: the error the view would give.
        assert counts.take() == (0, 1), variables
        with monkeypatch.context() as patch:
            patch.setattr(GraphQLEndpoint, "_lane", _no_lane)
            view = await post_raw(client, content)
        assert lane == view, variables
        assert orjson.loads(lane[2])["errors"][0]["extensions"]["code"] == code, lane
        assert (await state(client, chat), await client.data(
            STATE, {"id": public}, BOB)) == before
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def test_an_append_to_an_archived_chat_brings_it_back_once(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = await new_chat(client)
    await post_raw(client, body(APPEND % "lastSequence", {
        "chat": chat, "aid": "a1", "messages": [hello("before")]}))
    archived = await client.data("mutation($id: ID!) { archiveChat(id: $id) { id } }",
                                 {"id": chat}, ALICE)
    assert archived["archiveChat"]["id"] == chat
    counts = Counts(monkeypatch)
    answer = await post_raw(client, body(APPEND % "firstSequence lastSequence", {
        "chat": chat, "aid": "a2", "messages": [hello("after")]}))
    assert answer[2] == (b'{"data":{"appendMessages":{"firstSequence":2,'
                         b'"lastSequence":2}}}')
    # Refused before writing on the lane (archived), then brought back and written once.
    assert counts.take() == (1, 3)
    nodes = [e["node"] for e in (await state(client, chat))["chat"]["messages"]["edges"]]
    assert [n["props"]["content"] for n in nodes] == ["before", "after"]
