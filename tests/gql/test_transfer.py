"""Export and import over HTTP and the command line: round trips, formats, idempotency,
and export lines byte for byte what the reference encoder gives."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import select, update

from chatql.gql.cli import main
from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from chatql.store.errors import PersistFailed
from chatql.store.keeping import export as store_export
from chatql.store.keeping import imports as store_imports
from chatql.store.messages.message import (
    NewMessage,
    insert_messages,
    lock_chat_for_append,
    message_from_row,
)
from chatql.store.messages.resume import StepIn, insert_resume
from chatql.store.records import Identity
from tests.conftest import TEST_SECRET, GraphQLClient, running_app

Headers = Callable[..., dict[str, str]]
ALICE = Identity(user_id="alice", tenant_id="acme")
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """mutation($id: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $id, appendId: $appendId, messages: $messages) { lastSequence } }"""
IMPORT = """mutation($input: ImportChatInput!) {
  importChat(input: $input) { id title assistantId tags createdBy } }"""
MESSAGES = """query($id: ID!) { messages(chatId: $id, first: 200) {
  edges { node { role type props status sequence } } } }"""


def parsed(jsonl: bytes) -> list[Any]:
    return [orjson.loads(line) for line in jsonl.splitlines()]


async def cli(args: list[str]) -> int:
    """Runs the ``chatql`` command as a user would, off the test's event loop."""
    return await asyncio.to_thread(main, args)


@pytest.fixture
async def http(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as client:
            yield client


@pytest.fixture
def gql(http: httpx.AsyncClient) -> GraphQLClient:
    return GraphQLClient(http)


async def export_lines(http: httpx.AsyncClient, chat_id: str,
                       headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await http.get(f"/chats/{chat_id}/export", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [orjson.loads(line) for line in response.content.splitlines()]


async def build_chat(gql: GraphQLClient, settings: Settings, headers: dict[str, str]) -> None:
    """A chat with tags, varied messages and statuses, a sequence gap and resume records."""
    await gql.data(CREATE, {"input": {"id": "c1", "assistantId": "helper", "title": "Trip",
                                      "tags": ["travel", "b"], "pinned": True,
                                      "metadata": {"k": [1, 2.5, None]}}}, headers)
    await gql.data(APPEND, {"id": "c1", "appendId": "a1", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "Plan a trip"},
         "requestId": "r1", "metadata": {"lang": "en"}, "tokens": 4},
        {"role": "ASSISTANT", "type": "tool_call", "props": {"name": "search", "n": 1.5},
         "blockId": "b1", "threadId": "t1", "assistantId": "helper", "tokens": 0},
        {"role": "TOOL", "type": "retrieval", "props": {"docs": [{"id": 1}]}},
    ]}, headers)
    deleted = await gql.data("""mutation { deleteMessages(chatId: "c1", ids: []) }""", None,
                             headers)
    assert deleted == {"deleteMessages": 0}
    db = Database(settings.database_url)
    try:
        async with db.write() as conn:
            last = await lock_chat_for_append(conn, ALICE, "c1")
            await insert_messages(conn, "c1", [
                NewMessage(role="ASSISTANT", type="text", props={"content": "Half an ans"},
                           status="INTERRUPTED", request_id="r2"),
                NewMessage(role="ASSISTANT", type="error", props={"message": "boom"},
                           status="FAILED", request_id="r2"),
            ], last_sequence=last + 1)  # leaves a hole, as a deleted message would
            await insert_resume(conn, "c1", [
                StepIn(id="s1", type="llm", status="interrupted", stack_id="k1",
                       input={"q": 1}, output={"partial": "x"}, space_snapshot={"v": 2}),
                StepIn(id="s2", type="tool", status="running", stack_id="k2",
                       stack_parent_id="k1", stack_depth=1, error="cut"),
            ], request_id="r2", assistant_id="helper")
    finally:
        await db.dispose()


async def test_export_then_import_reproduces_the_chat(
    gql: GraphQLClient, http: httpx.AsyncClient, settings: Settings, make_headers: Headers,
    tmp_path: Path, sqlite_template: Path,
) -> None:
    alice = make_headers("alice", tenant="acme")
    await build_chat(gql, settings, alice)
    lines = await export_lines(http, "c1", alice)
    assert [line["kind"] for line in lines] == ["chat", *["message"] * 5, "resume", "resume"]
    assert lines[0]["tags"] == ["b", "travel"]
    assert [line["sequence"] for line in lines[1:6]] == [1, 2, 3, 5, 6]
    assert [line["status"] for line in lines[1:6]] == [
        "COMPLETED", "COMPLETED", "COMPLETED", "INTERRUPTED", "FAILED"]
    assert [line["tokens"] for line in lines[1:6]] == [4, 0, None, None, None]

    # The same database: purge frees the message ids; the chat comes back under a new id.
    assert (await gql.data('mutation { purgeChat(id: "c1") }', None, alice))["purgeChat"]
    made = (await gql.data(IMPORT, {"input": {"format": "CHATQL", "document": lines,
                                              "chatId": "c2", "importId": "i1"}}, alice))
    assert made["importChat"] == {"id": "c2", "title": "Trip", "assistantId": "helper",
                                  "tags": ["b", "travel"], "createdBy": "alice"}
    again = await export_lines(http, "c2", alice)
    assert again == [{**lines[0], "id": "c2"}, *lines[1:]]
    # Appends continue after the highest imported sequence.
    after = await gql.data(APPEND, {"id": "c2", "appendId": "a2", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "more"}}]}, alice)
    assert after["appendMessages"]["lastSequence"] == 7

    # Another database, through the command line: the chat keeps its id.
    source = tmp_path / "export.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    other = tmp_path / "other.db"
    shutil.copy(sqlite_template, other)
    url = f"sqlite+aiosqlite:///{other}"
    assert await cli(["import", str(source), "--tenant", "acme", "--user", "alice",
                 "--database-url", url]) == 0
    copy = Settings(database_url=url, secret=TEST_SECRET, migrate_on_start=False)
    async with running_app(copy) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            assert await export_lines(client, "c1", alice) == lines


async def test_openai_conversation_with_tool_calls(
    gql: GraphQLClient, make_headers: Headers
) -> None:
    alice = make_headers("alice")
    document = {"title": "Weather", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?", "name": "ann"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "-3C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "09:00"},
        {"role": "assistant", "content": "It is -3C at 09:00."},
    ]}
    made = await gql.data(IMPORT, {"input": {"format": "OPENAI", "document": document,
                                             "chatId": "oa", "assistantId": "bot"}}, alice)
    assert made["importChat"]["title"] == "Weather"
    nodes = [e["node"] for e in (await gql.data(MESSAGES, {"id": "oa"}, alice))
             ["messages"]["edges"]]
    assert [(n["role"], n["type"]) for n in nodes] == [
        ("SYSTEM", "text"), ("USER", "user_input"), ("ASSISTANT", "tool_call"),
        ("ASSISTANT", "tool_call"), ("TOOL", "tool_result"), ("TOOL", "tool_result"),
        ("ASSISTANT", "text")]
    assert nodes[1]["props"] == {"content": "Weather in Oslo?", "name": "ann"}
    assert nodes[2]["props"] == {"id": "call_1", "name": "weather",
                                 "arguments": "{\"city\": \"Oslo\"}"}
    assert nodes[4]["props"] == {"content": "-3C", "tool_call_id": "call_1"}
    assert [n["sequence"] for n in nodes] == list(range(1, 8))
    assert await gql.error_code(IMPORT, {"input": {"format": "OPENAI", "document": document}},
                                alice) == "INVALID_ARGUMENT"  # no assistantId


async def test_a_retried_import_writes_nothing_twice(
    gql: GraphQLClient, make_headers: Headers
) -> None:
    alice = make_headers("alice")
    document = {"messages": [{"role": "user", "content": "hi"}]}
    request = {"format": "OPENAI", "document": document, "assistantId": "bot",
               "importId": "imp-1"}
    first = (await gql.data(IMPORT, {"input": request}, alice))["importChat"]
    second = (await gql.data(IMPORT, {"input": request}, alice))["importChat"]
    assert first == second
    listing = await gql.data("{ chats { totalCount } }", None, alice)
    assert listing["chats"]["totalCount"] == 1
    nodes = (await gql.data(MESSAGES, {"id": first["id"]}, alice))["messages"]["edges"]
    assert len(nodes) == 1
    changed = {**request, "document": {"messages": [{"role": "user", "content": "bye"}]}}
    assert await gql.error_code(IMPORT, {"input": changed}, alice) == "APPEND_CONFLICT"
    # Import ids belong to a tenant: another tenant's same id is a different import.
    other = make_headers("zed", tenant="other")
    assert (await gql.data(IMPORT, {"input": request}, other))["importChat"]["id"] != (
        first["id"])


@pytest.mark.parametrize(("document", "named"), [
    ([{"kind": "message"}], "line 1"),
    ([{"kind": "chat", "id": "m", "assistantId": "a"},
      {"kind": "message", "id": "m1", "sequence": 1, "role": "USER", "type": "x",
       "props": {}},
      {"kind": "message", "id": "m2", "sequence": 2, "role": "BOSS", "type": "x",
       "props": {}}], "line 3: field 'role'"),
    ([{"kind": "chat", "id": "m", "assistantId": "a"},
      {"kind": "message", "id": "m1", "sequence": 2, "role": "USER", "type": "x",
       "props": {}},
      {"kind": "message", "id": "m2", "sequence": 2, "role": "USER", "type": "x",
       "props": {}}], "line 3: field 'sequence'"),
    ([{"kind": "chat", "id": "m", "assistantId": "a"},
      {"kind": "message", "id": "m1", "sequence": 1, "role": "USER", "type": "x",
       "props": "no"}], "line 2: field 'props'"),
    ([{"kind": "chat", "id": "m", "assistantId": "a", "tags": ["x" * 65]}], "line 1"),
])
async def test_a_malformed_document_names_the_line_and_writes_nothing(
    gql: GraphQLClient, make_headers: Headers, document: list[Any], named: str
) -> None:
    alice = make_headers("alice")
    body = await gql.execute(IMPORT, {"input": {"format": "CHATQL", "document": document,
                                                "chatId": "m", "importId": "bad"}}, alice)
    assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert named in body["errors"][0]["message"]
    assert (await gql.data('{ chat(id: "m") { id } }', None, alice))["chat"] is None
    # The failed import id was not recorded: it can be used for a good document.
    good = [{"kind": "chat", "id": "m", "assistantId": "a"}]
    assert (await gql.data(IMPORT, {"input": {"format": "CHATQL", "document": good,
                                              "importId": "bad"}}, alice))["importChat"]


async def test_openai_field_errors_name_the_message(
    gql: GraphQLClient, make_headers: Headers
) -> None:
    alice = make_headers("alice")
    document = {"messages": [{"role": "user", "content": "hi"},
                             {"role": "assistant", "tool_calls": [{"id": "c"}]}]}
    body = await gql.execute(IMPORT, {"input": {"format": "OPENAI", "document": document,
                                                "assistantId": "b", "chatId": "o"}}, alice)
    assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert "messages[1].tool_calls[0]" in body["errors"][0]["message"]
    assert (await gql.data('{ chat(id: "o") { id } }', None, alice))["chat"] is None


async def test_export_answers_with_the_same_identity_and_access(
    gql: GraphQLClient, http: httpx.AsyncClient, make_headers: Headers
) -> None:
    alice = make_headers("alice")
    await gql.data(CREATE, {"input": {"id": "p", "assistantId": "a"}}, alice)
    assert len(await export_lines(http, "p", alice)) == 1
    for headers in (make_headers("bob"), make_headers("alice", tenant="other")):
        response = await http.get("/chats/p/export", headers=headers)
        assert response.status_code == 404
        assert response.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert len(await export_lines(http, "p", make_headers("x", roles="admin"))) == 1
    missing = await http.get("/chats/nope/export", headers=alice)
    assert missing.status_code == 404
    bad = await http.get("/chats/bad%20id/export", headers=alice)
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"


async def test_cli_export_and_an_interrupted_import_resumes(
    gql: GraphQLClient, settings: Settings, make_headers: Headers, tmp_path: Path,
    sqlite_template: Path, capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alice = make_headers("alice", tenant="acme")
    await gql.data(CREATE, {"input": {"id": "big", "assistantId": "a"}}, alice)
    await gql.data(APPEND, {"id": "big", "appendId": "x", "messages": [
        {"role": "USER", "type": "text", "props": {"content": f"m{n}"}} for n in range(7)]},
        alice)
    capsysbinary.readouterr()
    assert await cli(["export", "big", "--tenant", "acme",
                 "--database-url", settings.database_url]) == 0
    exported = capsysbinary.readouterr().out
    assert len(exported.splitlines()) == 8
    source = tmp_path / "big.jsonl"
    source.write_bytes(exported)
    target = tmp_path / "target.db"
    shutil.copy(sqlite_template, target)
    url = f"sqlite+aiosqlite:///{target}"
    real_write = store_imports.ImportRun.write
    calls = 0

    async def failing_write(self: Any, parsed: Any, lines: int, *, last: bool) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise PersistFailed("the database went away")
        await real_write(self, parsed, lines, last=last)

    monkeypatch.setattr(store_imports.ImportRun, "write", failing_write)
    args = ["import", str(source), "--tenant", "acme", "--user", "alice",
            "--batch", "3", "--database-url", url]
    assert await cli(args) == 1  # interrupted after the first batch of three
    monkeypatch.setattr(store_imports.ImportRun, "write", real_write)
    capsysbinary.readouterr()
    assert await cli(args) == 0
    assert capsysbinary.readouterr().out.endswith(b"4 lines written\n")
    assert await cli(args) == 0  # finished: nothing more
    assert capsysbinary.readouterr().out.endswith(b"0 lines written\n")
    assert await cli(["export", "big", "--tenant", "acme", "--database-url", url]) == 0
    # The same lines (Postgres spaces its JSON differently from SQLite's encoder).
    assert parsed(capsysbinary.readouterr().out) == parsed(exported)


async def test_cli_export_finds_the_chat_in_any_tenant(
    gql: GraphQLClient, settings: Settings, make_headers: Headers,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bob = make_headers("bob", tenant="globex")
    await gql.data(CREATE, {"input": {"id": "far", "assistantId": "a"}}, bob)
    await gql.data(APPEND, {"id": "far", "appendId": "x", "messages": [
        {"role": "USER", "type": "text", "props": {"content": "hello"}}]}, bob)
    url = ["--database-url", settings.database_url]
    capsys.readouterr()
    # No tenant given: the chat is found by its id alone.
    assert await cli(["export", "far", *url]) == 0
    lines = parsed(capsys.readouterr().out.encode())
    assert lines[0]["kind"] == "chat" and lines[0]["tenantId"] == "globex"
    assert [line["props"] for line in lines[1:]] == [{"content": "hello"}]
    # Its own tenant narrows to the same chat; another tenant's is not found.
    assert await cli(["export", "far", "--tenant", "globex", *url]) == 0
    assert parsed(capsys.readouterr().out.encode()) == lines
    assert await cli(["export", "far", "--tenant", "acme", *url]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "not found" in captured.err
    assert await cli(["export", "nowhere", *url]) == 1
    assert "not found" in capsys.readouterr().err


# ---- the export's message lines, byte for byte -------------------------------------

#: Values where a database's JSON text and orjson's could part ways.
AWKWARD: list[Any] = [
    1.5, 2.50, 0.1 + 0.2, 1e20, 1e-7, -0.0, 123456789012345678, 2**63, 2**64 + 1, -(2**63),
    True, False, None, "", "é ü ß — “quotes” 中文 🙂", "tab\tnewline\ncr\rquote\"back\\",
    "\u0001\u001f\u007f\u2028\u2029", "</script>", "/slash", [], {}, [[[]]], {"": {"": 0}},
]


async def reference_lines(db: Database, chat_id: str) -> list[bytes]:
    """Each stored message through the reference encoder, in sequence order."""
    async with db.read() as conn:
        rows = (await conn.execute(select(messages).where(messages.c.chat_id == chat_id)
                                   .order_by(messages.c.sequence))).all()
    return [orjson.dumps(store_export.message_line(message_from_row(row))) for row in rows]


async def awkward_chat(http: httpx.AsyncClient, db: Database, headers: dict[str, str]) -> int:
    """A chat of messages carrying every awkward value; returns how many it has."""
    gql = GraphQLClient(http)
    await gql.data(CREATE, {"input": {"id": "odd", "assistantId": "helper"}}, headers)
    batch = [
        {"role": "USER", "type": "user_input", "props": {"value": value, "z": 1, "a": [value]},
         "requestId": f"r{n}", "blockId": "b\"1", "threadId": "t\\1",
         "assistantId": "helper", "metadata": {"n": n, "v": value} if n % 2 else None}
        for n, value in enumerate(AWKWARD)
    ]
    batch.append({"role": "ASSISTANT", "type": "text", "props": {"keys": dict.fromkeys(
        ["b", "a", "aa", "B", "é", "1", "10", "2"], 0)}})
    await gql.data(APPEND, {"id": "odd", "appendId": "a1", "messages": batch}, headers)
    # Times with no microseconds, and one before the year 1000, print their zeros too.
    async with db.write() as conn:
        await conn.execute(update(messages).where(messages.c.sequence == 1).values(
            created_at=datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC),
            updated_at=datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC)))
    return len(batch)


async def test_export_lines_equal_the_reference_encoder(
    http: httpx.AsyncClient, db: Database, make_headers: Headers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alice = make_headers("alice", tenant="acme")
    count = await awkward_chat(http, db, alice)
    expected = await reference_lines(db, "odd")
    assert len(expected) == count
    # One page for everything, then pages of 2 and 3 rows (and chunks of 2 lines) whose
    # edges fall between lines.
    for first, smallest, largest, chunk in ((1000, 1000, 1000, 500), (2, 2, 3, 500),
                                            (1, 1, 1, 500), (7, 5, 5, 2)):
        monkeypatch.setattr(store_export, "EXPORT_CHUNK", chunk)
        monkeypatch.setattr(store_export, "EXPORT_PAGE_SIZE", first)
        monkeypatch.setattr(store_export, "EXPORT_MIN_PAGE", smallest)
        monkeypatch.setattr(store_export, "EXPORT_MAX_PAGE", largest)
        response = await http.get("/chats/odd/export", headers=alice)
        assert response.status_code == 200, response.text
        lines = response.content.split(b"\n")
        assert lines[0].startswith(b'{"kind":"chat"') and lines[-1] == b""
        assert lines[1:-1] == expected, (first, smallest, largest)


async def test_pages_are_sized_by_the_bytes_of_their_lines(
    http: httpx.AsyncClient, db: Database, make_headers: Headers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Short lines make pages grow to the row cap; long ones shrink them to the floor."""
    alice = make_headers("alice", tenant="acme")
    gql = GraphQLClient(http)
    await gql.data(CREATE, {"input": {"id": "sized", "assistantId": "a"}}, alice)
    short = [{"role": "USER", "type": "t", "props": {"n": n}} for n in range(40)]
    long = [{"role": "USER", "type": "t", "props": {"text": "x" * 2000}} for _ in range(30)]
    await gql.data(APPEND, {"id": "sized", "appendId": "a", "messages": short + long}, alice)
    monkeypatch.setattr(store_export, "EXPORT_PAGE_SIZE", 4)
    monkeypatch.setattr(store_export, "EXPORT_CHUNK", 1000)  # a chunk per page
    monkeypatch.setattr(store_export, "EXPORT_PAGE_BYTES", 8000)
    monkeypatch.setattr(store_export, "EXPORT_MIN_PAGE", 2)
    monkeypatch.setattr(store_export, "EXPORT_MAX_PAGE", 16)
    chat = await store_export.open_export(db, Identity(
        user_id="alice", tenant_id="acme"), "sized")
    chunks = [chunk async for chunk in store_export.export_chat(db, chat)]
    pages = [chunk.count(b"\n") for chunk in chunks[1:]]
    # 4 rows first; short lines (~350 bytes) fill the 16-row cap; once pages hold the
    # 2 KB lines (after one mixing both), 8000 bytes make pages of 3 rows.
    assert pages == [4, 16, 16, 16, 4, 3, 3, 3, 3, 2], pages
    assert b"".join(chunks[1:]).split(b"\n")[:-1] == await reference_lines(db, "sized")
