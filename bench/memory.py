"""Memory benchmark: recentMemory and searchMemory latency against an indexed lookup.

For each backend it creates a fresh database (a temporary SQLite file; a new Postgres
database that is dropped at the end), seeds memory entries spread over many subjects
(each with ``_global`` and four workspace scopes, a few entries pinned, per-scope
counters filled in), then measures in the same run, interleaved:

- the median latency of ``store.memory.recent_memory`` (two scopes, limit 20) and of
  ``store.memory.search_memory`` (three scopes, a mix of common, two-word and rare
  queries) for random subjects,
- divided by the median latency of a primary-key lookup of one memory entry (the raw
  baseline). Targets: recent <= 3x, search <= 20x.

Default sizes: 200,000 entries on Postgres, 50,000 on SQLite, over 2,000 subjects on
both. ``--quick`` seeds 2,000 entries over 20 subjects in seconds (used by the test
suite)::

    .venv/bin/python -m bench.memory                  # both backends, full size
    .venv/bin/python -m bench.memory --backend sqlite
    .venv/bin/python -m bench.memory --quick

Postgres is reached at ``CHATQL_BENCH_POSTGRES_URL`` (else ``CHATQL_TEST_POSTGRES_URL``,
else the local server), whose database is only used to create and drop the bench's own.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bench.common import backends_parser, fresh_postgres, fresh_sqlite, run_backends, timed
from bench.search import Corpus
from chatql.store.db.database import Database, connect_asyncpg
from chatql.store.db.tables import memory_entries
from chatql.store.memory import GLOBAL_SCOPE, recent_memory, search_memory
from chatql.store.records import Identity

DEFAULT_SUBJECTS = 2_000
TENANTS = 10
SCOPES = (GLOBAL_SCOPE, "ws0", "ws1", "ws2", "ws3")
SEED = 20261201


@dataclass(frozen=True)
class Sizes:
    entries: int
    subjects: int
    reads: int
    lookups: int


@dataclass
class Result:
    backend: str
    entries: int
    subjects: int
    seed_seconds: float
    recent_ms: list[float]
    search_ms: list[float]
    lookup_ms: list[float]
    hits_per_search: float

    def report(self) -> str:
        recent = statistics.median(self.recent_ms)
        search = statistics.median(self.search_ms)
        lookup = statistics.median(self.lookup_ms)
        return "\n".join([
            f"[{self.backend}] {self.entries:,} memory entries over {self.subjects:,} subjects"
            f" seeded in {self.seed_seconds:.1f}s",
            f"  recentMemory: median {recent:.3f} ms over {len(self.recent_ms)} reads",
            f"  searchMemory: median {search:.3f} ms over {len(self.search_ms)} queries"
            f" (mean {self.hits_per_search:.1f} hits)",
            f"  indexed single-row lookup: median {lookup:.3f} ms over"
            f" {len(self.lookup_ms)} lookups",
            f"  recent / lookup = {recent / lookup:.2f}x (target <= 3)",
            f"  search / lookup = {search / lookup:.2f}x (target <= 20)",
        ])


def subject_of(index: int) -> tuple[str, str]:
    """(tenant, subject) of the ``index``-th subject."""
    return f"t{index % TENANTS}", f"s{index}"


def entry_rows(total: int, subjects: int, start: datetime) -> Iterator[tuple[Any, ...]]:
    """(id, tenant, subject, scope, content, pinned, created_at) for ``total`` entries."""
    per_subject = -(-total // subjects)
    pick = random.Random(SEED)
    texts = Corpus(SEED).sentences(total)
    for index in range(total):
        tenant, subject = subject_of(index // per_subject)
        stamp = start + timedelta(seconds=index)
        yield (f"e{index}", tenant, subject, pick.choice(SCOPES), next(texts),
               pick.random() < 0.05, stamp)


def counter_rows(rows: list[tuple[Any, ...]]) -> list[tuple[str, str, str, int]]:
    sums: dict[tuple[str, str, str], int] = defaultdict(int)
    for _, tenant, subject, scope, content, _, _ in rows:
        sums[(tenant, subject, scope)] += len(content)
    return [(*key, chars) for key, chars in sums.items()]


def seed_sqlite(path: Path, total: int, subjects: int) -> None:
    start = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=total + 1000)
    text = "%Y-%m-%d %H:%M:%S.%f"
    rows = list(entry_rows(total, subjects, start))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        # Through the triggers, as the service's own writes go.
        conn.executemany(
            "INSERT INTO memory_entries (id, tenant_id, subject, scope, content, pinned,"
            " created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((eid, tenant, subject, scope, content, int(pinned), subject,
              ts.strftime(text), ts.strftime(text))
             for eid, tenant, subject, scope, content, pinned, ts in rows),
        )
        conn.executemany(
            "INSERT INTO memory_scopes (tenant_id, subject, scope, chars) VALUES (?, ?, ?, ?)",
            counter_rows(rows),
        )
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


async def seed_postgres(url: str, total: int, subjects: int) -> None:
    start = datetime.now(UTC) - timedelta(seconds=total + 1000)
    rows = list(entry_rows(total, subjects, start))
    conn = await connect_asyncpg(url)
    try:
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET maintenance_work_mem = '512MB'")
        # The GIN index is built once after loading; the generated column is computed
        # row by row during the COPY.
        await conn.execute("DROP INDEX ix_memory_entries_search_vector")
        columns = ["id", "tenant_id", "subject", "scope", "content", "pinned", "created_by",
                   "created_at", "updated_at"]
        batches = iter(rows)
        while chunk := [(eid, tenant, subject, scope, content, pinned, subject, ts, ts)
                        for eid, tenant, subject, scope, content, pinned, ts
                        in itertools.islice(batches, 50_000)]:
            await conn.copy_records_to_table("memory_entries", columns=columns, records=chunk)
        await conn.copy_records_to_table(
            "memory_scopes", columns=["tenant_id", "subject", "scope", "chars"],
            records=counter_rows(rows))
        await conn.execute("CREATE INDEX ix_memory_entries_search_vector ON memory_entries"
                           " USING gin (search_vector)")
        await conn.execute("VACUUM ANALYZE memory_entries")
        await conn.execute("ANALYZE memory_scopes")
    finally:
        await conn.close()


def memory_queries(corpus: Corpus, count: int) -> list[str]:
    """Common words (many hits in one person's memory), mid-frequency, two-word, rare."""
    words, pick = corpus.words, corpus.random
    mix = (
        lambda: words[pick.randint(0, 30)],
        lambda: words[pick.randint(30, 300)],
        lambda: f"{words[pick.randint(0, 50)]} {words[pick.randint(0, 300)]}",
        lambda: words[pick.randint(3000, len(words) - 1)],
    )
    return [mix[index % len(mix)]() for index in range(count)]


async def measure(db: Database, total: int, sizes: Sizes) -> tuple[
        list[float], list[float], list[float], float]:
    subjects = sizes.subjects
    pick = random.Random(SEED + 1)
    corpus = Corpus(SEED + 1)
    queries = memory_queries(corpus, sizes.reads)
    ids = [f"e{pick.randrange(total)}" for _ in range(sizes.lookups)]

    def reader() -> Identity:
        tenant, subject = subject_of(pick.randrange(subjects))
        return Identity(user_id=subject, tenant_id=tenant)

    async def lookup(entry_id: str) -> Any:
        async with db.read() as conn:
            return (await conn.execute(
                select(memory_entries).where(memory_entries.c.id == entry_id))).one()

    scopes_recent = [GLOBAL_SCOPE, "ws0"]
    scopes_search = [GLOBAL_SCOPE, "ws0", "ws1"]
    # Warm the pool and statement caches of every path before timing.
    for query in queries[:3]:
        await recent_memory(db, reader(), scopes_recent)
        await search_memory(db, reader(), query, scopes_search)
    for entry_id in ids[:20]:
        await lookup(entry_id)
    recent_ms: list[float] = []
    search_ms: list[float] = []
    lookup_ms: list[float] = []
    hits = 0
    per_read = max(1, len(ids) // len(queries))
    # Interleaved, so drift in machine load hits every measurement alike.
    for index, query in enumerate(queries):
        who = reader()
        elapsed, _ = await timed(partial(recent_memory, db, who, scopes_recent))
        recent_ms.append(elapsed)
        elapsed, found = await timed(partial(search_memory, db, who, query, scopes_search))
        search_ms.append(elapsed)
        hits += len(found)
        for entry_id in ids[index * per_read:(index + 1) * per_read]:
            elapsed, _ = await timed(partial(lookup, entry_id))
            lookup_ms.append(elapsed)
    return recent_ms, search_ms, lookup_ms, hits / len(queries)


async def run_sqlite(total: int, sizes: Sizes) -> Result:
    async with fresh_sqlite() as (db, path):
        began = time.perf_counter()
        await asyncio.to_thread(seed_sqlite, path, total, sizes.subjects)
        seeded = time.perf_counter() - began
        recent_ms, search_ms, lookup_ms, hits = await measure(db, total, sizes)
    return Result("sqlite", total, sizes.subjects, seeded, recent_ms, search_ms,
                  lookup_ms, hits)


async def run_postgres(base: str, total: int, sizes: Sizes) -> Result:
    async with fresh_postgres(base) as (db, url):
        began = time.perf_counter()
        await seed_postgres(url, total, sizes.subjects)
        seeded = time.perf_counter() - began
        recent_ms, search_ms, lookup_ms, hits = await measure(db, total, sizes)
    return Result("postgres", total, sizes.subjects, seeded, recent_ms,
                  search_ms, lookup_ms, hits)


def main(argv: list[str] | None = None) -> int:
    parser = backends_parser("python -m bench.memory", __doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 entries, seconds")
    parser.add_argument("--entries", type=int, default=None,
                        help="override the size (default 200,000 PG / 50,000 SQLite)")
    parser.add_argument("--subjects", type=int, default=DEFAULT_SUBJECTS,
                        help="people the entries are spread over (default 2,000)")
    args = parser.parse_args(argv)
    sizes = (Sizes(entries=2_000, subjects=20, reads=20, lookups=100) if args.quick
             else Sizes(entries=0, subjects=args.subjects, reads=300, lookups=1_500))
    return run_backends(
        args, lambda: run_sqlite(args.entries or sizes.entries or 50_000, sizes),
        lambda url: run_postgres(url, args.entries or sizes.entries or 200_000, sizes))


if __name__ == "__main__":
    raise SystemExit(main())
