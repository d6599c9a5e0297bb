"""Read replicas: the share of reads a replica serves, and the cost of reading your writes.

``python -m bench.replicas [--quick]``

Starts a Postgres primary and a streaming replica from the installed server binaries
(``bench.postgres_pair``; as the ``postgres`` user when run as root), loads one chat per
caller, then prints, all measured in the same run:

- **mixed load**: every caller writes one message in ten and otherwise reads a page of
  50 from a chat of any caller, all at once; the share of reads the replica served;
- **a read right after the caller's own write**: each caller appends, then at once reads
  its chat (the read must show the write: it runs on the primary until the replica has
  replayed it); p50 and p99 of that read with the replica configured ÷ the same loop on
  a database without replicas (goal ≤ 1.5).

``--quick`` uses few callers and short runs so it finishes in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass

from bench.postgres_pair import ReplicaPair, postgres_binaries, start_pair
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database, execute_on_server
from chatql.store.db.migrate import migrate
from chatql.store.db.replicas import set_caller
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity


@dataclass(frozen=True)
class Sizes:
    callers: int
    seed: int
    seconds: float
    rounds: int


def sizes_for(quick: bool) -> Sizes:
    if quick:
        return Sizes(callers=4, seed=60, seconds=1.5, rounds=60)
    return Sizes(callers=32, seed=500, seconds=15.0, rounds=1_000)


def caller(n: int) -> Identity:
    return Identity(user_id=f"u{n}", tenant_id="bench", roles=frozenset({"agent"}))


async def seed(db: Database, sizes: Sizes) -> None:
    for n in range(sizes.callers):
        await store_chats.create_chat(db, caller(n), id=f"c{n}", assistant_id="bench")
        await store_messages.append_messages(
            db, caller(n), f"c{n}", "seed",
            [NewMessage(role="USER", type="text", props={"n": k}) for k in range(sizes.seed)])


async def mixed(db: Database, sizes: Sizes) -> tuple[int, int]:
    """Reads and writes from every caller at once; (reads, writes) done."""
    deadline = time.monotonic() + sizes.seconds
    counts = [0, 0]

    async def run(n: int) -> None:
        set_caller(("bench", f"u{n}"))
        rng = random.Random(n)
        while time.monotonic() < deadline:
            if rng.random() < 0.1:
                await store_messages.append_messages(
                    db, caller(n), f"c{n}", uuid.uuid4().hex,
                    [NewMessage(role="USER", type="text", props={"w": 1})])
                counts[1] += 1
            else:
                await store_messages.list_messages(
                    db, caller(n), f"c{rng.randrange(sizes.callers)}", last=50)
                counts[0] += 1

    await asyncio.gather(*(asyncio.create_task(run(n)) for n in range(sizes.callers)))
    return counts[0], counts[1]


async def read_after_write(db: Database, sizes: Sizes) -> list[float]:
    """Milliseconds of each caller's read right after its own append."""
    timings: list[float] = []
    per_caller = max(1, sizes.rounds // sizes.callers)

    async def run(n: int) -> None:
        set_caller(("bench", f"u{n}"))
        for _ in range(per_caller):
            receipt = await store_messages.append_messages(
                db, caller(n), f"c{n}", uuid.uuid4().hex,
                [NewMessage(role="USER", type="text", props={"w": 2})])
            began = time.perf_counter()
            page = await store_messages.list_messages(db, caller(n), f"c{n}", last=50)
            timings.append((time.perf_counter() - began) * 1000.0)
            assert page.items[-1].id == receipt.message_ids[-1], "a read missed its write"

    await asyncio.gather(*(asyncio.create_task(run(n)) for n in range(sizes.callers)))
    return timings


async def replayed(primary: str, replica: str, timeout: float = 60.0) -> None:
    """Wait until ``replica`` has replayed everything ``primary`` has written so far."""
    import asyncpg

    def dsn(url: str) -> str:
        return url.replace("postgresql+asyncpg://", "postgresql://", 1)

    source = await asyncpg.connect(dsn(primary))
    try:
        position = await source.fetchval("SELECT pg_current_wal_insert_lsn()")
    finally:
        await source.close()
    target = await asyncpg.connect(dsn(replica))
    try:
        deadline = time.monotonic() + timeout
        while not await target.fetchval("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn",
                                         position):
            if time.monotonic() > deadline:
                raise RuntimeError("the replica did not replay the seed in time")
            await asyncio.sleep(0.05)
    finally:
        await target.close()


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


async def measure(pair: ReplicaPair, sizes: Sizes) -> str:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    admin = pair.url(pair.primary_port, "postgres")
    await execute_on_server(admin, f'CREATE DATABASE "{name}"')
    primary, replica = pair.url(pair.primary_port, name), pair.url(pair.replica_port, name)
    try:
        plain = Database(primary)
        await migrate(plain)
        await seed(plain, sizes)
        replicated = Database(primary, replica_urls=(replica,), replica_max_lag=5)
        assert replicated.replicas is not None
        try:
            for _ in range(100):
                await replicated.replicas.wait_checked()
                if replicated.replicas.replicas[0].healthy:
                    break
            # Healthy means at most the max lag behind: wait until the seed itself is
            # replayed, or a read of another caller's chat may find it missing.
            await replayed(primary, replica)
            reads, writes = await mixed(replicated, sizes)
            served = replicated.replicas.replicas[0].served
            share = served / max(1, served + replicated.replicas.primary_served)
            with_replica = await read_after_write(replicated, sizes)
            without = await read_after_write(plain, sizes)
        finally:
            await replicated.dispose()
            await plain.dispose()
    finally:
        await execute_on_server(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    ratio = p99(with_replica) / p99(without)
    return "\n".join([
        f"replicas: {sizes.callers} callers, a chat of {sizes.seed} messages each",
        f"mixed load ({sizes.seconds:g} s, 1 write in 10): {reads} reads, {writes} writes;"
        f" the replica served {share:.0%} of reads",
        f"read right after the caller's own write ({len(with_replica)} reads):"
        f" p50 {statistics.median(with_replica):.2f} ms with a replica,"
        f" {statistics.median(without):.2f} ms without;"
        f" p99 {p99(with_replica):.2f} ms / {p99(without):.2f} ms = {ratio:.2f}"
        " (goal <= 1.5)",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    binaries = postgres_binaries()
    if binaries is None:
        print("the Postgres server binaries (initdb, pg_ctl, pg_basebackup) are not"
              " installed", file=sys.stderr)
        return 2
    pair = start_pair(binaries)
    try:
        print(asyncio.run(measure(pair, sizes_for(args.quick))), flush=True)
    finally:
        pair.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
