"""Pagination benchmark: keyset pages at depth, OFFSET, and GraphQL vs a bare JSON route.

``python -m bench.pagination [--quick] [--postgres-url URL] [--sqlite]``

For each backend it creates a fresh database (dropped afterwards), bulk-loads one chat
with 1,000,000 messages on Postgres (100,000 on SQLite; COPY on Postgres, executemany
on SQLite) and 100,000 chats for one user, then prints, all measured in the same run:

- messages: keyset page of 50 at depth ÷ the first page (target ≤ 1.2), and an OFFSET
  page at the same depth ÷ the keyset page at depth (the baseline keyset beats);
- chats: keyset page of 20 at depth ÷ the first page, and OFFSET ÷ keyset likewise;
- branches: a chat of the same size whose messages form 1,000 branches (each forking
  halfway along the one before, so the last branch is ~500,000 deep on Postgres): a page
  of 50 deep in the last branch ÷ its first page (target ≤ 1.2), backwards and forwards;
- deletes: ten messages deleted in one call from the middle of the long chat (every
  message below them re-linked), the time that took, and then a branch page deep in
  it ÷ its first page (target ≤ 1.2);
- the tree migration's time on a chat of that size written before the tree existed;
- HTTP throughput of a GraphQL ``messages`` page of 50 (all 14 fields, cursors,
  pageInfo) served by uvicorn ÷ the same store call served by a bare Starlette route
  that writes the same JSON with orjson (target ≥ 0.9), several concurrent clients.

With neither ``--sqlite`` nor ``--postgres-url`` both backends run (Postgres at
``CHATQL_TEST_POSTGRES_URL`` or the local default; skipped with a note when down).
``--quick`` uses tiny sizes and short runs so it finishes in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
from sqlalchemy import text
from sqlalchemy.engine import make_url

from chatql.store.db.database import connect_asyncpg, execute_on_server

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
SECRET = "bench-secret-0123456789abcdef"
TENANT, USER = "bench", "reader"
LONG_CHAT = "long"
BRANCHY_CHAT = "branchy"
BRANCHES = 1_000
THREADS = 20
PAGE = 50
FIELDS = ("id chatId requestId role type props blockId threadId assistantId sequence "
          "status metadata createdAt updatedAt")
GRAPHQL_PAGE = (
    "query($chatId: ID!, $last: Int, $before: String) { messages(chatId: $chatId, "
    "last: $last, before: $before) { edges { cursor node { " + FIELDS + " } } "
    "pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"
)
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Sizes:
    messages: int
    chats: int
    repeats: int
    seconds: float
    clients: int
    branches: int = BRANCHES


def sizes_for(backend: str, quick: bool) -> Sizes:
    if quick:
        return Sizes(messages=2_000, chats=500, repeats=10, seconds=0.7, clients=4,
                     branches=20)
    return Sizes(
        messages=1_000_000 if backend == "postgresql" else 100_000,
        chats=100_000, repeats=100, seconds=6.0, clients=8,
    )


# --- seeding ------------------------------------------------------------------------


def message_rows(count: int, *, tree: bool = True) -> Iterator[tuple[Any, ...]]:
    """(id, chat_id, sequence, role, type, props, status, created_at, updated_at) and,
    with ``tree``, (parent_id, depth, jump_id, jump_depth): one chain."""
    from chatql.store.messages.tree import chain_jump_depths

    jumps = chain_jump_depths(count) if tree else []
    for n in range(1, count + 1):
        at = BASE_TIME + timedelta(milliseconds=n)
        role = "USER" if n % 2 else "ASSISTANT"
        kind = "user_input" if n % 2 else "text"
        props = f'{{"content": "message number {n} of a long conversation"}}'
        row = (f"m{n:09d}", LONG_CHAT, n, role, kind, props, "COMPLETED", at, at)
        if tree:
            parent = f"m{n - 1:09d}" if n > 1 else None
            yield (*row, parent, n, f"m{jumps[n]:09d}", jumps[n])
        else:
            yield row


@dataclass
class BranchyChat:
    """A chat of ``count`` messages in ``branches`` equal branches, each forking off
    halfway along the one before; computed with the store's jump-pointer rule."""

    count: int
    branches: int

    def __post_init__(self) -> None:
        size = self.count // self.branches
        self.count = size * self.branches
        parent: list[int] = []
        depth: list[int] = []
        jump: list[int] = []
        for index in range(self.count):
            branch, place = divmod(index, size)
            if place:
                up = index - 1
            elif branch:
                up = (branch - 1) * size + size // 2 - 1
            else:
                up = -1
            parent.append(up)
            if up < 0:
                depth.append(1)
                jump.append(index)
                continue
            depth.append(depth[up] + 1)
            over = jump[up]
            if depth[up] - depth[over] == depth[over] - depth[jump[over]]:
                jump.append(jump[over])
            else:
                jump.append(up)
        self.parent, self.depth, self.jump = parent, depth, jump
        self.leaf = self.count - 1
        # The leaf's branch from the root, to find messages at any depth along it.
        path = [self.leaf]
        while parent[path[-1]] >= 0:
            path.append(parent[path[-1]])
        self.path = path[::-1]

    @staticmethod
    def id(index: int) -> str:
        return f"b{index + 1:09d}"

    def rows(self) -> Iterator[tuple[Any, ...]]:
        for index in range(self.count):
            n = index + 1
            at = BASE_TIME + timedelta(milliseconds=n)
            role = "USER" if n % 2 else "ASSISTANT"
            kind = "user_input" if n % 2 else "text"
            props = f'{{"content": "branch message {n}"}}'
            up = self.parent[index]
            yield (self.id(index), BRANCHY_CHAT, n, role, kind, props, "COMPLETED", at, at,
                   None if up < 0 else self.id(up), self.depth[index],
                   self.id(self.jump[index]), self.depth[self.jump[index]])


def chat_rows(count: int) -> Iterator[tuple[Any, ...]]:
    """(id, title, assistant_id, activity_at, created_at, updated_at, created_by, tenant)."""
    yield (LONG_CHAT, "the long one", "bench", BASE_TIME, BASE_TIME, BASE_TIME, USER, TENANT)
    yield (BRANCHY_CHAT, "branches", "bench", BASE_TIME, BASE_TIME, BASE_TIME, USER, TENANT)
    for n in range(1, count):
        # Ties on purpose: ten chats share each activity time.
        at = BASE_TIME - timedelta(seconds=n // 10)
        yield (f"c{n:07d}", f"chat {n}", "bench", at, at, at, USER, TENANT)


_BASE_COLUMNS = ("id", "chat_id", "sequence", "role", "type", "props", "status",
                 "created_at", "updated_at")
_MESSAGE_COLUMNS = (*_BASE_COLUMNS, "parent_id", "depth", "jump_id", "jump_depth")
_CHAT_COLUMNS = ("id", "title", "assistant_id", "activity_at", "created_at", "updated_at",
                 "created_by", "tenant_id")


async def seed_postgres(url: str, sizes: Sizes, branchy: BranchyChat | None = None, *,
                        before_tree: bool = False) -> None:
    """The long chat (and ``branchy`` when given) with the chat list around it; with
    ``before_tree`` only the long chat, as written before the conversation tree."""
    conn = await connect_asyncpg(url)
    try:
        chats = list(chat_rows(2))[:1] if before_tree else chat_rows(sizes.chats)
        await conn.copy_records_to_table("chats", records=chats, columns=_CHAT_COLUMNS)
        await conn.copy_records_to_table(
            "messages", records=message_rows(sizes.messages, tree=not before_tree),
            columns=_BASE_COLUMNS if before_tree else _MESSAGE_COLUMNS)
        if not before_tree:
            await conn.execute("UPDATE chats SET active_leaf_id = $1 WHERE id = $2",
                               f"m{sizes.messages:09d}", LONG_CHAT)
        if branchy is not None:
            await conn.copy_records_to_table("messages", records=branchy.rows(),
                                             columns=_MESSAGE_COLUMNS)
            await conn.execute(
                "UPDATE chats SET active_leaf_id = $1, last_sequence = $2 WHERE id = $3",
                branchy.id(branchy.leaf), branchy.count, BRANCHY_CHAT)
        last = BASE_TIME + timedelta(milliseconds=sizes.messages)
        await conn.execute(
            "UPDATE chats SET last_sequence = $1, last_message_at = $2, activity_at = $2 "
            "WHERE id = $3", sizes.messages, last, LONG_CHAT)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def _sqlite_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def seed_sqlite(path: Path, sizes: Sizes, branchy: BranchyChat | None = None, *,
                before_tree: bool = False) -> None:
    """As :func:`seed_postgres`, with executemany."""
    conn = sqlite3.connect(path)
    columns = _BASE_COLUMNS if before_tree else _MESSAGE_COLUMNS
    marks = ",".join("?" * len(columns))

    def sqlite_rows(rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        return ((*r[:7], _sqlite_time(r[7]), _sqlite_time(r[8]), *r[9:]) for r in rows)

    try:
        conn.execute("PRAGMA synchronous=OFF")
        with conn:
            conn.executemany(
                f"INSERT INTO chats ({', '.join(_CHAT_COLUMNS)}) VALUES (?,?,?,?,?,?,?,?)",
                ((*r[:3], *(_sqlite_time(t) for t in r[3:6]), *r[6:])
                 for r in (list(chat_rows(2))[:1] if before_tree
                           else chat_rows(sizes.chats))))
            conn.executemany(
                f"INSERT INTO messages ({', '.join(columns)}) VALUES ({marks})",
                sqlite_rows(message_rows(sizes.messages, tree=not before_tree)))
            if not before_tree:
                conn.execute("UPDATE chats SET active_leaf_id = ? WHERE id = ?",
                             (f"m{sizes.messages:09d}", LONG_CHAT))
            if branchy is not None:
                conn.executemany(f"INSERT INTO messages ({', '.join(columns)}) VALUES ({marks})",
                                 sqlite_rows(branchy.rows()))
                conn.execute(
                    "UPDATE chats SET active_leaf_id = ?, last_sequence = ? WHERE id = ?",
                    (branchy.id(branchy.leaf), branchy.count, BRANCHY_CHAT))
            last = _sqlite_time(BASE_TIME + timedelta(milliseconds=sizes.messages))
            conn.execute(
                "UPDATE chats SET last_sequence = ?, last_message_at = ?, activity_at = ? "
                "WHERE id = ?", (sizes.messages, last, last, LONG_CHAT))
        conn.execute("ANALYZE")
    finally:
        conn.close()


# --- timing -------------------------------------------------------------------------


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


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


async def measure_sql(url: str, sizes: Sizes) -> None:
    from chatql.store.db.database import Database
    from chatql.store.lists import chat_lists
    from chatql.store.messages import message as store_messages
    from chatql.store.records import Identity

    who = Identity(user_id=USER, tenant_id=TENANT)
    db = Database(url)
    try:
        depth = sizes.messages // 2
        before = sizes.messages - depth + 1  # the page that ends `depth` rows back

        async def first_page() -> Any:
            return await store_messages.list_messages(db, who, LONG_CHAT)

        async def deep_page() -> Any:
            page = await store_messages.list_messages(
                db, who, LONG_CHAT, last=PAGE, before=before)
            assert page.items[-1].sequence == before - 1
            return page

        keyset_sql = text(
            "SELECT * FROM messages WHERE chat_id = :chat AND sequence < :before "
            "ORDER BY sequence DESC LIMIT :size")
        offset_sql = text(
            "SELECT * FROM messages WHERE chat_id = :chat "
            "ORDER BY sequence DESC LIMIT :size OFFSET :skip")

        async def run(statement: Any, **params: Any) -> Any:
            async with db.read() as conn:
                return (await conn.execute(statement, params)).all()

        first, deep = await medians(sizes.repeats, first_page, deep_page)
        keyset_raw, offset_raw = await medians(
            max(3, sizes.repeats // 5),
            lambda: run(keyset_sql, chat=LONG_CHAT, before=before, size=PAGE),
            lambda: run(offset_sql, chat=LONG_CHAT, skip=depth - 1, size=PAGE),
        )
        print(f"  messages ({sizes.messages:,} in one chat), page of {PAGE}, depth {depth:,}:")
        print(f"    keyset first page {ms(first)}, at depth {ms(deep)}"
              f"  -> depth / first = {deep / first:.2f}  (target <= 1.2)")
        print(f"    same SQL without probes: keyset {ms(keyset_raw)}, OFFSET {ms(offset_raw)}"
              f"  -> OFFSET / keyset at depth = {offset_raw / keyset_raw:.1f}")

        # One message in THREADS belongs to the thread read: its own index makes a
        # filtered page cost what an unfiltered one does, not THREADS times as much.
        async with db.write() as conn:
            await conn.execute(text(
                "UPDATE messages SET thread_id = 't' || CAST(sequence % :n AS TEXT)"
                " WHERE chat_id = :chat"), {"n": THREADS, "chat": LONG_CHAT})
            # Statistics as autovacuum would leave them after rewriting a million rows
            # (the bench's server may run without it). With the seed's statistics,
            # which still say every thread id is null, Postgres's generic plan for the
            # prepared page reads the whole thread and sorts it: 130 ms instead of 2.
            await conn.execute(text("ANALYZE messages"))
        from chatql.store.messages.message import MessageFilter

        thread = MessageFilter(thread_id="t7")

        async def thread_deep_page() -> Any:
            page = await store_messages.list_messages(
                db, who, LONG_CHAT, filter=thread, last=PAGE, before=before)
            assert len(page.items) == PAGE
            return page

        plain_deep, thread_deep = await medians(sizes.repeats, deep_page, thread_deep_page)
        print(f"    thread-filtered page at depth (1 message in {THREADS}) {ms(thread_deep)},"
              f" unfiltered {ms(plain_deep)}"
              f"  -> thread / unfiltered = {thread_deep / plain_deep:.2f}  (target <= 1.5)")

        chat_depth = sizes.chats // 2
        async with db.read() as conn:
            row = (await conn.execute(text(
                "SELECT activity_at, id FROM chats WHERE tenant_id = :t "
                "ORDER BY activity_at DESC, id DESC LIMIT 1 OFFSET :skip"),
                {"t": TENANT, "skip": chat_depth - 1})).one()
        at = row[0] if isinstance(row[0], datetime) else datetime.fromisoformat(row[0])
        position = [at.replace(tzinfo=at.tzinfo or UTC).isoformat(), row[1]]

        async def chats_first() -> Any:
            return await chat_lists.list_chats(db, who)

        async def chats_deep() -> Any:
            page = await chat_lists.list_chats(db, who, after=position)
            assert len(page.items) == chat_lists.DEFAULT_CHAT_PAGE_SIZE
            return page

        async def chats_rows_only(after: Any) -> Any:
            return await chat_lists.list_chats(db, who, after=after, with_totals=False)

        chats_offset_sql = text(
            "SELECT * FROM chats WHERE tenant_id = :t AND deleted_at IS NULL "
            "ORDER BY activity_at DESC, id DESC LIMIT 20 OFFSET :skip")
        c_first, c_deep = await medians(max(3, sizes.repeats // 5), chats_first, chats_deep)
        r_first, r_deep = await medians(
            sizes.repeats, lambda: chats_rows_only(None), lambda: chats_rows_only(position))
        (c_offset,) = await medians(max(3, sizes.repeats // 5), lambda: run(
            chats_offset_sql, t=TENANT, skip=chat_depth))
        print(f"  chats ({sizes.chats:,} for one user), page of 20, depth {chat_depth:,}:")
        print(f"    with totalCount + groups: first {ms(c_first)}, at depth {ms(c_deep)}"
              f"  -> depth / first = {c_deep / c_first:.2f}")
        print(f"    page only (no totals asked): first {ms(r_first)}, at depth {ms(r_deep)}"
              f"  -> depth / first = {r_deep / r_first:.2f}"
              f"; OFFSET {ms(c_offset)} -> OFFSET / keyset = {c_offset / r_deep:.1f}")
    finally:
        await db.dispose()


async def measure_branches(url: str, sizes: Sizes, branchy: BranchyChat) -> None:
    from chatql.store.db.database import Database
    from chatql.store.messages import message as store_messages
    from chatql.store.messages import tree
    from chatql.store.records import BranchPosition, Identity

    who = Identity(user_id=USER, tenant_id=TENANT)
    db = Database(url)
    leaf = branchy.id(branchy.leaf)
    depth = len(branchy.path)
    middle = branchy.path[depth // 2 - 1]
    at_middle = BranchPosition(id=branchy.id(middle), depth=depth // 2, leaf=leaf)
    try:
        async def newest() -> Any:
            return await store_messages.list_branch(db, who, BRANCHY_CHAT, last=PAGE)

        async def deep_back() -> Any:
            page = await store_messages.list_branch(db, who, BRANCHY_CHAT, last=PAGE,
                                                    before=at_middle)
            assert page.items[-1].id == branchy.id(branchy.path[depth // 2 - 2])
            return page

        async def oldest() -> Any:
            return await store_messages.list_branch(db, who, BRANCHY_CHAT, first=PAGE)

        async def deep_forward() -> Any:
            page = await store_messages.list_branch(db, who, BRANCHY_CHAT, first=PAGE,
                                                    after=at_middle)
            assert page.items[0].id == branchy.id(branchy.path[depth // 2])
            return page

        async def from_leaf() -> Any:
            # The rejected design: no jump pointers, so a forward page walks the parent
            # links from the branch's leaf down to the page.
            query = tree.path_query(leaf, chat=BRANCHY_CHAT, count=None, floor=depth // 2,
                                    newest_first=False, dialect=db.dialect)
            async with db.read() as conn:
                rows = (await conn.execute(query.limit(PAGE + 1))).all()
            assert rows[0].id == branchy.id(branchy.path[depth // 2])
            return rows

        first, deep, first_fwd, deep_fwd = await medians(
            sizes.repeats, newest, deep_back, oldest, deep_forward)
        (walk,) = await medians(3, from_leaf)
        print(f"  branches ({branchy.count:,} messages in one chat, {branchy.branches:,}"
              f" branches; the active one {depth:,} deep), page of {PAGE} at depth"
              f" {depth // 2:,}:")
        print(f"    backwards: first page {ms(first)}, deep {ms(deep)}"
              f"  -> branch depth / first = {deep / first:.2f}  (target <= 1.2)")
        print(f"    forwards: first page {ms(first_fwd)}, deep {ms(deep_fwd)}"
              f"  -> branch forward depth / first = {deep_fwd / first_fwd:.2f}")
        print(f"    the same forward page walked down from the leaf (no jump pointers):"
              f" {ms(walk)}  -> leaf walk / jump = {walk / deep_fwd:.1f}")
    finally:
        await db.dispose()


#: Messages deleted (one call) from the middle of the long chat's branch.
DELETES = 10


async def measure_deletes(url: str, sizes: Sizes) -> None:
    """Delete ``DELETES`` messages from the middle of the long chat (one branch of
    ``sizes.messages``), then page that branch again: every message below a deleted
    one is re-linked, and a page deep in the branch must still cost what its end does.
    """
    from chatql.store.db.database import Database
    from chatql.store.messages import message as store_messages
    from chatql.store.messages import tree
    from chatql.store.records import BranchPosition, Identity

    who = Identity(user_id=USER, tenant_id=TENANT)
    db = Database(url)
    total = sizes.messages
    middle = total // 2
    # Every other message around the middle: replies of a deleted message hang on a
    # survivor, and the rest of the branch moves up by as many as went above it.
    doomed = [middle - DELETES + 2 * n for n in range(DELETES)]
    leaf = f"m{total:09d}"

    def new_depth(n: int) -> int:
        return n - sum(1 for d in doomed if d < n)

    try:
        start = time.perf_counter()
        removed = await store_messages.delete_messages(
            db, who, LONG_CHAT, [f"m{n:09d}" for n in doomed])
        taken = time.perf_counter() - start
        assert removed == DELETES, removed
        # The branch reads as the chain without the deleted messages, at every depth.
        async with db.read() as conn:
            for n in (1, doomed[0] - 1, doomed[0] + 1, doomed[-1] + 1, middle + 7,
                      (middle + total) // 2, total):
                assert await conn.scalar(tree.ancestor_at(leaf, new_depth(n), chat=LONG_CHAT,
                                                              dialect=conn.dialect.name)) == (
                    f"m{n:09d}"), n
        position = middle + DELETES + 1
        at = BranchPosition(id=f"m{position:09d}", depth=new_depth(position), leaf=leaf)

        async def newest() -> Any:
            return await store_messages.list_branch(db, who, LONG_CHAT, last=PAGE)

        expected = [f"m{n:09d}" for n in range(position - PAGE - DELETES, position)
                    if n not in doomed][-PAGE:]

        async def deep() -> Any:
            page = await store_messages.list_branch(db, who, LONG_CHAT, last=PAGE, before=at)
            assert [m.id for m in page.items] == expected
            return page

        first, deep_page = await medians(sizes.repeats, newest, deep)
        print(f"  deletes: {DELETES} messages from the middle of the {total:,}-message branch"
              f" in one call: {taken:.2f} s ({total - doomed[0] - DELETES + 1:,} messages"
              f" below re-linked)")
        print(f"    branch pages after the deletes: first {ms(first)}, deep {ms(deep_page)}"
              f"  -> after deletes depth / first = {deep_page / first:.2f}  (target <= 1.2)")
    finally:
        await db.dispose()


async def measure_migration(url: str, sizes: Sizes, seed: Callable[[], Awaitable[None]]) -> None:
    """Time the conversation tree migration on a chat written before it."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from chatql.store.db.database import Database
    from chatql.store.db.migrate import alembic_config, migrate

    before_tree = ScriptDirectory.from_config(alembic_config()).get_revision(
        "0006_tree").down_revision
    assert isinstance(before_tree, str), before_tree

    db = Database(url)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync),
                                                             before_tree))
        await seed()
        # The tree's own step, then every later migration (the message filters' indexes
        # and, on Postgres, the conversion to partitions), timed apart: the first is the
        # figure comparable across versions, the second grows as migrations are added.
        start = time.perf_counter()
        async with db.engine.begin() as conn:
            await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync),
                                                             "0006_tree"))
        taken = time.perf_counter() - start
        start = time.perf_counter()
        await migrate(db)
        later = time.perf_counter() - start
        async with db.read() as conn:
            leaf = (await conn.execute(text(
                "SELECT active_leaf_id FROM chats WHERE id = :c"), {"c": LONG_CHAT})).scalar()
        assert leaf == f"m{sizes.messages:09d}", leaf
        print(f"  tree migration of a {sizes.messages:,}-message chat: {taken:.1f} s"
              f" ({sizes.messages / taken:,.0f} messages/s); the later migrations"
              f" after it: {later:.1f} s")
    finally:
        await db.dispose()


# --- HTTP: GraphQL vs bare route ------------------------------------------------------


def server_app() -> Any:
    """uvicorn factory: the chatql app plus ``/bare``, the same page without GraphQL."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from chatql.gql.app import create_app
    from chatql.gql.schema.pages import _branch_scope
    from chatql.gql.settings import Settings
    from chatql.store.messages import message as store_messages
    from chatql.store.records import BranchPosition, Identity

    app = create_app(Settings.from_env())
    who = Identity(user_id=USER, tenant_id=TENANT)
    no_filter = store_messages.MessageFilter()

    async def bare(request: Request) -> Response:
        services = request.app.state.services
        body = orjson.loads(await request.body())
        chat_id = body["chatId"]
        scope = _branch_scope(chat_id, no_filter, None)
        before = BranchPosition(*services.cursors.decode(scope, body["before"]))
        page = await store_messages.list_branch(
            services.db, who, chat_id, last=body["last"], before=before)
        leaf = page.branch_leaf
        edges = [
            {"cursor": services.cursors.encode(scope, [m.id, depth, leaf]), "node": {
                "id": m.id, "chatId": m.chat_id, "requestId": m.request_id, "role": m.role,
                "type": m.type, "props": m.props, "blockId": m.block_id,
                "threadId": m.thread_id, "assistantId": m.assistant_id,
                "sequence": m.sequence, "status": m.status, "metadata": m.metadata,
                "createdAt": m.created_at.isoformat(), "updatedAt": m.updated_at.isoformat(),
            }}
            for m, depth in zip(page.items, page.depths, strict=True)
        ]
        payload = {"data": {"messages": {"edges": edges, "pageInfo": {
            "hasNextPage": page.has_next, "hasPreviousPage": page.has_previous,
            "startCursor": edges[0]["cursor"] if edges else None,
            "endCursor": edges[-1]["cursor"] if edges else None,
        }}}}
        return Response(orjson.dumps(payload), media_type="application/json")

    app.router.routes.append(Route("/bare", bare, methods=["POST"]))
    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def throughput(base: str, path: str, body: dict[str, Any], headers: dict[str, str],
                     sizes: Sizes) -> tuple[float, bytes]:
    """Completed requests per second with ``sizes.clients`` concurrent keep-alive clients."""
    limits = httpx.Limits(max_connections=sizes.clients, max_keepalive_connections=sizes.clients)
    payload = orjson.dumps(body)
    send_headers = {**headers, "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as http:
        sample = (await http.post(path, content=payload, headers=send_headers)).content
        done = 0
        deadline = time.perf_counter() + sizes.seconds

        async def client() -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                response = await http.post(path, content=payload, headers=send_headers)
                assert response.status_code == 200
                done += 1

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(sizes.clients)))
        return done / (time.perf_counter() - start), sample


async def measure_http(url: str, sizes: Sizes) -> None:
    from chatql.gql.schema.pages import _branch_scope
    from chatql.store.cursors import CursorSigner
    from chatql.store.messages.message import MessageFilter

    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": url, "CHATQL_SECRET": SECRET,
           "CHATQL_MIGRATE_ON_START": "false", "CHATQL_PLAYGROUND": "false"}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.pagination:server_app", "--factory",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
         "--no-access-log", "--loop", "auto", "--http", "auto"],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as http:
            for _ in range(300):
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None:
                    raise RuntimeError("the benchmark server exited")
                await asyncio.sleep(0.05)
        depth = sizes.messages // 2
        at = sizes.messages - depth + 1
        cursor = CursorSigner(SECRET.encode()).encode(
            _branch_scope(LONG_CHAT, MessageFilter(), None),
            [f"m{at:09d}", at, f"m{sizes.messages:09d}"])
        variables = {"chatId": LONG_CHAT, "last": PAGE, "before": cursor}
        headers = {"X-User-Id": USER, "X-Tenant-Id": TENANT}
        # Alternate the two in three rounds so drifting load on the machine hits both.
        rounds = 3
        slice_sizes = Sizes(sizes.messages, sizes.chats, sizes.repeats,
                            sizes.seconds / rounds, sizes.clients)
        bare_runs, gql_runs = [], []
        for _ in range(rounds):
            bare_rps, bare_body = await throughput(
                base, "/bare", variables, headers, slice_sizes)
            gql_rps, gql_body = await throughput(
                base, "/graphql", {"query": GRAPHQL_PAGE, "variables": variables}, headers,
                slice_sizes)
            bare_runs.append(bare_rps)
            gql_runs.append(gql_rps)
        bare_rps, gql_rps = statistics.mean(bare_runs), statistics.mean(gql_runs)
        same = orjson.loads(bare_body) == orjson.loads(gql_body)
        print(f"  HTTP page of {PAGE} at depth {depth:,}, {sizes.clients} concurrent clients, "
              f"{sizes.seconds:g} s each in {rounds} alternating rounds "
              f"(responses identical: {same}):")
        print(f"    GraphQL {gql_rps:,.0f} req/s, bare Starlette+orjson {bare_rps:,.0f} req/s"
              f"  -> GraphQL / bare = {gql_rps / bare_rps:.2f}  (target >= 0.9)")
        if not same:
            raise RuntimeError("the GraphQL and bare responses differ")
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- driver -------------------------------------------------------------------------



async def migrate_url(url: str, pg_partitions: int | None = None) -> None:
    """Migrate the database at ``url``; ``pg_partitions`` overrides the per-chat tables'
    partition count a new database gets (0: plain tables)."""
    from chatql.store.db.database import Database
    from chatql.store.db.migrate import migrate

    db = Database(url)
    try:
        await (migrate(db) if pg_partitions is None else migrate(db, pg_partitions=pg_partitions))
    finally:
        await db.dispose()


async def run_postgres(base_url: str, quick: bool) -> None:
    base_url = base_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    name = f"chatql_bench_{uuid.uuid4().hex[:10]}"
    try:
        await execute_on_server(base_url, f'CREATE DATABASE "{name}"')
    except (OSError, Exception) as error:
        print(f"postgres: skipped ({base_url} unreachable: {error})")
        return
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    sizes = sizes_for("postgresql", quick)
    old_name = f"{name}_old"
    old_url = make_url(base_url).set(database=old_name).render_as_string(hide_password=False)
    try:
        await migrate_url(url)
        start = time.perf_counter()
        branchy = BranchyChat(sizes.messages, sizes.branches)
        await seed_postgres(url, sizes, branchy)
        print(f"postgres: seeded {sizes.messages:,} messages + {branchy.count:,} in"
              f" branches + {sizes.chats:,} chats in {time.perf_counter() - start:.1f} s (COPY)")
        await measure_sql(url, sizes)
        await measure_branches(url, sizes, branchy)
        await measure_http(url, sizes)
        await measure_deletes(url, sizes)
        await execute_on_server(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await execute_on_server(base_url, f'CREATE DATABASE "{old_name}"')
        await measure_migration(
            old_url, sizes, lambda: seed_postgres(old_url, sizes, before_tree=True))
    finally:
        await execute_on_server(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await execute_on_server(base_url, f'DROP DATABASE IF EXISTS "{old_name}" WITH (FORCE)')


async def run_sqlite(quick: bool) -> None:
    sizes = sizes_for("sqlite", quick)
    with tempfile.TemporaryDirectory(prefix="chatql-bench-") as folder:
        path = Path(folder) / "bench.db"
        url = f"sqlite+aiosqlite:///{path}"
        await migrate_url(url)
        start = time.perf_counter()
        branchy = BranchyChat(sizes.messages, sizes.branches)
        seed_sqlite(path, sizes, branchy)
        print(f"sqlite: seeded {sizes.messages:,} messages + {branchy.count:,} in branches"
              f" + {sizes.chats:,} chats in {time.perf_counter() - start:.1f} s (executemany)")
        await measure_sql(url, sizes)
        await measure_branches(url, sizes, branchy)
        await measure_http(url, sizes)
        await measure_deletes(url, sizes)
        old = Path(folder) / "old.db"

        async def seed_old() -> None:
            seed_sqlite(old, sizes, before_tree=True)

        await measure_migration(f"sqlite+aiosqlite:///{old}", sizes, seed_old)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pagination", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--postgres-url", help="server to create the bench database on")
    parser.add_argument("--sqlite", action="store_true", help="run the SQLite backend")
    args = parser.parse_args(argv)
    both = not args.sqlite and not args.postgres_url
    pg_url = args.postgres_url or (
        os.environ.get("CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL) if both else None)
    if pg_url:
        asyncio.run(run_postgres(pg_url, args.quick))
    if args.sqlite or both:
        asyncio.run(run_sqlite(args.quick))


if __name__ == "__main__":
    main()
