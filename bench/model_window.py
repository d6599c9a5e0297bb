"""Model window benchmark: ``modelContext`` with ``maxTokens`` reads only a chat's end.

``python -m bench.model_window [--quick] [--postgres-url URL] [--sqlite]``

For each backend it creates a fresh database (dropped afterwards) and bulk-loads two
chats of the same shape — user/assistant turns, most messages with a reported token
count and every fifth without one (so estimates are exercised) — one with 1,000,000
messages and one with 1,000 (COPY on Postgres, executemany on SQLite). It then prints,
measured in the same run, alternating the two calls so load on the machine hits both:

- ``modelContext(maxTokens)`` on the long chat ÷ the same call on the short chat
  (target ≤ 1.5: the window costs what its last turns cost, not the chat's length);
- the same with ``limit`` alone, and with both bounds, for comparison;
- baseline: summing every message's tokens of the long chat in SQL (what a window
  that looked at the whole chat would at least pay) ÷ the windowed call.

With neither ``--sqlite`` nor ``--postgres-url`` both backends run (Postgres at
``CHATQL_TEST_POSTGRES_URL`` or the local default; skipped with a note when down).
``--quick`` uses a 20,000-message long chat and short runs so it finishes in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.common import fresh_postgres, fresh_sqlite
from bench.pagination import _sqlite_time, medians, ms
from chatql.store.db.database import connect_asyncpg, execute_on_server

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
TENANT, USER = "bench", "reader"
LONG_CHAT, SHORT_CHAT = "long", "short"
SHORT_MESSAGES = 1_000
MAX_TOKENS = 4_000
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)

_MESSAGE_COLUMNS = ("id", "chat_id", "sequence", "role", "type", "props", "status",
                    "created_at", "updated_at", "tokens", "parent_id", "depth", "jump_id",
                    "jump_depth")
_CHAT_COLUMNS = ("id", "title", "assistant_id", "activity_at", "created_at", "updated_at",
                 "created_by", "tenant_id", "last_sequence", "active_leaf_id")


def message_rows(chat_id: str, count: int) -> Iterator[tuple[Any, ...]]:
    """Turns of a USER question and an ASSISTANT answer; every fifth message has no
    token count (the window estimates it). One chain: the conversation tree's columns."""
    from chatql.store.messages.tree import chain_jump_depths

    jumps = chain_jump_depths(count)
    for n in range(1, count + 1):
        at = BASE_TIME + timedelta(milliseconds=n)
        question = n % 2 == 1
        role, kind = ("USER", "user_input") if question else ("ASSISTANT", "text")
        props = (f'{{"content": "message {n}: '
                 f'{"a question about the trip" if question else "an answer with details"}"}}')
        tokens = None if n % 5 == 0 else (20 if question else 80)
        yield (f"{chat_id}-{n:09d}", chat_id, n, role, kind, props, "COMPLETED", at, at, tokens,
               f"{chat_id}-{n - 1:09d}" if n > 1 else None, n, f"{chat_id}-{jumps[n]:09d}",
               jumps[n])


def chat_rows(long_messages: int) -> list[tuple[Any, ...]]:
    return [
        (chat_id, chat_id, "bench", BASE_TIME, BASE_TIME, BASE_TIME, USER, TENANT, count,
         f"{chat_id}-{count:09d}")
        for chat_id, count in ((LONG_CHAT, long_messages), (SHORT_CHAT, SHORT_MESSAGES))
    ]


async def seed_postgres(url: str, long_messages: int) -> None:
    conn = await connect_asyncpg(url)
    try:
        await conn.copy_records_to_table("chats", records=chat_rows(long_messages),
                                         columns=_CHAT_COLUMNS)
        for chat_id, count in ((LONG_CHAT, long_messages), (SHORT_CHAT, SHORT_MESSAGES)):
            await conn.copy_records_to_table(
                "messages", records=message_rows(chat_id, count), columns=_MESSAGE_COLUMNS)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def seed_sqlite(path: Path, long_messages: int) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        with conn:
            conn.executemany(
                f"INSERT INTO chats ({', '.join(_CHAT_COLUMNS)}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                ((*r[:3], *(_sqlite_time(t) for t in r[3:6]), *r[6:])
                 for r in chat_rows(long_messages)))
            for chat_id, count in ((LONG_CHAT, long_messages), (SHORT_CHAT, SHORT_MESSAGES)):
                conn.executemany(
                    f"INSERT INTO messages ({', '.join(_MESSAGE_COLUMNS)}) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    ((*r[:7], _sqlite_time(r[7]), _sqlite_time(r[8]), *r[9:])
                     for r in message_rows(chat_id, count)))
        conn.execute("ANALYZE")
    finally:
        conn.close()


async def measure(url: str, long_messages: int, repeats: int) -> None:
    from chatql.store.db.database import Database
    from chatql.store.messages.lifecycle import model_context
    from chatql.store.records import Identity

    who = Identity(user_id=USER, tenant_id=TENANT)
    db = Database(url)
    try:
        def window(chat_id: str, **bounds: Any) -> Callable[[], Awaitable[Any]]:
            async def call() -> Any:
                found = await model_context(db, who, chat_id, bounds.get("limit"),
                                            max_tokens=bounds.get("max_tokens"))
                last = long_messages if chat_id == LONG_CHAT else SHORT_MESSAGES
                assert found and found[-1].sequence == last
                return found

            return call

        sample = await window(LONG_CHAT, max_tokens=MAX_TOKENS)()
        estimated = sum(m.tokens_estimated for m in sample)
        print(f"  window: {len(sample)} messages, {sum(m.tokens or 0 for m in sample):,} of "
              f"{MAX_TOKENS:,} tokens ({estimated} estimated)")
        for label, bounds in (("maxTokens", {"max_tokens": MAX_TOKENS}),
                              ("limit", {"limit": len(sample)}),
                              ("maxTokens + limit", {"max_tokens": MAX_TOKENS, "limit": 1000})):
            long, short = await medians(repeats, window(LONG_CHAT, **bounds),
                                        window(SHORT_CHAT, **bounds))
            target = "  (target <= 1.5)" if label == "maxTokens" else ""
            print(f"    {label}: {long_messages:,}-message chat {ms(long)}, "
                  f"{SHORT_MESSAGES:,}-message chat {ms(short)}"
                  f"  -> {label} long / short = {long / short:.2f}{target}")
            if label == "maxTokens":
                windowed = long

        async def whole_chat() -> Any:
            async with db.read() as conn:
                return (await conn.execute(text(
                    "SELECT sum(coalesce(tokens, length(CAST(props AS TEXT)) / 4)) FROM messages"
                    " WHERE chat_id = :chat"), {"chat": LONG_CHAT})).scalar()

        (scan,) = await medians(max(3, repeats // 5), whole_chat)
        print(f"    baseline: summing the whole long chat's tokens in SQL {ms(scan)}"
              f"  -> whole chat / window = {scan / windowed:.1f}")
    finally:
        await db.dispose()


async def run_postgres(base_url: str, long_messages: int, repeats: int) -> None:
    base_url = base_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    try:
        await execute_on_server(base_url, "SELECT 1")
    except (OSError, Exception) as error:
        print(f"postgres: skipped ({base_url} unreachable: {error})")
        return
    async with fresh_postgres(base_url) as (_db, url):
        start = time.perf_counter()
        await seed_postgres(url, long_messages)
        print(f"postgres: seeded {long_messages:,} + {SHORT_MESSAGES:,} messages "
              f"in {time.perf_counter() - start:.1f} s (COPY)")
        await measure(url, long_messages, repeats)


async def run_sqlite(long_messages: int, repeats: int) -> None:
    async with fresh_sqlite() as (_db, path):
        start = time.perf_counter()
        seed_sqlite(path, long_messages)
        print(f"sqlite: seeded {long_messages:,} + {SHORT_MESSAGES:,} messages "
              f"in {time.perf_counter() - start:.1f} s (executemany)")
        await measure(f"sqlite+aiosqlite:///{path}", long_messages, repeats)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.model_window", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--postgres-url", help="server to create the bench database on")
    parser.add_argument("--sqlite", action="store_true", help="run the SQLite backend")
    args = parser.parse_args(argv)
    long_messages, repeats = (20_000, 10) if args.quick else (1_000_000, 100)
    both = not args.sqlite and not args.postgres_url
    pg_url = args.postgres_url or (
        os.environ.get("CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL) if both else None)
    if pg_url:
        asyncio.run(run_postgres(pg_url, long_messages, repeats))
    if args.sqlite or both:
        asyncio.run(run_sqlite(long_messages, repeats))


if __name__ == "__main__":
    main()
