"""Read replicas of a Postgres primary: which one may answer a read, and when.

A :class:`ReplicaSet` holds, per streaming replica, an engine and a prepared-read pool
of its own, and a background health check that every ``interval`` seconds reads the
primary's WAL position (``pg_current_wal_lsn()``) and each replica's replayed position
(``pg_last_wal_replay_lsn()``). From those samples it knows each replica's *lag*: how
long the replica has held WAL the primary had already written without replaying it —
the age of the oldest primary position it has not reached. A caught-up replica of an
idle primary has none; one whose replay is paused while writes go on grows its lag
with the wall clock. A replica that does not answer, is not in recovery, or lags more
than ``max_lag`` seconds is skipped until a later check finds it well again.

Freshness is by WAL position. Every write transaction on the primary records, after it
commits, the primary's WAL insert position: in the writing task's context (so the rest of
that request, and tasks it starts, see it) and under the *caller's key* — an opaque
value the service sets per request (:func:`set_caller`), such as the tenant and user.
A read needs a replica that has replayed at least the larger of the two; when none
has (as far as the last check knows), the primary answers. So a caller's reads after
its own write always see it, and everyone else's reads stay on the replicas unless
they lag. Reads inside a write transaction never leave the primary.

The keys of callers are kept for the last :data:`REMEMBERED_CALLERS` writers (oldest
forgotten first: by then their writes are long replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from chatql.store.db.drivers import PreparedReadPool

__all__ = ["REMEMBERED_CALLERS", "Replica", "ReplicaSet", "parse_lsn", "reading_after",
           "set_caller", "written_position"]

logger = logging.getLogger("chatql.replicas")

REMEMBERED_CALLERS = 100_000

#: Who the current request is (an opaque key), for read-your-writes across requests.
_caller: ContextVar[Hashable | None] = ContextVar("chatql_caller", default=None)
#: The WAL position of the last write committed in this context.
_context_lsn: ContextVar[int] = ContextVar("chatql_context_lsn", default=0)
#: Set while a write transaction runs: reads inside it stay on the primary.
in_write: ContextVar[bool] = ContextVar("chatql_in_write", default=False)


def set_caller(key: Hashable | None) -> None:
    """Name the caller of the current request (and the tasks it starts)."""
    _caller.set(key)


def written_position() -> int:
    """The WAL position of the last write committed in this context (0: none, or no
    replicas): what a message announcing that write carries, so whoever reads on its
    account (a live list's delivery) sees the write."""
    return _context_lsn.get()


@contextlib.contextmanager
def reading_after(position: int) -> Iterator[None]:
    """Reads in this block see everything up to WAL ``position`` (see
    :func:`written_position`): a replica that has not replayed it does not answer."""
    token = _context_lsn.set(max(position, _context_lsn.get()))
    try:
        yield
    finally:
        _context_lsn.reset(token)


def parse_lsn(text: str) -> int:
    """A WAL position (``16/B374D848``) as one number that orders like the WAL."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


@dataclass(eq=False)
class Replica:
    """One replica: its connections and what the last health check found."""

    url: str
    engine: AsyncEngine
    prepared: PreparedReadPool
    healthy: bool = False
    replay_lsn: int = 0
    lag: float = 0.0
    #: Reads this replica answered (the statements and transactions sent to it).
    served: int = 0
    reason: str = "not checked yet"
    _probe: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        parsed = make_url(self.url)
        return f"{parsed.host}:{parsed.port or 5432}/{parsed.database}"

    def mark_down(self, reason: str) -> None:
        """Skip this replica until a health check finds it answering again."""
        if self.healthy:
            logger.warning("read replica %s skipped: %s", self.name, reason)
        self.healthy = False
        self.reason = reason


class ReplicaSet:
    """The replicas of one primary, their health, and the choice of one per read."""

    def __init__(self, primary_url: str, replicas: Sequence[Replica], *, max_lag: float,
                 interval: float) -> None:
        self.primary_url = primary_url
        self.replicas = list(replicas)
        self.max_lag = max_lag
        self.interval = interval
        #: Reads the primary answered because no replica could.
        self.primary_served = 0
        self._writes: OrderedDict[Hashable, int] = OrderedDict()
        #: The highest WAL position a write through this set recorded.
        self.highest = 0
        # (monotonic time first seen, primary position), positions increasing.
        self._samples: deque[tuple[float, int]] = deque()
        self._turn = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._primary_probe: Any = None
        self._checked = asyncio.Event()

    # ---- freshness ---------------------------------------------------------------

    def wrote(self, lsn: int) -> None:
        """Record a committed write's WAL position for this context and its caller."""
        _context_lsn.set(max(lsn, _context_lsn.get()))
        self.highest = max(self.highest, lsn)
        key = _caller.get()
        if key is None:
            return
        self._writes[key] = max(lsn, self._writes.get(key, 0))
        self._writes.move_to_end(key)
        while len(self._writes) > REMEMBERED_CALLERS:
            self._writes.popitem(last=False)

    def needed(self) -> int:
        """The WAL position a replica must have replayed to answer this context."""
        key = _caller.get()
        mine = 0 if key is None else self._writes.get(key, 0)
        return max(mine, _context_lsn.get())

    def needed_by_anyone(self) -> int:
        """The WAL position a replica must have replayed to be fit for every caller."""
        return self.highest

    def choose(self) -> Replica | None:
        """A replica fit to answer a read now (round robin), or None for the primary."""
        self.start()
        if in_write.get():
            return None
        needed = self.needed()
        fit = [replica for replica in self.replicas
               if replica.healthy and replica.lag <= self.max_lag
               and replica.replay_lsn >= needed]
        if not fit:
            self.primary_served += 1
            return None
        replica = fit[next(self._turn) % len(fit)]
        replica.served += 1
        return replica

    # ---- health ------------------------------------------------------------------

    def start(self) -> None:
        """Start the health check (on first use, inside the running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait_checked(self) -> None:
        """Wait for the next health check to finish (tests and start-up use it)."""
        self.start()
        self._checked.clear()
        await self._checked.wait()

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except Exception:  # pragma: no cover - check() keeps its own failures
                logger.exception("read replica health check failed")
            self._checked.set()
            await asyncio.sleep(self.interval)

    async def check(self) -> None:
        """One health check: the primary's position, then each replica's."""
        try:
            if self._primary_probe is None or self._primary_probe.is_closed():
                self._primary_probe = await _connect(self.primary_url, self.interval * 4 + 1)
            current = parse_lsn(await self._primary_probe.fetchval(
                "SELECT pg_current_wal_lsn()::text"))
        except Exception as error:
            # Without the primary's position lag is unknown: keep the last verdicts.
            await self._drop_probe()
            logger.warning("read replicas: the primary's WAL position is unknown: %s", error)
            return
        moment = time.monotonic()
        if not self._samples or current > self._samples[-1][1]:
            self._samples.append((moment, current))
        # Kept long enough to tell any lag above max_lag from one below it.
        horizon = moment - (self.max_lag * 2 + self.interval * 4 + 1)
        while len(self._samples) > 1 and self._samples[0][0] < horizon:
            self._samples.popleft()
        await asyncio.gather(*(self._check_replica(replica, moment)
                               for replica in self.replicas))

    async def _check_replica(self, replica: Replica, moment: float) -> None:
        try:
            if replica._probe is None or replica._probe.is_closed():
                replica._probe = await _connect(replica.url, self.interval * 4 + 1)
            async with asyncio.timeout(self.interval * 4 + 1):
                row = await replica._probe.fetchrow(
                    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")
        except Exception as error:
            probe, replica._probe = replica._probe, None
            if probe is not None:
                probe.terminate()
            replica.mark_down(f"does not answer ({type(error).__name__}: {error})")
            return
        recovering, replayed = row
        if not recovering or replayed is None:
            replica.mark_down("is not a streaming replica (not in recovery)")
            return
        replica.replay_lsn = parse_lsn(replayed)
        behind = next((seen for seen, lsn in self._samples if lsn > replica.replay_lsn), None)
        replica.lag = 0.0 if behind is None else moment - behind
        if replica.lag > self.max_lag:
            replica.mark_down(f"lags {replica.lag:.1f} s (more than {self.max_lag:g} s)")
            return
        if not replica.healthy:
            logger.info("read replica %s taken back", replica.name)
        replica.healthy = True
        replica.reason = ""

    async def _drop_probe(self) -> None:
        probe, self._primary_probe = self._primary_probe, None
        if probe is not None:
            probe.terminate()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drop_probe()
        for replica in self.replicas:
            probe, replica._probe = replica._probe, None
            if probe is not None:
                probe.terminate()
            await replica.prepared.close()
            await replica.engine.dispose()


async def _connect(url: str, timeout: float) -> Any:
    import asyncpg

    parsed = make_url(url)
    return await asyncpg.connect(
        host=parsed.host, port=parsed.port or 5432, user=parsed.username,
        password=parsed.password, database=parsed.database, timeout=timeout,
    )
