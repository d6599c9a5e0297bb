"""Message pages over HTTP: walking a 1,000-message chat both ways, filters, cursor binding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatql.gql.settings import Settings
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity
from tests.conftest import GraphQLClient

DEV = Identity()  # the caller the client's requests arrive as (no headers)
TOTAL = 1_000
MESSAGES = """
query($chatId: ID!, $first: Int, $after: String, $last: Int, $before: String,
      $filter: MessageFilter) {
  messages(chatId: $chatId, first: $first, after: $after, last: $last, before: $before,
           filter: $filter) {
    edges { cursor node { sequence role } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"""
CHAT_MESSAGES = """
query($chatId: ID!, $last: Int, $before: String) { chat(id: $chatId) {
  messages(last: $last, before: $before) {
    edges { node { sequence } } pageInfo { hasPreviousPage startCursor } } } }"""


def seed_batch(count: int) -> list[NewMessage]:
    # Every third message is the assistant's, so role filters thin the chat unevenly.
    return [
        NewMessage(role="ASSISTANT" if n % 3 == 0 else "USER",
                   type="text" if n % 3 == 0 else "user_input", props={"n": n})
        for n in range(1, count + 1)
    ]


@pytest.fixture
async def long_chat(settings: Settings) -> AsyncIterator[str]:
    """Chat ``long`` with 1,000 messages (one append) and an empty chat ``other``."""
    db = Database(settings.database_url)
    try:
        await store_chats.create_chat(db, DEV, id="long", assistant_id="helper")
        await store_chats.create_chat(db, DEV, id="other", assistant_id="helper")
        await store_messages.append_messages(db, DEV, "long", "seed", seed_batch(TOTAL))
        await store_messages.append_messages(db, DEV, "other", "seed", seed_batch(5))
    finally:
        await db.dispose()
    yield "long"


async def page(client: GraphQLClient, **variables: Any) -> tuple[list[int], dict[str, Any]]:
    data = (await client.data(MESSAGES, {"chatId": "long", **variables}))["messages"]
    return [e["node"]["sequence"] for e in data["edges"]], data["pageInfo"]


async def walk_forward(client: GraphQLClient, size: int, expected: list[int],
                       **extra: Any) -> None:
    step = min(size, 200)
    seen: list[int] = []
    sequences, info = await page(client, first=size, **extra)
    while True:
        start = len(seen)
        assert sequences == expected[start:start + step]
        seen += sequences
        assert info["hasPreviousPage"] == (start > 0)
        assert info["hasNextPage"] == (len(seen) < len(expected))
        if not info["hasNextPage"]:
            break
        sequences, info = await page(client, first=size, after=info["endCursor"], **extra)
    assert seen == expected


async def walk_backward(client: GraphQLClient, size: int, expected: list[int],
                        **extra: Any) -> None:
    step = min(size, 200)
    seen: list[int] = []
    sequences, info = await page(client, last=size, **extra)
    while True:
        end = len(expected) - len(seen)
        assert sequences == expected[max(0, end - step):end]
        seen = sequences + seen
        assert info["hasNextPage"] == (len(seen) > len(sequences))
        assert info["hasPreviousPage"] == (len(seen) < len(expected))
        if not info["hasPreviousPage"]:
            break
        sequences, info = await page(client, last=size, before=info["startCursor"], **extra)
    assert seen == expected


@pytest.mark.parametrize("size", [7, 50, 200, 201])
async def test_walk_a_thousand_messages_both_ways(
    client: GraphQLClient, long_chat: str, size: int
) -> None:
    everything = list(range(1, TOTAL + 1))
    # 50 and 200 divide 1,000: the last page is exactly full and still says "no more".
    await walk_forward(client, size, everything)
    await walk_backward(client, size, everything)


async def test_walk_with_filters(client: GraphQLClient, long_chat: str) -> None:
    assistant = [n for n in range(1, TOTAL + 1) if n % 3 == 0]
    users = [n for n in range(1, TOTAL + 1) if n % 3]
    await walk_forward(client, 50, assistant, filter={"role": "ASSISTANT"})
    await walk_backward(client, 7, assistant, filter={"role": "ASSISTANT", "type": "text"})
    await walk_backward(client, 200, users, filter={"type": "user_input"})
    none, info = await page(client, filter={"role": "SYSTEM"})
    assert none == [] and not info["hasPreviousPage"] and not info["hasNextPage"]


async def test_defaults_and_sizes(client: GraphQLClient, long_chat: str) -> None:
    newest, info = await page(client)
    assert newest == list(range(951, 1001))
    assert (info["hasPreviousPage"], info["hasNextPage"]) == (True, False)
    # ``after`` alone reads the next 50 forward; ``before`` alone the 50 before it.
    forward, info = await page(client, after=(await page(client, first=10))[1]["endCursor"])
    assert forward == list(range(11, 61)) and info["hasPreviousPage"] and info["hasNextPage"]
    backward, _ = await page(client, before=info["startCursor"])
    assert backward == list(range(1, 11))
    capped, _ = await page(client, last=10_000)
    assert capped == list(range(801, 1001))
    chat = (await client.data(CHAT_MESSAGES, {"chatId": "long", "last": 3}))["chat"]
    assert [e["node"]["sequence"] for e in chat["messages"]["edges"]] == [998, 999, 1000]
    older = (await client.data(CHAT_MESSAGES, {
        "chatId": "long", "last": 2, "before": chat["messages"]["pageInfo"]["startCursor"]}))
    assert [e["node"]["sequence"] for e in older["chat"]["messages"]["edges"]] == [996, 997]
    for bad in ({"first": 0}, {"last": -1}, {"first": 5, "last": 5}):
        assert await client.error_code(MESSAGES, {"chatId": "long", **bad}) == (
            "INVALID_ARGUMENT")


async def test_foreign_cursors_are_invalid(client: GraphQLClient, long_chat: str) -> None:
    _, info = await page(client, first=3)
    cursor = info["endCursor"]  # sequence 3, which the other chat also has
    other = (await client.data(MESSAGES, {"chatId": "other", "first": 3}))["messages"]
    filtered, _ = await page(client, first=3, filter={"role": "USER"})
    filtered_cursor = (await page(client, first=3, filter={"role": "USER"}))[1]["endCursor"]
    body, _, mac = cursor.partition(".")
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("tampered body", {"after": f"{flipped}.{mac}"}),
        ("tampered mac", {"before": f"{body}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}"}),
        ("other chat", {"after": other["pageInfo"]["endCursor"]}),
        ("other chat, backwards", {"last": 2, "before": other["pageInfo"]["startCursor"]}),
        ("other filter", {"after": cursor, "filter": {"role": "USER"}}),
        ("unfiltered use of a filtered cursor", {"after": filtered_cursor}),
        ("random text", {"after": "hello"}),
        ("random dotted", {"before": "aGk.aGk"}),
        ("empty", {"after": ""}),
    ]
    for name, variables in cases:
        code = await client.error_code(MESSAGES, {"chatId": "long", **variables})
        assert code == "INVALID_CURSOR", name
    assert filtered == [1, 2, 4]


async def test_empty_pages_still_answer_exactly(client: GraphQLClient, long_chat: str) -> None:
    end = (await page(client, last=1))[1]["endCursor"]
    beyond, info = await page(client, first=5, after=end)
    assert beyond == [] and (info["hasPreviousPage"], info["hasNextPage"]) == (True, False)
    start = (await page(client, first=1))[1]["startCursor"]
    before_all, info = await page(client, last=5, before=start)
    assert before_all == [] and (info["hasPreviousPage"], info["hasNextPage"]) == (False, True)
    # first + before: the window ends at the cursor, newer rows lie beyond it.
    window, info = await page(client, first=3, before=(await page(client, first=10))[1][
        "endCursor"])
    assert window == [1, 2, 3] and (info["hasPreviousPage"], info["hasNextPage"]) == (
        False, True)
    tail, info = await page(client, first=50, after=start, before=end)
    assert tail == list(range(2, 52)) and info["hasNextPage"] and info["hasPreviousPage"]
    await client.data("""mutation { createChat(input: {id: "empty", assistantId: "a"}) {
        id } }""")
    empty = (await client.data(MESSAGES, {"chatId": "empty"}))["messages"]
    assert empty == {"edges": [], "pageInfo": {"hasNextPage": False, "hasPreviousPage": False,
                                               "startCursor": None, "endCursor": None}}
    assert await client.error_code(MESSAGES, {"chatId": "missing"}) == "NOT_FOUND"
    hidden = await client.execute(MESSAGES, {"chatId": "long"}, {"X-User-Id": "mallory"})
    assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
