"""Search benchmark: search latency against an indexed lookup, and the write cost of indexing.

For each backend it creates a fresh database (a temporary SQLite file; a new Postgres
database that is dropped at the end), seeds it fast (Postgres: COPY with the GIN index
built afterwards; SQLite: one bulk transaction through the triggers), then measures in
the same run:

- the median latency of ``store.search.search_messages`` over a mix of queries, divided
  by the median latency of a primary-key lookup of one message (the raw baseline);
- append throughput (``store.messages.append_messages``, one text message per append)
  with the index, divided by the same appends with the index machinery removed
  (SQLite: the triggers dropped; Postgres: the generated column and its index dropped).

Default sizes: 1,000,000 messages on Postgres, 200,000 on SQLite. ``--quick`` runs a
few thousand messages in seconds (used by the test suite)::

    .venv/bin/python -m bench.search                 # both backends, full size
    .venv/bin/python -m bench.search --backend sqlite --messages 50000
    .venv/bin/python -m bench.search --quick

Postgres is reached at ``CHATQL_BENCH_POSTGRES_URL`` (else ``CHATQL_TEST_POSTGRES_URL``,
else the local server), whose database is only used to create and drop the bench's own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import sqlite3
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bench.common import backends_parser, fresh_postgres, fresh_sqlite, run_backends, timed
from chatql.store.db.database import Database, connect_asyncpg
from chatql.store.db.tables import messages
from chatql.store.messages.message import NewMessage, append_messages
from chatql.store.messages.search import search_messages
from chatql.store.records import Identity

MESSAGES_PER_CHAT = 100
TENANTS = 10
VOCABULARY = 20_000
SEED = 20261129


@dataclass(frozen=True)
class Sizes:
    messages: int
    queries: int
    lookups: int
    appends: int


@dataclass
class Result:
    backend: str
    messages: int
    seed_seconds: float
    search_ms: list[float]
    lookup_ms: list[float]
    with_index_per_s: float
    without_index_per_s: float
    hits_per_query: float

    def report(self) -> str:
        search = statistics.median(self.search_ms)
        lookup = statistics.median(self.lookup_ms)
        p95 = sorted(self.search_ms)[int(len(self.search_ms) * 0.95) - 1]
        return "\n".join([
            f"[{self.backend}] {self.messages:,} messages seeded in {self.seed_seconds:.1f}s",
            f"  search: median {search:.3f} ms, p95 {p95:.3f} ms over {len(self.search_ms)}"
            f" queries (mean {self.hits_per_query:.1f} hits returned)",
            f"  indexed single-row lookup: median {lookup:.3f} ms over"
            f" {len(self.lookup_ms)} lookups",
            f"  search / lookup = {search / lookup:.1f}x",
            f"  appends/s with index {self.with_index_per_s:.1f},"
            f" without {self.without_index_per_s:.1f}",
            f"  append throughput with index / without = "
            f"{self.with_index_per_s / self.without_index_per_s:.3f}",
        ])


class Corpus:
    """Deterministic Zipf-distributed pseudo-words, so a few words are everywhere."""

    def __init__(self, seed: int = SEED) -> None:
        self.random = random.Random(seed)
        # The vocabulary is the same for every corpus, so queries hit seeded words.
        vocabulary = random.Random(SEED)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
        words: set[str] = set()
        while len(words) < VOCABULARY:
            words.add("".join(vocabulary.choices(syllables, k=vocabulary.randint(2, 4))))
        self.words = sorted(words, key=lambda w: (len(w), w))
        self.weights = list(itertools.accumulate(1.0 / rank for rank in range(1, VOCABULARY + 1)))

    def sentences(self, count: int) -> Iterator[str]:
        lengths = [self.random.randint(6, 24) for _ in range(count)]
        words = self.random.choices(self.words, cum_weights=self.weights, k=sum(lengths))
        start = 0
        for length in lengths:
            yield " ".join(words[start:start + length])
            start += length

    def queries(self, count: int) -> list[str]:
        """A mix: mid-frequency words, two-word searches, and rare words."""
        pick = self.random
        queries = []
        for index in range(count):
            kind = index % 5
            if kind in (0, 1):
                queries.append(self.words[pick.randint(50, 500)])
            elif kind in (2, 3):
                queries.append(f"{self.words[pick.randint(20, 300)]}"
                               f" {self.words[pick.randint(300, 3000)]}")
            else:
                queries.append(self.words[pick.randint(3000, VOCABULARY - 1)])
        return queries


def message_rows(corpus: Corpus, total: int, start: datetime) -> Iterator[tuple[Any, ...]]:
    """(id, chat_id, sequence, role, type, props, created_at) for ``total`` messages."""
    texts = corpus.sentences(total)
    for index in range(total):
        chat = index // MESSAGES_PER_CHAT
        sequence = index % MESSAGES_PER_CHAT + 1
        if sequence % 10 == 0:
            role, type_, props = "ASSISTANT", "tool_call", {"name": "lookup", "arguments": "{}"}
            next(texts)
        elif sequence % 2:
            role, type_, props = "USER", "user_input", {"content": next(texts)}
        else:
            role, type_, props = "ASSISTANT", "text", {"content": next(texts)}
        stamp = start + timedelta(seconds=index)
        yield f"m{index}", f"c{chat}", sequence, role, type_, json.dumps(props), stamp


def chat_rows(chat_count: int, start: datetime) -> Iterator[tuple[Any, ...]]:
    """(id, tenant_id, created_by, mode, last_sequence, created_at) per chat."""
    for chat in range(chat_count):
        mode = "subagent" if chat % 20 == 19 else "chat"
        stamp = start + timedelta(seconds=chat * MESSAGES_PER_CHAT)
        yield (f"c{chat}", f"t{chat % TENANTS}", f"u{chat % 50}", mode, MESSAGES_PER_CHAT,
               stamp)


# --- seeding ----------------------------------------------------------------------------


def seed_sqlite(path: Path, total: int) -> None:
    corpus = Corpus()
    start = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=total + 1000)
    text = "%Y-%m-%d %H:%M:%S.%f"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO chats (id, title, assistant_id, mode, status, public, share, sort,"
            " last_message_at, activity_at, last_sequence, created_at, updated_at,"
            " created_by, updated_by, tenant_id)"
            " VALUES (?, NULL, 'bench', ?, 'ACTIVE', 0, 'PRIVATE', 0, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(cid, mode, ts.strftime(text), ts.strftime(text), last, ts.strftime(text),
              ts.strftime(text), user, user, tenant)
             for cid, tenant, user, mode, last, ts in chat_rows(
                 -(-total // MESSAGES_PER_CHAT), start)],
        )
        conn.executemany(
            "INSERT INTO messages (id, chat_id, sequence, role, type, props, status,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'COMPLETED', ?, ?)",
            ((mid, cid, seq, role, type_, props, ts.strftime(text), ts.strftime(text))
             for mid, cid, seq, role, type_, props, ts in message_rows(corpus, total, start)),
        )
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


async def seed_postgres(url: str, total: int) -> None:
    corpus = Corpus()
    start = datetime.now(UTC) - timedelta(seconds=total + 1000)
    conn = await connect_asyncpg(url)
    try:
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET maintenance_work_mem = '512MB'")
        # Building the GIN index once after loading is far faster than keeping it
        # during the load; the generated column is still computed row by row.
        await conn.execute("DROP INDEX ix_messages_search_vector")
        await conn.copy_records_to_table(
            "chats",
            columns=["id", "assistant_id", "mode", "tenant_id", "created_by", "updated_by",
                     "last_sequence", "last_message_at", "activity_at", "created_at",
                     "updated_at"],
            records=[(cid, "bench", mode, tenant, user, user, last, ts, ts, ts, ts)
                     for cid, tenant, user, mode, last, ts in chat_rows(
                         -(-total // MESSAGES_PER_CHAT), start)],
        )
        rows = message_rows(corpus, total, start)
        columns = ["id", "chat_id", "sequence", "role", "type", "props", "created_at",
                   "updated_at"]
        while True:
            chunk = [(mid, cid, seq, role, type_, props, ts, ts)
                     for mid, cid, seq, role, type_, props, ts in itertools.islice(rows, 100_000)]
            if not chunk:
                break
            await conn.copy_records_to_table("messages", columns=columns, records=chunk)
        await conn.execute(
            "CREATE INDEX ix_messages_search_vector ON messages USING gin (search_vector)")
        await conn.execute("VACUUM ANALYZE messages")
        await conn.execute("ANALYZE chats")
    finally:
        await conn.close()



# --- measuring ----------------------------------------------------------------------------


async def measure_reads(db: Database, total: int, sizes: Sizes) -> tuple[
        list[float], list[float], float]:
    corpus = Corpus(SEED + 1)
    reader = Identity(user_id="bench-admin", tenant_id="t0", roles=frozenset({"admin"}))
    queries = corpus.queries(sizes.queries)
    ids = [f"m{corpus.random.randrange(total)}" for _ in range(sizes.lookups)]

    async def lookup(message_id: str) -> Any:
        async with db.read() as conn:
            return (await conn.execute(
                select(messages).where(messages.c.id == message_id))).one()

    # Warm the pool, caches and statement caches of both paths before timing.
    for query in queries[:3]:
        await search_messages(db, reader, query)
    for message_id in ids[:20]:
        await lookup(message_id)
    search_ms: list[float] = []
    lookup_ms: list[float] = []
    hits = 0
    per_query = max(1, len(ids) // len(queries))
    # Interleaved, so drift in machine load hits both measurements alike.
    for index, query in enumerate(queries):
        elapsed, found = await timed(partial(search_messages, db, reader, query))
        search_ms.append(elapsed)
        hits += len(found)
        for message_id in ids[index * per_query:(index + 1) * per_query]:
            elapsed, _ = await timed(partial(lookup, message_id))
            lookup_ms.append(elapsed)
    return search_ms, lookup_ms, hits / len(queries)


async def append_rate(db: Database, count: int, label: str) -> float:
    writer = Identity(user_id="u0", tenant_id="t0")
    texts = list(Corpus(SEED + 2).sentences(count))
    began = time.perf_counter()
    for index, text in enumerate(texts):
        await append_messages(db, writer, "c0", f"{label}-{index}", [
            NewMessage(role="ASSISTANT", type="text", props={"content": text})])
    return count / (time.perf_counter() - began)


SQLITE_TRIGGERS = ("message_search_insert", "message_search_update", "message_search_delete")


async def sqlite_triggers(db: Database, on: bool, sql: dict[str, str]) -> None:
    """Create or drop the search triggers, and check that they are there (or gone).

    The write may land on a pooled connection other than the one that changed the
    schema last (the WAL checkpoint borrows one now and then), and SQLite parses DDL
    against the connection's cached schema: ``CREATE TRIGGER`` then reports a trigger
    dropped elsewhere as existing. Reading ``sqlite_master`` first, inside the write
    transaction, makes the connection reload a schema that changed.
    """
    async with db.write() as conn:
        await conn.exec_driver_sql("SELECT count(*) FROM sqlite_master")
        for name in SQLITE_TRIGGERS:
            if on:
                await conn.exec_driver_sql(sql[name])
            else:
                await conn.exec_driver_sql(f"DROP TRIGGER {name}")
        present = (await conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN "
            f"({', '.join(repr(name) for name in SQLITE_TRIGGERS)})")).scalar_one()
    if present != (len(SQLITE_TRIGGERS) if on else 0):
        raise RuntimeError(f"search triggers {'on' if on else 'off'}: {present} present")


async def measure_appends_sqlite(db: Database, sizes: Sizes) -> tuple[float, float]:
    async with db.read() as conn:
        rows = (await conn.exec_driver_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all()
    sql: dict[str, str] = {str(row.name): str(row.sql) for row in rows}
    await append_rate(db, max(5, sizes.appends // 10), "warm")
    with_rates, without_rates = [], []
    # Alternate short rounds (triggers are cheap to drop and re-create on SQLite) and
    # take medians, so load from other processes falls on both sides alike.
    rounds = 8
    for round_ in range(rounds):
        await sqlite_triggers(db, False, sql)
        without_rates.append(await append_rate(db, sizes.appends // rounds, f"off{round_}"))
        await sqlite_triggers(db, True, sql)
        with_rates.append(await append_rate(db, sizes.appends // rounds, f"on{round_}"))
    return statistics.median(with_rates), statistics.median(without_rates)


async def measure_appends_postgres(db: Database, sizes: Sizes) -> tuple[float, float]:
    await append_rate(db, max(5, sizes.appends // 10), "warm")
    with_index = await append_rate(db, sizes.appends, "on")
    # Re-adding a generated column rewrites the table, so the rounds cannot alternate:
    # the rate without the index is measured once, after dropping it.
    async with db.write() as conn:
        await conn.exec_driver_sql("ALTER TABLE messages DROP COLUMN search_vector")
    await append_rate(db, max(5, sizes.appends // 10), "warm-off")
    without_index = await append_rate(db, sizes.appends, "off")
    return with_index, without_index


async def run_sqlite(total: int, sizes: Sizes) -> Result:
    async with fresh_sqlite() as (db, path):
        began = time.perf_counter()
        await asyncio.to_thread(seed_sqlite, path, total)
        seeded = time.perf_counter() - began
        search_ms, lookup_ms, hits = await measure_reads(db, total, sizes)
        with_index, without_index = await measure_appends_sqlite(db, sizes)
    return Result("sqlite", total, seeded, search_ms, lookup_ms, with_index, without_index,
                  hits)


async def run_postgres(base: str, total: int, sizes: Sizes) -> Result:
    async with fresh_postgres(base) as (db, url):
        began = time.perf_counter()
        await seed_postgres(url, total)
        seeded = time.perf_counter() - began
        search_ms, lookup_ms, hits = await measure_reads(db, total, sizes)
        with_index, without_index = await measure_appends_postgres(db, sizes)
    return Result("postgres", total, seeded, search_ms, lookup_ms, with_index, without_index,
                  hits)


def main(argv: list[str] | None = None) -> int:
    parser = backends_parser("python -m bench.search", __doc__)
    parser.add_argument("--quick", action="store_true", help="a few thousand rows, seconds")
    parser.add_argument("--messages", type=int, default=None,
                        help="override the size (default 1,000,000 PG / 200,000 SQLite)")
    args = parser.parse_args(argv)
    if args.quick:
        sizes = Sizes(messages=2_000, queries=10, lookups=100, appends=40)
    else:
        sizes = Sizes(messages=0, queries=100, lookups=1_000, appends=400)
    return run_backends(
        args, lambda: run_sqlite(args.messages or sizes.messages or 200_000, sizes),
        lambda url: run_postgres(url, args.messages or sizes.messages or 1_000_000, sizes))


if __name__ == "__main__":
    raise SystemExit(main())
