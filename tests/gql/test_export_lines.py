"""The export's message lines, built by the database a page at a time, are byte for byte
what the reference encoder (``message_line`` over each stored message, orjson) gives.

Run over HTTP on both databases, with messages whose props, metadata and times stress
every way two JSON encoders can differ (number spellings, escapes, non-ASCII, key order,
nulls, whole-second times), and with pages small enough that lines cross page edges.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import select, update

from gql.settings import Settings
from store import export as store_export
from store.database import Database
from store.messages import message_from_row
from store.records import Identity
from store.tables import messages
from tests.conftest import GraphQLClient, running_app

Headers = Callable[..., dict[str, str]]
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """mutation($id: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $id, appendId: $appendId, messages: $messages) { lastSequence } }"""

#: Values where a database's JSON text and orjson's could part ways.
AWKWARD: list[Any] = [
    1.5, 2.50, 0.1 + 0.2, 1e20, 1e-7, -0.0, 123456789012345678, 2**63, 2**64 + 1, -(2**63),
    True, False, None, "", "é ü ß — “quotes” 中文 🙂", "tab\tnewline\ncr\rquote\"back\\",
    "\u0001\u001f\u007f\u2028\u2029", "</script>", "/slash", [], {}, [[[]]], {"": {"": 0}},
]


@pytest.fixture
async def http(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as client:
            yield client


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
