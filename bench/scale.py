"""Scale benchmark: message pages on hash-partitioned Postgres as a chat grows.

``python -m bench.scale [--quick] [--postgres-url URL] [--chats N] [--messages N]
[--partitions P] [--only table|chat]``

Two questions, each on a fresh Postgres database (dropped afterwards) whose per-chat
tables are hash-partitioned by chat id (``--partitions``, 16 by default, as a new
database gets), rows bulk-loaded with COPY, messages rotating over 20 threads. Three
pages of 50 the store serves are timed (medians of repeated reads): the newest page, a
deep page (forward from the middle of the chat) and a thread-filtered page (the newest
50 of one thread).

- **The table grows** (``--chats``, 10,000 by default): chats of 1,000 messages each. The
  pages of one chat are timed when the store holds 100 chats (100,000 messages), then
  again once it holds ``--chats`` (10,000,000 messages by default). Printed: each page at
  the large size ÷ at 100,000 (goal ≤ 1.2), and the thread-filtered ÷ the unfiltered
  newest page at the large size (goal ≤ 1.5).
- **One chat grows** (``--messages``, 2,000,000 by default): a chat of 100,000 messages
  and one of ``--messages``, the six reads in turn so load on the machine hits all
  alike. Printed: the same ratios, the large chat's ÷ the 100k chat's.

Postgres only (SQLite keeps plain tables; ``bench.pagination`` measures it).
``--quick`` uses tiny sizes and short runs so it finishes in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import DEFAULT_PG_URL, fresh_postgres
from bench.pagination import medians
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


PER_CHAT = 1_000
_CHATS_PER_COPY = 500


async def load_chats(url: str, names: list[str]) -> None:
    """Chats of :data:`PER_CHAT` messages each (one COPY per few hundred chats)."""
    conn = await connect_asyncpg(url)
    try:
        for start in range(0, len(names), _CHATS_PER_COPY):
            batch = names[start:start + _CHATS_PER_COPY]
            await conn.executemany(
                "INSERT INTO chats (id, title, assistant_id, activity_at, created_at,"
                " updated_at, created_by, tenant_id, last_sequence, active_leaf_id)"
                " VALUES ($1, $2, 'bench', $3, $3, $3, $4, $5, $6, $7)",
                [(chat, chat, BASE_TIME, USER, TENANT, PER_CHAT, f"{chat}-{PER_CHAT}")
                 for chat in batch])
            await conn.copy_records_to_table(
                "messages", records=(row for chat in batch
                                     for row in message_rows(chat, PER_CHAT)),
                columns=_COLUMNS)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


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


def report(names: tuple[str, str], small: list[float], large: list[float]) -> None:
    for page, at_small, at_large in zip(("newest page", "deep page",
                                          "thread-filtered page"), small, large, strict=True):
        print(f"  {page}: {ms(at_large)} at {names[1]} ÷ {ms(at_small)} at {names[0]}"
              f" = {at_large / at_small:.2f} (goal ≤ 1.2)")
    print(f"  thread-filtered ÷ unfiltered at {names[1]} = {large[2] / large[0]:.2f}"
          " (goal ≤ 1.5)")


async def run_table(base_url: str, chats: int, repeats: int, partitions: int) -> None:
    """One chat's pages with 100 chats stored, then with ``chats``."""
    small = min(100, chats // 10)
    async with fresh_postgres(base_url, pg_partitions=partitions) as (db, url):
        names = [f"c{n:05d}" for n in range(chats)]
        began = time.perf_counter()
        await load_chats(url, names[:small])
        print(f"the table grows: loaded {small:,} chats of {PER_CHAT:,} messages in"
              f" {time.perf_counter() - began:.1f} s")
        at_small = await medians(repeats, *pages(db, names[0], PER_CHAT))
        began = time.perf_counter()
        await load_chats(url, names[small:])
        print(f"  then {chats - small:,} more ({chats * PER_CHAT:,} messages) in"
              f" {time.perf_counter() - began:.1f} s")
        at_large = await medians(repeats, *pages(db, names[0], PER_CHAT))
        report((f"{small * PER_CHAT:,} messages", f"{chats * PER_CHAT:,} messages"),
               at_small, at_large)


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
        report((f"a chat of {sizes.small:,}", f"a chat of {sizes.large:,}"),
               times[:3], times[3:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, short runs")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CHATQL_BENCH_POSTGRES_URL", os.environ.get("CHATQL_TEST_POSTGRES_URL",
                                                    DEFAULT_PG_URL)))
    parser.add_argument("--messages", type=int, default=2_000_000,
                        help="messages of the large chat")
    parser.add_argument("--chats", type=int, default=10_000,
                        help=f"chats of {PER_CHAT:,} messages the table grows to")
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--only", choices=("table", "chat"), help="one question only")
    args = parser.parse_args(argv)
    if args.quick:
        sizes = Sizes(small=2_000, large=20_000, repeats=20)
    else:
        if args.messages < 100_000:
            parser.error("--messages must be at least 100000 (the chat it is compared with)")
        sizes = Sizes(small=100_000, large=args.messages, repeats=200)
    if args.partitions < 1:
        parser.error("--partitions must be at least 1: this measures partitioned tables")
    chats = 20 if args.quick else args.chats
    if chats < 20:
        parser.error("--chats must be at least 20")
    if args.only != "chat":
        asyncio.run(run_table(args.postgres_url, chats, sizes.repeats, args.partitions))
    if args.only != "table":
        asyncio.run(run(args.postgres_url, sizes, args.partitions))


if __name__ == "__main__":
    main()
