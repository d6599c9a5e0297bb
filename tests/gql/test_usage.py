"""Token counts and usage over HTTP on every backend: message tokens from appends and
streams, endStream(usage:) recorded once, Chat.usage and the usage report."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from chatql.store.db.database import Database
from chatql.store.db.tables import usage_records
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

CREATE = """mutation($id: ID!, $assistant: String!, $public: Boolean!) {
  createChat(input: {id: $id, assistantId: $assistant, public: $public}) { id } }"""
APPEND = """mutation($chat: ID!, $append: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $append, messages: $messages) { messageIds } }"""
# One request per stream: a chat refuses a second stream for a request it answered.
START = """mutation($chat: ID!, $stream: ID!, $request: String!, $assistant: String) {
  startStream(input: {chatId: $chat, streamId: $stream, requestId: $request,
    assistantId: $assistant,
    input: {role: USER, type: "user_input", props: {content: "hi"}, tokens: 3}}) { id } }"""
PUSH = """mutation($stream: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $stream, chunks: $chunks) { accepted } }"""
END = """mutation($stream: ID!, $status: StreamStatus!, $usage: UsageInput) {
  endStream(streamId: $stream, status: $status, usage: $usage) {
    stream { status } messages { type tokens } } }"""
STOP = "mutation($chat: ID!) { stopStream(chatId: $chat) }"
USAGE = """query($chat: ID!) { chat(id: $chat) {
  usage { promptTokens completionTokens messageTokens }
  messages { edges { node { type tokens tokensEstimated } } } } }"""
REPORT = """query($start: DateTime!, $end: DateTime!, $assistant: String, $group: UsageGroup) {
  usage(startTime: $start, endTime: $end, assistantId: $assistant, groupBy: $group) {
    key promptTokens completionTokens requests } }"""


def agent(make_headers: Callable[..., dict[str, str]], tenant: str = "acme") -> dict[str, str]:
    result: dict[str, str] = make_headers(user="bot", tenant=tenant, roles="agent")
    return result


async def create(client: GraphQLClient, chat_id: str, headers: dict[str, str],
                 assistant: str = "planner", public: bool = False) -> None:
    await client.data(CREATE, {"id": chat_id, "assistant": assistant, "public": public},
                      headers)


async def stream(client: GraphQLClient, chat_id: str, stream_id: str, headers: dict[str, str],
                 usage: dict[str, Any] | None, assistant: str | None = None) -> dict[str, Any]:
    """A completed stream: a text message streamed with tokens, ended with ``usage``."""
    await client.data(START, {"chat": chat_id, "stream": stream_id, "request": f"r-{stream_id}",
                              "assistant": assistant},
                      headers)
    await client.data(PUSH, {"stream": stream_id, "chunks": [
        {"type": "text", "messageId": "m", "props": {"content": "Hel"}, "tokens": 1},
        {"type": "text", "messageId": "m", "delta": True, "props": {"content": "lo"},
         "tokens": 2},
        # A chunk without tokens leaves the count as it was.
        {"type": "text", "messageId": "m", "delta": True, "props": {"content": "!"}},
        {"type": "thinking", "messageId": "t", "props": {"content": "hmm"}},
    ]}, headers)
    data = await client.data(END, {"stream": stream_id, "status": "COMPLETED", "usage": usage},
                             headers)
    result: dict[str, Any] = data["endStream"]
    return result


async def test_token_sums_after_appends_and_streams(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bot = make_headers(user="alice"), agent(make_headers)
    await create(client, "c1", alice)
    await client.data(APPEND, {"chat": "c1", "append": "a1", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "q"}, "tokens": 5},
        {"role": "ASSISTANT", "type": "text", "props": {"content": "a"}, "tokens": 7},
        {"role": "ASSISTANT", "type": "text", "props": {"content": "no count"}},
    ]}, alice)
    ended = await stream(client, "c1", "s1", bot,
                         {"promptTokens": 100, "completionTokens": 20, "model": "m-1"})
    # User input 3, the text's last reported count 2, the thinking message none.
    assert ended["messages"] == [{"type": "user_input", "tokens": 3},
                                 {"type": "text", "tokens": 2},
                                 {"type": "thinking", "tokens": None}]
    data = (await client.data(USAGE, {"chat": "c1"}, alice))["chat"]
    assert data["usage"] == {"promptTokens": 100, "completionTokens": 20,
                             "messageTokens": 5 + 7 + 3 + 2}
    stored = [edge["node"] for edge in data["messages"]["edges"]]
    assert [m["tokens"] for m in stored] == [5, 7, None, 3, 2, None]
    assert {m["tokensEstimated"] for m in stored} == {False}
    # A second stream adds its usage.
    await stream(client, "c1", "s2", bot, {"promptTokens": 1, "completionTokens": 1})
    usage = (await client.data(USAGE, {"chat": "c1"}, alice))["chat"]["usage"]
    assert usage == {"promptTokens": 101, "completionTokens": 21, "messageTokens": 22}


async def test_a_retried_end_stream_counts_usage_once(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bot = make_headers(user="alice"), agent(make_headers)
    await create(client, "c1", alice)
    usage = {"promptTokens": 40, "completionTokens": 2}
    first = await stream(client, "c1", "s1", bot, usage)
    again = await client.data(END, {"stream": "s1", "status": "COMPLETED", "usage": usage}, bot)
    assert again["endStream"] == first
    totals = (await client.data(USAGE, {"chat": "c1"}, alice))["chat"]["usage"]
    assert (totals["promptTokens"], totals["completionTokens"]) == (40, 2)
    start, end = datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC) + timedelta(hours=1)
    rows = (await client.data(REPORT, {"start": start.isoformat(), "end": end.isoformat()},
                              alice))["usage"]
    assert [row["requests"] for row in rows] == [1]


async def test_usage_reported_after_a_stop_is_recorded_once(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    """The person pressed stop first; the producer still reports what the request cost."""
    alice, bot = make_headers(user="alice"), agent(make_headers)
    await create(client, "c1", alice)
    await client.data(START, {"chat": "c1", "stream": "s1", "request": "r-s1",
                              "assistant": None}, bot)
    assert (await client.data(STOP, {"chat": "c1"}, alice))["stopStream"] is True
    usage = {"promptTokens": 9, "completionTokens": 4}
    for _ in range(2):
        ended = await client.data(END, {"stream": "s1", "status": "COMPLETED", "usage": usage},
                                  bot)
        assert ended["endStream"]["stream"]["status"] == "INTERRUPTED"
    totals = (await client.data(USAGE, {"chat": "c1"}, alice))["chat"]["usage"]
    assert (totals["promptTokens"], totals["completionTokens"]) == (9, 4)


async def test_usage_report_groups_over_readable_chats_only(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bob = make_headers(user="alice"), make_headers(user="bob")
    bot, admin = agent(make_headers), make_headers(user="root", roles="admin")
    stranger = agent(make_headers, tenant="elsewhere")
    await create(client, "a-private", alice, assistant="planner")
    await create(client, "a-public", alice, assistant="coder", public=True)
    await create(client, "b-private", bob, assistant="planner")
    await create(client, "x-other", stranger, assistant="planner")
    await stream(client, "a-private", "s1", bot, {"promptTokens": 10, "completionTokens": 1})
    await stream(client, "a-private", "s2", bot, {"promptTokens": 20, "completionTokens": 2},
                 assistant="helper")
    await stream(client, "a-public", "s3", bot, {"promptTokens": 30, "completionTokens": 3})
    await stream(client, "b-private", "s4", bot, {"promptTokens": 40, "completionTokens": 4})
    await stream(client, "x-other", "s5", stranger, {"promptTokens": 50, "completionTokens": 5})
    # s1 happened yesterday (UTC).
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    async with db.write() as conn:
        await conn.execute(update(usage_records).where(usage_records.c.stream_id == "s1")
                           .values(created_at=today - timedelta(days=1)))
    window = {"start": (today - timedelta(days=2)).isoformat(),
              "end": (today + timedelta(days=1)).isoformat()}

    async def report(headers: dict[str, str], **variables: Any) -> list[tuple[Any, ...]]:
        rows = (await client.data(REPORT, {**window, **variables}, headers))["usage"]
        return [(r["key"], r["promptTokens"], r["completionTokens"], r["requests"])
                for r in rows]

    day, yesterday = today.date().isoformat(), (today - timedelta(days=1)).date().isoformat()
    assert await report(alice) == [(yesterday, 10, 1, 1), (day, 50, 5, 2)]
    assert await report(alice, group=None) == await report(alice, group="DAY")
    # Bob reads his own chat and alice's public one, never her private one.
    assert await report(bob, group="ASSISTANT") == [("coder", 30, 3, 1), ("planner", 40, 4, 1)]
    # A stream's own assistantId wins over the chat's.
    assert await report(admin, group="ASSISTANT") == [
        ("coder", 30, 3, 1), ("helper", 20, 2, 1), ("planner", 50, 5, 2)]
    assert await report(admin, group="USER") == [("alice", 60, 6, 3), ("bob", 40, 4, 1)]
    assert await report(admin, group="USER", assistant="planner") == [
        ("alice", 10, 1, 1), ("bob", 40, 4, 1)]
    assert await report(stranger, group="USER") == [("bot", 50, 5, 1)]
    # The window is [start, end).
    assert await report(alice, start=today.replace(hour=0).isoformat()) == [(day, 50, 5, 2)]
    # A deleted chat leaves the report.
    await client.data('mutation { deleteChat(id: "a-public") }', None, alice)
    assert await report(bob) == [(day, 40, 4, 1)]


async def test_bad_usage_and_token_input_changes_nothing(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bot = make_headers(user="alice"), agent(make_headers)
    await create(client, "c1", alice)
    await client.data(START, {"chat": "c1", "stream": "s1", "request": "r-s1",
                              "assistant": None}, bot)
    before = await store_fingerprint(db)
    now = datetime.now(UTC)
    bad: list[tuple[str, dict[str, Any], dict[str, str]]] = [
        (APPEND, {"chat": "c1", "append": "x", "messages": [
            {"role": "USER", "type": "user_input", "props": {}, "tokens": -1}]}, alice),
        (PUSH, {"stream": "s1", "chunks": [
            {"type": "text", "props": {"content": "ok"}},
            {"type": "text", "props": {"content": "bad"}, "tokens": -5}]}, bot),
        (END, {"stream": "s1", "status": "COMPLETED",
               "usage": {"promptTokens": -1, "completionTokens": 0}}, bot),
        (END, {"stream": "s1", "status": "COMPLETED",
               "usage": {"promptTokens": 1, "model": "m" * 201}}, bot),
        (REPORT, {"start": now.isoformat(), "end": now.isoformat()}, alice),
        (REPORT, {"start": now.isoformat(), "end": "2026-01-01T00:00:00"}, alice),
    ]
    for document, variables, headers in bad:
        assert await client.error_code(document, variables, headers) == "INVALID_ARGUMENT", (
            variables)
    assert await store_fingerprint(db) == before
    # The stream is intact: nothing of the refused push went in, and it still ends (with
    # the note that it wrote no reply).
    ended = await client.data(END, {"stream": "s1", "status": "COMPLETED", "usage": None}, bot)
    assert [m["type"] for m in ended["endStream"]["messages"]] == ["user_input", "error"]
