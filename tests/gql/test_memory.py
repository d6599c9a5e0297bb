"""Agent memory over HTTP on every backend: order, pages, writes, the cap, search."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient, running_app

ENTRY = "id scope content pinned subject tenantId createdBy createdAt updatedAt"
WRITE = f"""
mutation($input: WriteMemoryInput!) {{ writeMemory(input: $input) {{ {ENTRY} }} }}"""
UPDATE = f"""
mutation($id: ID!, $input: UpdateMemoryInput!) {{
  updateMemory(id: $id, input: $input) {{ {ENTRY} }} }}"""
DELETE = "mutation($id: ID!) { deleteMemory(id: $id) }"
RECENT = f"""
query($scopes: [String!]!, $limit: Int, $subject: String) {{
  recentMemory(scopes: $scopes, limit: $limit, subject: $subject) {{ {ENTRY} }} }}"""
ENTRIES = """
query($scope: String!, $subject: String, $first: Int, $after: String) {
  memoryEntries(scope: $scope, subject: $subject, first: $first, after: $after) {
    edges { cursor node { id content pinned } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    totalCount totalChars } }"""
SEARCH = """
query($query: String!, $scopes: [String!]!, $first: Int, $subject: String) {
  searchMemory(query: $query, scopes: $scopes, first: $first, subject: $subject) {
    score entry { id content scope } } }"""

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme"}
AGENT = {"X-User-Id": "runtime", "X-Tenant-Id": "acme", "X-Roles": "agent"}


async def write(client: GraphQLClient, scope: str, content: str, headers: dict[str, str]
                = ALICE, **extra: Any) -> dict[str, Any]:
    data = await client.data(WRITE, {"input": {"scope": scope, "content": content, **extra}},
                             headers)
    entry: dict[str, Any] = data["writeMemory"]
    return entry


async def recent(client: GraphQLClient, scopes: list[str], headers: dict[str, str] = ALICE,
                 **variables: Any) -> list[dict[str, Any]]:
    data = await client.data(RECENT, {"scopes": scopes, **variables}, headers)
    entries: list[dict[str, Any]] = data["recentMemory"]
    return entries


async def search(client: GraphQLClient, query: str, scopes: list[str],
                 headers: dict[str, str] = ALICE, **variables: Any) -> list[dict[str, Any]]:
    data = await client.data(SEARCH, {"query": query, "scopes": scopes, **variables}, headers)
    hits: list[dict[str, Any]] = data["searchMemory"]
    return hits


@pytest.fixture
async def capped(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """A client of an app with small limits: 40 characters an entry, 50 a scope."""
    small = dataclasses.replace(settings, memory_entry_chars=40, memory_scope_chars=50)
    async with running_app(small) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield GraphQLClient(http)


async def test_write_defaults_to_the_caller(client: GraphQLClient) -> None:
    entry = await write(client, "_global", "Prefers short answers")
    assert entry["subject"] == "alice" and entry["tenantId"] == "acme"
    assert entry["createdBy"] == "alice" and entry["pinned"] is False
    by_agent = await write(client, "_global", "Lives in Lisbon", AGENT, subject="alice")
    assert by_agent["subject"] == "alice" and by_agent["createdBy"] == "runtime"
    assert [e["id"] for e in await recent(client, ["_global"])] == [by_agent["id"], entry["id"]]


async def test_recent_memory_pinned_first_then_recently_updated(client: GraphQLClient) -> None:
    old_global = await write(client, "_global", "Prefers metric units")
    pinned_ws = await write(client, "ws-1", "Deploys on Fridays are forbidden", pinned=True)
    ws_note = await write(client, "ws-1", "The repo uses uv")
    pinned_global = await write(client, "_global", "Call me Al", pinned=True)
    other_ws = await write(client, "ws-2", "Not in the asked scopes")
    new_global = await write(client, "_global", "Writes Python 3.11")
    # Updating moves an entry up among the unpinned ones.
    await client.data(UPDATE, {"id": old_global["id"], "input": {"content": "Prefers SI units"}},
                      ALICE)

    entries = await recent(client, ["_global", "ws-1"])
    assert [e["id"] for e in entries] == [
        pinned_global["id"], pinned_ws["id"], old_global["id"], new_global["id"], ws_note["id"]]
    assert other_ws["id"] not in {e["id"] for e in entries}
    assert [e["id"] for e in await recent(client, ["_global", "ws-1"], limit=3)] == [
        pinned_global["id"], pinned_ws["id"], old_global["id"]]
    assert [e["id"] for e in await recent(client, ["ws-1"])] == [pinned_ws["id"], ws_note["id"]]
    # Someone else's memory is not mixed in, and they see none of alice's.
    assert await recent(client, ["_global", "ws-1"], BOB) == []


async def test_memory_entries_walked_page_by_page(client: GraphQLClient) -> None:
    written = [await write(client, "proj", f"note number {i}", pinned=i in (2, 5))
               for i in range(7)]
    await write(client, "elsewhere", "not in this scope")
    expected = ([written[5]["id"], written[2]["id"]]
                + [written[i]["id"] for i in (6, 4, 3, 1, 0)])

    seen: list[str] = []
    flags: list[tuple[bool, bool]] = []
    after = None
    while True:
        data = (await client.data(ENTRIES, {"scope": "proj", "first": 3, "after": after},
                                  ALICE))["memoryEntries"]
        assert data["totalCount"] == 7
        assert data["totalChars"] == sum(len(w["content"]) for w in written)
        seen += [edge["node"]["id"] for edge in data["edges"]]
        info = data["pageInfo"]
        flags.append((info["hasPreviousPage"], info["hasNextPage"]))
        assert info["startCursor"] == data["edges"][0]["cursor"]
        assert info["endCursor"] == data["edges"][-1]["cursor"]
        if not info["hasNextPage"]:
            break
        after = info["endCursor"]
    assert seen == expected
    assert flags == [(False, True), (True, True), (True, False)]

    # Exactly three entries and a page of three: no next page, exactly.
    data = (await client.data(ENTRIES, {"scope": "proj", "first": 6}, ALICE))["memoryEntries"]
    assert data["pageInfo"]["hasNextPage"] is True
    data = (await client.data(ENTRIES, {"scope": "proj", "first": 7}, ALICE))["memoryEntries"]
    assert data["pageInfo"]["hasNextPage"] is False
    empty = (await client.data(ENTRIES, {"scope": "nothing"}, ALICE))["memoryEntries"]
    assert empty == {"edges": [], "pageInfo": {"hasNextPage": False, "hasPreviousPage": False,
                     "startCursor": None, "endCursor": None}, "totalCount": 0, "totalChars": 0}


async def test_tampered_and_foreign_cursors_are_invalid(client: GraphQLClient) -> None:
    for i in range(3):
        await write(client, "proj", f"note {i}")
        await write(client, "proj", f"bob's note {i}", BOB)
        await write(client, "other", f"other note {i}")
    page = (await client.data(ENTRIES, {"scope": "proj", "first": 1}, ALICE))["memoryEntries"]
    cursor = page["pageInfo"]["endCursor"]
    body, _, mac = cursor.partition(".")
    tampered = [
        "garbage", "", cursor + "x", body + "." + mac[::-1], body[:-2] + "AA." + mac,
        cursor.replace(".", ""),
    ]
    for bad in tampered:
        assert await client.error_code(ENTRIES, {"scope": "proj", "after": bad},
                                       ALICE) == "INVALID_CURSOR", bad
    # Issued for another scope, another subject, or another tenant.
    assert await client.error_code(ENTRIES, {"scope": "other", "after": cursor},
                                   ALICE) == "INVALID_CURSOR"
    assert await client.error_code(ENTRIES, {"scope": "proj", "after": cursor},
                                   BOB) == "INVALID_CURSOR"
    assert await client.error_code(ENTRIES, {"scope": "proj", "subject": "bob",
                                             "after": cursor}, AGENT) == "INVALID_CURSOR"
    assert await client.error_code(ENTRIES, {"scope": "proj", "after": cursor},
                                   {**ALICE, "X-Tenant-Id": "other"}) == "INVALID_CURSOR"
    # The same cursor for the same list by an agent naming alice is fine.
    data = await client.data(ENTRIES, {"scope": "proj", "subject": "alice", "after": cursor},
                             AGENT)
    assert len(data["memoryEntries"]["edges"]) == 2


async def test_update_keeps_id_and_created_at(client: GraphQLClient) -> None:
    entry = await write(client, "_global", "Likes tea")
    await asyncio.sleep(0.002)
    updated = (await client.data(UPDATE, {"id": entry["id"], "input": {
        "content": "Likes green tea", "pinned": True}}, ALICE))["updateMemory"]
    assert updated["id"] == entry["id"] and updated["createdAt"] == entry["createdAt"]
    assert updated["updatedAt"] > entry["updatedAt"]
    assert (updated["content"], updated["pinned"]) == ("Likes green tea", True)
    only_pin = (await client.data(UPDATE, {"id": entry["id"], "input": {"pinned": False}},
                                  ALICE))["updateMemory"]
    assert (only_pin["content"], only_pin["pinned"]) == ("Likes green tea", False)
    assert await client.error_code(UPDATE, {"id": entry["id"], "input": {}},
                                   ALICE) == "INVALID_ARGUMENT"
    assert await client.error_code(UPDATE, {"id": "no-such-entry", "input": {"pinned": True}},
                                   ALICE) == "NOT_FOUND"
    assert await client.data(DELETE, {"id": entry["id"]}, ALICE) == {"deleteMemory": True}
    assert await client.error_code(DELETE, {"id": entry["id"]}, ALICE) == "NOT_FOUND"
    assert await recent(client, ["_global"]) == []


async def test_write_id_makes_a_write_idempotent(capped: GraphQLClient, db: Database) -> None:
    first = await write(capped, "_global", "Prefers tabs", writeId="w-1")
    again = await write(capped, "_global", "Prefers tabs", writeId="w-1")
    assert again == first
    assert len(await recent(capped, ["_global"])) == 1
    before = await store_fingerprint(db)
    for changed in ({"content": "Prefers spaces"}, {"pinned": True}, {"scope": "ws"}):
        variables = {"input": {"scope": "_global", "content": "Prefers tabs", "writeId": "w-1",
                               **changed}}
        assert await capped.error_code(WRITE, variables, ALICE) == "CONFLICT", changed
    assert await store_fingerprint(db) == before
    # Fill the scope; a retry of the earlier write is still answered, not MEMORY_FULL.
    await write(capped, "_global", "x" * (50 - len("Prefers tabs")))
    assert await write(capped, "_global", "Prefers tabs", writeId="w-1") == first
    # Keys are per subject: bob may use the same writeId for his own memory.
    bobs = await write(capped, "_global", "Prefers tabs", BOB, writeId="w-1")
    assert bobs["id"] != first["id"] and bobs["subject"] == "bob"
    # Concurrent retries of one write make one entry.
    results = await asyncio.gather(*(
        write(capped, "ws", "Same note", writeId="w-2") for _ in range(5)))
    assert len({entry["id"] for entry in results}) == 1
    assert len(await recent(capped, ["ws"])) == 1


async def test_the_scope_cap_at_its_edge(capped: GraphQLClient, db: Database) -> None:
    big = await write(capped, "ws", "a" * 30)
    edge = await write(capped, "ws", "b" * 20)  # exactly at the limit: accepted
    before = await store_fingerprint(db)
    body = await capped.execute(WRITE, {"input": {"scope": "ws", "content": "c"}}, ALICE)
    error = body["errors"][0]
    assert error["extensions"] == {"code": "MEMORY_FULL", "scopeChars": 50, "limit": 50}
    assert "50 of 50" in error["message"] and body["data"] is None
    # An update that grows the scope past the cap is refused the same way.
    body = await capped.execute(UPDATE, {"id": edge["id"], "input": {"content": "b" * 21}},
                                ALICE)
    assert body["errors"][0]["extensions"] == {"code": "MEMORY_FULL", "scopeChars": 50,
                                               "limit": 50}
    assert await store_fingerprint(db) == before
    # Other scopes and other subjects have their own caps.
    await write(capped, "other", "d" * 40)
    await write(capped, "ws", "e" * 40, BOB)
    # An update that shrinks is accepted, and frees exactly what it gave up.
    await capped.data(UPDATE, {"id": big["id"], "input": {"content": "a" * 10}}, ALICE)
    await write(capped, "ws", "f" * 20)
    assert await capped.error_code(WRITE, {"input": {"scope": "ws", "content": "g"}},
                                   ALICE) == "MEMORY_FULL"
    await capped.data(DELETE, {"id": edge["id"]}, ALICE)
    await write(capped, "ws", "h" * 20)
    page = (await capped.data(ENTRIES, {"scope": "ws"}, ALICE))["memoryEntries"]
    assert page["totalChars"] == 50 == sum(len(e["node"]["content"]) for e in page["edges"])
    # Over the entry limit is INVALID_ARGUMENT, even in an empty scope.
    assert await capped.error_code(WRITE, {"input": {"scope": "empty", "content": "i" * 41}},
                                   ALICE) == "INVALID_ARGUMENT"
    await write(capped, "empty", "i" * 40)


async def test_twenty_concurrent_writers_never_pass_the_cap(capped: GraphQLClient) -> None:
    async def attempt(index: int) -> str:
        body = await capped.execute(WRITE, {"input": {
            "scope": "race", "content": f"note {index:05d}"}}, ALICE)  # 10 characters
        return body["errors"][0]["extensions"]["code"] if "errors" in body else "OK"

    outcomes = await asyncio.gather(*(attempt(i) for i in range(20)))
    assert outcomes.count("OK") == 5
    assert outcomes.count("MEMORY_FULL") == 15
    page = (await capped.data(ENTRIES, {"scope": "race", "first": 100}, ALICE))["memoryEntries"]
    assert page["totalCount"] == 5
    assert page["totalChars"] == 50 == sum(len(e["node"]["content"]) for e in page["edges"])


@pytest.mark.parametrize("variables", [
    {"scope": "ws", "content": ""},
    {"scope": "ws", "content": "   \n "},
    {"scope": "ws", "content": "null \x00 byte"},
    {"scope": "ws", "content": "x" * 4_001},
    {"scope": "", "content": "note"},
    {"scope": "s" * 201, "content": "note"},
    {"scope": "line\nbreak", "content": "note"},
    {"scope": "ws", "content": "note", "subject": ""},
    {"scope": "ws", "content": "note", "subject": "tab\tbed"},
    {"scope": "ws", "content": "note", "writeId": " padded"},
    {"scope": "ws", "content": "note", "writeId": "w" * 129},
], ids=lambda v: repr(v)[:40])
async def test_bad_writes_are_refused_and_change_nothing(
    client: GraphQLClient, db: Database, variables: dict[str, Any]
) -> None:
    await write(client, "ws", "already here")
    before = await store_fingerprint(db)
    body = await client.execute(WRITE, {"input": variables}, ALICE)
    assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT", body
    assert "Traceback" not in body["errors"][0]["message"]
    assert await store_fingerprint(db) == before


async def test_bad_reads_are_invalid_arguments(client: GraphQLClient) -> None:
    entry = await write(client, "ws", "a note")
    for document, variables in [
        (RECENT, {"scopes": []}), (RECENT, {"scopes": ["ws"], "limit": 0}),
        (RECENT, {"scopes": ["bad\x01scope"]}), (ENTRIES, {"scope": "ws", "first": 0}),
        (ENTRIES, {"scope": ""}), (SEARCH, {"query": "   ", "scopes": ["ws"]}),
        (SEARCH, {"query": "note", "scopes": []}),
        (UPDATE, {"id": entry["id"], "input": {"content": "bad \x00"}}),
        (UPDATE, {"id": entry["id"], "input": {"content": ""}}),
    ]:
        assert await client.error_code(document, variables, ALICE) == "INVALID_ARGUMENT", (
            variables)
    assert len(await recent(client, ["ws"], limit=500)) == 1  # limit is capped, not refused


async def test_search_ranks_and_never_errs(client: GraphQLClient) -> None:
    once = await write(client, "ws", "the deploy script lives in the ops folder of the repo")
    often = await write(client, "ws", "deploy deploy: always deploy with make")
    await write(client, "ws", "friday is a holiday")
    await write(client, "other", "deploy notes in another scope")
    await write(client, "ws", "bob deploys too", BOB)
    hits = await search(client, "deploy", ["ws"])
    assert [hit["entry"]["id"] for hit in hits] == [often["id"], once["id"]]
    assert hits[0]["score"] > hits[1]["score"] > 0
    # Every word must occur.
    assert [h["entry"]["id"] for h in await search(client, "deploy folder", ["ws"])] == [
        once["id"]]
    assert await search(client, "deploy holiday", ["ws"]) == []
    assert len(await search(client, "deploy", ["ws", "other"])) == 3
    assert len(await search(client, "deploy", ["ws"], first=1)) == 1
    # Near-ties: the most recently written first.
    twin_old = await write(client, "twins", "identical twin sentence")
    twin_new = await write(client, "twins", "identical twin sentence")
    assert [h["entry"]["id"] for h in await search(client, "twin", ["twins"])] == [
        twin_new["id"], twin_old["id"]]
    unicode = await write(client, "ws", "Café in München, 東京 and emoji 🎉")
    assert [h["entry"]["id"] for h in await search(client, "café münchen", ["ws"])] == [
        unicode["id"]]
    for hostile in ['"', '""', "*", "-", "- deploy", "deploy -make", "AND", "deploy AND",
                    "OR NOT", "NEAR(", "NEAR(deploy make)", "deploy*", "^deploy", "col:deploy",
                    "body:deploy", "owner:x", "(", ")", "{", "'", "\\", "東京", "🎉", "ü" * 300]:
        await search(client, hostile, ["ws"])  # answers without an error
    assert [h["entry"]["id"] for h in await search(client, "deploy*", ["ws"])] == [
        often["id"], once["id"]]


async def test_search_follows_updates_and_deletes(client: GraphQLClient) -> None:
    entry = await write(client, "ws", "favourite colour is blue")
    assert len(await search(client, "blue", ["ws"])) == 1
    await client.data(UPDATE, {"id": entry["id"], "input": {"content": "favourite colour is red"}},
                      ALICE)
    assert await search(client, "blue", ["ws"]) == []
    assert len(await search(client, "red", ["ws"])) == 1
    await client.data(DELETE, {"id": entry["id"]}, ALICE)
    assert await search(client, "red", ["ws"]) == []
    assert await search(client, "favourite colour", ["ws"]) == []


LIFECYCLE = {
    "create": 'mutation { createChat(input: {id: "c1", assistantId: "a"}) { id } }',
    "append": 'mutation { appendMessages(chatId: "c1", appendId: "x", messages: ['
              '{role: USER, type: "user_input", props: {content: "hi"}}]) { chatId } }',
    "startOver": 'mutation { startOver(chatId: "c1") { id } }',
    "compactChat": 'mutation { compactChat(chatId: "c1", summary: "recap") { id } }',
    "deleteChat": 'mutation { deleteChat(id: "c1") }',
    "restoreChat": 'mutation { restoreChat(id: "c1") { id } }',
    "purgeChat": 'mutation { purgeChat(id: "c1") }',
}


async def test_chat_lifecycle_leaves_memory_as_it_was(client: GraphQLClient) -> None:
    await write(client, "_global", "Knows the person across chats", pinned=True)
    await write(client, "ws", "A workspace note")

    async def memory() -> Any:
        return (await recent(client, ["_global", "ws"]),
                await client.data(ENTRIES, {"scope": "ws"}, ALICE),
                await search(client, "note", ["ws"]))

    before = await memory()
    for name, document in LIFECYCLE.items():
        await client.data(document, headers=ALICE)
        assert await memory() == before, name


MODEL_CONTEXT = """
query($chat: ID!, $limit: Int!, $scopes: [String!]) {
  modelContext(chatId: $chat, limit: $limit, memoryScopes: $scopes) {
    id role type props sequence } }"""


async def test_model_context_opens_with_the_creators_memory(client: GraphQLClient) -> None:
    await client.data('mutation { createChat(input: {id: "c1", assistantId: "a", '
                      'public: true}) { id } }', headers=ALICE)
    for turn in range(3):
        await client.data(
            'mutation($id: String!) { appendMessages(chatId: "c1", appendId: $id, messages: ['
            '{role: USER, type: "user_input", props: {content: "q"}},'
            '{role: ASSISTANT, type: "text", props: {content: "a"}}]) { chatId } }',
            {"id": f"t{turn}"}, ALICE)
    pinned = await write(client, "ws", "Pinned fact", pinned=True)
    note = await write(client, "_global", "Global preference")
    await write(client, "unasked", "Left out")
    await write(client, "ws", "The agent's own note", AGENT)

    plain = (await client.data(MODEL_CONTEXT, {"chat": "c1", "limit": 4}, ALICE))["modelContext"]
    assert [m["role"] for m in plain] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]

    expected_entries = [
        {"id": e["id"], "scope": e["scope"], "content": e["content"], "pinned": e["pinned"]}
        for e in await recent(client, ["_global", "ws"])]
    assert [e["id"] for e in expected_entries] == [pinned["id"], note["id"]]
    # An agent asking gets the chat creator's memory, not its own.
    for headers in (ALICE, AGENT):
        context = (await client.data(MODEL_CONTEXT, {"chat": "c1", "limit": 5,
                                                     "scopes": ["_global", "ws"]},
                                     headers))["modelContext"]
        first = context[0]
        assert (first["role"], first["type"], first["sequence"]) == ("SYSTEM", "memory", 0)
        assert first["props"] == {"entries": expected_entries}
        # It counts as one message: only two whole turns fit beside it.
        assert [m["role"] for m in context[1:]] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]

    # Before a compaction summary too.
    await client.data('mutation { compactChat(chatId: "c1", summary: "recap") { id } }',
                      headers=ALICE)
    await client.data('mutation { appendMessages(chatId: "c1", appendId: "after", messages: ['
                      '{role: USER, type: "user_input", props: {content: "next"}}]) '
                      '{ chatId } }', headers=ALICE)
    context = (await client.data(MODEL_CONTEXT, {"chat": "c1", "limit": 3, "scopes": ["ws"]},
                                 ALICE))["modelContext"]
    assert [(m["type"], m["props"]) for m in context] == [
        ("memory", {"entries": [expected_entries[0]]}), ("text", {"content": "recap"}),
        ("user_input", {"content": "next"})]
    assert await client.error_code(MODEL_CONTEXT, {"chat": "c1", "limit": 2, "scopes": ["ws"]},
                                   ALICE) == "WINDOW_TOO_SMALL"
    assert await client.error_code(MODEL_CONTEXT, {"chat": "c1", "limit": 3, "scopes": []},
                                   ALICE) == "INVALID_ARGUMENT"
    # A reader of the public chat gets the message without the creator's memory.
    context = (await client.data(MODEL_CONTEXT, {"chat": "c1", "limit": 3, "scopes": ["ws"]},
                                 BOB))["modelContext"]
    assert context[0]["props"] == {"entries": []} and len(context) == 3
