"""Export and import benchmark on Postgres: a long chat out as JSON Lines and back in.

``python -m bench.export [--quick] [--postgres-url URL]``

Creates a fresh database (dropped afterwards), bulk-loads one chat of 1,000,000
messages (``--quick``: 5,000) with COPY, then prints, measured in the same run:

- export: rows/s of ``store.export`` (keyset pages, the next read while one is encoded,
  written to a file) ÷ rows/s of ``COPY (SELECT … ORDER BY sequence) TO STDOUT`` of the
  same rows (target ≥ 0.3), and the exporting process's peak RSS growth over its RSS
  when the export started (target ≤ 64 MiB). A COPY before both warms the cache for
  each alike. The export runs in a child process so the seeding's memory does not hide
  its own.
- import: rows/s of ``chatql import`` (``store.imports.import_file``: a checking pass,
  then batched transactions) of that file into a second fresh database ÷ rows/s of
  asyncpg ``copy_records_to_table`` of the same rows (target ≥ 0.3).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from chatql.store.db.database import Database, connect_asyncpg, execute_on_server
from chatql.store.db.migrate import migrate

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
TENANT, USER, CHAT = "bench", "owner", "long"
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
_MESSAGE_COLUMNS = ("id", "chat_id", "sequence", "role", "type", "props", "status",
                    "created_at", "updated_at")


def message_rows(count: int, chat_id: str = CHAT) -> Iterator[tuple[Any, ...]]:
    for n in range(1, count + 1):
        at = BASE_TIME + timedelta(milliseconds=n)
        role, kind = ("USER", "user_input") if n % 2 else ("ASSISTANT", "text")
        props = f'{{"content": "message number {n} of a long conversation"}}'
        yield (f"m{n:09d}", chat_id, n, role, kind, props, "COMPLETED", at, at)


async def fresh_database(base: str) -> str:
    name = f"chatql_bench_export_{uuid.uuid4().hex[:10]}"
    await execute_on_server(base, f'CREATE DATABASE "{name}"')
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    db = Database(url)
    try:
        await migrate(db)
    finally:
        await db.dispose()
    return url


async def insert_chat(conn: Any, chat_id: str, last_sequence: int) -> None:
    await conn.execute(
        "INSERT INTO chats (id, assistant_id, activity_at, created_at, updated_at, "
        "created_by, tenant_id, last_sequence) VALUES ($1, 'bench', $2, $2, $2, $3, $4, $5)",
        chat_id, BASE_TIME, USER, TENANT, last_sequence)


async def seed(url: str, count: int) -> None:
    conn = await connect_asyncpg(url)
    try:
        await insert_chat(conn, CHAT, count)
        await conn.copy_records_to_table("messages", records=message_rows(count),
                                         columns=_MESSAGE_COLUMNS)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def child_export(url: str, path: str) -> None:
    """In a fresh process: export the chat to ``path``, print rows, seconds, RSS growth."""
    from chatql.store.keeping.export import export_chat, open_export
    from chatql.store.records import Identity

    db = Database(url)
    who = Identity(user_id=USER, tenant_id=TENANT)
    try:
        chat = await open_export(db, who, CHAT)
        start_rss = _rss_kib("VmRSS")
        rows = 0
        started = time.perf_counter()
        with open(path, "wb") as out:
            async for chunk in export_chat(db, chat):
                out.write(chunk)
                rows += chunk.count(b"\n")
        seconds = time.perf_counter() - started
        growth = _rss_kib("VmHWM") - start_rss
    finally:
        await db.dispose()
    print(json.dumps({"rows": rows - 1, "seconds": seconds, "rss_growth_kib": growth}))


async def copy_out_seconds(url: str) -> float:
    class Sink:
        size = 0

        async def __call__(self, chunk: bytes) -> None:
            self.size += len(chunk)

    conn = await connect_asyncpg(url)
    try:
        started = time.perf_counter()
        await conn.copy_from_query(
            "SELECT * FROM messages WHERE chat_id = $1 ORDER BY sequence", CHAT, output=Sink())
        return time.perf_counter() - started
    finally:
        await conn.close()


async def copy_in_seconds(url: str, count: int) -> float:
    conn = await connect_asyncpg(url)
    try:
        await insert_chat(conn, "baseline", count)
        started = time.perf_counter()
        await conn.copy_records_to_table(
            "messages", records=message_rows(count, "baseline"), columns=_MESSAGE_COLUMNS)
        seconds = time.perf_counter() - started
        await conn.execute("DELETE FROM messages WHERE chat_id = 'baseline'")
        await conn.execute("DELETE FROM chats WHERE id = 'baseline'")
        return seconds
    finally:
        await conn.close()


async def import_seconds(url: str, path: str) -> tuple[float, int]:
    from chatql.store.keeping.imports import import_file
    from chatql.store.records import Identity

    db = Database(url)
    try:
        started = time.perf_counter()
        _chat, written = await import_file(db, Identity(user_id=USER, tenant_id=TENANT), path)
        return time.perf_counter() - started, written
    finally:
        await db.dispose()


async def run(base: str, count: int) -> None:
    source = await fresh_database(base)
    target = await fresh_database(base)
    try:
        print(f"seeding {count:,} messages …", flush=True)
        await seed(source, count)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "export.jsonl")
            await copy_out_seconds(source)  # warms the cache for both measurements
            child = subprocess.run(
                [sys.executable, "-m", "bench.export", "--child-export", source, path],
                capture_output=True, text=True, check=True)
            exported = json.loads(child.stdout.strip().splitlines()[-1])
            assert exported["rows"] == count, exported
            copy_out = await copy_out_seconds(source)
            export_rate = count / exported["seconds"]
            copy_out_rate = count / copy_out
            print(f"export: {export_rate:,.0f} rows/s ({exported['seconds']:.2f} s); "
                  f"COPY TO STDOUT: {copy_out_rate:,.0f} rows/s ({copy_out:.2f} s)")
            print(f"export / COPY = {export_rate / copy_out_rate:.2f} (target >= 0.3)")
            growth_mib = exported["rss_growth_kib"] / 1024
            print(f"export peak RSS growth = {growth_mib:.1f} MiB (target <= 64)")
            copy_in = await copy_in_seconds(target, count)
            imported, written = await import_seconds(target, path)
            assert written == count, written
            import_rate, copy_in_rate = count / imported, count / copy_in
            print(f"import: {import_rate:,.0f} rows/s ({imported:.2f} s); "
                  f"copy_records_to_table: {copy_in_rate:,.0f} rows/s ({copy_in:.2f} s)")
            print(f"import / copy_records_to_table = {import_rate / copy_in_rate:.2f} "
                  "(target >= 0.3)")
    finally:
        for url in (source, target):
            name = make_url(url).database
            await execute_on_server(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.export", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 messages, seconds")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL))
    parser.add_argument("--child-export", nargs=2, metavar=("URL", "PATH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_export:
        asyncio.run(child_export(*args.child_export))
        return 0
    base = args.postgres_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    asyncio.run(run(base, 5_000 if args.quick else 1_000_000))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
