"""Converting a Postgres database with rows to hash partitions loses nothing.

A database made with plain tables and written to (appends, a stream persist with
resume records and usage, receipts) is converted batch by batch while the service keeps
writing: between two batches a message is appended, one already copied is changed and
one deleted, and one not yet copied is changed. Every per-chat table then holds the
same rows (counts and digests of their text) as the plain tables held just before the
swap, the store reads as before, and converting back to plain tables loses nothing
either.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import text

from chatql.gql import cli
from chatql.store.chats import chat as store_chats
from chatql.store.chats.usage import UsageIn
from chatql.store.db import partitions
from chatql.store.db.database import Database
from chatql.store.db.migrate import migrate
from chatql.store.db.partitions import PER_CHAT_TABLES, layout_partitions
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.messages.search import search_messages
from chatql.store.records import Identity
from chatql.store.streams import StreamService, backend_from_url
from chatql.store.streams.reducer import ChunkIn
from tests.conftest import empty_postgres

ALICE = Identity(user_id="alice", tenant_id="acme")
AGENT = Identity(user_id="agent", tenant_id="acme", roles=frozenset({"agent"}))


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """The URL of an empty Postgres database of the test's own (not migrated)."""
    with empty_postgres("chatql_conv") as url:
        if url is None:
            pytest.skip("Postgres is not reachable (set CHATQL_TEST_POSTGRES_URL or start it)")
        yield url


@pytest.fixture
async def plain(fresh_postgres_url: str) -> AsyncIterator[Database]:
    db = Database(fresh_postgres_url)
    await migrate(db, pg_partitions=0)
    try:
        yield db
    finally:
        await db.dispose()


async def digests(db: Database, suffix: str = "") -> dict[str, tuple[int, str]]:
    """Each per-chat table's row count and the md5 of its rows' text, in key order."""
    found = {}
    async with db.read() as conn:
        for table in PER_CHAT_TABLES:
            columns = ", ".join(column.name for column in table.columns)
            key = ", ".join(["chat_id", *(c.name for c in table.primary_key.columns
                                          if c.name != "chat_id")])
            count, digest = (await conn.execute(text(
                f"SELECT count(*), md5(coalesce(string_agg(ROW({columns})::text, E'\\n'"
                f" ORDER BY {key}), '')) FROM {table.name}{suffix}"))).one()
            found[table.name] = (int(count), str(digest))
    return found


async def fill(db: Database) -> None:
    service = StreamService(db, backend_from_url("memory://"), idle_timeout=0)
    try:
        for n in range(12):
            chat = f"chat{n}"
            await store_chats.create_chat(db, ALICE, id=chat, assistant_id="helper")
            await store_messages.append_messages(db, ALICE, chat, f"a{n}", [
                NewMessage(role="USER", type="user_input",
                           props={"content": f"question {n} about otters"}, thread_id="t"),
                NewMessage(role="ASSISTANT", type="text", props={"content": f"answer {n}"}),
            ])
            info = await service.start_stream(
                AGENT, chat, request_id=f"r{n}",
                user_input=NewMessage(role="USER", type="user_input",
                                      props={"content": "and then?"}))
            await service.push_chunks(AGENT, info.id, [ChunkIn(
                type="text", message_id=f"reply{n}", chunk_id=None,
                props={"content": "otters sleep holding hands"}, delta=True)])
            await service.record_step(AGENT, info.id, StepIn(id="s", type="llm",
                                                              status="running"))
            await service.end_stream(AGENT, info.id, "INTERRUPTED", usage=UsageIn(
                prompt_tokens=10, completion_tokens=5, model="m"))
    finally:
        await service.close()


async def test_conversion_in_batches_under_writes_loses_nothing(plain: Database) -> None:
    db = plain
    await fill(db)
    before = await digests(db)
    assert before["messages"][0] == 12 * 4 and before["usage_records"][0] == 12
    assert before["resume_records"][0] and before["append_receipts"][0]
    first = await store_messages.list_messages(db, ALICE, "chat0", first=50)
    late = first.items[-1]
    at_swap: dict[str, tuple[int, str]] = {}
    seen: list[tuple[str, int]] = []

    async def progress(table: str, batches: int) -> None:
        seen.append((table, batches))
        if (table, batches) == ("messages", 1):
            # The first batch (in id order) is copied; the rest is not. Writes go on.
            await store_messages.append_messages(db, ALICE, "chat3", "during", [
                NewMessage(role="USER", type="user_input", props={"content": "late otter"})])
            copied = (await store_messages.list_messages(db, ALICE, "chat0", first=1)).items
            await store_messages.update_message(db, ALICE, late.id,
                                                metadata={"changed": "after copy"})
            await store_messages.update_message(db, ALICE, copied[0].id,
                                                metadata={"changed": "maybe copied"})
            await store_messages.delete_messages(db, ALICE, "chat5", [
                m.id for m in (await store_messages.list_messages(
                    db, ALICE, "chat5", first=1)).items])
        if not table:
            # The plain tables as they are when the swap begins: what must survive.
            at_swap.update(await digests(db))

    assert await partitions.convert(db, 16, batch_rows=7, progress=progress)
    assert ("messages", 2) in seen  # more than one batch
    async with db.read() as conn:
        assert await conn.run_sync(layout_partitions) == 16
        assert await conn.scalar(text("SELECT count(*) FROM message_chats")) == (
            at_swap["messages"][0])
    after = await digests(db)
    assert after == at_swap
    assert after["messages"][0] == before["messages"][0]  # one appended, one deleted
    assert after != before
    # The store reads the converted tables as before.
    got = await store_messages.get_message(db, ALICE, late.id)
    assert got is not None and got.metadata == {"changed": "after copy"}
    assert [hit.message.chat_id for hit in await search_messages(
        db, ALICE, "late otter", chat_id="chat3")] == ["chat3"]
    page = await store_messages.list_messages(db, ALICE, "chat3", first=50)
    assert page.items[-1].props == {"content": "late otter"}
    # Running it again does nothing; converting back to plain tables loses nothing.
    assert not await partitions.convert(db, 16)
    assert await partitions.convert(db, 0, batch_rows=5)
    async with db.read() as conn:
        assert await conn.run_sync(layout_partitions) == 0
    assert await digests(db) == after


async def test_conversion_copies_the_columns_the_database_has(plain: Database) -> None:
    """The columns come from the database, not from the code's table definitions: a
    column the code does not declare (a later revision's, read by an older one, or an
    operator's own) is copied, and a column the code declares that this revision does
    not have yet is not asked for."""
    db = plain
    await fill(db)
    async with db.write() as conn:
        await conn.exec_driver_sql("ALTER TABLE messages ADD COLUMN operator_note TEXT")
        await conn.exec_driver_sql("UPDATE messages SET operator_note = 'kept ' || id")
    before = await digests(db)
    assert await partitions.convert(db, 16, batch_rows=9)
    assert await digests(db) == before
    async with db.read() as conn:
        notes = (await conn.exec_driver_sql(
            "SELECT count(*) FROM messages WHERE operator_note = 'kept ' || id")).scalar()
    assert notes == before["messages"][0]


async def test_chatql_migrate_converts_and_rejects_bad_counts(
        plain: Database, fresh_postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    await fill(plain)
    before = await digests(plain)
    assert cli.main(["migrate", "--database-url", fresh_postgres_url, "--partitions", "-1"]) == 2
    assert "from 0 to 1024" in capsys.readouterr().err
    assert cli.main(["migrate", "--database-url", fresh_postgres_url, "--batch-rows", "0"]) == 2
    assert "--batch-rows must be at least 1" in capsys.readouterr().err
    # A database with rows keeps plain tables through the server's own migration ...
    await migrate(plain, pg_partitions=8)
    async with plain.read() as conn:
        assert await conn.run_sync(layout_partitions) == 0
    # ... and `chatql migrate` converts it.
    await plain.dispose()
    assert await asyncio.to_thread(
        cli.main, ["migrate", "--database-url", fresh_postgres_url, "--partitions", "8",
                   "--batch-rows", "10"]) == 0
    assert "swapping in the partitioned tables" in capsys.readouterr().err
    async with plain.read() as conn:
        assert await conn.run_sync(layout_partitions) == 8
    assert await digests(plain) == before


async def test_a_partitioned_database_is_not_repartitioned(plain: Database) -> None:
    assert await partitions.convert(plain, 4)
    with pytest.raises(ValueError, match="already have 4 partitions"):
        await partitions.convert(plain, 8)
    # `chatql migrate` (and the server) leave a partitioned database as it is.
    await migrate(plain, pg_partitions=8, convert=True)
    async with plain.read() as conn:
        assert await conn.run_sync(layout_partitions) == 4
