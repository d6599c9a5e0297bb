"""The model's window over HTTP on every backend: maxTokens and limit bounds, token
estimates, WINDOW_TOO_SMALL, and what never reaches the model."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest

from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

CREATE = 'mutation($id: ID!) { createChat(input: {id: $id, assistantId: "a"}) { id } }'
APPEND = """mutation($chat: ID!, $append: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $append, messages: $messages) { messageIds } }"""
WINDOW = """query($chat: ID!, $limit: Int, $maxTokens: Int, $thinking: Boolean) {
  modelContext(chatId: $chat, limit: $limit, maxTokens: $maxTokens,
               includeThinking: $thinking) { id type props tokens tokensEstimated } }"""
AGENT = {"X-User-Id": "dev", "X-Tenant-Id": "default", "X-Roles": "agent"}

_appends = itertools.count()


def message(role: str, type: str, content: str, tokens: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"role": role, "type": type, "props": {"content": content}}
    if tokens is not None:
        result["tokens"] = tokens
    return result


async def append(client: GraphQLClient, chat_id: str, *batch: dict[str, Any]) -> list[str]:
    data = await client.data(APPEND, {"chat": chat_id, "append": f"a{next(_appends)}",
                                      "messages": list(batch)})
    ids: list[str] = data["appendMessages"]["messageIds"]
    return ids


async def window(client: GraphQLClient, chat_id: str, **bounds: Any) -> list[dict[str, Any]]:
    data = await client.data(WINDOW, {"chat": chat_id, **bounds})
    items: list[dict[str, Any]] = data["modelContext"]
    return items


def estimate(props: dict[str, Any]) -> int:
    """One token per 4 characters of the compact, key-sorted props JSON, rounded up."""
    text = json.dumps(props, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / 4)


async def test_max_tokens_with_known_counts_keeps_whole_turns(client: GraphQLClient) -> None:
    await client.data(CREATE, {"id": "c1"})
    ids = await append(
        client, "c1",
        message("USER", "user_input", "one", 10), message("ASSISTANT", "text", "1", 30),
        message("USER", "user_input", "two", 10), message("ASSISTANT", "tool_call", "t", 5),
        message("TOOL", "tool_result", "r", 5), message("ASSISTANT", "text", "2", 20),
        message("USER", "user_input", "three", 15), message("ASSISTANT", "text", "3", 25),
    )
    newest, middle, oldest = ids[6:], ids[2:6], ids[:2]
    assert [m["id"] for m in await window(client, "c1", maxTokens=40)] == newest
    # 40 + 40 = 80: the middle turn fits exactly; the oldest (40 more) does not.
    assert [m["id"] for m in await window(client, "c1", maxTokens=80)] == middle + newest
    assert [m["id"] for m in await window(client, "c1", maxTokens=119)] == middle + newest
    assert [m["id"] for m in await window(client, "c1", maxTokens=120)] == ids
    # Both bounds: the tighter one decides, in either direction.
    assert [m["id"] for m in await window(client, "c1", maxTokens=1000, limit=6)] == (
        middle + newest)
    assert [m["id"] for m in await window(client, "c1", maxTokens=79, limit=100)] == newest
    got = await window(client, "c1", maxTokens=40)
    assert [(m["tokens"], m["tokensEstimated"]) for m in got] == [(15, False), (25, False)]
    # limit alone: as before, whole turns by message count.
    assert [m["id"] for m in await window(client, "c1", limit=6)] == middle + newest
    assert len(oldest) == 2


async def test_missing_counts_are_estimated_and_marked(client: GraphQLClient) -> None:
    await client.data(CREATE, {"id": "c1"})
    question = message("USER", "user_input", "x" * 100)  # no count
    answer = message("ASSISTANT", "text", "héllo wörld", 4)
    await append(client, "c1", question, answer)
    got = await window(client, "c1", maxTokens=1000)
    guess = estimate(question["props"])
    assert guess == math.ceil(len('{"content":"' + "x" * 100 + '"}') / 4)
    assert [(m["tokens"], m["tokensEstimated"]) for m in got] == [(guess, True), (4, False)]
    assert [m["id"] for m in await window(client, "c1", maxTokens=guess + 4)] == [
        m["id"] for m in got]
    assert await client.error_code(WINDOW, {"chat": "c1", "maxTokens": guess + 3}) == (
        "WINDOW_TOO_SMALL")
    # A compaction summary is estimated too and counts toward the bound.
    await client.data('mutation { compactChat(chatId: "c1", summary: "recap") { id } }')
    recap = estimate({"content": "recap"})
    await append(client, "c1", message("USER", "user_input", "q", 1),
                 message("ASSISTANT", "text", "a", 1))
    got = await window(client, "c1", maxTokens=recap + 2)
    assert [(m["props"], m["tokens"], m["tokensEstimated"]) for m in got] == [
        ({"content": "recap"}, recap, True), ({"content": "q"}, 1, False),
        ({"content": "a"}, 1, False)]
    assert await client.error_code(WINDOW, {"chat": "c1", "maxTokens": recap + 1}) == (
        "WINDOW_TOO_SMALL")


async def test_window_too_small_and_invalid_bounds(client: GraphQLClient, db: Database) -> None:
    await client.data(CREATE, {"id": "c1"})
    await append(client, "c1", message("USER", "user_input", "q", 50),
                 message("ASSISTANT", "text", "a", 50), message("ASSISTANT", "text", "b", 50))
    before = await store_fingerprint(db)
    body = await client.execute(WINDOW, {"chat": "c1", "maxTokens": 149})
    assert body["errors"][0]["extensions"]["code"] == "WINDOW_TOO_SMALL"
    assert "maxTokens" in body["errors"][0]["message"]
    body = await client.execute(WINDOW, {"chat": "c1", "limit": 2, "maxTokens": 1000})
    assert body["errors"][0]["extensions"]["code"] == "WINDOW_TOO_SMALL"
    assert "limit" in body["errors"][0]["message"]
    for bounds in ({}, {"limit": 0}, {"maxTokens": 0}, {"maxTokens": -5, "limit": 3}):
        assert await client.error_code(WINDOW, {"chat": "c1", **bounds}) == "INVALID_ARGUMENT"
    assert await client.error_code(WINDOW, {"chat": "nope", "maxTokens": 10}) == "NOT_FOUND"
    assert await store_fingerprint(db) == before


async def test_interrupted_tool_calls_and_thinking_are_left_out(client: GraphQLClient) -> None:
    await client.data(CREATE, {"id": "c1"})
    ids = await append(
        client, "c1",
        message("USER", "user_input", "q", 1),
        message("ASSISTANT", "thinking", "let me see", 1),
        message("ASSISTANT", "tool_call", "lookup", 1),
        message("TOOL", "tool_result", "found", 1),
        message("ASSISTANT", "text", "a", 1),
        message("ASSISTANT", "tool_call", "second lookup", 1),
    )
    await client.data("mutation($id: ID!) { updateMessage(id: $id, input: {status: INTERRUPTED})"
                      " { id } }", {"id": ids[5]})
    assert [m["id"] for m in await window(client, "c1", maxTokens=100)] == [
        ids[0], ids[2], ids[3], ids[4]]
    assert [m["id"] for m in await window(client, "c1", limit=4)] == [
        ids[0], ids[2], ids[3], ids[4]]
    got = await window(client, "c1", maxTokens=100, thinking=True)
    assert [m["id"] for m in got] == ids[:5]
    got = await window(client, "c1", maxTokens=100, thinking=None)
    assert [m["id"] for m in got] == [ids[0], ids[2], ids[3], ids[4]]


async def test_a_stopped_streams_half_streamed_tool_call_is_left_out(
    client: GraphQLClient,
) -> None:
    await client.data(CREATE, {"id": "c1"})
    start = """mutation { startStream(input: {chatId: "c1", requestId: "r",
      input: {role: USER, type: "user_input", props: {content: "book it"}}}) { id } }"""
    stream_id = (await client.data(start, None, AGENT))["startStream"]["id"]
    push = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
      pushChunks(streamId: $id, chunks: $chunks) { accepted } }"""
    await client.data(push, {"id": stream_id, "chunks": [
        {"type": "text", "messageId": "m1", "props": {"content": "Booking now."}},
        {"type": "tool_call", "messageId": "m2", "props": {"name": "book", "args": '{"fl'}},
    ]}, AGENT)
    assert (await client.data('mutation { stopStream(chatId: "c1") }'))["stopStream"] is True
    history = await client.data(
        'query { messages(chatId: "c1") { edges { node { type status } } } }')
    assert [e["node"] for e in history["messages"]["edges"]] == [
        {"type": "user_input", "status": "INTERRUPTED"},
        {"type": "text", "status": "INTERRUPTED"},
        {"type": "tool_call", "status": "INTERRUPTED"},
    ]
    for bounds in ({"limit": 10}, {"maxTokens": 1000}):
        got = await window(client, "c1", **bounds)
        assert [m["type"] for m in got] == ["user_input", "text"]


@pytest.mark.parametrize("bounds", [{"maxTokens": 30}, {"limit": 3}, {"maxTokens": 1000}])
async def test_a_long_chat_is_read_from_its_end(
    client: GraphQLClient, bounds: dict[str, int]
) -> None:
    """More turns than one read step: the window still ends at the newest turn."""
    await client.data(CREATE, {"id": "c1"})
    batch: list[dict[str, Any]] = []
    for turn in range(150):
        batch += [message("USER", "user_input", f"q{turn}", 5),
                  message("ASSISTANT", "text", f"a{turn}", 5)]
    await append(client, "c1", *batch)
    got = await window(client, "c1", **bounds)
    turns = {30: 3, 1000: 100}.get(bounds.get("maxTokens", 0), 1)
    expected = [f"{kind}{turn}" for turn in range(150 - turns, 150) for kind in "qa"]
    assert [m["props"]["content"] for m in got] == expected


SYSTEM_WINDOW = """query($chat: ID!, $limit: Int, $maxTokens: Int, $scopes: [String!]) {
  modelContext(chatId: $chat, limit: $limit, maxTokens: $maxTokens, memoryScopes: $scopes) {
    id role type props tokens tokensEstimated } }"""


async def system_window(client: GraphQLClient, chat_id: str,
                        **bounds: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await client.data(
        SYSTEM_WINDOW, {"chat": chat_id, **bounds}))["modelContext"]
    return items


async def test_one_system_prompt_opens_the_window_and_is_never_dropped(
        client: GraphQLClient) -> None:
    await client.data(CREATE, {"id": "s1"})
    [prompt] = await append(client, "s1", message("SYSTEM", "text", "You are terse.", 7))
    turns = await append(client, "s1", *[
        message(role, kind, f"{role.lower()} {n}", 10)
        for n in range(4) for role, kind in (("USER", "user_input"), ("ASSISTANT", "text"))])
    # limit: the prompt is one of the messages; the oldest turns make room for it.
    context = await system_window(client, "s1", limit=5)
    assert [m["id"] for m in context] == [prompt, *turns[-4:]]
    assert context[0] == {"id": prompt, "role": "SYSTEM", "type": "text",
                          "props": {"content": "You are terse."}, "tokens": 7,
                          "tokensEstimated": False}
    # maxTokens: its 7 tokens count; 7 + 20 + 20 = 47 is two turns, 46 only one.
    assert [m["id"] for m in await system_window(client, "s1", maxTokens=47)] == [
        prompt, *turns[-4:]]
    assert [m["id"] for m in await system_window(client, "s1", maxTokens=46)] == [
        prompt, *turns[-2:]]
    # Everything fits: the prompt once, first, although it was written first anyway.
    assert [m["id"] for m in await system_window(client, "s1", limit=50)] == [prompt, *turns]
    # The prompt and the newest turn are what must fit.
    assert await client.error_code(SYSTEM_WINDOW, {"chat": "s1", "limit": 2}) == (
        "WINDOW_TOO_SMALL")
    assert await client.error_code(SYSTEM_WINDOW, {"chat": "s1", "maxTokens": 6}) == (
        "WINDOW_TOO_SMALL")
    # Starting over does not make the agent forget its instructions.
    await client.data('mutation { startOver(chatId: "s1") { id } }')
    [fresh] = await append(client, "s1", message("USER", "user_input", "again", 3))
    assert [m["id"] for m in await system_window(client, "s1", limit=10)] == [prompt, fresh]


async def test_two_system_prompts_are_merged_into_one_first_message(
        client: GraphQLClient) -> None:
    await client.data(CREATE, {"id": "s2"})
    first = (await append(client, "s2", message("SYSTEM", "text", "Be kind.", 4),
                          message("USER", "user_input", "q0", 10),
                          message("ASSISTANT", "text", "a0", 10)))[0]
    [second] = await append(client, "s2", message("SYSTEM", "text", "Answer in French.", 6))
    turns = await append(client, "s2", *[
        message(role, kind, f"{role.lower()} {n}", 10)
        for n in range(3) for role, kind in (("USER", "user_input"), ("ASSISTANT", "text"))])
    merged = {"id": first, "role": "SYSTEM", "type": "text",
              "props": {"content": "Be kind.\n\nAnswer in French."}, "tokens": 10,
              "tokensEstimated": False}
    context = await system_window(client, "s2", limit=3)
    assert context == [merged, *[
        {"id": turns[n], "role": "USER" if n % 2 == 0 else "ASSISTANT",
         "type": "user_input" if n % 2 == 0 else "text",
         "props": {"content": ("user " if n % 2 == 0 else "assistant ") + str(n // 2)},
         "tokens": 10, "tokensEstimated": False} for n in (4, 5)]]
    assert second not in [m["id"] for m in context]
    # maxTokens counts the merged prompt's 10 tokens: 10 + 20 + 20 = 50 is two turns.
    assert [m["id"] for m in await system_window(client, "s2", maxTokens=50)] == [
        first, *turns[-4:]]
    assert [m["id"] for m in await system_window(client, "s2", maxTokens=49)] == [
        first, *turns[-2:]]
    # With the memory message: the prompt first, then the memory, both counted.
    context = await system_window(client, "s2", limit=4, scopes=["_global"])
    assert [(m["role"], m["type"]) for m in context[:2]] == [("SYSTEM", "text"),
                                                              ("SYSTEM", "memory")]
    assert context[0]["props"] == merged["props"] and [m["id"] for m in context[2:]] == (
        turns[-2:])
    assert await client.error_code(SYSTEM_WINDOW, {"chat": "s2", "limit": 1,
                                                   "scopes": ["_global"]}) == (
        "WINDOW_TOO_SMALL")
    # A prompt without a reported count makes the merged count an estimate.
    await append(client, "s2", message("SYSTEM", "text", "Use metric units."))
    opening = (await system_window(client, "s2", limit=3))[0]
    expected_props = {"content": "Be kind.\n\nAnswer in French.\n\nUse metric units."}
    assert opening["props"] == expected_props
    assert (opening["tokens"], opening["tokensEstimated"]) == (estimate(expected_props), True)
