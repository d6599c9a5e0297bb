"""What several benchmarks share: a timer and a fresh, migrated database per backend."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, Protocol

import httpx
from sqlalchemy.engine import make_url

from chatql.store.db.database import Database, execute_on_server
from chatql.store.db.migrate import migrate
from chatql.store.db.partitions import DEFAULT_PARTITIONS

__all__ = ["backends_parser", "cpu_seconds", "fresh_postgres", "fresh_sqlite", "run_backends",
           "timed"]


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Milliseconds ``call`` took, and what it returned."""
    began = time.perf_counter()
    value = await call()
    return (time.perf_counter() - began) * 1000.0, value


@asynccontextmanager
async def fresh_sqlite() -> AsyncIterator[tuple[Database, Path]]:
    """A migrated SQLite file in a temporary folder (removed afterwards), and its path."""
    with TemporaryDirectory(prefix="chatql-bench-") as folder:
        path = Path(folder) / "bench.db"
        db = Database(f"sqlite+aiosqlite:///{path}")
        try:
            await migrate(db)
            yield db, path
        finally:
            await db.dispose()


@asynccontextmanager
async def fresh_postgres(base: str, *, pg_partitions: int = DEFAULT_PARTITIONS
                         ) -> AsyncIterator[tuple[Database, str]]:
    """A new, migrated database on the server of ``base`` (dropped afterwards), and
    its URL; its per-chat tables get ``pg_partitions`` hash partitions (0: plain)."""
    base = base.replace("postgresql://", "postgresql+asyncpg://", 1)
    name = f"chatql_bench_{uuid.uuid4().hex[:10]}"
    await execute_on_server(base, f'CREATE DATABASE "{name}"')
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    try:
        db = Database(url)
        try:
            await migrate(db, pg_partitions=pg_partitions)
            yield db, url
        finally:
            await db.dispose()
    finally:
        await execute_on_server(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


class Report(Protocol):
    def report(self) -> str: ...


def backends_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """A parser with ``--backend`` (sqlite, postgres or both) and ``--postgres-url``
    (default ``CHATQL_BENCH_POSTGRES_URL``, else ``CHATQL_TEST_POSTGRES_URL``, else the
    local server), for a benchmark that runs on each backend in turn."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CHATQL_BENCH_POSTGRES_URL", os.environ.get("CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL)))
    return parser


def run_backends(args: argparse.Namespace, sqlite: Callable[[], Awaitable[Report]],
                 postgres: Callable[[str], Awaitable[Report]]) -> int:
    """Runs the backends ``args.backend`` names, printing each one's report."""

    async def run() -> None:
        if args.backend in ("sqlite", "both"):
            print((await sqlite()).report(), flush=True)
        if args.backend in ("postgres", "both"):
            print((await postgres(args.postgres_url)).report(), flush=True)

    asyncio.run(run())
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def chatql_serve(database_url: str, folder: Path,
                 settings: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """``chatql serve`` in a process of its own on a free port over ``database_url``
    (its archive in ``folder``), with no ``CHATQL_``, ``OTEL_`` or ``AWS_`` setting of
    this process's and ``settings`` on top; yields its base URL and pid once it
    answers ``/healthz``, and stops it after."""
    from bench.operations import free_port

    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CHATQL_", "OTEL_", "AWS_"))}
    env.update({"CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": "s" * 32,
                "CHATQL_METRICS": "false", "CHATQL_ARCHIVE_URL": f"file://{folder}/archive",
                **(settings or {})})
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
         "--log-level", "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise RuntimeError("the benchmark server exited")
            time.sleep(0.05)
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(30)
