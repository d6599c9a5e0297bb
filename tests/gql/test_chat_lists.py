"""``chats(...)`` over HTTP: connection shape, cursors, groups and the lastMessage loader."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import event, update

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.lists import chat_lists
from tests.conftest import GraphQLClient

CHATS = """
query($filter: ChatFilter, $orderBy: ChatOrderField, $order: SortOrder, $first: Int,
      $after: String, $timezone: String, $weekStart: Weekday) {
  chats(filter: $filter, orderBy: $orderBy, order: $order, first: $first, after: $after,
        timezone: $timezone, weekStart: $weekStart) {
    edges { cursor node { id title lastMessageAt createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    totalCount
    groups { key label count totalCount chats { id } }
  }
}"""
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """
mutation($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages) { lastSequence }
}"""
T0 = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)  # a Thursday


@pytest.fixture
async def direct_db(settings: Settings) -> AsyncIterator[Database]:
    """The test database, for setting times the API does not let callers choose."""
    database = Database(settings.database_url)
    try:
        yield database
    finally:
        await database.dispose()


async def make_chat(
    client: GraphQLClient, db: Database, chat_id: str, at: datetime,
    headers: dict[str, str] | None = None, **input: Any,
) -> None:
    await client.data(CREATE, {"input": {"id": chat_id, "assistantId": "helper", **input}},
                      headers)
    async with db.write() as conn:
        await conn.execute(update(chats).where(chats.c.id == chat_id).values(
            created_at=at, updated_at=at, activity_at=at))


async def listing(client: GraphQLClient, headers: dict[str, str] | None = None,
                  **variables: Any) -> dict[str, Any]:
    data = await client.data(CHATS, variables, headers)
    page: dict[str, Any] = data["chats"]
    return page


def ids(page: dict[str, Any]) -> list[str]:
    return [edge["node"]["id"] for edge in page["edges"]]


@pytest.fixture
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[datetime], None]:
    def pin(moment: datetime) -> None:
        monkeypatch.setattr(chat_lists, "current_time", lambda: moment)

    return pin


async def test_walk_with_cursors_and_connection_fields(
    client: GraphQLClient, direct_db: Database, pinned_clock: Callable[[datetime], None]
) -> None:
    pinned_clock(T0)
    for i in range(7):
        # Ties on purpose: pairs of chats share one activity time.
        await make_chat(client, direct_db, f"c{i}", T0 - timedelta(hours=14 * (i // 2)),
                        title=None if i == 3 else f"Title {6 - i}")
    seen: list[str] = []
    variables: dict[str, Any] = {"first": 3}
    pages = []
    while True:
        page = await listing(client, **variables)
        pages.append(page)
        assert page["totalCount"] == 7
        info = page["pageInfo"]
        assert info["hasPreviousPage"] == ("after" in variables)
        assert (info["startCursor"], info["endCursor"]) == (
            page["edges"][0]["cursor"], page["edges"][-1]["cursor"])
        seen += ids(page)
        if not info["hasNextPage"]:
            break
        variables["after"] = info["endCursor"]
    assert seen == ["c1", "c0", "c3", "c2", "c5", "c4", "c6"]
    assert len(pages) == 3
    assert pages[0]["groups"] == [
        {"key": "today", "label": "Today", "count": 2, "totalCount": 2,
         "chats": [{"id": "c1"}, {"id": "c0"}]},
        {"key": "yesterday", "label": "Yesterday", "count": 1, "totalCount": 4,
         "chats": [{"id": "c3"}]},
    ]
    assert [(g["key"], g["count"], g["totalCount"]) for g in pages[1]["groups"]] == [
        ("yesterday", 3, 4)]
    assert [(g["key"], g["count"], g["totalCount"]) for g in pages[2]["groups"]] == [
        ("this_week", 1, 1)]
    by_title = await listing(client, orderBy="TITLE", order="ASC", first=10)
    assert ids(by_title) == ["c6", "c5", "c4", "c2", "c1", "c0", "c3"]  # untitled last
    assert not by_title["pageInfo"]["hasNextPage"]


async def test_groups_in_the_callers_zone_and_week(
    client: GraphQLClient, direct_db: Database, pinned_clock: Callable[[datetime], None]
) -> None:
    zone = ZoneInfo("Asia/Tokyo")  # UTC+9
    pinned_clock(datetime(2026, 1, 15, 8, 0, tzinfo=zone))
    await make_chat(client, direct_db, "tokyo-today", datetime(2026, 1, 15, 0, 0, tzinfo=zone))
    await make_chat(client, direct_db, "tokyo-sunday", datetime(2026, 1, 11, 1, 0, tzinfo=zone))
    page = await listing(client, timezone="Asia/Tokyo", weekStart="SUNDAY")
    assert [(g["key"], [c["id"] for c in g["chats"]]) for g in page["groups"]] == [
        ("today", ["tokyo-today"]), ("this_week", ["tokyo-sunday"])]
    # In UTC it is still January 14th and both chats are a day earlier: Tokyo's midnight
    # is 15:00 UTC that same day, and its Sunday 01:00 is a Saturday outside the week.
    utc = await listing(client)
    assert [(g["key"], [c["id"] for c in g["chats"]]) for g in utc["groups"]] == [
        ("today", ["tokyo-today"]), ("this_month", ["tokyo-sunday"])]
    filtered = await listing(client, filter={"keywords": "nothing"})
    assert filtered == {"edges": [], "groups": [], "totalCount": 0, "pageInfo": {
        "hasNextPage": False, "hasPreviousPage": False, "startCursor": None,
        "endCursor": None}}


async def test_filters_access_deleted_and_purged(
    client: GraphQLClient, direct_db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bob = make_headers(user="alice"), make_headers(user="bob")
    await make_chat(client, direct_db, "a1", T0, alice, title="Budget review")
    await make_chat(client, direct_db, "a2", T0 + timedelta(hours=1), alice, title="budget",
                    assistantId="finance")
    await make_chat(client, direct_db, "gone", T0, alice, title="budget old")
    await make_chat(client, direct_db, "purged", T0, alice, title="budget older")
    await make_chat(client, direct_db, "b-private", T0, bob, title="budget secret")
    await make_chat(client, direct_db, "b-public", T0 - timedelta(days=1), bob,
                    title="Budget shared", public=True)
    await client.data('mutation { deleteChat(id: "gone") }', headers=alice)
    await client.data('mutation { purgeChat(id: "purged") }', headers=alice)
    page = await listing(client, alice, filter={"keywords": "BUDGET"})
    assert (ids(page), page["totalCount"]) == (["a2", "a1", "b-public"], 3)
    page = await listing(client, alice, filter={"assistantId": "finance"})
    assert ids(page) == ["a2"]
    window = {"startTime": (T0 - timedelta(hours=1)).isoformat(),
              "endTime": (T0 + timedelta(hours=1)).isoformat()}
    assert ids(await listing(client, alice, filter=window)) == ["a1"]
    assert ids(await listing(client, alice, filter={"status": "ARCHIVED"})) == []
    assert ids(await listing(client, make_headers(user="alice", tenant="other"))) == []
    # Explicit nulls mean the defaults (the arguments are nullable).
    nulls = await listing(client, alice, orderBy=None, order=None, timezone=None,
                          weekStart=None, filter={"timeField": None})
    assert ids(nulls) == ["a2", "a1", "b-public"]


async def test_bad_arguments_are_invalid_argument(client: GraphQLClient) -> None:
    for variables in ({"timezone": "Nowhere/Special"}, {"timezone": "UTC+5"},
                      {"first": 0}, {"first": -3}, {"weekStart": "FRIDAY"},
                      {"filter": {"startTime": "yesterday"}},
                      {"filter": {"startTime": "2026-01-01T00:00:00"}}):
        assert await client.error_code(CHATS, variables) == "INVALID_ARGUMENT", variables


async def test_cursors_are_bound_to_the_list_they_came_from(
    client: GraphQLClient, direct_db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice")
    for i in range(4):
        await make_chat(client, direct_db, f"c{i}", T0 + timedelta(minutes=i), alice,
                        public=True, title=f"t{i}")
    base = {"first": 1, "filter": {"keywords": "t"}}
    cursor = (await listing(client, alice, **base))["pageInfo"]["endCursor"]
    following = await listing(client, alice, **base, after=cursor)
    assert ids(following) == ["c2"]
    body, _, mac = cursor.partition(".")
    replays = [
        {**base, "after": "garbage"},
        {**base, "after": ""},
        {**base, "after": body + "." + mac[::-1]},
        {**base, "after": body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac},
        {"first": 1, "after": cursor},
        {**base, "filter": {"keywords": "t", "timeField": "CREATED_AT"}, "after": cursor},
        {**base, "orderBy": "CREATED_AT", "after": cursor},
        {**base, "order": "ASC", "after": cursor},
        {**base, "timezone": "Europe/Paris", "after": cursor},
        {**base, "weekStart": "SUNDAY", "after": cursor},
    ]
    for variables in replays:
        assert await client.error_code(CHATS, variables, alice) == "INVALID_CURSOR", variables
    # Another caller (who may read the same public chats) cannot replay it either.
    assert await client.error_code(
        CHATS, {**base, "after": cursor}, make_headers(user="bob")) == "INVALID_CURSOR"
    messages_cursor = """query { messages(chatId: "c0") { pageInfo { endCursor } } }"""
    await client.data(APPEND, {"chatId": "c0", "appendId": "a", "messages": [
        {"role": "USER", "type": "text", "props": {}}]}, alice)
    other_kind = (await client.data(messages_cursor, headers=alice))["messages"]
    assert await client.error_code(
        CHATS, {**base, "after": other_kind["pageInfo"]["endCursor"]}, alice
    ) == "INVALID_CURSOR"


@contextmanager
def counting_statements(db: Database) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", record)


LAST_MESSAGES = """
query($first: Int) { chats(first: $first) { edges { node { id
  lastMessage { id sequence props } } } } }"""


async def test_last_message_is_batched_per_request(
    settings: Settings, make_headers: Callable[..., dict[str, str]]
) -> None:
    import httpx

    from tests.conftest import running_app

    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            client = GraphQLClient(http)
            for i in range(20):
                await client.data(CREATE, {"input": {"id": f"c{i:02d}", "assistantId": "a"}})
                if i % 4:  # every fourth chat stays empty
                    await client.data(APPEND, {"chatId": f"c{i:02d}", "appendId": "x",
                                               "messages": [
                        {"role": "USER", "type": "text", "props": {"n": n, "chat": i}}
                        for n in range(i % 4)]})
            db: Database = app.state.services.db
            costs = {}
            for size in (2, 20):
                with counting_statements(db) as statements:
                    page = await client.data(LAST_MESSAGES, {"first": size})
                costs[size] = len(statements)
            edges = page["chats"]["edges"]
    assert len(edges) == 20
    last = {e["node"]["id"]: e["node"]["lastMessage"] for e in edges}
    assert last["c00"] is None and last["c04"] is None
    assert last["c07"]["sequence"] == 3 and last["c07"]["props"] == {"n": 2, "chat": 7}
    assert last["c05"]["props"] == {"n": 0, "chat": 5}
    # The list, its neighbour probe and totals, plus ONE query for every lastMessage.
    assert costs[20] == costs[2] <= 3, costs


async def test_totals_asked_through_fragments(
    client: GraphQLClient, direct_db: Database
) -> None:
    for i in range(3):
        await make_chat(client, direct_db, f"c{i}", T0 + timedelta(minutes=i))
    document = """
    query { chats(first: 1) { ...Totals ... on ChatConnection { groups { key count } } } }
    fragment Totals on ChatConnection { totalCount edges { node { id } } }"""
    data = (await client.data(document))["chats"]
    assert data["totalCount"] == 3
    assert data["groups"][0]["count"] == 1
    only_groups = await client.data(
        "query { chats(first: 2) { groups { key count totalCount } } }")
    assert [g["totalCount"] for g in only_groups["chats"]["groups"]] == [3]
