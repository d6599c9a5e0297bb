"""searchMessages over HTTP on every backend."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import GraphQLClient

SEARCH = """
query($query: String!, $first: Int, $chatId: ID, $assistantId: String,
      $includeSubagents: Boolean, $window: Int) {
  searchMessages(query: $query, first: $first, chatId: $chatId, assistantId: $assistantId,
                 includeSubagents: $includeSubagents, window: $window) {
    score
    message { id chatId sequence type props }
    chat { id mode assistantId }
    window { id sequence }
  }
}"""
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """
mutation($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages) { messageIds }
}"""

DELETE = "mutation($chatId: ID!, $ids: [ID!]!) { deleteMessages(chatId: $chatId, ids: $ids) }"

_append_ids = itertools.count()
Headers = dict[str, str] | None


def said(content: str, role: str = "USER", type: str = "user_input") -> dict[str, Any]:
    return {"role": role, "type": type, "props": {"content": content}}


async def create(client: GraphQLClient, chat_id: str, headers: Headers = None,
                 **input: Any) -> None:
    await client.data(CREATE, {"input": {"assistantId": "helper", "id": chat_id, **input}},
                      headers)


async def append(client: GraphQLClient, chat_id: str, *messages: dict[str, Any],
                 headers: Headers = None) -> list[str]:
    data = await client.data(APPEND, {"chatId": chat_id, "appendId": f"a{next(_append_ids)}",
                                      "messages": list(messages)}, headers)
    ids: list[str] = data["appendMessages"]["messageIds"]
    return ids


async def search(client: GraphQLClient, query: str, headers: Headers = None,
                 **variables: Any) -> list[dict[str, Any]]:
    data = await client.data(SEARCH, {"query": query, **variables}, headers)
    hits: list[dict[str, Any]] = data["searchMessages"]
    return hits


def ids(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["message"]["id"] for hit in hits]


async def test_more_and_rarer_words_rank_higher(client: GraphQLClient) -> None:
    await create(client, "c1")
    # "lemon" is everywhere, "kiwi" is rare: saying the rare word more must win.
    await append(client, "c1", *[said(f"lemon cake number {i}") for i in range(12)])
    rare, common = await append(client, "c1", said("kiwi kiwi lemon tart"),
                                said("kiwi lemon lemon tart"))
    hits = await search(client, "kiwi lemon")
    assert ids(hits) == [rare, common]
    assert hits[0]["score"] > hits[1]["score"] * (1 + 0.05)
    # The same word said more often (same length) ranks higher, even though older.
    more, once = await append(client, "c1", said("apple apple apple pear"),
                              said("apple pear plum fig"))
    hits = await search(client, "apple")
    assert ids(hits) == [more, once]
    assert hits[0]["score"] > hits[1]["score"]


async def test_near_ties_are_newest_first(client: GraphQLClient) -> None:
    for chat in ("old", "mid", "new"):
        await create(client, chat)
    older = await append(client, "old", said("remember the quarterly report"))
    middle = await append(client, "mid", said("remember the quarterly report"))
    newer = await append(client, "new", said("remember the quarterly report"))
    hits = await search(client, "quarterly report")
    assert ids(hits) == newer + middle + older
    assert [hit["chat"]["id"] for hit in hits] == ["new", "mid", "old"]
    assert len({hit["score"] for hit in hits}) == 1


async def test_near_ties_are_newest_first_but_clear_wins_stay_first(
    client: GraphQLClient,
) -> None:
    await create(client, "c1")
    filler = [f"w{i}" for i in range(60)]
    [clear_win] = await append(client, "c1", said(" ".join(["budget"] * 3 + filler[:38])))
    # One word longer makes the newer message score a little (about 1 %) lower.
    [older] = await append(client, "c1", said(" ".join(["budget", *filler[:40]])))
    [newer] = await append(client, "c1", said(" ".join(["budget", *filler[:41]])))
    hits = await search(client, "budget")
    assert ids(hits) == [clear_win, newer, older]
    assert hits[1]["score"] < hits[2]["score"] < hits[0]["score"]


async def test_subagent_chats_only_when_asked(client: GraphQLClient) -> None:
    await create(client, "talk")
    await create(client, "worker", mode="subagent")
    [person] = await append(client, "talk", said("find the zebra invoice"))
    [internal] = await append(client, "worker", said("zebra invoice zebra invoice"))
    assert ids(await search(client, "zebra invoice")) == [person]
    both = await search(client, "zebra invoice", includeSubagents=True)
    assert sorted(ids(both)) == sorted([person, internal])
    assert {hit["chat"]["mode"] for hit in both} == {"chat", "subagent"}
    # Naming the chat searches it, subagent or not.
    assert ids(await search(client, "zebra", chatId="worker")) == [internal]


async def test_only_spoken_text_is_indexed(client: GraphQLClient) -> None:
    await create(client, "c1")
    spoken = await append(
        client, "c1",
        said("the walrus question"),
        {"role": "ASSISTANT", "type": "text", "props": {"text": "a walrus answer"}},
    )
    await append(
        client, "c1",
        {"role": "ASSISTANT", "type": "tool_call", "props": {"content": "walrus lookup"}},
        {"role": "TOOL", "type": "retrieval", "props": {"content": "walrus dump"}},
        {"role": "SYSTEM", "type": "boundary", "props": {"summary": "walrus recap"}},
        {"role": "ASSISTANT", "type": "loading", "props": {"content": "walrus loading"}},
        {"role": "ASSISTANT", "type": "thinking", "props": {"content": "walrus thoughts"}},
        {"role": "ASSISTANT", "type": "text", "props": {"content": ["walrus", "list"]}},
        {"role": "ASSISTANT", "type": "text", "props": {"other": "walrus elsewhere"}},
    )
    hits = await search(client, "walrus")
    assert sorted(ids(hits)) == sorted(spoken)
    assert {hit["message"]["type"] for hit in hits} == {"user_input", "text"}


async def test_text_parts_of_multimodal_input_are_indexed(client: GraphQLClient) -> None:
    await create(client, "c1")
    [photo, plain] = await append(
        client, "c1",
        {"role": "USER", "type": "user_input", "props": {"content": [
            {"type": "text", "text": "what breed is this dog"},
            {"type": "image_url", "image_url": {"url": "https://x/dog.png"}},
            {"type": "text", "text": "it looks like a spaniel"},
        ]}},
        said("my dog sleeps"),
    )
    assert sorted(ids(await search(client, "dog"))) == sorted([photo, plain])
    # Words of either text part, never the other parts' values.
    assert ids(await search(client, "spaniel breed")) == [photo]
    assert await search(client, "png") == []
    assert await search(client, "image_url") == []


async def test_tool_results_are_never_indexed(client: GraphQLClient) -> None:
    await create(client, "c1")
    update = """mutation($id: ID!, $input: UpdateMessageInput!) {
      updateMessage(id: $id, input: $input) { id } }"""
    [asked, dump, said_after] = await append(
        client, "c1",
        said("find the invoice total"),
        {"role": "ASSISTANT", "type": "text", "props": {"content": "invoice rows total 42"},
         "metadata": {"is_tool_result": True}},
        {"role": "ASSISTANT", "type": "text", "props": {"content": "the invoice total is 42"},
         "metadata": {"is_tool_result": False}},
    )
    assert sorted(ids(await search(client, "invoice"))) == sorted([asked, said_after])
    assert await search(client, "rows") == []
    # Marking a message as a tool result takes it out; unmarking brings it back.
    await client.data(update, {"id": said_after,
                               "input": {"metadata": {"is_tool_result": True}}})
    assert ids(await search(client, "invoice")) == [asked]
    await client.data(update, {"id": dump, "input": {"metadata": {"source": "model"}}})
    assert ids(await search(client, "rows")) == [dump]


async def test_index_follows_updates_deletes_and_purges(client: GraphQLClient) -> None:
    await create(client, "c1")
    await create(client, "c2")
    [first, second] = await append(client, "c1", said("orange juice"), said("grape soda"))
    [other] = await append(client, "c2", said("orange peel"))
    assert sorted(ids(await search(client, "orange"))) == sorted([first, other])

    update = """mutation($id: ID!, $input: UpdateMessageInput!) {
      updateMessage(id: $id, input: $input) { id } }"""
    await client.data(update, {"id": first, "input": {"props": {"content": "mango juice"}}})
    assert ids(await search(client, "orange")) == [other]
    assert ids(await search(client, "mango")) == [first]
    # An update that makes the message unspoken takes it out of the index.
    await client.data(update, {"id": first, "input": {"props": {"url": "x"}}})
    assert await search(client, "mango") == []

    await client.data(DELETE, {"chatId": "c1", "ids": [second]})
    assert await search(client, "grape") == []

    await client.data('mutation { deleteChat(id: "c2") }')
    assert await search(client, "orange") == []
    await client.data('mutation { restoreChat(id: "c2") { id } }')
    assert ids(await search(client, "orange")) == [other]
    await client.data('mutation { purgeChat(id: "c2") }')
    assert await search(client, "orange") == []
    assert await search(client, "peel") == []


@pytest.mark.parametrize(
    "query",
    ['"', '""', "*", "-", "AND", "OR", "NOT", "NEAR", "a AND", "AND OR NOT", '"unclosed',
     "foo*", "-foo", "NEAR(a b)", "(", ")", "()", ":", "col:foo", "body:x", "^start",
     "{a b}", "'", "''", "\\", "%", "_", "!", "&|", "a & b | !c", "<->", "hello:*",
     "é", "日本語", "🙂", "naïve café", "x" * 999, "\t\nword"],
)
async def test_user_text_never_breaks_the_query(client: GraphQLClient, query: str) -> None:
    await create(client, "c1")
    await append(client, "c1", said("hello world, naïve café and 日本語 AND more"))
    body = await client.execute(SEARCH, {"query": query})
    assert "errors" not in body, body
    assert isinstance(body["data"]["searchMessages"], list)


async def test_nul_in_query_is_invalid_argument(client: GraphQLClient) -> None:
    # NUL is refused in every string the API takes (gql/ops/limits.py): Postgres cannot
    # hold it, and both backends answer alike.
    await create(client, "c1")
    body = await client.execute(SEARCH, {"query": "\u0000x"})
    assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"


async def test_lone_surrogate_in_query(client: GraphQLClient) -> None:
    # Valid JSON, not valid UTF-8: sent escaped, as a browser may.
    await create(client, "c1")
    await append(client, "c1", said("hello"))
    body = json.dumps({"query": SEARCH, "variables": {"query": "hello \ud800"}})
    response = await client.http.post("/graphql", content=body,
                                      headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert "errors" not in response.json(), response.json()


@pytest.mark.parametrize("query", ['"hello"', "hello*", "-hello", "HELLO!", "(hello)",
                                   "hello AND world", "naïve", "日本語"])
async def test_operators_are_plain_words(client: GraphQLClient, query: str) -> None:
    await create(client, "c1")
    [hit] = await append(client, "c1", said("hello world, naïve 日本語 and more"))
    assert ids(await search(client, query)) == [hit]


async def test_bad_arguments_are_rejected(client: GraphQLClient) -> None:
    await create(client, "c1")
    await append(client, "c1", said("hello"))
    for variables in ({"query": ""}, {"query": "   "}, {"query": "hello", "first": 0},
                      {"query": "hello", "first": -3}, {"query": "hello", "window": -1},
                      {"query": "x" * 1001}, {"query": "hello", "chatId": "bad id"}):
        assert await client.error_code(SEARCH, variables) == "INVALID_ARGUMENT", variables
    assert await client.error_code(SEARCH, {"query": "hello", "chatId": "nope"}) == "NOT_FOUND"


async def test_first_is_capped(client: GraphQLClient) -> None:
    await create(client, "c1")
    await append(client, "c1", *[said(f"bulk word {i}") for i in range(105)])
    assert len(await search(client, "bulk", first=1000)) == 100
    assert len(await search(client, "bulk", first=7)) == 7
    assert len(await search(client, "bulk")) == 20


async def test_window_brings_neighbours_oldest_first(client: GraphQLClient) -> None:
    await create(client, "c1")
    await create(client, "c2")
    texts = ["one", "two", "three", "target here", "five", "six", "seven"]
    written = await append(client, "c1", *[said(text) for text in texts])
    await append(client, "c2", said("unrelated"), said("target elsewhere"), said("after"))
    hits = await search(client, "target", chatId="c1")
    assert [m["id"] for m in hits[0]["window"]] == written[1:3] + written[4:6]
    hits = await search(client, "target here", window=3)
    assert [m["sequence"] for m in hits[0]["window"]] == [1, 2, 3, 5, 6, 7]
    hits = await search(client, "target", window=0)
    assert len(hits) == 2 and all(hit["window"] == [] for hit in hits)
    # Edges of a chat give fewer neighbours; a deleted message's replies take its place.
    await client.data(DELETE, {"chatId": "c1", "ids": [written[2]]})
    hits = await search(client, "one", window=2)
    assert [m["sequence"] for m in hits[0]["window"]] == [2, 4]


async def test_assistant_filter(client: GraphQLClient) -> None:
    await create(client, "c1", assistantId="alpha")
    await create(client, "c2", assistantId="beta")
    [a] = await append(client, "c1", said("shared topic"))
    [b] = await append(client, "c2", said("shared topic"))
    assert ids(await search(client, "topic", assistantId="alpha")) == [a]
    assert ids(await search(client, "topic", assistantId="beta")) == [b]


async def test_only_readable_chats_are_searched(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice", tenant="acme", team="red")
    bob = make_headers(user="bob", tenant="acme", team="blue")
    carol = make_headers(user="carol", tenant="acme", team="red")
    eve = make_headers(user="eve", tenant="evil", roles="admin")
    await create(client, "private", alice)
    await create(client, "team", alice, share="TEAM")
    [secret] = await append(client, "private", said("classified plans"), headers=alice)
    [shared] = await append(client, "team", said("classified budget"), headers=alice)
    assert sorted(ids(await search(client, "classified", alice))) == sorted([secret, shared])
    assert ids(await search(client, "classified", carol)) == [shared]
    assert await search(client, "classified", bob) == []
    assert await search(client, "classified", eve) == []
    assert await client.error_code(SEARCH, {"query": "plans", "chatId": "private"},
                                   bob) == "NOT_FOUND"
    await client.data('mutation { updateChat(id: "private", input: {public: true}) { id } }',
                      headers=alice)
    assert ids(await search(client, "plans", bob)) == [secret]
    assert await search(client, "plans", eve) == []
    admin = make_headers(user="root", tenant="acme", roles="admin")
    assert sorted(ids(await search(client, "classified", admin))) == sorted([secret, shared])
