"""What ``store/db/driver_adapters.py`` relies on in aiosqlite and SQLAlchemy, pinned
against the installed versions.

Each test names the internal it pins: when an upgrade changes one, the failure here
says which, before the SQLite driver or the prepared reads misbehave somewhere less
obvious.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Integer, String, bindparam, column, select, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.compiler import SQLCompiler

from chatql.store.db.driver_adapters import (
    ThreadCallConnection,
    compiled_positional_names,
    daemon_sqlite_thread,
)


def _connection(path: Path) -> ThreadCallConnection:
    return ThreadCallConnection(lambda: sqlite3.connect(path, check_same_thread=True), 64)


@pytest.fixture
async def connection(tmp_path: Path) -> AsyncIterator[ThreadCallConnection]:
    conn = _connection(tmp_path / "adapters.db")
    daemon_sqlite_thread(conn)
    await conn
    try:
        yield conn
    finally:
        await conn.close()


def _where(conn: sqlite3.Connection, *extra: Any) -> tuple[Any, ...]:
    return (threading.get_ident(), threading.current_thread().daemon,
            isinstance(conn, sqlite3.Connection), *extra)


async def test_call_in_thread_runs_in_the_connections_thread_with_its_sqlite3_connection(
        connection: ThreadCallConnection) -> None:
    """Pins aiosqlite's ``Connection._execute(fn, *args)`` (runs the call in the worker
    thread, returns its result) and ``Connection._conn`` (the sqlite3 connection, which
    only that thread may use: it was opened with ``check_same_thread``)."""
    first = await connection.call_in_thread(_where, "a")
    second = await connection.call_in_thread(_extra_kwarg, extra="b")
    assert first[0] != threading.get_ident(), "the call ran in the event loop's thread"
    assert first[0] == second[0], "calls no longer share the connection's one thread"
    assert first[1:] == (True, True, "a")
    assert second[3:] == ("b",)


def _extra_kwarg(conn: sqlite3.Connection, *, extra: str) -> tuple[Any, ...]:
    return _where(conn, extra)


async def test_call_in_thread_keeps_its_place_among_aiosqlites_public_calls(
        connection: ThreadCallConnection) -> None:
    """Pins that ``_execute`` is the same queue aiosqlite's public calls take: a call
    queued between two public ones sees the first's write and precedes the second."""
    await connection.execute("CREATE TABLE t (n INTEGER)")
    await connection.execute("INSERT INTO t VALUES (1)")

    def count(conn: sqlite3.Connection) -> int:
        value: int = conn.execute("SELECT count(*) FROM t").fetchone()[0]
        conn.execute("INSERT INTO t VALUES (2)")
        return value

    assert await connection.call_in_thread(count) == 1
    assert list(await connection.execute_fetchall("SELECT n FROM t ORDER BY n")) == [
        (1,), (2,)]
    assert (await connection.call_in_thread(_extra_kwarg, extra="k"))[3] == "k"


async def test_call_in_thread_raises_what_the_call_raised_and_refuses_once_closed(
        tmp_path: Path) -> None:
    conn = _connection(tmp_path / "closing.db")
    daemon_sqlite_thread(conn)
    await conn

    def broken(sqlite_conn: sqlite3.Connection) -> None:
        sqlite_conn.execute("SELECT * FROM missing")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await conn.call_in_thread(broken)
    await conn.close()
    with pytest.raises(ValueError):
        await conn.call_in_thread(_where)


async def test_daemon_sqlite_thread_makes_the_worker_a_daemon(tmp_path: Path) -> None:
    """Pins ``Connection._thread`` (aiosqlite 0.22 and later): the worker thread, not
    yet started before the connection is awaited."""
    conn = _connection(tmp_path / "daemon.db")
    if not isinstance(conn, threading.Thread):
        assert isinstance(conn._thread, threading.Thread), (
            "aiosqlite.Connection._thread is no longer the connection's worker thread")
        assert not conn._thread.is_alive()
    daemon_sqlite_thread(conn)
    await conn
    try:
        _ident, daemon, *_ = await conn.call_in_thread(_where)
        assert daemon, "the thread that runs the connection's calls is not a daemon"
    finally:
        await conn.close()


def test_daemon_sqlite_thread_takes_a_connection_that_is_its_thread() -> None:
    # aiosqlite before 0.22: the connection was the thread itself.
    class OldConnection(threading.Thread):
        pass

    old = OldConnection()
    daemon_sqlite_thread(old)  # type: ignore[arg-type]
    assert old.daemon


_T = table("t", column("a", Integer), column("b", String), column("c", Integer))


def _statement() -> Any:
    return select(_T.c.a).where(
        _T.c.b == bindparam("second", type_=String()),
        _T.c.a == bindparam("first", type_=Integer()),
        _T.c.c > bindparam("second_again", value=5, type_=Integer()),
    )


@pytest.mark.parametrize(("dialect", "placeholder"), [
    (sqlite.aiosqlite.dialect(), "?"),
    (postgresql.asyncpg.dialect(), "$"),  # type: ignore[no-untyped-call]
])
def test_compiled_positional_names_follow_the_placeholders(dialect: Any,
                                                           placeholder: str) -> None:
    """The bound parameters' names in the order of the statement's positional
    placeholders, as SQLAlchemy itself orders them (``SQLCompiler.positiontup``)."""
    compiled = _statement().compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    names = list(compiled_positional_names(compiled))
    assert names == ["second", "first", "second_again"], names
    assert names == list(compiled.positiontup or ())
    assert compiled.string.count(placeholder) == len(names)
    assert [compiled.params[name] for name in names] == [None, None, 5]


def test_compiled_positional_names_are_empty_for_named_parameters() -> None:
    compiled = _statement().compile()  # the default dialect's named paramstyle
    assert isinstance(compiled, SQLCompiler)
    assert compiled_positional_names(compiled) == ()
