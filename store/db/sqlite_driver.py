"""SQLite connections that run each statement in one trip to their thread.

aiosqlite runs a SQLite connection in a thread of its own and hands it one call at a
time. SQLAlchemy's aiosqlite adapter makes a statement several such calls — open a
cursor, execute, fetch the rows, close — and each is a round trip between the event
loop and that thread (about 80 µs on a 2-core machine, more when the loop is busy). An
append of one message is seven statements plus its transaction: some two dozen trips.

:func:`connect` makes an aiosqlite connection whose cursors do the whole statement in
ONE trip: execute, then fetch every row (what the adapter does next anyway; its
cursors always buffer results), and close. The cursor hands the adapter the buffered
rows, the description, row count and last row id without another trip. Everything
else — transactions, commits, the connection's own ``execute`` — is aiosqlite's.
Server-side (streaming) cursors are not offered: nothing in chatql asks SQLite for
one, and a cursor that buffers would not stream.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from chatql.store.db.driver_adapters import ThreadCallConnection, daemon_sqlite_thread

__all__ = ["OneTripConnection", "connect"]

_Outcome = tuple[Any, int, int | None, list[Any]]


def _run(conn: sqlite3.Connection, sql: str, parameters: Any, many: bool) -> _Outcome:
    """In the connection's thread: the statement, its rows and what the cursor says."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(sql, parameters)
        elif parameters is None:
            cursor.execute(sql)
        else:
            cursor.execute(sql, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return cursor.description, cursor.rowcount, cursor.lastrowid, rows
    finally:
        cursor.close()


class OneTripCursor:
    """The cursor SQLAlchemy's adapter drives, one thread trip per statement."""

    __slots__ = ("_connection", "_rows", "arraysize", "description", "lastrowid", "rowcount")

    def __init__(self, connection: OneTripConnection) -> None:
        self._connection = connection
        self._rows: list[Any] = []
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self.arraysize = 1

    async def __aenter__(self) -> OneTripCursor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _trip(self, sql: str, parameters: Any, many: bool) -> OneTripCursor:
        self.description, self.rowcount, self.lastrowid, self._rows = (
            await self._connection.run_in_thread(sql, parameters, many))
        return self

    async def execute(self, sql: str, parameters: Any = None) -> OneTripCursor:
        return await self._trip(sql, parameters, False)

    async def executemany(self, sql: str,
                          parameters: Iterable[Sequence[Any]]) -> OneTripCursor:
        return await self._trip(sql, parameters, True)

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = self.arraysize if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def close(self) -> None:
        self._rows = []


class OneTripConnection(ThreadCallConnection):
    """An aiosqlite connection whose cursors are :class:`OneTripCursor`."""

    def cursor(self) -> OneTripCursor:  # type: ignore[override]
        return OneTripCursor(self)

    async def run_in_thread(self, sql: str, parameters: Any, many: bool) -> _Outcome:
        # aiosqlite's own queue to the thread (what its public calls use).
        outcome: _Outcome = await self.call_in_thread(_run, sql, parameters, many)
        return outcome


def connect(database: str, **kwargs: Any) -> OneTripConnection:
    """What ``aiosqlite.connect`` makes, with one-trip cursors (SQLAlchemy awaits it)."""

    def connector() -> sqlite3.Connection:
        connection: sqlite3.Connection = sqlite3.connect(database, **kwargs)
        return connection

    connection = OneTripConnection(connector, 64)
    # Like the adapter's own connections: a forgotten one never holds up the exit.
    daemon_sqlite_thread(connection)
    return connection
