"""Engine factory and transaction helpers for SQLite (embedded) and Postgres.

Every store function receives a :class:`Database` and opens its own short
transaction with :meth:`Database.read` or :meth:`Database.write`. On SQLite a write
transaction starts with ``BEGIN IMMEDIATE`` (so two writers never deadlock upgrading
their locks) and writers of one process queue on an asyncio lock instead of spinning
in SQLite's busy handler; other processes are covered by the busy timeout.

On Postgres with read replicas (``replica_urls``), :meth:`Database.read` and the
prepared reads go to a replica fit to answer (store/db/replicas.py says which is fit:
healthy, not lagging, and past the caller's own last write); writes, and reads inside
a write, stay on the primary.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from chatql.store import jsonutil
from chatql.store.db import sqlite_driver
from chatql.store.db.drivers import PreparedReadPool, SqliteReader
from chatql.store.db.replicas import Replica, ReplicaSet, in_write, parse_lsn

__all__ = [
    "DEFAULT_DATABASE_URL",
    "Database",
    "connect_asyncpg",
    "execute_on_server",
    "normalize_url",
]

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./chatql.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: Write transactions between two background WAL checkpoints on SQLite.
CHECKPOINT_EVERY = 16
#: WAL pages at which a commit checkpoints by itself (SQLite's own rule, 1,000 by
#: default): a safety net for bursts the background checkpoints do not keep up with.
SQLITE_AUTOCHECKPOINT_PAGES = 10_000
#: Seconds between two health checks of the read replicas.
REPLICA_CHECK_INTERVAL = 0.5
#: What a replica's failure to answer looks like, whichever door the read took.
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError, DBAPIError)


def normalize_url(url: str) -> str:
    """Pick the async driver for plain ``sqlite://`` and ``postgresql://`` URLs."""
    parsed = make_url(url)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif parsed.drivername in ("postgres", "postgresql", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    return parsed.render_as_string(hide_password=False)


class Database:
    """An async engine plus the transaction discipline the store relies on."""

    def __init__(self, url: str = DEFAULT_DATABASE_URL, *, pool_size: int = 10,
                 replica_urls: Sequence[str] = (), replica_max_lag: float = 5.0,
                 replica_check_interval: float = REPLICA_CHECK_INTERVAL) -> None:
        self.url = normalize_url(url)
        self.dialect = make_url(self.url).get_backend_name()
        self.pool_size = pool_size
        kwargs: dict[str, Any] = {
            "json_serializer": jsonutil.dumps,
            "json_deserializer": jsonutil.loads,
        }
        if self.dialect == "postgresql":
            kwargs.update(pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
        elif self.dialect == "sqlite":
            # Each statement in one trip to the connection's thread (store.sqlite_driver).
            kwargs["connect_args"] = {"async_creator_fn": sqlite_driver.connect}
        self.engine: AsyncEngine = create_async_engine(self.url, **kwargs)
        #: The read replicas (None without any): store/db/replicas.py.
        self.replicas: ReplicaSet | None = None
        if replica_urls:
            if self.dialect != "postgresql":
                raise ValueError("read replicas need a Postgres primary")
            replicas = []
            for replica_url in replica_urls:
                replica_url = normalize_url(replica_url)
                if make_url(replica_url).get_backend_name() != "postgresql":
                    raise ValueError(f"a read replica must be Postgres: {replica_url!r}")
                replicas.append(Replica(
                    url=replica_url, engine=create_async_engine(replica_url, **kwargs),
                    prepared=PreparedReadPool(replica_url, pool_size)))
            self.replicas = ReplicaSet(self.url, replicas, max_lag=replica_max_lag,
                                       interval=replica_check_interval)
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        self._writes = 0
        self._checkpoint: asyncio.Task[None] | None = None
        # Driver connections beside the engine (store/db/drivers.py), opened on first
        # use and closed by dispose().
        self._prepared_pool = PreparedReadPool(self.url, pool_size) if self.is_postgres else None
        self._sqlite_reader: SqliteReader | None = None
        self._sqlite_reader_opening = asyncio.Lock()
        #: Statements compiled for this database's dialect, by what decides their text
        #: (store/db/prepared.py).
        self.statements: dict[Any, Any] = {}
        if self.is_sqlite:
            _configure_sqlite(self.engine)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction (deferred on SQLite: readers never block writers).

        With replicas, on one fit to answer; when its connection fails (a replica
        stopped since the last health check), on the primary.
        """
        replica = None if self.replicas is None else self.replicas.choose()
        if replica is not None:
            conn = replica.engine.connect()
            try:
                await conn.start()
            except _CONNECTION_ERRORS as error:
                replica.mark_down(f"refused a connection ({type(error).__name__})")
            else:
                try:
                    async with conn.begin():
                        yield conn
                finally:
                    await conn.close()
                return
        async with self.engine.connect() as conn, conn.begin():
            yield conn

    async def fetch_prepared(self, sql: str, arguments: Sequence[Any]) -> Sequence[Any]:
        """The rows of a prepared read (Postgres): on a replica fit to answer, else (or
        when the replica fails to answer) on the primary's prepared-read pool."""
        replica = None if self.replicas is None else self.replicas.choose()
        if replica is not None:
            import asyncpg

            try:
                pool = await replica.prepared.get()
                rows: Sequence[Any] = await pool.fetch(sql, *arguments)
                return rows
            except asyncpg.SerializationError:
                # Cancelled by the replica's recovery (a conflict with replayed WAL): the
                # replica is well; this one read is asked of the primary instead.
                pass
            except (*_CONNECTION_ERRORS, asyncpg.PostgresConnectionError,
                    asyncpg.InterfaceError, asyncpg.exceptions.OperatorInterventionError) as error:
                # A read is safe to ask again, and the primary always has the answer.
                replica.mark_down(f"failed a read ({type(error).__name__})")
        pool = await self.prepared_pool()
        rows = await pool.fetch(sql, *arguments)
        return rows

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed when the block exits cleanly, else rolled back."""
        if self._write_lock is None:
            if self.replicas is None:
                async with self.engine.connect() as conn, conn.begin():
                    yield conn
                return
            inside = in_write.set(True)
            try:
                async with self.engine.connect() as conn:
                    async with conn.begin():
                        yield conn
                    # Committed: the WAL's insert position is now past this write's
                    # commit record, so a replica that has replayed up to it sees the
                    # write. (Not pg_current_wal_lsn(): under synchronous_commit=off it
                    # can still stand before the commit record.)
                    lsn = await conn.scalar(text("SELECT pg_current_wal_insert_lsn()::text"))
                    await conn.rollback()
            finally:
                in_write.reset(inside)
            self.replicas.wrote(parse_lsn(lsn))
            return
        async with self._write_lock, self.engine.connect() as conn:
            conn = await conn.execution_options(chatql_immediate=True)
            async with conn.begin():
                yield conn
        self._writes += 1
        if self._writes % CHECKPOINT_EVERY == 0 and self._checkpoint is None:
            self._checkpoint = asyncio.create_task(self._checkpoint_wal())

    async def _checkpoint_wal(self) -> None:
        """Copy the WAL's committed pages into the database file, off the write path.

        SQLite's own checkpoint runs inside the commit that crosses its threshold, and
        its fsync made one write in every few dozen several times slower than the rest.
        Here a passive checkpoint (it never waits for, nor blocks, readers or writers)
        runs on a connection of its own, in that connection's thread, after every
        :data:`CHECKPOINT_EVERY` writes; one at a time.
        """
        try:
            async with self.engine.connect() as conn:
                await conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        except Exception:
            pass  # the next one, or SQLite's own at the threshold, catches up
        finally:
            self._checkpoint = None

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            async with self.engine.connect() as conn:
                await conn.exec_driver_sql("SELECT 1")
        except Exception:
            return False
        return True

    async def prepared_pool(self) -> Any:
        """The asyncpg pool for prepared reads (Postgres only)."""
        assert self._prepared_pool is not None, "prepared reads use a pool on Postgres only"
        return await self._prepared_pool.get()

    async def sqlite_reader(self) -> SqliteReader | None:
        """Read-only connections to the SQLite file (None for a database in memory,
        which another connection would not see, and on Postgres)."""
        if self._sqlite_reader is not None or not self.is_sqlite:
            return self._sqlite_reader
        url = make_url(self.url)
        if not url.database or url.database == ":memory:" or url.query:
            return None
        async with self._sqlite_reader_opening:
            if self._sqlite_reader is None:
                self._sqlite_reader = await SqliteReader.open(url.database,
                                                              SQLITE_BUSY_TIMEOUT_MS)
        return self._sqlite_reader

    async def dispose(self) -> None:
        if self.replicas is not None:
            await self.replicas.close()
        if self._checkpoint is not None:
            await self._checkpoint
        if self._prepared_pool is not None:
            await self._prepared_pool.close()
        reader, self._sqlite_reader = self._sqlite_reader, None
        if reader is not None:
            await reader.close()
        await self.engine.dispose()


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints run in the background (Database._checkpoint_wal); a commit
        # checkpoints by itself only when they fall far behind.
        cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT_PAGES}")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("chatql_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


async def connect_asyncpg(url: str, *, timeout: float = 10) -> Any:
    """A bare asyncpg connection to the Postgres database ``url`` names.

    For work SQLAlchemy has no word for: ``COPY`` bulk loads, and statements that
    must run outside a transaction such as ``CREATE DATABASE``.
    """
    import asyncpg

    parsed = make_url(url)
    return await asyncpg.connect(
        host=parsed.host, port=parsed.port or 5432, user=parsed.username,
        password=parsed.password, database=parsed.database, timeout=timeout,
    )


async def execute_on_server(url: str, statement: str) -> None:
    """Run one statement outside any transaction (``CREATE``/``DROP DATABASE``)."""
    conn = await connect_asyncpg(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
