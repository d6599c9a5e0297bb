"""Conversation lifecycle over HTTP on every backend: purge, start over,
compaction and the model's context."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import column, func, insert, select, table

from chatql.store.db.database import Database
from chatql.store.db.tables import append_receipts, chats, closed_chats, messages, resume_records
from tests.conftest import GraphQLClient

CREATE = "mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"
APPEND = """
mutation($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages) { messageIds }
}"""
CONTEXT = """query($chatId: ID!, $limit: Int!) {
  modelContext(chatId: $chatId, limit: $limit) { id role type props sequence status } }"""
START_OVER = """mutation($chatId: ID!) {
  startOver(chatId: $chatId) { id role type props sequence } }"""
COMPACT = """mutation($chatId: ID!, $summary: String!) {
  compactChat(chatId: $chatId, summary: $summary) { id role type props sequence } }"""
UPDATE = """mutation($id: ID!, $input: UpdateMessageInput!) {
  updateMessage(id: $id, input: $input) { id status } }"""
HISTORY = """query($chatId: ID!) { messages(chatId: $chatId, last: 200) {
  edges { node { id type sequence } } } }"""
PURGE = "mutation($id: ID!) { purgeChat(id: $id) }"

_append_ids = itertools.count()
Headers = dict[str, str] | None


def msg(role: str, type: str, content: str = "x") -> dict[str, Any]:
    return {"role": role, "type": type, "props": {"content": content}}


def user(content: str = "question") -> dict[str, Any]:
    return msg("USER", "user_input", content)


def reply(content: str = "answer") -> dict[str, Any]:
    return msg("ASSISTANT", "text", content)


async def create(client: GraphQLClient, chat_id: str, headers: Headers = None,
                 **input: Any) -> None:
    await client.data(CREATE, {"input": {"assistantId": "helper", "id": chat_id, **input}},
                      headers)


async def append(client: GraphQLClient, chat_id: str, *batch: dict[str, Any],
                 append_id: str | None = None, headers: Headers = None) -> list[str]:
    variables = {"chatId": chat_id, "appendId": append_id or f"a{next(_append_ids)}",
                 "messages": list(batch)}
    data = await client.data(APPEND, variables, headers)
    ids: list[str] = data["appendMessages"]["messageIds"]
    return ids


async def context(client: GraphQLClient, chat_id: str, limit: int) -> list[dict[str, Any]]:
    data = await client.data(CONTEXT, {"chatId": chat_id, "limit": limit})
    items: list[dict[str, Any]] = data["modelContext"]
    return items


async def context_ids(client: GraphQLClient, chat_id: str, limit: int) -> list[str]:
    return [m["id"] for m in await context(client, chat_id, limit)]


async def history(client: GraphQLClient, chat_id: str) -> list[dict[str, Any]]:
    data = await client.data(HISTORY, {"chatId": chat_id})
    return [edge["node"] for edge in data["messages"]["edges"]]


# --- modelContext --------------------------------------------------------------------


async def test_turns_with_tool_calls_are_kept_whole(client: GraphQLClient) -> None:
    await create(client, "c1")
    first = await append(client, "c1", user("weather?"), reply("sunny"))
    second = await append(
        client, "c1",
        user("and tomorrow?"),
        msg("ASSISTANT", "tool_call", "forecast(tomorrow)"),
        msg("TOOL", "tool_result", "rain"),
        reply("rain tomorrow"),
    )
    assert await context_ids(client, "c1", 4) == second
    # Room for one more message is not room for the older two-message turn.
    assert await context_ids(client, "c1", 5) == second
    assert await context_ids(client, "c1", 6) == first + second
    assert await context_ids(client, "c1", 100) == first + second
    for limit in (1, 3):
        assert await client.error_code(CONTEXT, {"chatId": "c1", "limit": limit}) == (
            "WINDOW_TOO_SMALL")


async def test_start_over_twice_draws_one_boundary(client: GraphQLClient) -> None:
    await create(client, "c1")
    await append(client, "c1", user(), reply())
    first = (await client.data(START_OVER, {"chatId": "c1"}))["startOver"]
    assert (first["role"], first["type"], first["sequence"]) == ("SYSTEM", "boundary", 3)
    again = (await client.data(START_OVER, {"chatId": "c1"}))["startOver"]
    assert again == first
    assert [m["type"] for m in await history(client, "c1")] == [
        "user_input", "text", "boundary"]
    # People still see everything; the model sees nothing from before the boundary.
    assert await context(client, "c1", 10) == []
    after = await append(client, "c1", user("new subject"), reply())
    assert await context_ids(client, "c1", 10) == after
    second = (await client.data(START_OVER, {"chatId": "c1"}))["startOver"]
    assert second["id"] != first["id"] and second["sequence"] == 6


async def test_start_over_pressed_at_once_still_draws_one(client: GraphQLClient) -> None:
    await create(client, "c1")
    await append(client, "c1", user(), reply())
    results = await asyncio.gather(*(
        client.data(START_OVER, {"chatId": "c1"}) for _ in range(8)
    ))
    assert len({r["startOver"]["id"] for r in results}) == 1
    assert [m["type"] for m in await history(client, "c1")].count("boundary") == 1


async def test_compaction_summary_comes_first_and_counts(client: GraphQLClient) -> None:
    await create(client, "c1")
    await append(client, "c1", user("long story"), reply("long answer"))
    boundary = (await client.data(COMPACT, {"chatId": "c1", "summary": "They met."}))[
        "compactChat"]
    assert (boundary["role"], boundary["type"]) == ("SYSTEM", "boundary")
    assert boundary["props"] == {"summary": "They met."}
    assert await context(client, "c1", 1) == [{
        "id": boundary["id"], "role": "SYSTEM", "type": "text",
        "props": {"content": "They met."}, "sequence": 3, "status": "COMPLETED"}]
    turn = await append(client, "c1", user("next"), reply("sure"))
    items = await context(client, "c1", 3)
    assert [m["id"] for m in items] == [boundary["id"], *turn]
    assert items[0]["props"] == {"content": "They met."}
    # The summary takes one place of the limit.
    assert await client.error_code(CONTEXT, {"chatId": "c1", "limit": 2}) == (
        "WINDOW_TOO_SMALL")
    # A newer compaction replaces the older recap; startOver right after returns it.
    newer = (await client.data(COMPACT, {"chatId": "c1", "summary": "Later."}))["compactChat"]
    pressed = (await client.data(START_OVER, {"chatId": "c1"}))["startOver"]
    assert pressed["id"] == newer["id"]
    assert [m["props"] for m in await context(client, "c1", 5)] == [{"content": "Later."}]
    # A plain boundary after a compaction hides the summary too.
    await append(client, "c1", user(), reply())
    await client.data(START_OVER, {"chatId": "c1"})
    assert await context(client, "c1", 5) == []


async def test_ui_only_types_are_left_out(client: GraphQLClient) -> None:
    await create(client, "c1")
    written = await append(
        client, "c1",
        user("hi"),
        msg("ASSISTANT", "loading", "thinking..."),
        msg("ASSISTANT", "thinking", "hmm"),
        msg("ASSISTANT", "action", "open panel"),
        msg("ASSISTANT", "error", "tool crashed"),
        reply("hello"),
    )
    # thinking is the model's own reasoning: left out unless asked for.
    assert await context_ids(client, "c1", 3) == [written[0], written[5]]
    data = await client.data(
        "query { modelContext(chatId: \"c1\", limit: 3, includeThinking: true) { id } }")
    assert [m["id"] for m in data["modelContext"]] == [written[0], written[2], written[5]]


async def test_failed_stream_messages_never_reach_the_model(client: GraphQLClient) -> None:
    await create(client, "c1")
    good = await append(client, "c1", user("one"), reply("fine"))
    failed = await append(client, "c1", user("two"), reply("half an ans"))
    later = await append(client, "c1", user("three"), reply("fine again"))
    for message_id in failed:
        await client.data(UPDATE, {"id": message_id, "input": {"status": "FAILED"}})
    assert await context_ids(client, "c1", 10) == good + later
    assert await context_ids(client, "c1", 4) == good + later
    # People still see the failed turn.
    assert len(await history(client, "c1")) == 6


async def test_unled_messages_after_a_boundary_are_one_unit(client: GraphQLClient) -> None:
    await create(client, "c1")
    await client.data(START_OVER, {"chatId": "c1"})
    greeting = await append(client, "c1", reply("Welcome back!"))
    turn = await append(client, "c1", user(), reply())
    assert await context_ids(client, "c1", 3) == greeting + turn
    assert await context_ids(client, "c1", 2) == turn
    # A chat with no USER message at all is one unit too.
    await create(client, "c2")
    lone = await append(client, "c2", reply("a"), reply("b"))
    assert await context_ids(client, "c2", 2) == lone
    assert await client.error_code(CONTEXT, {"chatId": "c2", "limit": 1}) == (
        "WINDOW_TOO_SMALL")


async def test_long_chats_are_read_in_pages(client: GraphQLClient) -> None:
    await create(client, "c1")
    ids: list[str] = []
    for start in range(0, 300, 100):
        ids += await append(client, "c1", *[
            user(str(i)) if i % 2 == 0 else reply(str(i)) for i in range(start, start + 100)])
    assert await context_ids(client, "c1", 200) == ids[-200:]
    assert await context_ids(client, "c1", 201) == ids[-200:]
    assert await context_ids(client, "c1", 1000) == ids


async def test_bad_lifecycle_input_changes_nothing(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    await create(client, "c1")
    await append(client, "c1", user(), reply())
    before = await history(client, "c1")
    for limit in (0, -1):
        assert await client.error_code(CONTEXT, {"chatId": "c1", "limit": limit}) == (
            "INVALID_ARGUMENT")
    for summary in ("", "   "):
        assert await client.error_code(COMPACT, {"chatId": "c1", "summary": summary}) == (
            "INVALID_ARGUMENT")
    assert await client.error_code(START_OVER, {"chatId": "bad id"}) == "INVALID_ARGUMENT"
    assert await client.error_code(START_OVER, {"chatId": "nope"}) == "NOT_FOUND"
    assert await client.error_code(CONTEXT, {"chatId": "nope", "limit": 5}) == "NOT_FOUND"
    # Others cannot see it; a public reader may read the context but not draw lines.
    eve = make_headers(user="eve", tenant="default")  # the chat's tenant, not its owner
    assert await client.error_code(START_OVER, {"chatId": "c1"}, eve) == "NOT_FOUND"
    assert await client.error_code(CONTEXT, {"chatId": "c1", "limit": 5}, eve) == "NOT_FOUND"
    await client.data('mutation { updateChat(id: "c1", input: {public: true}) { id } }')
    assert await client.error_code(START_OVER, {"chatId": "c1"}, eve) == "FORBIDDEN"
    assert await client.error_code(COMPACT, {"chatId": "c1", "summary": "s"}, eve) == (
        "FORBIDDEN")
    assert len((await client.data(CONTEXT, {"chatId": "c1", "limit": 5}, eve))[
        "modelContext"]) == 2
    assert await history(client, "c1") == before


# --- purgeChat ------------------------------------------------------------------------


async def rows_of(db: Database, chat_id: str) -> dict[str, int]:
    async with db.read() as conn:
        counts = {
            table.name: await conn.scalar(
                select(func.count()).select_from(table).where(
                    (table.c.id if table in (chats, closed_chats) else table.c.chat_id)
                    == chat_id))
            for table in (chats, messages, resume_records, append_receipts, closed_chats)
        }
        if db.is_sqlite:
            counts["search"] = await conn.scalar(
                select(func.count()).select_from(messages.join(
                    _keys, _keys.c.message_id == messages.c.id))
                .where(messages.c.chat_id == chat_id))
    return {name: int(count or 0) for name, count in counts.items()}


_keys = table("message_search_keys", column("message_id"))


async def add_resume_record(db: Database, chat_id: str) -> None:
    stamp = datetime.now(UTC)
    async with db.write() as conn:
        await conn.execute(insert(resume_records).values(
            id=f"r-{chat_id}", chat_id=chat_id, type="llm", status="interrupted", sequence=1,
            created_at=stamp, updated_at=stamp))


async def test_purge_removes_everything_and_closes_the_id(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    await create(client, "c1")
    accepted = {"chatId": "c1", "appendId": "batch-1", "messages": [user("secret words")]}
    await client.data(APPEND, accepted)
    await add_resume_record(db, "c1")
    assert (await rows_of(db, "c1"))["resume_records"] == 1

    assert (await client.data(PURGE, {"id": "c1"}))["purgeChat"] is True
    counts = await rows_of(db, "c1")
    assert counts.pop("closed_chats") == 1
    assert set(counts.values()) == {0}, counts
    # Reads as absent everywhere.
    assert (await client.data('query { chat(id: "c1") { id } }'))["chat"] is None
    assert await client.error_code(HISTORY, {"chatId": "c1"}) == "NOT_FOUND"
    assert await client.error_code(CONTEXT, {"chatId": "c1", "limit": 5}) == "NOT_FOUND"
    search = 'query { searchMessages(query: "secret") { message { id } } }'
    assert (await client.data(search))["searchMessages"] == []
    # Closed forever: appends (new or retried), boundaries and re-creation.
    assert await client.error_code(APPEND, accepted) == "CHAT_CLOSED"
    assert await client.error_code(APPEND, {**accepted, "appendId": "new"}) == "CHAT_CLOSED"
    assert await client.error_code(START_OVER, {"chatId": "c1"}) == "CHAT_CLOSED"
    assert await client.error_code(COMPACT, {"chatId": "c1", "summary": "s"}) == "CHAT_CLOSED"
    assert await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "c1"}}) == (
        "CONFLICT")
    other_tenant = make_headers(user="zed", tenant="elsewhere")
    assert await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "c1"}},
                                   other_tenant) == "CONFLICT"
    assert await client.error_code('mutation { restoreChat(id: "c1") { id } }') == "NOT_FOUND"
    # Purging again succeeds and changes nothing.
    assert (await client.data(PURGE, {"id": "c1"}))["purgeChat"] is True
    assert (await rows_of(db, "c1"))["closed_chats"] == 1


async def test_purge_of_a_soft_deleted_chat(client: GraphQLClient, db: Database) -> None:
    await create(client, "c1")
    await append(client, "c1", user())
    await client.data('mutation { deleteChat(id: "c1") }')
    assert (await client.data(PURGE, {"id": "c1"}))["purgeChat"] is True
    assert (await rows_of(db, "c1"))["messages"] == 0
    assert await client.error_code(APPEND, {"chatId": "c1", "appendId": "x",
                                            "messages": [user()]}) == "CHAT_CLOSED"


async def test_purge_by_others_changes_nothing(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice", tenant="acme")
    bob = make_headers(user="bob", tenant="acme")
    eve = make_headers(user="eve", tenant="evil", roles="admin")
    await create(client, "c1", alice)
    await append(client, "c1", user(), headers=alice)
    before = await rows_of(db, "c1")
    assert await client.error_code(PURGE, {"id": "c1"}, bob) == "NOT_FOUND"
    assert await client.error_code(PURGE, {"id": "c1"}, eve) == "NOT_FOUND"
    await client.data('mutation { updateChat(id: "c1", input: {public: true}) { id } }',
                      headers=alice)
    assert await client.error_code(PURGE, {"id": "c1"}, bob) == "FORBIDDEN"
    assert await rows_of(db, "c1") == before


async def test_purge_of_a_never_used_id_closes_it(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice", tenant="acme")
    bob = make_headers(user="bob", tenant="acme")
    eve = make_headers(user="eve", tenant="evil")
    assert (await client.data(PURGE, {"id": "fresh"}, alice))["purgeChat"] is True
    assert (await rows_of(db, "fresh"))["closed_chats"] == 1
    # Closed like any purged id: for its purger's tenant and for everyone else.
    code = await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "fresh"}}, alice)
    assert code == "CONFLICT"
    for headers in (alice, bob):
        assert await client.error_code(APPEND, {"chatId": "fresh", "appendId": "x",
                                                "messages": [user()]}, headers) == "CHAT_CLOSED"
    code = await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "fresh"}}, eve)
    assert code == "CONFLICT"
    # Purging again succeeds; another tenant's purge of it reads like a taken id.
    assert (await client.data(PURGE, {"id": "fresh"}, bob))["purgeChat"] is True
    assert await client.error_code(PURGE, {"id": "fresh"}, eve) == "NOT_FOUND"
    assert (await rows_of(db, "fresh"))["closed_chats"] == 1
    assert await client.error_code(PURGE, {"id": "bad id!"}, alice) == "INVALID_ARGUMENT"


@pytest.mark.parametrize("round_", range(6))
async def test_purge_racing_appends_leaves_nothing_behind(
    client: GraphQLClient, db: Database, round_: int
) -> None:
    chat_id = f"race{round_}"
    await create(client, chat_id)
    await append(client, chat_id, user("before"))
    # Stagger the purge among the appends differently each round.
    calls: list[Any] = [
        client.execute(APPEND, {"chatId": chat_id, "appendId": f"r{i}",
                                "messages": [user(f"racing {i}"), reply()]})
        for i in range(4)
    ]
    calls.insert(round_ % 5, client.execute(PURGE, {"id": chat_id}))
    results = await asyncio.gather(*calls)
    purge = results.pop(round_ % 5)
    assert purge["data"] == {"purgeChat": True}, purge
    for result in results:
        if result.get("errors"):
            assert result["errors"][0]["extensions"]["code"] in ("CHAT_CLOSED", "NOT_FOUND")
        else:
            assert len(result["data"]["appendMessages"]["messageIds"]) == 2
    counts = await rows_of(db, chat_id)
    assert counts.pop("closed_chats") == 1
    assert set(counts.values()) == {0}, counts
    # Whatever happened during the race, afterwards every append is CHAT_CLOSED.
    retry = await client.execute(APPEND, {"chatId": chat_id, "appendId": "r0",
                                          "messages": [user("racing 0"), reply()]})
    assert retry["errors"][0]["extensions"]["code"] == "CHAT_CLOSED"
