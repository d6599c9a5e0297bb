"""The retention sweep on every backend: what is due, and two sweepers never purge twice."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update

from chatql.store.chats.chat import create_chat, get_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, closed_chats
from chatql.store.keeping.retention import sweep_retention
from chatql.store.records import Identity

WHO = Identity(user_id="alice", tenant_id="acme")
NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)


async def _set(db: Database, chat_id: str, **values: object) -> None:
    async with db.write() as conn:
        await conn.execute(update(chats).where(chats.c.id == chat_id).values(**values))


async def test_only_expired_chats_and_old_trash_are_purged(db: Database) -> None:
    for name in ("expired", "expires-later", "old-trash", "new-trash", "kept"):
        await create_chat(db, WHO, id=name, assistant_id="a")
    await _set(db, "expired", expires_at=NOW - timedelta(seconds=1))
    await _set(db, "expires-later", expires_at=NOW + timedelta(seconds=1))
    await _set(db, "old-trash", deleted_at=NOW - timedelta(days=30, seconds=1))
    await _set(db, "new-trash", deleted_at=NOW - timedelta(days=29, hours=23))
    purged = await sweep_retention(db, now=NOW, trash_days=30)
    assert sorted(purged) == ["expired", "old-trash"]
    async with db.read() as conn:
        left = set((await conn.execute(select(chats.c.id))).scalars())
        closed = set((await conn.execute(select(closed_chats.c.id))).scalars())
    assert left == {"expires-later", "new-trash", "kept"}
    assert closed == {"expired", "old-trash"}
    assert await sweep_retention(db, now=NOW, trash_days=30) == []
    assert await get_chat(db, WHO, "kept") is not None


async def test_two_sweepers_purge_each_chat_once(database_url: str, db: Database) -> None:
    due = [f"due-{n:02}" for n in range(40)]
    for chat_id in [*due, "not-due"]:
        await create_chat(db, WHO, id=chat_id, assistant_id="a")
    async with db.write() as conn:
        await conn.execute(
            update(chats).where(chats.c.id.in_(due)).values(expires_at=NOW - timedelta(hours=1))
        )
    # Two instances: separate engines (connection pools) on the same database.
    first, second = Database(database_url), Database(database_url)
    try:
        results = await asyncio.gather(
            sweep_retention(first, now=NOW, trash_days=30, batch=3),
            sweep_retention(second, now=NOW, trash_days=30, batch=3),
            sweep_retention(first, now=NOW, trash_days=30, batch=3),
        )
    finally:
        await first.dispose()
        await second.dispose()
    together = [chat_id for result in results for chat_id in result]
    assert sorted(together) == due  # every due chat once, by exactly one sweeper
    async with db.read() as conn:
        assert await conn.scalar(select(func.count()).select_from(closed_chats)) == len(due)
        assert set((await conn.execute(select(chats.c.id))).scalars()) == {"not-due"}
