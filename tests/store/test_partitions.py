"""The per-chat tables' layout: hash partitions by chat id on Postgres.

Every backend: message ids stay unique across the store and a message's chat is found
from its id (``message_chats``). On a partitioned database every statement the product
runs for one chat reads one partition of each per-chat table: the statements are
captured as the app sends them (through the engine, and the prepared reads the
compiled GraphQL reads run) and planned again with ``EXPLAIN``, both as a one-off plan
for the values and as the generic plan a prepared statement settles on.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from sqlalchemy import event, insert, select, text
from sqlalchemy.exc import IntegrityError

from chatql.store import clock
from chatql.store.chats import chat as store_chats
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.partitions import (
    DEFAULT_PARTITIONS,
    PER_CHAT_TABLES,
    layout_partitions,
    message_chats,
)
from chatql.store.db.tables import messages
from chatql.store.errors import Conflict
from chatql.store.lists.pages import ChatPageShape, chat_statement
from chatql.store.messages import lifecycle, search
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.messages.pages import (
    BranchPageShape,
    MessagePageShape,
    branch_page_statement,
    message_page_statement,
)
from chatql.store.messages.resume import StepIn, resume_records, update_resume
from chatql.store.records import Identity
from chatql.store.streams import StreamService, backend_from_url
from chatql.store.streams.reducer import ChunkIn

ALICE = Identity(user_id="alice", tenant_id="acme")
AGENT = Identity(user_id="agent", tenant_id="acme", roles=frozenset({"agent"}))
PER_CHAT = "|".join(table.name for table in PER_CHAT_TABLES)
PARTITION = re.compile(rf"\b({PER_CHAT})_p\d+\b")
FINDS_THE_CHAT = "SELECT resume_records.chat_id \nFROM resume_records \nWHERE resume_records.id ="


async def _partitioned(db: Database) -> int:
    if not db.is_postgres:
        return 0
    async with db.read() as conn:
        return int(await conn.run_sync(layout_partitions))


async def test_the_layout_of_each_backend(db: Database, request: pytest.FixtureRequest) -> None:
    backend = request.node.callspec.params["database_url"]
    async with db.read() as conn:
        if db.is_sqlite:
            kind = await conn.scalar(text(
                "SELECT type FROM sqlite_master WHERE name = 'message_chats'"))
            assert kind == "view"
            return
        count = await conn.run_sync(layout_partitions)
        assert count == (DEFAULT_PARTITIONS if backend == "postgres-partitioned" else 0)
        kind = await conn.scalar(text(
            "SELECT relkind::text FROM pg_class WHERE relname = 'message_chats'"))
        assert kind == ("r" if count else "v")
        for table in PER_CHAT_TABLES:
            parts = await conn.scalar(text(
                "SELECT count(*) FROM pg_inherits WHERE inhparent = CAST(:t AS regclass)"),
                {"t": table.name})
            key = await conn.scalar(text(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = CAST(:t AS regclass) AND contype = 'p'"), {"t": table.name})
            assert parts == count
            if count:
                assert key.startswith("PRIMARY KEY (chat_id"), key


async def test_a_message_id_is_taken_across_chats(db: Database) -> None:
    for chat in ("one", "two"):
        await store_chats.create_chat(db, ALICE, id=chat, assistant_id="helper")
    await store_messages.append_messages(
        db, ALICE, "one", "first", [NewMessage(role="USER", type="user_input",
                                            props={"content": "hi"}, id="chosen")])
    with pytest.raises(Conflict):
        await store_messages.append_messages(
            db, ALICE, "two", "second", [NewMessage(role="USER", type="user_input",
                                                    props={"content": "hi"}, id="chosen")])
    # The database's own rule, for writers racing past the check: partitioned tables
    # cannot hold it in their keys, the id map's primary key does.
    row = {"id": "chosen", "chat_id": "two", "sequence": 99, "role": "USER",
           "type": "text", "props": {}, "created_at": clock.now(),
           "updated_at": clock.now()}
    with pytest.raises(IntegrityError):
        async with db.write() as conn:
            await conn.execute(insert(messages), [row])
    async with db.read() as conn:
        found = await conn.scalar(select(message_chats.c.chat_id)
                                  .where(message_chats.c.id == "chosen"))
    assert found == "one"
    # Deleting the message frees its id (the map follows every delete).
    assert await store_messages.delete_messages(db, ALICE, "one", ["chosen"]) == 1
    await store_messages.append_messages(
        db, ALICE, "two", "third", [NewMessage(role="USER", type="user_input",
                                               props={"content": "hi"}, id="chosen")])
    got = await store_messages.get_message(db, ALICE, "chosen")
    assert got is not None and got.chat_id == "two"
    # And purging a chat (the cascade) too.
    assert await store_chats.purge_chat(db, ALICE, "two")
    async with db.read() as conn:
        assert await conn.scalar(select(message_chats.c.id)
                                 .where(message_chats.c.id == "chosen")) is None


class _Captured:
    """The statements the app sends, with their values, while recording."""

    def __init__(self, db: Database) -> None:
        self.statements: list[tuple[str, Sequence[Any]]] = []
        self.recording = True
        self._db = db
        fetch_prepared = db.fetch_prepared

        def before(conn: Any, cursor: Any, statement: str, parameters: Any,
                   context: Any, executemany: bool) -> None:
            if self.recording:
                values = parameters[0] if executemany and parameters else parameters
                self.statements.append((statement, tuple(values or ())))

        async def fetch(sql: str, arguments: Sequence[Any]) -> Sequence[Any]:
            if self.recording:
                self.statements.append((sql, tuple(arguments)))
            return await fetch_prepared(sql, arguments)

        event.listen(db.engine.sync_engine, "before_cursor_execute", before)
        db.fetch_prepared = fetch  # type: ignore[method-assign]


async def _partitions_planned(db: Database, sql: str, values: Sequence[Any],
                              mode: str) -> dict[str, set[str]]:
    """The partitions of each per-chat table the plan of ``sql`` reads."""
    async with db.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        await driver.execute(f"SET plan_cache_mode = {mode}")
        try:
            rows = await driver.fetch(f"EXPLAIN (COSTS OFF) {sql}", *values)
        finally:
            await driver.execute("RESET plan_cache_mode")
    plan = "\n".join(row[0] for row in rows)
    read: dict[str, set[str]] = {}
    for match in PARTITION.finditer(plan):
        read.setdefault(match.group(1), set()).add(match.group(0))
    return read


@pytest.fixture
async def captured(db: Database) -> AsyncIterator[_Captured]:
    if not await _partitioned(db):
        pytest.skip("the per-chat tables are partitioned on Postgres only")
    yield _Captured(db)


def _text(mid: str, value: str) -> ChunkIn:
    return ChunkIn(type="text", message_id=mid, chunk_id=None, props={"content": value},
                   delta=True)


async def test_every_per_chat_statement_reads_one_partition(
        db: Database, captured: _Captured) -> None:
    captured.recording = False
    # Other chats' rows in every partition, so a plan that reads more than its own
    # partition would show it.
    for n in range(40):
        await store_chats.create_chat(db, ALICE, id=f"other{n}", assistant_id="helper")
        await store_messages.append_messages(
            db, ALICE, f"other{n}", f"seed{n}",
            [NewMessage(role="USER", type="user_input", props={"content": f"hello {n}"})])
    await store_chats.create_chat(db, ALICE, id="c", assistant_id="helper")
    captured.recording = True
    # An append, with an idempotency key (its receipt) and a caller-chosen id.
    await store_messages.append_messages(
        db, ALICE, "c", "a1",
        [NewMessage(role="SYSTEM", type="text", props={"content": "be brief"}),
         NewMessage(role="USER", type="user_input", props={"content": "find the walrus"},
                    id="question", thread_id="t1")])
    # A stream persist (messages, resume records, usage), as an agent ends a reply.
    service = StreamService(db, backend_from_url("memory://"), idle_timeout=0)
    try:
        info = await service.start_stream(AGENT, "c", request_id="r1")
        await service.push_chunks(AGENT, info.id, [_text("reply", "the walrus sleeps")])
        await service.record_step(AGENT, info.id, StepIn(id="s1", type="llm",
                                                          status="running"))
        await service.end_stream(AGENT, info.id, "INTERRUPTED")
    finally:
        await service.close()
    # Pages, through the store and through the prepared reads the compiled GraphQL
    # reads run.
    await store_messages.list_messages(db, ALICE, "c", first=10)
    await store_messages.list_messages(db, ALICE, "c", last=10)
    await store_messages.list_branch(db, ALICE, "c", first=10)
    await store_messages.list_branch(db, ALICE, "c", last=10)
    values = {"chat": "c", "user": ALICE.user_id, "tenant": ALICE.tenant_id, "team": None,
              "after": None, "before": None, "limit": 11, "thread_id": "t1"}
    for filters in ((), ("thread_id",)):
        for forward in (False, True):
            shape = MessagePageShape.of(db, ALICE, forward=forward, after=False,
                                        before=False, filters=filters)
            await prepared.fetch(db, message_page_statement(db, shape), values)
    shape_b = BranchPageShape.of(db, ALICE, forward=False, branch=False, before=False,
                                 filters=())
    await prepared.fetch(db, chat_statement(db, ChatPageShape.of(db, ALICE, after=False)),
                         {"chat": "c", "user": ALICE.user_id, "tenant": ALICE.tenant_id,
                          "team": None})
    await prepared.fetch(db, branch_page_statement(db, shape_b),
                         {**values, "floor": 0, "count": 11, "skip": 0})
    # Search within the chat, the message by id, edits, regenerate, the model's window.
    hits = await search.search_messages(db, ALICE, "walrus", chat_id="c")
    assert hits
    await store_messages.get_message(db, ALICE, "question")
    await store_messages.update_message(db, ALICE, "question", metadata={"seen": True})
    await store_messages.edit_message(db, ALICE, "question", "e1",
                                      props={"content": "find the seal"})
    await store_messages.regenerate(db, ALICE, "question")
    await lifecycle.model_context(db, ALICE, "c", 20)
    records = await resume_records(db, ALICE, "c")
    await update_resume(db, AGENT, records[0].id, status="completed")
    await store_messages.delete_messages(db, ALICE, "c", ["question"])
    captured.recording = False

    checked = 0
    for sql, values_sent in captured.statements:
        # A per-chat statement names its chat; the store-wide ones (search's word
        # statistics, which weigh a word by its rarity across the store) do not.
        if not re.search(rf"\b({PER_CHAT})\b", sql) or "chat_id" not in sql or not re.match(
                r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.IGNORECASE):
            continue
        if sql.startswith(FINDS_THE_CHAT):
            # updateResume names a record, not its chat: finding the chat probes each
            # partition's index on the record id (and the update then reads one).
            plan = await _partitions_planned(db, sql, values_sent, "force_custom_plan")
            assert len(plan["resume_records"]) == DEFAULT_PARTITIONS
            continue
        checked += 1
        for mode in ("force_custom_plan", "force_generic_plan"):
            read = await _partitions_planned(db, sql, values_sent, mode)
            assert all(len(parts) <= 1 for parts in read.values()), f"{mode}\n{sql}\n{read}"
    assert checked >= 30, checked


async def test_an_import_cannot_reuse_a_resume_record_id(db: Database) -> None:
    """On partitioned tables the key is (chat_id, id): the import checks the ids."""
    from chatql.store.keeping.imports import import_chat

    def document(chat: str) -> list[dict[str, Any]]:
        return [{"kind": "chat", "id": chat, "assistantId": "helper"},
                {"kind": "resume", "id": "step-1", "type": "llm", "status": "interrupted"}]

    await import_chat(db, ALICE, format="CHATQL", document=document("first"),
                      import_id="i1")
    with pytest.raises(Conflict, match="step-1"):
        await import_chat(db, ALICE, format="CHATQL", document=document("second"),
                          import_id="i2")
    assert await store_chats.get_chat(db, ALICE, "second") is None
    assert [r.id for r in await resume_records(db, ALICE, "first")] == ["step-1"]


async def test_the_partitions_revision_goes_down_and_up_again(db: Database) -> None:
    """Down: the per-chat tables become plain (rows kept); up with the conversion
    (``chatql migrate``): the layout comes back, rows and all."""
    from alembic import command

    from chatql.store.db.migrate import alembic_config, migrate

    layout = await _partitioned(db)
    await store_chats.create_chat(db, ALICE, id="kept", assistant_id="helper")
    await store_messages.append_messages(db, ALICE, "kept", "a", [
        NewMessage(role="USER", type="user_input", props={"content": "still here"})])
    for _ in range(2):  # the second time from a database that was converted before
        async with db.engine.begin() as conn:
            # Below the partitions revision, whatever revisions came after it.
            await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync),
                                                               "0009_message_filters"))
        assert await _partitioned(db) == 0
        await migrate(db, pg_partitions=layout, convert=True)
        assert await _partitioned(db) == layout
        page = await store_messages.list_messages(db, ALICE, "kept", last=5)
        assert [m.props for m in page.items] == [{"content": "still here"}]
