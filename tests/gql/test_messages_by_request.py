"""messagesByRequest over HTTP: a request's messages across the caller's chats, keyset
pages with signed cursors, the access rule, bad input."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from chatql.gql.settings import Settings
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity
from tests.conftest import GraphQLClient

ALICE = Identity(user_id="alice", tenant_id="acme")
BOB = Identity(user_id="bob", tenant_id="acme")
EVE = Identity(user_id="eve", tenant_id="other")
BY_REQUEST = """
query($requestId: String!, $first: Int, $after: String) {
  messagesByRequest(requestId: $requestId, first: $first, after: $after) {
    edges { cursor node { id chatId sequence requestId } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}"""


def batch(request_id: str, count: int, tag: str) -> list[NewMessage]:
    return [NewMessage(role="USER", type="text", props={"t": f"{tag}{n}"},
                       request_id=request_id if n % 2 == 0 else f"{request_id}-other")
            for n in range(count)]


@pytest.fixture
async def seeded(settings: Settings) -> AsyncIterator[dict[str, list[str]]]:
    """Request ``r1`` writes to alice's chats a1 and a2 (a2 twice, later), bob's b1 and
    eve's e1 in another tenant; every other message belongs to another request."""
    db = Database(settings.database_url)
    written: dict[str, list[str]] = {}
    try:
        for who, chat in ((ALICE, "a1"), (ALICE, "a2"), (BOB, "b1"), (EVE, "e1")):
            await store_chats.create_chat(db, who, id=chat, assistant_id="helper")
        for who, chat, append in ((ALICE, "a2", "x"), (ALICE, "a1", "x"), (BOB, "b1", "x"),
                                  (EVE, "e1", "x"), (ALICE, "a2", "y")):
            receipt = await store_messages.append_messages(db, who, chat, append,
                                                           batch("r1", 6, chat))
            written.setdefault(chat, []).extend(receipt.message_ids[0::2])
    finally:
        await db.dispose()
    yield written


async def walk(client: GraphQLClient, headers: dict[str, str], size: int,
               request_id: str = "r1") -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        data = (await client.data(BY_REQUEST, {"requestId": request_id, "first": size,
                                               "after": after}, headers))["messagesByRequest"]
        assert data["pageInfo"]["hasPreviousPage"] == (after is not None)
        assert len(data["edges"]) <= size
        nodes += [edge["node"] for edge in data["edges"]]
        if not data["pageInfo"]["hasNextPage"]:
            return nodes
        assert len(data["edges"]) == size
        after = data["pageInfo"]["endCursor"]


async def test_a_request_is_found_across_the_callers_chats_in_write_order(
        client: GraphQLClient, seeded: dict[str, list[str]],
        make_headers: Callable[..., dict[str, str]]) -> None:
    # Write order: a2's first append, then a1, then (bob, eve) and a2's second append.
    expected = seeded["a2"][:3] + seeded["a1"] + seeded["a2"][3:]
    for size in (1, 2, 4, 50):
        nodes = await walk(client, make_headers("alice"), size)
        assert [node["id"] for node in nodes] == expected
        assert {node["requestId"] for node in nodes} == {"r1"}
    # Bob sees only his own chat; eve's tenant is hers alone; an admin sees the tenant.
    assert [n["id"] for n in await walk(client, make_headers("bob"), 2)] == seeded["b1"]
    assert [n["id"] for n in await walk(client, make_headers("eve", "other"), 2)] == seeded["e1"]
    admin = await walk(client, make_headers("root", roles="admin"), 3)
    assert {n["chatId"] for n in admin} == {"a1", "a2", "b1"}
    assert await walk(client, make_headers("alice"), 5, request_id="nobody") == []


async def test_a_deleted_chat_drops_out_of_the_request(
        client: GraphQLClient, seeded: dict[str, list[str]],
        make_headers: Callable[..., dict[str, str]], settings: Settings) -> None:
    db = Database(settings.database_url)
    try:
        await store_chats.delete_chat(db, ALICE, "a1")
    finally:
        await db.dispose()
    nodes = await walk(client, make_headers("alice"), 2)
    assert [n["id"] for n in nodes] == seeded["a2"]


async def test_cursors_are_bound_to_the_request_and_signed(
        client: GraphQLClient, seeded: dict[str, list[str]],
        make_headers: Callable[..., dict[str, str]]) -> None:
    alice = make_headers("alice")
    data = (await client.data(BY_REQUEST, {"requestId": "r1", "first": 1}, alice))
    cursor = data["messagesByRequest"]["pageInfo"]["endCursor"]
    for request_id, after in (("r1-other", cursor), ("r1", cursor[:-2] + "AA"),
                              ("r1", "not-a-cursor")):
        code = await client.error_code(BY_REQUEST, {"requestId": request_id, "after": after},
                                       alice)
        assert code == "INVALID_CURSOR"


@pytest.mark.parametrize(("variables", "code"), [
    ({"requestId": ""}, "INVALID_ARGUMENT"),
    ({"requestId": "x" * 201}, "INVALID_ARGUMENT"),
    ({"requestId": "r1", "first": 0}, "INVALID_ARGUMENT"),
    ({"requestId": "r1", "first": -3}, "INVALID_ARGUMENT"),
])
async def test_bad_input_is_refused_with_its_code(
        client: GraphQLClient, seeded: dict[str, list[str]], variables: dict[str, Any],
        code: str, make_headers: Callable[..., dict[str, str]]) -> None:
    assert await client.error_code(BY_REQUEST, variables, make_headers("alice")) == code
