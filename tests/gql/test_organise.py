"""Organising chats over HTTP: tags, pinned, owner/mode filters, subagents and the trash."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from tests.conftest import GraphQLClient

CHATS = """
query($filter: ChatFilter, $orderBy: ChatOrderField, $order: SortOrder, $first: Int,
      $after: String) {
  chats(filter: $filter, orderBy: $orderBy, order: $order, first: $first, after: $after) {
    edges { cursor node { id tags pinned mode createdBy teamId } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
    totalCount
    groups { key count totalCount }
  }
}"""
CREATE = """mutation($input: CreateChatInput!) {
  createChat(input: $input) { id tags pinned expiresAt } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatInput!) {
  updateChat(id: $id, input: $input) { id tags pinned expiresAt } }"""
DELETE = """mutation($id: ID!) { deleteChat(id: $id) }"""
RESTORE = """mutation($id: ID!) { restoreChat(id: $id) { id } }"""
T0 = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)

Headers = Callable[..., dict[str, str]]


@pytest.fixture
async def direct_db(settings: Settings) -> AsyncIterator[Database]:
    database = Database(settings.database_url)
    try:
        yield database
    finally:
        await database.dispose()


async def make(client: GraphQLClient, db: Database, chat_id: str, minutes: int,
               headers: dict[str, str], **input: Any) -> dict[str, Any]:
    data = await client.data(CREATE, {"input": {"id": chat_id, "assistantId": "a", **input}},
                             headers)
    at = T0 + timedelta(minutes=minutes)
    async with db.write() as conn:
        await conn.execute(update(chats).where(chats.c.id == chat_id).values(
            created_at=at, updated_at=at, activity_at=at))
    created: dict[str, Any] = data["createChat"]
    return created


async def walk(client: GraphQLClient, headers: dict[str, str], filter: dict[str, Any],
               first: int = 2, **variables: Any) -> tuple[list[str], int]:
    """Every id of the list, page by page; and the totalCount every page agreed on."""
    found: list[str] = []
    totals: set[int] = set()
    after = None
    while True:
        data = await client.data(
            CHATS, {"filter": filter, "first": first, "after": after, **variables}, headers)
        page = data["chats"]
        found += [edge["node"]["id"] for edge in page["edges"]]
        totals.add(page["totalCount"])
        assert sum(group["count"] for group in page["groups"]) == len(page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(totals) == 1, totals
    return found, totals.pop()


async def test_tags_and_pinned_are_set_and_validated(
    client: GraphQLClient, make_headers: Headers, direct_db: Database
) -> None:
    alice = make_headers("alice")
    made = await make(client, direct_db, "c1", 0, alice, tags=["work", "a", "work"],
                      pinned=True)
    assert made["tags"] == ["a", "work"]
    assert made["pinned"] is True
    changed = (await client.data(UPDATE, {"id": "c1", "input": {"tags": ["z", "b"]}},
                                 alice))["updateChat"]
    assert changed == {"id": "c1", "tags": ["b", "z"], "pinned": True, "expiresAt": None}
    for bad in (["x" * 65], [""], [f"t{i}" for i in range(21)], ["bad\ntag"]):
        assert await client.error_code(
            UPDATE, {"id": "c1", "input": {"tags": bad}}, alice) == "INVALID_ARGUMENT"
        assert await client.error_code(
            CREATE, {"input": {"id": "bad", "assistantId": "a", "tags": bad}},
            alice) == "INVALID_ARGUMENT"
    # Twenty distinct tags are fine, and repeats do not count towards the limit.
    twenty = [f"t{i:02}" for i in range(20)]
    done = (await client.data(UPDATE, {"id": "c1", "input": {"tags": twenty + twenty}},
                              alice))["updateChat"]
    assert done["tags"] == twenty
    # Nothing of the rejected requests was written.
    assert (await client.data('{ chat(id: "bad") { id } }', None, alice))["chat"] is None
    data = await client.data(CHATS, {"filter": {"tags": ["t00"]}}, alice)
    assert [e["node"]["id"] for e in data["chats"]["edges"]] == ["c1"]
    assert await client.error_code(
        CHATS, {"filter": {"tags": ["y" * 65]}}, alice) == "INVALID_ARGUMENT"


async def test_every_filter_alone_and_combined_with_pages_and_totals(
    client: GraphQLClient, make_headers: Headers, direct_db: Database
) -> None:
    alice = make_headers("alice", team="red")
    bob = make_headers("bob", team="red")
    admin = make_headers("root", roles="admin")
    await make(client, direct_db, "a1", 1, alice, tags=["x", "y"], pinned=True)
    await make(client, direct_db, "a2", 2, alice, tags=["x"], share="TEAM")
    await make(client, direct_db, "a3", 3, alice, mode="subagent", tags=["x", "y"])
    await make(client, direct_db, "a4", 4, alice, mode="voice", pinned=True, tags=["y"])
    await make(client, direct_db, "b1", 5, bob, tags=["x", "y"], share="TEAM", pinned=True)
    await make(client, direct_db, "b2", 6, bob, tags=["x"])
    await make(client, direct_db, "b3", 7, bob, mode="subagent", share="TEAM")

    async def ids(filter: dict[str, Any], who: dict[str, str] = admin,
                  **variables: Any) -> list[str]:
        found, total = await walk(client, who, filter, **variables)
        assert total == len(found)
        return found

    # Subagent chats are left out unless asked for or named by mode.
    assert await ids({}) == ["b2", "b1", "a4", "a2", "a1"]
    assert await ids({"includeSubagents": True}) == ["b3", "b2", "b1", "a4", "a3", "a2", "a1"]
    assert await ids({"mode": "subagent"}) == ["b3", "a3"]
    assert await ids({"mode": "voice"}) == ["a4"]
    # Owner fields.
    assert await ids({"createdBy": "alice"}) == ["a4", "a2", "a1"]
    assert await ids({"createdBy": "alice", "includeSubagents": True}) == [
        "a4", "a3", "a2", "a1"]
    assert await ids({"teamId": "red", "createdBy": "bob"}) == ["b2", "b1"]
    assert await ids({"teamId": "blue"}) == []
    # Every tag must be on the chat.
    assert await ids({"tags": ["x"]}) == ["b2", "b1", "a2", "a1"]
    assert await ids({"tags": ["y", "x"]}) == ["b1", "a1"]
    assert await ids({"tags": ["x", "y"], "includeSubagents": True}) == ["b1", "a3", "a1"]
    assert await ids({"tags": ["nope"]}) == []
    assert await ids({"tags": []}) == ["b2", "b1", "a4", "a2", "a1"]
    # Pinned.
    assert await ids({"pinned": True}) == ["b1", "a4", "a1"]
    assert await ids({"pinned": False}) == ["b2", "a2"]
    assert await ids({"pinned": True, "tags": ["y"], "createdBy": "alice"}) == ["a4", "a1"]
    # Other orderings page the same rows.
    assert await ids({"tags": ["x"]}, orderBy="CREATED_AT", order="ASC") == [
        "a1", "a2", "b1", "b2"]
    # Access still applies: alice sees her own chats and her team's TEAM chats.
    assert await ids({"tags": ["x"]}, alice) == ["b1", "a2", "a1"]
    assert await ids({"createdBy": "bob"}, alice) == ["b1"]
    assert await ids({"createdBy": "bob", "includeSubagents": True}, alice) == ["b3", "b1"]


async def test_a_cursor_is_bound_to_the_new_filters(
    client: GraphQLClient, make_headers: Headers, direct_db: Database
) -> None:
    alice = make_headers("alice")
    for n in range(3):
        await make(client, direct_db, f"c{n}", n, alice, tags=["x"], pinned=n > 0)
    page = (await client.data(CHATS, {"filter": {"tags": ["x"]}, "first": 1}, alice))["chats"]
    cursor = page["pageInfo"]["endCursor"]
    for other in ({"tags": ["x"], "pinned": True}, {"tags": ["x"], "deleted": True},
                  {"tags": ["x"], "includeSubagents": True}, {}):
        assert await client.error_code(
            CHATS, {"filter": other, "first": 1, "after": cursor}, alice) == "INVALID_CURSOR"


async def test_the_trash_lists_what_the_caller_may_restore(
    client: GraphQLClient, make_headers: Headers, direct_db: Database
) -> None:
    alice = make_headers("alice", team="red")
    bob = make_headers("bob", team="red")
    carol = make_headers("carol")
    admin = make_headers("root", roles="admin")
    agent = make_headers("bot", roles="agent")
    await make(client, direct_db, "mine1", 1, alice, tags=["x"])
    await make(client, direct_db, "mine2", 2, alice, public=True)
    await make(client, direct_db, "team1", 3, bob, share="TEAM", tags=["x"])
    await make(client, direct_db, "bobs", 4, bob, public=True)
    await make(client, direct_db, "kept", 5, alice)
    for chat_id, who in (("mine1", alice), ("mine2", alice), ("team1", bob), ("bobs", bob)):
        assert (await client.data(DELETE, {"id": chat_id}, who))["deleteChat"] is True

    async def trash(who: dict[str, str], **filter: Any) -> list[str]:
        found, total = await walk(client, who, {"deleted": True, **filter}, first=1)
        assert total == len(found)
        return found

    assert await trash(alice) == ["team1", "mine2", "mine1"]
    assert await trash(alice, tags=["x"]) == ["team1", "mine1"]
    assert await trash(bob) == ["bobs", "team1"]
    assert await trash(carol) == []  # public chats are read-only: nothing to restore
    assert await trash(agent) == []  # agents read every chat but restore none
    assert await trash(admin) == ["bobs", "team1", "mine2", "mine1"]
    assert (await walk(client, alice, {}))[0] == ["kept"]
    # Restoring takes a chat out of the trash and back into the list.
    await client.data(RESTORE, {"id": "mine1"}, alice)
    assert await trash(alice) == ["team1", "mine2"]
    assert (await walk(client, alice, {}))[0] == ["kept", "mine1"]
