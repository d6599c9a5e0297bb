"""Every filter of a message page reads through an index of its own, in page order.

A chat of 4,000 messages in which each filtered value is rare: the plan of the page a
front end reads (the prepared statement the product runs) must scan the filter's own
``(chat_id, <column>, sequence)`` index, not walk the chat and filter. A request's
messages across chats read through ``(request_id, created_at, chat_id, sequence)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import insert

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.partitions import DEFAULT_PARTITIONS
from chatql.store.db.tables import chats
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.messages.pages import MessagePageShape, message_page_statement
from chatql.store.messages.requests import request_messages_query
from chatql.store.records import Identity
from tests.conftest import _session_postgres
from tests.store.explain import plan_of, plan_of_query, uses_index

ALICE = Identity(user_id="alice", tenant_id="acme")
RARE = {"thread_id": "t-rare", "block_id": "b-rare", "role": "SYSTEM", "type": "rare_type",
        "request_id": "r-rare"}


def message(n: int) -> NewMessage:
    rare = n % 97 == 0
    return NewMessage(
        role="SYSTEM" if rare else ("USER" if n % 2 else "ASSISTANT"),
        type="rare_type" if rare else "text", props={"n": n},
        thread_id="t-rare" if rare else f"t{n % 3}", block_id="b-rare" if rare else f"b{n % 3}",
        request_id="r-rare" if rare else f"r{n % 3}")


async def seed_big_chat(db: Database) -> Database:
    await store_chats.create_chat(db, ALICE, id="big", assistant_id="helper")
    for part in range(4):
        await store_messages.append_messages(
            db, ALICE, "big", f"seed{part}",
            [message(part * 1000 + n) for n in range(1000)])
    async with db.write() as conn:
        await conn.exec_driver_sql("ANALYZE")
    return db


@pytest.fixture
async def big_chat(db: Database) -> Database:
    return await seed_big_chat(db)


@pytest.fixture(scope="module", params=["sqlite", "postgres", "postgres-partitioned"])
def seeded_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
               sqlite_template: Path) -> Iterator[str]:
    """A database of each backend and layout holding the big chat, seeded once for the
    plan tests below, which only read it (EXPLAIN): a database of this module's own, so
    no other test empties it meanwhile."""
    async def seed(url: str) -> None:
        db = Database(url)
        try:
            await seed_big_chat(db)
        finally:
            await db.dispose()

    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("big-chat") / "chatql.db"
        shutil.copy(sqlite_template, path)
        url = f"sqlite+aiosqlite:///{path}"
        asyncio.run(seed(url))
        yield url
        return
    partitions = (DEFAULT_PARTITIONS if request.param == "postgres-partitioned"
                  else int(os.environ.get("CHATQL_TEST_PG_PARTITIONS", "0")))
    with contextlib.contextmanager(_session_postgres)(partitions) as postgres:
        if postgres is None:
            pytest.skip("Postgres is not reachable (set CHATQL_TEST_POSTGRES_URL or start it)")
        asyncio.run(seed(postgres))
        yield postgres


@pytest.fixture
async def seeded(seeded_url: str) -> AsyncIterator[Database]:
    db = Database(seeded_url)
    try:
        yield db
    finally:
        await db.dispose()


@pytest.mark.parametrize("column", sorted(RARE))
@pytest.mark.parametrize("forward", [False, True])
async def test_a_filtered_page_scans_the_filters_index(seeded: Database, column: str,
                                                       forward: bool) -> None:
    db = seeded
    shape = MessagePageShape.of(db, ALICE, forward=forward, after=forward, before=False,
                                filters=(column,))
    values = {"chat": "big", "user": ALICE.user_id, "tenant": ALICE.tenant_id, "team": None,
              "after": 10 if forward else None, "before": None, "limit": 51,
              column: RARE[column]}
    plan = await plan_of(db, message_page_statement(db, shape), values)
    assert uses_index(plan, "messages", f"chat_id_{column}_sequence"), plan


async def test_a_requests_page_scans_the_request_index(big_chat: Database) -> None:
    # A tenant of many chats: the plan must start from the request, not the chats.
    stamp = datetime.now(UTC)
    async with big_chat.write() as conn:
        await conn.execute(insert(chats), [
            {"id": f"c{n}", "assistant_id": "helper", "tenant_id": ALICE.tenant_id,
             "created_by": ALICE.user_id, "activity_at": stamp, "created_at": stamp,
             "updated_at": stamp} for n in range(3000)])
        await conn.exec_driver_sql("ANALYZE")
    plan = await plan_of_query(big_chat, request_messages_query(ALICE, "r-rare", after=None,
                                                                limit=51))
    assert uses_index(plan, "messages", "request_id_created_at_chat_id_sequence"), plan
