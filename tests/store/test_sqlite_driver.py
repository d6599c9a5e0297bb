"""SQLite statements take one trip to the connection's thread, and answer as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from chatql.store.db.database import Database
from chatql.store.db.sqlite_driver import OneTripConnection


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> Any:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'trips.db'}")
    async with db.write() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
    try:
        yield db
    finally:
        await db.dispose()


async def test_each_statement_is_one_trip_to_the_thread(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    trips = [0]
    queue_call = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, *args: Any, **kwargs: Any) -> Any:
        trips[0] += 1
        return await queue_call(self, *args, **kwargs)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)

    async def trips_for(statements: int) -> int:
        trips[0] = 0
        async with sqlite_db.read() as conn:
            for n in range(statements):
                assert (await conn.execute(text("SELECT :n"), {"n": n})).scalar() == n
        return trips[0]

    await trips_for(1)  # the pool's connection is made
    # Ten more statements in the same transaction cost exactly ten more trips (the
    # adapter's own cursors take four each: open, execute, fetch, close).
    assert await trips_for(11) - await trips_for(1) == 10


async def test_rows_counts_ids_batches_and_errors_answer_as_sqlite_does(
        sqlite_db: Database) -> None:
    raw = await sqlite_db.engine.raw_connection()
    try:
        assert isinstance(raw.driver_connection, OneTripConnection)
    finally:
        raw.close()
    async with sqlite_db.write() as conn:
        inserted = await conn.execute(text("INSERT INTO t (name) VALUES ('a')"))
        assert inserted.lastrowid == 1 and inserted.rowcount == 1
        await conn.execute(text("INSERT INTO t (name) VALUES (:name)"),
                           [{"name": name} for name in ("b", "c", "d")])
        updated = await conn.execute(text("UPDATE t SET name = name || '!' WHERE id > 2"))
        assert updated.rowcount == 2
        result = await conn.execute(text("SELECT id, name FROM t ORDER BY id"))
        assert list(result.keys()) == ["id", "name"]
        assert [tuple(row) for row in result] == [(1, "a"), (2, "b"), (3, "c!"), (4, "d!")]
        assert (await conn.execute(text("SELECT name FROM t WHERE id = 9"))).first() is None
    # A refused write raises the driver's error through SQLAlchemy and changes nothing.
    with pytest.raises(IntegrityError):
        async with sqlite_db.write() as conn:
            await conn.execute(text("INSERT INTO t (name) VALUES ('e')"))
            await conn.execute(text("INSERT INTO t (name) VALUES ('a')"))
    with pytest.raises(OperationalError):
        async with sqlite_db.read() as conn:
            await conn.execute(text("SELECT nothing FROM nowhere"))
    async with sqlite_db.read() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 4
