"""The search index is kept by the database on every write path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, insert, update

from chatql.store.chats.chat import create_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages
from chatql.store.messages import search as store_search
from chatql.store.messages.message import NewMessage, insert_messages, lock_chat_for_append
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")


async def found(db: Database, query: str) -> list[str]:
    return [hit.message.id for hit in await store_search.search_messages(db, ALICE, query)]


async def indexed(db: Database, word: str) -> list[str]:
    """The messages the search index holds ``word`` for, read from the index itself (an
    older revision's chats lack columns the search reads today)."""
    if db.is_sqlite:
        sql = ("SELECT k.message_id FROM message_search JOIN message_search_keys AS k"
               " ON k.key = message_search.rowid WHERE message_search MATCH ?")
    else:
        sql = "SELECT id FROM messages WHERE search_vector @@ plainto_tsquery('simple', $1)"
    async with db.read() as conn:
        return list((await conn.exec_driver_sql(sql, (word,))).scalars().all())


async def test_raw_inserts_and_cascades_are_indexed(db: Database) -> None:
    """Writers that bypass append_messages (stream persistence) are indexed too."""
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    async with db.write() as conn:
        last = await lock_chat_for_append(conn, ALICE, "c1")
        written = await insert_messages(conn, "c1", [
            NewMessage(role="ASSISTANT", type="text", props={"content": "persisted stream"},
                       status="INTERRUPTED"),
        ], last_sequence=last)
    assert await found(db, "stream") == [written[0].id]
    async with db.write() as conn:
        await conn.execute(
            update(messages).where(messages.c.id == written[0].id)
            .values(props={"content": "rewritten"})
        )
    assert await found(db, "stream") == []
    assert await found(db, "rewritten") == [written[0].id]
    # A chat row deleted directly takes its messages (FK cascade) and their index rows.
    async with db.write() as conn:
        await conn.execute(delete(chats).where(chats.c.id == "c1"))
    assert await found(db, "rewritten") == []
    if db.is_sqlite:
        async with db.read() as conn:
            left = await conn.exec_driver_sql(
                "SELECT (SELECT count(*) FROM message_search),"
                " (SELECT count(*) FROM message_search_keys)")
            assert tuple(left.one()) == (0, 0)


async def test_rolled_back_writes_leave_no_index_rows(db: Database) -> None:
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    try:
        async with db.write() as conn:
            last = await lock_chat_for_append(conn, ALICE, "c1")
            await insert_messages(conn, "c1", [
                NewMessage(role="USER", type="user_input", props={"content": "ghost words"})
            ], last_sequence=last)
            raise RuntimeError("abort")
    except RuntimeError:
        pass
    assert await found(db, "ghost") == []


async def _rows_at(db: Database, revision: str, batch: list[tuple[str, str, str]]) -> list[str]:
    """Go back to ``revision`` and write chat c1 with ``batch`` (role, type, content) in
    that revision's columns; returns the message ids."""
    from alembic import command

    from chatql.store.db.migrate import alembic_config

    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), revision))
    stamp = datetime.now(UTC)
    ids = [f"m{index}" for index in range(len(batch))]
    async with db.write() as conn:
        await conn.execute(insert(chats).values(
            id="c1", assistant_id="a", activity_at=stamp, created_at=stamp, updated_at=stamp,
            created_by=ALICE.user_id, tenant_id=ALICE.tenant_id, last_sequence=len(batch)))
        await conn.execute(insert(messages), [
            {"id": message_id, "chat_id": "c1", "sequence": number, "role": role,
             "type": kind, "props": {"content": content}, "created_at": stamp,
             "updated_at": stamp}
            for number, (message_id, (role, kind, content))
            in enumerate(zip(ids, batch, strict=True), 1)
        ])
    return ids


async def test_upgrade_indexes_messages_written_before_it(db: Database) -> None:
    from chatql.store.db.migrate import migrate

    old, _tool = await _rows_at(db, "0001", [("USER", "user_input", "ancient history"),
                                             ("ASSISTANT", "tool_call", "ancient tool")])
    await migrate(db)
    assert await found(db, "ancient") == [old]


async def test_tool_messages_are_never_indexed(db: Database) -> None:
    """Role TOOL is not what people or assistants said, whatever the message's type."""
    await create_chat(db, ALICE, id="c2", assistant_id="a")
    async with db.write() as conn:
        last = await lock_chat_for_append(conn, ALICE, "c2")
        spoken, _tool = await insert_messages(conn, "c2", [
            NewMessage(role="ASSISTANT", type="text", props={"content": "weather sunny"}),
            NewMessage(role="TOOL", type="text", props={"content": "weather api dump"}),
        ], last_sequence=last)
    assert await found(db, "weather") == [spoken.id]
    assert await found(db, "dump") == []
    # Turning a spoken message into a TOOL one takes it out of the index, and back.
    async with db.write() as conn:
        await conn.execute(update(messages).where(messages.c.id == spoken.id).values(role="TOOL"))
    assert await found(db, "weather") == []
    async with db.write() as conn:
        await conn.execute(
            update(messages).where(messages.c.id == spoken.id).values(role="ASSISTANT"))
    assert await found(db, "sunny") == [spoken.id]


async def test_upgrade_drops_tool_messages_indexed_before_it(db: Database) -> None:
    from chatql.store.db.migrate import migrate

    said, _tool = await _rows_at(db, "0002", [("ASSISTANT", "text", "forecast rain"),
                                             ("TOOL", "text", "forecast payload")])
    await migrate(db)
    assert await found(db, "forecast") == [said]
    assert await found(db, "payload") == []
    if db.is_sqlite:
        async with db.read() as conn:
            keys = (await conn.exec_driver_sql(
                "SELECT message_id FROM message_search_keys")).scalars().all()
        assert keys == [said]


async def test_upgrade_indexes_text_parts_and_drops_tool_results(db: Database) -> None:
    """Rows written before multimodal text was indexed and tool results left out are
    re-indexed by the upgrade."""
    from chatql.store.db.migrate import migrate

    parts, dump, plain = await _rows_at(db, "0006_tree", [
        ("USER", "user_input", "placeholder"),
        ("ASSISTANT", "text", "quarterly tool output"),
        ("ASSISTANT", "text", "quarterly figures look fine"),
    ])
    async with db.write() as conn:
        await conn.execute(update(messages).where(messages.c.id == parts).values(props={
            "content": [{"type": "text", "text": "quarterly chart"},
                        {"type": "image_url", "image_url": {"url": "https://x/c.png"}}]}))
        await conn.execute(update(messages).where(messages.c.id == dump).values(
            metadata={"is_tool_result": True}))
    # Before the upgrade: the list is not indexed and the tool output is.
    assert sorted(await indexed(db, "quarterly")) == sorted([dump, plain])
    await migrate(db)
    assert sorted(await found(db, "quarterly")) == sorted([parts, plain])
    assert await found(db, "chart") == [parts]
    assert await found(db, "output") == []
    if db.is_sqlite:
        async with db.read() as conn:
            keys = (await conn.exec_driver_sql(
                "SELECT message_id FROM message_search_keys ORDER BY key")).scalars().all()
        assert keys == [parts, plain]


async def test_postgres_statistics_path_ranks_rarer_words_higher(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large Postgres tables take common words' frequencies from ANALYZE statistics."""
    if not db.is_postgres:
        pytest.skip("the statistics path is Postgres only")
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    async with db.write() as conn:
        last = await lock_chat_for_append(conn, ALICE, "c1")
        written = await insert_messages(conn, "c1", [
            *[NewMessage(role="USER", type="user_input", props={"content": f"lemon {i}"})
              for i in range(40)],
            NewMessage(role="USER", type="user_input", props={"content": "kiwi kiwi lemon"}),
            NewMessage(role="USER", type="user_input", props={"content": "kiwi lemon lemon"}),
        ], last_sequence=last)
    async with db.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("ANALYZE messages")
    monkeypatch.setattr(store_search, "_EXACT_BELOW", 1)
    counted: list[str | None] = []
    count = store_search._count

    def spy(term: str | None, cap: int | None) -> object:
        counted.append(term)
        return count(term, cap)

    monkeypatch.setattr(store_search, "_count", spy)
    async with db.read() as conn:
        documents, frequencies = await store_search._document_frequencies(
            conn, ["lemon", "kiwi", "absent"])
    assert documents == 42
    assert frequencies == [42, 2, 0]
    assert "lemon" not in counted and "absent" in counted  # common words come from stats
    assert await found(db, "kiwi lemon") == [written[-2].id, written[-1].id]


async def test_huge_messages_are_written_and_their_start_indexed(db: Database) -> None:
    """Postgres refuses a tsvector over 1 MiB; a huge message must still be written."""
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    words = [f"w{i:06d}x" for i in range(150_000)]  # ~1.35 MB of distinct words
    content = " ".join(["openingword", *words, "closingword"])
    async with db.write() as conn:
        last = await lock_chat_for_append(conn, ALICE, "c1")
        [huge] = await insert_messages(conn, "c1", [
            NewMessage(role="USER", type="user_input", props={"content": content})
        ], last_sequence=last)
    assert await found(db, "openingword") == [huge.id]
    assert await found(db, "closingword") == []  # past the indexed prefix
