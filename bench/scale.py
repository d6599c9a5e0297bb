"""Scale benchmark: message pages on hash-partitioned Postgres as a chat grows.

``python -m bench.scale [--quick] [--postgres-url URL] [--messages N] [--partitions P]``

Creates a fresh Postgres database (dropped afterwards) whose per-chat tables are
hash-partitioned by chat id (``--partitions``, 16 by default, as a new database gets),
bulk-loads (COPY) a chat of 100,000 messages and one of ``--messages`` (2,000,000 by
default), then measures three pages of 50 the store serves for each chat, the six reads
in turn so load on the machine hits all alike. Messages rotate over 20 threads. It
prints, all measured in the same run (medians of repeated reads):

- newest page: the large chat's ÷ the 100k chat's (goal ≤ 1.2);
- deep page (forward from the middle of the chat): likewise (goal ≤ 1.2);
- thread-filtered page (the newest 50 of one thread): likewise (goal ≤ 1.2);
- thread-filtered ÷ unfiltered newest page of the large chat (goal ≤ 1.5).

Postgres only (SQLite keeps plain tables; ``bench.pagination`` measures it).
``--quick`` uses tiny sizes and short runs so it finishes in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import DEFAULT_PG_URL, fresh_postgres
from chatql.store.db.database import Database, connect_asyncpg
from chatql.store.db.partitions import layout_partitions
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import MessageFilter
from chatql.store.records import Identity

TENANT, USER = "bench", "reader"
WHO = Identity(user_id=USER, tenant_id=TENANT)
THREADS = 20
PAGE = 50
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
_COLUMNS = ("id", "chat_id", "sequence", "role", "type", "props", "status", "created_at",
            "updated_at", "thread_id", "parent_id", "depth", "jump_id", "jump_depth")


@dataclass(frozen=True)
class Sizes:
    small: int
    large: int
    repeats: int


def message_rows(chat: str, count: int) -> Iterator[tuple[Any, ...]]:
    """One chain of ``count`` messages of ``chat``, with the store's jump pointers."""
    from chatql.store.messages.tree import chain_jump_depths

    jumps = chain_jump_depths(count)
    for n in range(1, count + 1):
        at = BASE_TIME + timedelta(milliseconds=n)
        role, kind = ("USER", "user_input") if n % 2 else ("ASSISTANT", "text")
        props = f'{{"content": "message {n} of {chat}"}}'
        parent = f"{chat}-{n - 1}" if n > 1 else None
        yield (f"{chat}-{n}", chat, n, role, kind, props, "COMPLETED", at, at,
               f"t{n % THREADS}", parent, n, f"{chat}-{jumps[n]}", jumps[n])


async def load_chat(url: str, chat: str, count: int) -> None:
    conn = await connect_asyncpg(url)
    try:
        await conn.execute(
            "INSERT INTO chats (id, title, assistant_id, activity_at, created_at,"
            " updated_at, created_by, tenant_id, last_sequence, active_leaf_id)"
            " VALUES ($1, $2, 'bench', $3, $3, $3, $4, $5, $6, $7)",
            chat, chat, BASE_TIME, USER, TENANT, count, f"{chat}-{count}")
        await conn.copy_records_to_table("messages", records=message_rows(chat, count),
                                         columns=_COLUMNS)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def medians(repeats: int, *calls: Callable[[], Awaitable[Any]]) -> list[float]:
    """Median seconds of each call, run in turn so load on the machine hits all alike."""
    for call in calls:
        for _ in range(3):
            await call()
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for call, taken in zip(calls, samples, strict=True):
            start = time.perf_counter()
            await call()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in samples]


def pages(db: Database, chat: str, size: int) -> list[Callable[[], Awaitable[Any]]]:
    """The newest page, a page forward from the middle, and one thread's newest page."""
    thread = MessageFilter(thread_id="t7")

    async def newest() -> None:
        page = await store_messages.list_messages(db, WHO, chat, last=PAGE)
        assert len(page.items) == PAGE and page.items[-1].sequence == size

    async def deep() -> None:
        page = await store_messages.list_messages(db, WHO, chat, after=size // 2,
                                                  first=PAGE)
        assert page.items[0].sequence == size // 2 + 1

    async def threaded() -> None:
        page = await store_messages.list_messages(db, WHO, chat, filter=thread, last=PAGE)
        assert len(page.items) == PAGE and all(m.thread_id == "t7" for m in page.items)

    return [newest, deep, threaded]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


async def run(base_url: str, sizes: Sizes, partitions: int) -> None:
    async with fresh_postgres(base_url, pg_partitions=partitions) as (db, url):
        async with db.read() as conn:
            found = await conn.run_sync(layout_partitions)
        print(f"postgres, {found} hash partitions by chat id")
        began = time.perf_counter()
        await load_chat(url, "small", sizes.small)
        print(f"loaded a chat of {sizes.small:,} messages in"
              f" {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        await load_chat(url, "large", sizes.large)
        print(f"loaded a chat of {sizes.large:,} messages in"
              f" {time.perf_counter() - began:.1f} s")
        # Both chats' pages in turn, so whatever else the machine does hits all alike.
        times = await medians(sizes.repeats, *pages(db, "small", sizes.small),
                              *pages(db, "large", sizes.large))
        small, large = times[:3], times[3:]
        for name, at_small, at_large, goal in zip(
                ("newest page", "deep page", "thread-filtered page"), small, large,
                (1.2, 1.2, 1.2), strict=True):
            print(f"{name}: {ms(at_large)} at {sizes.large:,} ÷ {ms(at_small)} at"
                  f" {sizes.small:,} = {at_large / at_small:.2f} (goal ≤ {goal})")
        print(f"thread-filtered / unfiltered at {sizes.large:,} ="
              f" {large[2] / large[0]:.2f} (goal ≤ 1.5)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, short runs")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CHATQL_BENCH_POSTGRES_URL", os.environ.get("CHATQL_TEST_POSTGRES_URL",
                                                    DEFAULT_PG_URL)))
    parser.add_argument("--messages", type=int, default=2_000_000,
                        help="messages of the large chat")
    parser.add_argument("--partitions", type=int, default=16)
    args = parser.parse_args(argv)
    if args.quick:
        sizes = Sizes(small=2_000, large=20_000, repeats=20)
    else:
        if args.messages < 100_000:
            parser.error("--messages must be at least 100000 (the chat it is compared with)")
        sizes = Sizes(small=100_000, large=args.messages, repeats=200)
    if args.partitions < 1:
        parser.error("--partitions must be at least 1: this measures partitioned tables")
    asyncio.run(run(args.postgres_url, sizes, args.partitions))


if __name__ == "__main__":
    main()
