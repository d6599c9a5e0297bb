"""store.memory on every backend: the cap under concurrency, the index, isolation."""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlalchemy import func, select

from chatql.store import memory
from chatql.store.db.database import Database
from chatql.store.db.tables import memory_entries, memory_scopes
from chatql.store.errors import Conflict, Forbidden, MemoryFull, NotFound
from chatql.store.records import Identity

ALICE = Identity("alice", "acme")
AGENT = Identity("runtime", "acme", roles=frozenset({"agent"}))
LIMITS = memory.MemoryLimits(entry_chars=40, scope_chars=100)


async def _totals(db: Database) -> tuple[dict[tuple[str, str, str], int], dict[
        tuple[str, str, str], int]]:
    """Per scope: the counter rows, and the real sum of content lengths."""
    async with db.read() as conn:
        counters = {(r.tenant_id, r.subject, r.scope): int(r.chars)
                    for r in (await conn.execute(select(memory_scopes))).all()}
        sums = {(r.tenant_id, r.subject, r.scope): int(r.total) for r in (await conn.execute(
            select(memory_entries.c.tenant_id, memory_entries.c.subject,
                   memory_entries.c.scope,
                   func.sum(func.length(memory_entries.c.content)).label("total"))
            .group_by(memory_entries.c.tenant_id, memory_entries.c.subject,
                      memory_entries.c.scope))).all()}
    return counters, sums


async def test_concurrent_writers_from_two_instances_never_pass_the_cap(
    database_url: str,
) -> None:
    """Twenty writers over two engines (as two service instances would be)."""
    first, second = Database(database_url), Database(database_url)
    try:
        async def attempt(index: int) -> bool:
            db = first if index % 2 else second
            try:
                await memory.write_memory(db, ALICE, scope="race", content="x" * 30,
                                          limits=LIMITS)
            except MemoryFull as error:
                assert error.limit == 100 and error.scope_chars <= 100
                return False
            return True

        outcomes = await asyncio.gather(*(attempt(i) for i in range(20)))
        assert outcomes.count(True) == 3
        counters, sums = await _totals(first)
        assert counters[("acme", "alice", "race")] == 90 == sums[("acme", "alice", "race")]
    finally:
        await first.dispose()
        await second.dispose()


async def test_counter_matches_content_after_concurrent_mixed_changes(db: Database) -> None:
    entries = [await memory.write_memory(db, ALICE, scope="mix", content="y" * 10,
                                         limits=LIMITS) for _ in range(5)]
    rng = random.Random(7)

    async def change(index: int) -> None:
        entry = entries[index % len(entries)]
        try:
            if index % 3 == 0:
                await memory.delete_memory(db, ALICE, entry.id)
            elif index % 3 == 1:
                await memory.update_memory(db, ALICE, entry.id,
                                           content="z" * rng.randint(1, 40), limits=LIMITS)
            else:
                await memory.write_memory(db, ALICE, scope="mix",
                                          content="w" * rng.randint(1, 40), limits=LIMITS)
        except (MemoryFull, NotFound):
            pass

    await asyncio.gather(*(change(i) for i in range(20)))
    counters, sums = await _totals(db)
    key = ("acme", "alice", "mix")
    assert counters[key] == sums.get(key, 0) <= 100


async def test_concurrent_retries_of_one_write_make_one_entry(db: Database) -> None:
    results = await asyncio.gather(*(
        memory.write_memory(db, ALICE, scope="s", content="same", write_id="w")
        for _ in range(10)))
    assert len({entry.id for entry in results}) == 1
    counters, _ = await _totals(db)
    assert counters[("acme", "alice", "s")] == 4
    with pytest.raises(Conflict):
        await memory.write_memory(db, ALICE, scope="s", content="other", write_id="w")


async def test_memory_is_per_tenant_and_subject(db: Database) -> None:
    mine = await memory.write_memory(db, ALICE, scope="s", content="likes jazz")
    await memory.write_memory(db, Identity("bob", "acme"), scope="s", content="likes jazz")
    await memory.write_memory(db, Identity("alice", "other"), scope="s", content="likes jazz")
    for hits in (await memory.search_memory(db, ALICE, "jazz", ["s"]),
                 await memory.search_memory(db, AGENT, "jazz", ["s"], subject="alice")):
        assert [hit.entry.id for hit in hits] == [mine.id]
    assert [e.id for e in await memory.recent_memory(db, ALICE, ["s"])] == [mine.id]
    with pytest.raises(Forbidden):
        await memory.write_memory(db, Identity("bob", "acme"), scope="s", content="x",
                                  subject="alice")
    with pytest.raises(NotFound):
        await memory.delete_memory(db, Identity("alice", "other"), mine.id)
    # Any subject name works with the per-person index, non-ASCII ones included.
    zoe = await memory.write_memory(db, AGENT, scope="s", content="likes jazz",
                                    subject="zoë 🎷")
    hits = await memory.search_memory(db, AGENT, "jazz", ["s"], subject="zoë 🎷")
    assert [hit.entry.id for hit in hits] == [zoe.id]


async def test_the_full_text_index_exists_and_follows_writes(db: Database) -> None:
    async with db.engine.connect() as conn:
        if db.is_sqlite:
            names = set((await conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE name LIKE 'memory_search%'")).scalars())
            assert {"memory_search", "memory_search_keys", "memory_search_insert",
                    "memory_search_update", "memory_search_delete"} <= names
        else:
            names = set((await conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_entries'"
            )).scalars())
            assert "ix_memory_entries_search_vector" in names
    entry = await memory.write_memory(db, ALICE, scope="s", content="quokka sighting")
    assert len(await memory.search_memory(db, ALICE, "quokka", ["s"])) == 1
    await memory.update_memory(db, ALICE, entry.id, pinned=True)  # content unchanged
    assert len(await memory.search_memory(db, ALICE, "quokka", ["s"])) == 1
    await memory.delete_memory(db, ALICE, entry.id)
    assert await memory.search_memory(db, ALICE, "quokka", ["s"]) == []
    if db.is_sqlite:
        async with db.engine.connect() as conn:
            left = await conn.exec_driver_sql("SELECT count(*) FROM memory_search_keys")
            assert left.scalar() == 0
