"""SQLite: WAL checkpoints run in the background, never inside a write's commit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from chatql.store.db import database
from chatql.store.db.database import Database

PAGE_FILLER = "x" * 40_000  # about ten pages of WAL per write


async def _writes(db: Database, count: int) -> None:
    for _ in range(count):
        async with db.write() as conn:
            await conn.execute(text("INSERT INTO t (body) VALUES (:body)"),
                               {"body": PAGE_FILLER})


async def _settled(db: Database) -> None:
    while db._checkpoint is not None:
        await asyncio.sleep(0.01)


async def _new_db(path: Path) -> Database:
    db = Database(f"sqlite+aiosqlite:///{path}")
    async with db.write() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)"))
    await _settled(db)
    return db


async def test_a_commit_does_not_checkpoint_at_sqlites_default_threshold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 10**9)  # no background checkpoints
    path = tmp_path / "quiet.db"
    db = await _new_db(path)
    try:
        size = path.stat().st_size
        # ~1,500 pages of WAL: SQLite's default (1,000) would have copied them by now.
        await _writes(db, 150)
        assert path.stat().st_size == size
        assert (tmp_path / "quiet.db-wal").stat().st_size > 1_000 * 4096
    finally:
        await db.dispose()


async def test_every_few_writes_a_background_checkpoint_copies_the_wal(
        tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    db = await _new_db(path)
    try:
        size = path.stat().st_size
        await _writes(db, database.CHECKPOINT_EVERY - 1 - db._writes % database.CHECKPOINT_EVERY)
        await _settled(db)
        assert path.stat().st_size == size  # all of it still in the WAL
        await _writes(db, 1)
        assert db._checkpoint is not None  # started by that write, not awaited by it
        await _settled(db)
        assert path.stat().st_size > size + database.CHECKPOINT_EVERY * 30_000
    finally:
        await db.dispose()
