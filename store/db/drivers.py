"""The driver connections a :class:`~store.db.database.Database` keeps beside its engine.

Two reads are cheaper on the driver itself than through SQLAlchemy's pool:

- **Prepared reads on Postgres** (pages, chat lists) run on an asyncpg pool of the
  database's own: a checkout from the engine's pool pings the server first (a round trip
  per read), and asyncpg keeps each connection's prepared statements only while it
  lives.
- **The live chat list's reads on SQLite** (a handful of chats by primary key, once per
  delivered batch) run on read-only connections of their own. A small batch is read
  right on the event loop: in WAL mode a reader does not wait for writers, the rows are
  in the page cache, and the read costs less than handing it to a thread and back —
  which on a busy loop also waits for the interpreter lock. That connection never waits
  (no busy timeout): should the file answer busy, and for larger batches, the read goes
  to a connection with a thread of its own, which waits as every other reader does.

Both are opened on first use by the database that owns them and closed with it
(:meth:`Database.dispose`); nothing here is kept per process.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import make_url

__all__ = ["PreparedReadPool", "SqliteReader"]

#: A batch of at most this many rows' ids is read on the event loop (see SqliteReader).
READ_IN_LOOP = 64


async def _keep(connection: Any) -> None:
    """Nothing to reset: prepared reads are single statements that leave no state behind
    (asyncpg's default reset costs a round trip per release)."""


class PreparedReadPool:
    """An asyncpg pool for a Postgres database's prepared reads, opened on first use."""

    def __init__(self, url: str, max_size: int) -> None:
        self._url = url
        self._max_size = max_size
        self._pool: Any = None
        self._opening = asyncio.Lock()

    async def get(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                import asyncpg

                parsed = make_url(self._url)
                self._pool = await asyncpg.create_pool(
                    host=parsed.host, port=parsed.port or 5432, user=parsed.username,
                    password=parsed.password, database=parsed.database, min_size=1,
                    max_size=self._max_size, reset=_keep)
        return self._pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


class SqliteReader:
    """Read-only connections to a SQLite file for reads by primary key (see above)."""

    def __init__(self, in_loop: sqlite3.Connection, threaded: Any) -> None:
        self.in_loop = in_loop
        self.threaded = threaded

    @classmethod
    async def open(cls, database: str, busy_timeout_ms: int) -> SqliteReader:
        import aiosqlite

        threaded = await aiosqlite.connect(database, isolation_level=None)
        await threaded.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        await threaded.execute("PRAGMA query_only=ON")
        in_loop = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        in_loop.execute("PRAGMA busy_timeout=0")
        in_loop.execute("PRAGMA query_only=ON")
        return cls(in_loop, threaded)

    async def rows(self, sql: str, arguments: Sequence[Any],
                   count: int) -> Sequence[Sequence[Any]]:
        """The rows of ``sql`` for about ``count`` rows' worth of keys."""
        if count <= READ_IN_LOOP:
            try:
                return self.in_loop.execute(sql, arguments).fetchall()
            except sqlite3.OperationalError:
                pass  # busy or locked: the connection that waits reads it
        rows: Sequence[Sequence[Any]] = await self.threaded.execute_fetchall(sql, arguments)
        return rows

    async def close(self) -> None:
        self.in_loop.close()
        await self.threaded.close()
