"""Shared fixtures: one suite, run on every database backend.

SQLite always runs. Postgres runs against ``CHATQL_TEST_POSTGRES_URL`` (default: the
local server at 127.0.0.1:5432, database ``test``); each test session creates its own
fresh database there and drops it at the end, so runs never see each other's data.
When the server cannot be reached the Postgres cases are skipped with the reason,
unless ``CHATQL_REQUIRE_POSTGRES=1`` (as in CI), which turns that into a failure. That
database has plain tables (``CHATQL_TEST_PG_PARTITIONS=N``: N hash partitions); the
store tests also run on a second one, partitioned as a new database is.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import text
from sqlalchemy.engine import make_url

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from chatql.store.db.database import Database, execute_on_server
from chatql.store.db.migrate import migrate
from chatql.store.db.partitions import DEFAULT_PARTITIONS, layout_partitions
from chatql.store.db.tables import metadata

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
TEST_SECRET = "test-secret-0123456789abcdef"


def _require_postgres() -> bool:
    return os.environ.get("CHATQL_REQUIRE_POSTGRES", "") in ("1", "true", "yes")



@contextlib.contextmanager
def empty_postgres(prefix: str = "chatql_test") -> Iterator[str | None]:
    """The URL of a new, empty Postgres database (not migrated), dropped at the end;
    None when Postgres is unreachable (a failure under ``CHATQL_REQUIRE_POSTGRES=1``)."""
    base = os.environ.get("CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL)
    base = base.replace("postgresql://", "postgresql+asyncpg://", 1)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(execute_on_server(base, f'CREATE DATABASE "{name}"'))
    except Exception as error:
        if _require_postgres():
            pytest.fail(f"CHATQL_REQUIRE_POSTGRES=1 but Postgres at {base} failed: {error}")
        yield None
        return
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(execute_on_server(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _session_postgres(partitions: int) -> Iterator[str | None]:
    """A fresh Postgres database migrated with ``partitions`` hash partitions (0: plain
    tables), dropped at the end (None: unavailable)."""
    with empty_postgres() as url:
        if url is None:
            yield None
            return
        yield from _migrated(url, partitions)


def _migrated(url: str, partitions: int) -> Iterator[str]:

    async def setup() -> None:
        db = Database(url)
        await migrate(db, pg_partitions=partitions)
        await db.dispose()

    asyncio.run(setup())
    yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str | None]:
    """A fresh, migrated Postgres database for this test session: plain tables, or as
    many hash partitions as ``CHATQL_TEST_PG_PARTITIONS`` says (to run any suite on
    partitioned tables)."""
    yield from _session_postgres(int(os.environ.get("CHATQL_TEST_PG_PARTITIONS", "0")))


@pytest.fixture(scope="session")
def postgres_partitioned_url() -> Iterator[str | None]:
    """The same with the per-chat tables hash-partitioned by chat id (the default layout
    of a new database); the store tests run on it too."""
    yield from _session_postgres(DEFAULT_PARTITIONS)


DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def _require_redis() -> bool:
    return os.environ.get("CHATQL_REQUIRE_REDIS", "") in ("1", "true", "yes")


async def _redis_keys(url: str, prefix: str, delete: bool = False) -> int:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if delete and keys:
            await client.delete(*keys)
        await client.ping()
        return len(keys)
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str | None]:
    """Redis for this session: a broker URL with a key prefix unique to the run."""
    base = os.environ.get("CHATQL_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    prefix = f"chatql-test-{uuid.uuid4().hex[:12]}:"
    try:
        asyncio.run(_redis_keys(base, prefix))
    except Exception as error:
        if _require_redis():
            pytest.fail(f"CHATQL_REQUIRE_REDIS=1 but Redis at {base} failed: {error}")
        yield None
        return
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}prefix={prefix}"
    finally:
        asyncio.run(_redis_keys(base, prefix, delete=True))


@pytest.fixture
def redis_url(redis_server: str | None) -> str:
    """The session's Redis broker URL; skips (or fails under CHATQL_REQUIRE_REDIS=1)."""
    if redis_server is None:
        pytest.skip("Redis is not reachable (set CHATQL_TEST_REDIS_URL or start it)")
    return redis_server


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file that each test copies instead of migrating again."""
    path = tmp_path_factory.mktemp("template") / "chatql.db"

    async def setup() -> None:
        db = Database(f"sqlite+aiosqlite:///{path}")
        await migrate(db)
        async with db.engine.connect() as conn:
            await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        await db.dispose()

    asyncio.run(setup())
    return path


def fresh_database(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path,
                   backend: str) -> str:
    """The URL of an empty, migrated database of ``backend``: ``sqlite``, ``postgres``
    (plain tables) or ``postgres-partitioned``."""
    if backend == "sqlite":
        path = tmp_path / "chatql.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite+aiosqlite:///{path}"
    fixture = "postgres_url" if backend == "postgres" else "postgres_partitioned_url"
    url: str | None = request.getfixturevalue(fixture)
    if url is None:
        pytest.skip("Postgres is not reachable (set CHATQL_TEST_POSTGRES_URL or start it)")
    tables = [table.name for table in metadata.sorted_tables]
    partitioned = backend == "postgres-partitioned"

    async def truncate() -> bool:
        """Empty the database; False (nothing done) when it no longer has its backend's
        layout: a test that migrated it down and up again left plain tables where the
        partitioned ones were (a database with rows keeps its layout when migrated)."""
        db = Database(url)
        try:
            async with db.write() as conn:
                if (await conn.run_sync(layout_partitions) > 0) != partitioned:
                    return False
                if partitioned:
                    tables.append("message_chats")
                # Only the tables written (or analysed) since they were last truncated:
                # the others are already as TRUNCATE leaves them, and truncating a table
                # costs new files for it, its partitions and their indexes. CASCADE
                # still takes every table that references a truncated one.
                touched = list((await conn.execute(text(_TOUCHED), {"names": tables}))
                               .scalars())
                if touched:
                    await conn.execute(text(f"TRUNCATE {', '.join(touched)} CASCADE"))
            return True
        finally:
            await db.dispose()

    if not asyncio.run(truncate()):
        _remade(url, DEFAULT_PARTITIONS if partitioned else 0)
    return url


def _remade(url: str, partitions: int) -> None:
    """Make the database at ``url`` again, empty and migrated with ``partitions``."""
    name = make_url(url).database
    server = make_url(url).set(database=make_url(
        os.environ.get("CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL)).database).render_as_string(
            hide_password=False)
    asyncio.run(execute_on_server(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(execute_on_server(server, f'CREATE DATABASE "{name}"'))
    for _ in _migrated(url, partitions):
        pass


#: The tables among ``:names`` that differ from a freshly truncated one: a heap (its own,
#: or a partition's) with any page, or with statistics from ANALYZE or VACUUM (TRUNCATE
#: gives a heap new, empty files with ``relpages = 0`` and ``reltuples = -1``; a
#: partitioned parent has no heap, and TRUNCATE leaves its statistics as they are). A
#: view (``message_chats`` on the plain layout) is never one.
_TOUCHED = """
SELECT parent.relname FROM pg_class parent
WHERE parent.relname = ANY(:names) AND parent.relkind IN ('r', 'p')
  AND parent.relnamespace = to_regnamespace(current_schema())
  AND EXISTS (
    SELECT 1 FROM pg_class rel
    WHERE (rel.oid = parent.oid
           OR rel.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = parent.oid))
      AND rel.relkind = 'r' AND (pg_relation_size(rel.oid) > 0 OR rel.reltuples >= 0))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> str:
    """The URL of an empty, migrated database of each backend."""
    return fresh_database(request, tmp_path, sqlite_template, request.param)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    try:
        yield database
    finally:
        await database.dispose()


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, secret=TEST_SECRET, migrate_on_start=False,
                    archive_url=f"file://{tmp_path / 'archive'}",
                    files_url=f"file://{tmp_path / 'files'}")


#: The live-stream backends a stream suite runs on (see :func:`on_backend`).
BACKENDS = ["memory", "redis"]


def on_backend(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """``settings`` on the backend named by ``request.param`` (one of ``BACKENDS``).

    A stream suite runs on every backend by overriding ``settings`` in its module::

        @pytest.fixture(params=BACKENDS)
        def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
            return on_backend(request, settings)
    """
    if request.param == "memory":
        return settings
    from chatql.store.streams.backends.redis import split_prefix

    # A key prefix of the test's own (under the run's): tests reuse chat and stream ids.
    url, prefix = split_prefix(request.getfixturevalue("redis_url"))
    return dataclasses.replace(settings,
                               broker_url=f"{url}?prefix={prefix}{uuid.uuid4().hex[:8]}:")


@asynccontextmanager
async def running_app(settings: Settings) -> AsyncIterator[Any]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app


class GraphQLClient:
    """Posts GraphQL documents over HTTP to the ASGI app."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def execute(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def data(self, query: str, variables: dict[str, Any] | None = None,
                   headers: dict[str, str] | None = None) -> dict[str, Any]:
        body = await self.execute(query, variables, headers)
        assert "errors" not in body, body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    async def error_code(self, query: str, variables: dict[str, Any] | None = None,
                         headers: dict[str, str] | None = None) -> str:
        body = await self.execute(query, variables, headers)
        assert body.get("errors"), body
        code: str = body["errors"][0]["extensions"]["code"]
        return code


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[GraphQLClient]:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield GraphQLClient(http)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def uvicorn_serving(app: Any, *, lifespan: str = "on",
                          per_message_deflate: bool = False) -> AsyncIterator[int]:
    """``app`` served by uvicorn as ``chatql serve`` runs it (websockets-sansio) on a
    free loopback port; yields the port once the server is up."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio",
        ws_per_message_deflate=per_message_deflate, lifespan=lifespan,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = asyncio.get_running_loop().time() + 60
    while not server.started:
        if task.done():
            task.result()
        assert asyncio.get_running_loop().time() < deadline, "uvicorn did not start"
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await _shut_down(server, task)


SHUTDOWN_GRACE = 30.0


async def _shut_down(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    """Waits for uvicorn's graceful shutdown as ``chatql serve`` allows it (30 s). Past
    that, a connection or task held the server open: every task's stack is printed, the
    server is forced down and the test fails, naming what held it, instead of hanging
    until the test's timeout."""
    import sys

    try:
        async with asyncio.timeout(SHUTDOWN_GRACE):
            await asyncio.shield(task)
        return
    except TimeoutError:
        pass
    held = [f"{t.get_name()}: {t.get_coro()!r}" for t in asyncio.all_tasks()
            if t is not asyncio.current_task()]
    print(f"\n[shutdown] uvicorn still open after {SHUTDOWN_GRACE:.0f} s; "
          f"{len(server.server_state.connections)} connection(s)", file=sys.stderr)
    for other in asyncio.all_tasks():
        if other is not asyncio.current_task():
            print(f"--- {other.get_name()}: {other.get_coro()!r}", file=sys.stderr)
            other.print_stack(limit=12, file=sys.stderr)
    server.force_exit = True
    await task
    raise AssertionError(f"the server did not shut down within {SHUTDOWN_GRACE:.0f} s: "
                         + "; ".join(held))


@pytest.fixture
async def live_server(settings: Settings) -> AsyncIterator[str]:
    """A real uvicorn server on a free loopback port; yields its address."""
    async with uvicorn_serving(create_app(settings)) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def make_headers() -> Callable[..., dict[str, str]]:
    def build(user: str = "alice", tenant: str = "acme", team: str | None = None,
              roles: str | None = None) -> dict[str, str]:
        headers = {"X-User-Id": user, "X-Tenant-Id": tenant}
        if team:
            headers["X-Team-Id"] = team
        if roles:
            headers["X-Roles"] = roles
        return headers

    return build


@pytest.fixture
def pushes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every call the stream service takes to push chunks, as its arguments (in this
    process): how a test proves a push was tried once."""
    from chatql.store.streams import StreamService

    calls: list[tuple[Any, ...]] = []
    push_chunks = StreamService.push_chunks

    async def counted(self: StreamService, *args: Any) -> Any:
        calls.append(args)
        return await push_chunks(self, *args)

    monkeypatch.setattr(StreamService, "push_chunks", counted)
    return calls


# ---- a hang explains itself ------------------------------------------------------------
#
# pytest-timeout prints the threads' stacks when a test overruns, but an asyncio test
# hangs with its main thread idle in ``select``: the stack that matters is the awaiting
# task's. A little before the timeout, a watchdog thread finds the main thread's event
# loop (from the ``_run_once`` frame it sits in) and prints every task's stack.

TASK_DUMP_MARGIN = 20.0


def _main_loop() -> asyncio.AbstractEventLoop | None:
    import sys
    import threading

    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if frame.f_code.co_name == "_run_once" and isinstance(candidate,
                                                              asyncio.AbstractEventLoop):
            return candidate
        frame = frame.f_back
    return None


def _dump_tasks(nodeid: str, when: str = "before the timeout", threads: bool = False,
                out: Any = None) -> None:
    import sys
    import threading
    import traceback

    loop = _main_loop()
    out = out or sys.stderr
    if loop is None:
        print(f"\n[watchdog] {nodeid}: no event loop running in the main thread", file=out)
    else:
        tasks = asyncio.all_tasks(loop)
        print(f"\n[watchdog] {nodeid}: {len(tasks)} asyncio task(s) {when}", file=out)
        for task in tasks:
            print(f"--- {task.get_name()}: {task.get_coro()!r}", file=out)
            task.print_stack(limit=12, file=out)
    if threads:
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == threading.get_ident():
                continue
            print(f"--- thread {names.get(ident, ident)}:", file=out)
            traceback.print_stack(frame, limit=8, file=out)
    out.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    import threading

    marker = item.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker and marker.args else float(
        item.config.getini("timeout") or 0)
    watchdog = None
    if timeout > 2 * TASK_DUMP_MARGIN:
        watchdog = threading.Timer(timeout - TASK_DUMP_MARGIN, _dump_tasks, (item.nodeid,))
        watchdog.daemon = True
        watchdog.start()
    try:
        yield
    finally:
        if watchdog is not None:
            watchdog.cancel()


#: A teardown this long waits on something it should not (a task, a thread, a timer):
#: what it waits on is written down while it still waits, and listed at the end of the
#: run (a passing test's output is otherwise never shown, least of all from a worker).
TEARDOWN_DUMP_AFTER = 20.0
_SLOW_TEARDOWN = "slow teardown"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    import io
    import threading
    import time

    dump = io.StringIO()

    began = time.monotonic()
    watchdog = threading.Timer(
        TEARDOWN_DUMP_AFTER, _dump_tasks,
        (item.nodeid, f"{TEARDOWN_DUMP_AFTER:.0f} s into the teardown", True, dump))
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        if dump.getvalue():
            item.user_properties.append(
                (_SLOW_TEARDOWN, f"took {time.monotonic() - began:.1f} s" + dump.getvalue()))


_slow_teardowns: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == _SLOW_TEARDOWN:
            _slow_teardowns.append(f"{report.nodeid}: {value}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _slow_teardowns:
        terminalreporter.section("slow teardowns")
        for text in _slow_teardowns:
            terminalreporter.write_line(text)
