"""Every writer of messages stores the same row for the same message.

Appends (a multi-row INSERT, and COPY on Postgres for a large batch), the persist of
an ended stream, imports and archive restores all build their rows with
``store.rows``; these tests write one conversation through each and compare the rows
as stored, column by column (ids and times replaced by their place in the chat).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import String, cast, select

from chatql.store.chats.chat import create_chat
from chatql.store.db import rows
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from chatql.store.errors import InvalidArgument
from chatql.store.keeping.archive import ChatArchive, archive_chat, restore_archive
from chatql.store.keeping.export import chat_line, message_line
from chatql.store.keeping.imports import import_chat
from chatql.store.messages.message import NewMessage, append_messages, message_from_row
from chatql.store.records import Identity, Message
from chatql.store.streams import StreamService
from chatql.store.streams.backends.memory import MemoryBackend
from chatql.store.streams.reducer import ChunkIn

AGENT = Identity(user_id="agent", tenant_id="acme", roles=frozenset({"agent"}))
#: Past the COPY threshold, so Postgres writes these with COPY.
LARGE = rows.COPY_THRESHOLD + 5
#: A COPY batch that makes LARGE rows in several batches, the last one partial.
SMALL_BATCH = 64


def props(n: int) -> dict[str, Any]:
    # Text outside ASCII, nesting, a float, a null and a big integer: whatever an
    # encoder could spell differently.
    return {"content": f"réponse {n} ✓", "parts": [1, 2.5, None, {"k": "v"}], "big": 2**60}


def assistant(n: int, *, tokens: int | None = 7) -> NewMessage:
    return NewMessage(role="ASSISTANT", type="text", props=props(n), request_id="req-1",
                      block_id=f"b{n % 3}", thread_id="t1", assistant_id="bot",
                      tokens=tokens)


async def new_chat(db: Database) -> str:
    chat = f"rows-{uuid.uuid4().hex[:10]}"
    await create_chat(db, AGENT, id=chat, assistant_id="bot")
    return chat


async def stored(db: Database, chat_id: str) -> list[dict[str, Any]]:
    """The chat's rows as stored, ids and parents as sequence numbers, times dropped;
    JSON columns as the database holds them (text), and whether metadata is NULL."""
    async with db.read() as conn:
        found = (await conn.execute(
            select(messages, cast(messages.c.props, String).label("props_text"),
                   messages.c.metadata.is_(None).label("metadata_is_null"))
            .where(messages.c.chat_id == chat_id).order_by(messages.c.sequence)
        )).mappings().all()
    place = {row["id"]: row["sequence"] for row in found}
    out = []
    for row in found:
        values = {column: row[column] for column in rows.MESSAGE_COLUMNS}
        for column in ("id", "parent_id", "jump_id"):
            values[column] = None if values[column] is None else place[values[column]]
        for column in ("chat_id", "created_at", "updated_at"):
            del values[column]
        values["props_text"] = row["props_text"]
        values["metadata_is_null"] = row["metadata_is_null"]
        out.append(values)
    return out


async def all_messages(db: Database, chat_id: str) -> list[Message]:
    async with db.read() as conn:
        found = (await conn.execute(select(messages).where(messages.c.chat_id == chat_id)
                                    .order_by(messages.c.sequence))).all()
    return [message_from_row(row) for row in found]


async def append_all(db: Database, chat_id: str, batch: list[NewMessage]) -> None:
    await append_messages(db, AGENT, chat_id, f"a-{uuid.uuid4().hex}", batch)


async def persist(db: Database, chat_id: str, count: int) -> None:
    service = StreamService(db, MemoryBackend(), idle_timeout=0)
    try:
        info = await service.start_stream(AGENT, chat_id, request_id="req-1",
                                          assistant_id="bot")
        await service.push_chunks(AGENT, info.id, [
            ChunkIn(type="text", message_id=f"m{n}", props=props(n), block_id=f"b{n % 3}",
                    thread_id="t1", tokens=7)
            for n in range(count)])
        await service.end_stream(AGENT, info.id, "COMPLETED")
    finally:
        await service.close()


@pytest.mark.parametrize(("count", "batch"), [(3, None), (LARGE, None), (LARGE, SMALL_BATCH)],
                         ids=["insert", "large", "batches"])
async def test_append_persist_and_import_store_identical_rows(
        db: Database, monkeypatch: pytest.MonkeyPatch, count: int, batch: int | None) -> None:
    if batch is not None:
        monkeypatch.setattr(rows, "COPY_BATCH", batch)
    appended = await new_chat(db)
    await append_all(db, appended, [assistant(n) for n in range(count)])
    expected = await stored(db, appended)
    assert len(expected) == count

    streamed = await new_chat(db)
    await persist(db, streamed, count)
    assert await stored(db, streamed) == expected

    # An import of the appended chat's export (tokens carried on the lines).
    source = await all_messages(db, appended)
    assert len(source) == count
    lines = [{**message_line(m), "id": f"imp-{uuid.uuid4().hex[:8]}-{m.sequence}",
              "tokens": m.tokens} for m in source]
    for line in lines:
        del line["parentId"]  # a document without parents is one chain, as the source is
    document = [chat_line(await _chat(db, appended)), *lines]
    imported = await import_chat(db, AGENT, format="CHATQL", document=document,
                                 import_id=f"i-{uuid.uuid4().hex}",
                                 chat_id=f"imp-{uuid.uuid4().hex[:10]}")
    assert await stored(db, imported.id) == expected


async def _chat(db: Database, chat_id: str) -> Any:
    from chatql.store.chats.chat import get_chat

    chat = await get_chat(db, AGENT, chat_id)
    assert chat is not None
    return chat


async def test_insert_and_copy_write_the_same_rows(db: Database,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The same batch through both statements (on SQLite both are the INSERT)."""
    batch = [assistant(n, tokens=None if n % 2 else n) for n in range(LARGE)]
    by_copy = await new_chat(db)
    await append_all(db, by_copy, batch)
    monkeypatch.setattr(rows, "COPY_THRESHOLD", 10**9)
    by_insert = await new_chat(db)
    await append_all(db, by_insert, batch)
    assert await stored(db, by_copy) == await stored(db, by_insert)


@pytest.mark.parametrize("count", [3, LARGE], ids=["insert", "large"])
async def test_archive_restore_brings_back_the_same_rows(db: Database, tmp_path: Path,
                                                         count: int) -> None:
    archive = ChatArchive(f"file://{tmp_path}")
    chat = await new_chat(db)
    # Tokens left out: the export does not carry them (see the import test above,
    # which passes them on the lines).
    await append_all(db, chat, [assistant(n, tokens=None) for n in range(count)])
    before = await stored(db, chat)
    async with db.read() as conn:
        ids_before = (await conn.scalars(select(messages.c.id).where(
            messages.c.chat_id == chat).order_by(messages.c.sequence))).all()
    await archive_chat(db, archive, AGENT, chat)
    assert await stored(db, chat) == []
    await restore_archive(db, archive, AGENT, chat)
    assert await stored(db, chat) == before
    async with db.read() as conn:
        ids_after = (await conn.scalars(select(messages.c.id).where(
            messages.c.chat_id == chat).order_by(messages.c.sequence))).all()
    assert ids_after == ids_before


@pytest.mark.parametrize("batch", [None, SMALL_BATCH], ids=["large", "batches"])
async def test_records_handed_back_equal_the_rows_read_back(
        db: Database, monkeypatch: pytest.MonkeyPatch, batch: int | None) -> None:
    """What an append and a persist return is what a later read finds (a chain below
    earlier messages, in one COPY batch and in several)."""
    if batch is not None:
        monkeypatch.setattr(rows, "COPY_BATCH", batch)
    count = LARGE + 3
    chat = await new_chat(db)
    await append_all(db, chat, [assistant(n) for n in range(LARGE)])
    service = StreamService(db, MemoryBackend(), idle_timeout=0)
    try:
        info = await service.start_stream(AGENT, chat, request_id="req-2",
                                          assistant_id="bot")
        await service.push_chunks(AGENT, info.id, [
            ChunkIn(type="text", message_id=f"m{n}", props=props(n), tokens=n)
            for n in range(count)])
        result = await service.end_stream(AGENT, info.id, "INTERRUPTED")
    finally:
        await service.close()
    read_back = (await all_messages(db, chat))[LARGE:]
    assert len(read_back) == count
    assert [m.id for m in result.messages] == [m.id for m in read_back]
    for returned, read in zip(result.messages, read_back, strict=True):
        assert returned == read


def test_import_checks_tokens() -> None:
    from chatql.store.keeping.imports import ParsedChat, parse_line

    line = {"kind": "message", "id": "m1", "sequence": 1, "role": "USER", "type": "text",
            "props": {}, "tokens": -1}
    with pytest.raises(InvalidArgument, match="line 2: field 'tokens'"):
        parse_line(line, 2, ParsedChat(chat={}), 0)
    parsed = ParsedChat(chat={})
    parse_line({**line, "tokens": 12}, 2, parsed, 0)
    assert parsed.messages[0]["tokens"] == 12


def test_the_collector_pause_is_counted_and_restores_what_it_found() -> None:
    import gc

    assert gc.isenabled()
    outer = rows.gc_paused()
    inner = rows.gc_paused()
    outer.__enter__()
    inner.__enter__()
    assert not gc.isenabled()
    outer.__exit__(None, None, None)  # interleaved: the other pause still holds
    assert not gc.isenabled()
    inner.__exit__(None, None, None)
    assert gc.isenabled()
    with pytest.raises(RuntimeError), rows.gc_paused():
        raise RuntimeError("a failed build")
    assert gc.isenabled()
    gc.disable()  # switched off by someone else: left off
    try:
        with rows.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
