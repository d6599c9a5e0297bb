"""A walk up a branch reads one row per step on SQLite, however large the table.

Once SQLite has statistics of a large ``messages`` table (``ANALYZE``, which
``PRAGMA optimize`` also runs), a step of a recursive walk that names the chat as a
constant makes it build a Bloom filter over the chat's rows before each step: a branch
page of 50 took 15 ms instead of 0.15 ms, in the product's prepared pages and in the
store's own branch reads alike. The statistics of a table of 200,000 messages in
100,000 chats are written here directly (SQLite plans from them, not from the rows),
and every walk the product runs must plan without a Bloom filter, and still answer
the branch it walks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.prepared import MESSAGE_COLUMNS, fetch
from chatql.store.messages import message as store_messages
from chatql.store.messages import tree
from chatql.store.messages.message import NewMessage
from chatql.store.messages.pages import BranchPageShape, ancestor_statement, branch_page_statement
from chatql.store.records import Identity
from tests.conftest import fresh_database
from tests.store.explain import plan_of, plan_of_query

ALICE = Identity(user_id="alice", tenant_id="acme")
MESSAGES = 120
#: ``sqlite_stat1`` of a table of 200,000 messages in 100,000 chats (as ANALYZE wrote it).
STATISTICS = {
    "messages": {"sqlite_autoindex_messages_1": "200000 1",
                 "sqlite_autoindex_messages_2": "200000 100000 1",
                 "ix_messages_chat_id_parent_id_sequence": "200000 100000 1 1"},
    "chats": {"sqlite_autoindex_chats_1": "100001 1"},
}


@pytest.fixture
async def walked(request: pytest.FixtureRequest, tmp_path: Path,
                 sqlite_template: Path) -> AsyncIterator[Database]:
    db = Database(fresh_database(request, tmp_path, sqlite_template, "sqlite"))
    try:
        await store_chats.create_chat(db, ALICE, id="c", assistant_id="helper")
        await store_messages.append_messages(db, ALICE, "c", "seed", [
            NewMessage(role="USER", type="text", props={"n": n}) for n in range(MESSAGES)])
        async with db.write() as conn:
            await conn.exec_driver_sql("ANALYZE")
            await conn.exec_driver_sql("DELETE FROM sqlite_stat1")
            for table, indexes in STATISTICS.items():
                for index, stat in indexes.items():
                    await conn.exec_driver_sql(
                        "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)",
                        (table, index, stat))
            await conn.exec_driver_sql("ANALYZE sqlite_schema")  # load them
        yield db
    finally:
        await db.dispose()


async def _path(db: Database) -> list[str]:
    page = await store_messages.list_branch(db, ALICE, "c", last=MESSAGES)
    return [message.id for message in page.items]


def _without_bloom(plan: str) -> bool:
    assert "SEARCH" in plan, plan  # a plan was read at all
    return "BLOOM FILTER" not in plan


@pytest.mark.parametrize("forward", [False, True], ids=["backwards", "forwards"])
async def test_a_prepared_branch_page_walks_without_a_bloom_filter(walked: Database,
                                                                   forward: bool) -> None:
    db = walked
    path = await _path(db)
    shape = BranchPageShape.of(db, ALICE, forward=forward, branch=False, before=not forward,
                               filters=(), columns=MESSAGE_COLUMNS)
    statement = branch_page_statement(db, shape)
    values = {"chat": "c", "user": ALICE.user_id, "tenant": ALICE.tenant_id, "team": None,
              "branch": None, "limit": 11}
    if forward:  # oldest first from depth 40: messages 41..51
        values.update(floor=40, top=None, cap=40 + 11)
        expected = path[40:51]
    else:  # the page before message 100: 99 back to 89
        values.update(floor=0, start=path[99], count=12, skip=1)
        expected = path[88:99][::-1]
    assert _without_bloom(await plan_of(db, statement, values))
    rows = await fetch(db, statement, values)
    assert [row[MESSAGE_COLUMNS.index("id")] for row in rows] == expected


async def test_a_jump_pointer_climb_reads_without_a_bloom_filter(walked: Database) -> None:
    db = walked
    path = await _path(db)
    statement = ancestor_statement(db, db.dialect)
    values = {"start": path[-1], "depth": 7, "chat": "c"}
    assert _without_bloom(await plan_of(db, statement, values))
    assert [row[0] for row in await fetch(db, statement, values)] == [path[6]]


async def test_the_stores_branch_walk_reads_without_a_bloom_filter(walked: Database) -> None:
    db = walked
    path = await _path(db)
    query = tree.path_query(path[-1], chat="c", count=5, dialect=db.dialect)
    assert _without_bloom(await plan_of_query(db, query))
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    assert [row.id for row in rows] == path[::-1][:5]
