"""The scale figure of ``bench.streams``: one chat, N subscribers over real WebSockets.

For N = 10, 1,000 and 10,000 (``--quick``: 10 and 100) the same run is made against
chatql (``chatStream``, graphql-transport-ws) and the bare relay, alternating: the
subscribers are spread over several client processes (at most ``PER_PROCESS`` sockets
each), the producer pushes one batch of non-delta chunks every 50 ms over HTTP and
times each push, then ends the stream. Each client process reports how many of its
subscriptions were acknowledged (``connection_ack`` and the subscribe sent; the
relay's ready frame) and how many were served (received a frame of the subscription:
a chunk, a snapshot, an error or complete), the chunk frames it received (snapshots
not counted) and a latency histogram (producer stamp to arrival; every process reads
the same monotonic clock). Printed: chunks delivered/s of chatql ÷ the relay's at the
same N, p99 latency of both, the median push latency at N ÷ at 10, and the count of
acknowledged subscriptions never served; beside them the CPU time per chunk of the
server and of the client processes.

The clients are plain asyncio protocols on uvloop, the same for chatql and the relay.
At 10,000 subscribers one push every 50 ms is 400,000 frames a second to read on the
same machine as the server: every microsecond a client spends per frame is 0.4 of a
core taken from the server and the producer, and past the machine's cores the figures
measure the load generator, not the server. A WebSocket library calls back into
Python once per frame, and that callback costs about as much as everything done with
the frame (a ``picows`` client with an empty frame handler cost about what the full
one did). Here the Python work is per socket read instead (:mod:`bench.rawsocket`):
the client writes the upgrade request and its few masked frames itself, walks only the
frame headers of what arrived to find the complete frames (a partial one waits for the
next read), finds the producer's stamps in all of them with one compiled-pattern pass
and takes one clock reading; the histograms are filled from what was kept once the
stream is over. At N = 1,000 on the same machine this took 5.6 µs (chatql) and 7.9 µs
(relay) of client CPU per chunk against picows' 8.2 and 11.2. The cyclic garbage
collector is off in the client processes. The printed client CPU per chunk shows how much of the
machine the load generator took while the stream ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import re
import resource
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from bench.common import cpu_seconds
from bench.rawsocket import RawSocket, connect, connection_init
from bench.rawsocket import subscribe as subscribe_frame

__all__ = ["PER_PROCESS", "client_main", "raise_file_limit", "scale"]

#: Sockets one client process holds: four processes at 10,000 share both cores of a small
#: machine (two processes of 5,000 delivered fewer chunks/s, later, in a trial).
PER_PROCESS = 2_500
SUBSCRIBE = ("subscription($chat: ID!) { chatStream(chatId: $chat) { streamId seq chunkId "
             "messageId blockId threadId type role props delta deltaPath deltaAction "
             "snapshot } }")
_BUCKET = math.log(1.02)  # histogram buckets 2 % wide


def client_nice() -> int:
    """``CHATQL_BENCH_CLIENT_NICE``: how far the client processes lower their CPU
    priority below the servers' and the producer's (0, the default: not at all)."""
    return int(os.environ.get("CHATQL_BENCH_CLIENT_NICE", "0") or 0)


def raise_file_limit() -> int:
    """Lift the soft limit on open files to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---- the client process ------------------------------------------------------------------

#: The payload markers the client scans for (bytes: no frame is decoded to str). The
#: producer's stamps ride in each chunk's props: "t" (the chunk made), then "s" (its push
#: due); a snapshot's marker comes after the props (fields in the selection's order).
_STAMPS = re.compile(rb'"t":(\d+)(?:,"s":(\d+))?')
_DUE = re.compile(rb'"s":(\d+)')
_SNAPSHOT = b'"snapshot":true'
_ENDS = (b'"stream_end"', b'"type":"end"', b'"type":"complete"', b'"type":"error"')
_PER_LOG = 1 / _BUCKET
_MS_LOG = math.log(1e6) / _BUCKET  # nanoseconds to milliseconds, in buckets


#: Both stamps of a chunk side by side (the common case; anything else takes the slow path).
_BOTH = re.compile(rb'"t":(\d+),"s":(\d+)')


class _Stats:
    """What one client process saw: chunk frames, snapshots and two latency histograms
    (2 %-wide buckets of the latency in milliseconds, at least 1 µs). The stamps are
    kept per socket read as found (the arrival time and the matches) and bucketed into
    the histograms once the stream is over."""

    def __init__(self) -> None:
        self.chunks = 0
        self.snapshots = 0
        self.histogram: dict[int, int] = {}
        self.scheduled: dict[int, int] = {}
        #: perf_counter_ns of the first and the last chunk received.
        self.first = 0
        self.last = 0
        self.reads: list[tuple[int, list[tuple[bytes, bytes]]]] = []

    def bucket(self) -> None:
        """Fold the reads kept so far into both histograms (2 %-wide buckets)."""
        histogram, scheduled, log = self.histogram, self.scheduled, math.log
        for now, found in self.reads:
            for made, due in found:
                bucket = int(log(max(1_000, now - int(made))) * _PER_LOG - _MS_LOG)
                histogram[bucket] = histogram.get(bucket, 0) + 1
                if due:
                    bucket = int(log(max(1_000, now - int(due))) * _PER_LOG - _MS_LOG)
                    scheduled[bucket] = scheduled.get(bucket, 0) + 1
        self.reads.clear()


class _Socket(RawSocket):
    """One subscription's socket (a :class:`bench.rawsocket.RawSocket`): the Python work
    is per socket read, not per frame.

    chatql: ``connection_init`` once upgraded, ``subscribe`` on ``connection_ack``
    (acknowledged from then on); the relay: acknowledged on its ready frame. After
    that any frame serves the subscription.

    When every complete frame of a read is a text frame carrying both stamps and none
    is a snapshot (all the chunk frames of a running stream), one compiled-pattern pass
    over those frames finds the stamps, kept with one clock reading for the read.
    Anything else (the handshake's frames, stream_start, snapshots, ends, pings, close)
    is handled frame by frame.
    """

    def __init__(self, kind: str, address: str, subscribe: bytes, stats: _Stats) -> None:
        if kind == "chatql":
            super().__init__(address, init=connection_init(), subscribe=subscribe)
        else:
            super().__init__(address, path="/ws", subprotocol=None)
        self.kind = kind
        self.stats = stats
        self.served = False
        self.started = asyncio.Event()
        self.ended = asyncio.Event()

    def received(self, buf: bytes, stop: int, frames: int, plain: bool) -> None:
        now = time.perf_counter_ns()
        if plain and self.acked:
            found = _BOTH.findall(buf, 0, stop)
            if len(found) == frames and buf.find(_SNAPSHOT, 0, stop) < 0:
                self.served = True
                stats = self.stats
                stats.reads.append((now, found))
                stats.chunks += frames
                stats.first = stats.first or now
                stats.last = now
                return
        self.frames(buf, stop, now)

    def acknowledged(self) -> None:
        if self.kind != "chatql":  # ready: registered with the relay
            self.started.set()

    def text(self, payload: bytes, now: int) -> None:
        """One text frame after the handshake: stamped (a chunk or a snapshot) or not
        (stream_start; an end, complete or error frame ends the subscription)."""
        self.served = True
        stamps = _STAMPS.search(payload)
        if stamps is None:
            if any(end in payload for end in _ENDS):
                self.ended.set()
            else:
                self.started.set()
            return
        stats = self.stats
        if payload.find(_SNAPSHOT, stamps.end()) >= 0:
            stats.snapshots += 1
            return
        made, due = stamps.groups()
        if due is None:
            found = _DUE.search(payload)
            due = found[1] if found else b""
        stats.reads.append((now, [(made, due)]))
        stats.chunks += 1
        stats.first = stats.first or now
        stats.last = now

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.ended.set()


def _report(**values: Any) -> None:
    sys.stdout.write(orjson.dumps(values).decode() + "\n")
    sys.stdout.flush()


async def _first(sock: Any) -> None:
    """Wait for a subscription's first frame: stream_start (or a snapshot), error or end."""
    waits = [asyncio.ensure_future(sock.started.wait()),
             asyncio.ensure_future(sock.ended.wait())]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for waiting in waits:
        waiting.cancel()


async def _open(kind: str, address: str, subscribe: bytes, stats: _Stats,
                gate: asyncio.Semaphore) -> _Socket | None:
    """Open one socket and wait for its acknowledgement; None when it failed."""
    async with gate:
        try:
            sock = await connect(address, lambda: _Socket(kind, address, subscribe, stats))
        except Exception as error:  # counted as not acknowledged
            print(f"connect failed: {error!r}", file=sys.stderr)
            return None
    return sock


async def _client(kind: str, address: str, chat: str, count: int) -> None:
    stats = _Stats()
    subscribe = subscribe_frame(SUBSCRIBE, {"chat": chat})
    gate = asyncio.Semaphore(100)
    opened = await asyncio.gather(*(_open(kind, address, subscribe, stats, gate)
                                    for _ in range(count)))
    acked = [sock for sock in opened if sock is not None]
    _report(connected=len(acked))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # started
    with contextlib.suppress(TimeoutError):
        # Every subscription served its first frame before the pushes (each costs the
        # server an access check; 10,000 of them take a while on a small machine).
        await asyncio.wait_for(asyncio.gather(*(_first(s) for s in acked)), 600)
    _report(started=sum(s.started.is_set() or s.ended.is_set() for s in acked),
            cpu=time.process_time())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # ended
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(s.ended.wait() for s in acked)), 180)
    cpu = time.process_time()
    stats.bucket()  # after the stream: the CPU taken while it ran is reported
    _report(acked=len(acked), served=sum(s.served for s in acked), chunks=stats.chunks,
            snapshots=stats.snapshots, first=stats.first / 1e9, last=stats.last / 1e9,
            histogram=sorted(stats.histogram.items()),
            scheduled=sorted(stats.scheduled.items()),
            ended=sum(s.ended.is_set() for s in acked), cpu=cpu)
    for sock in acked:
        sock.disconnect()


def client_main(kind: str, address: str, chat: str, count: int) -> None:
    """One client process: ``count`` subscriptions, reporting on stdout as it goes.

    The cyclic garbage collector is off: the process makes no cycles per frame, and
    its full collections would otherwise walk every socket's objects while frames wait.
    With ``CHATQL_BENCH_CLIENT_NICE`` the process lowers its own CPU priority by that
    much (both servers' clients alike), standing in for clients on other machines.
    """
    gc.disable()
    niceness = client_nice()
    if niceness:
        os.nice(niceness)
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        asyncio.run(_client(kind, address, chat, count))
    else:
        uvloop.run(_client(kind, address, chat, count))


# ---- the driver ---------------------------------------------------------------------------


@dataclass
class ScaleFigures:
    n: int
    rate: float
    p50: float
    p99: float
    push_p50: float
    #: p99 latency from the time each push was due on the 50 ms schedule.
    p99_due: float
    #: Server CPU seconds from the first push to the last report, per chunk delivered.
    cpu_per_chunk: float
    #: The client processes' CPU seconds over the same span, per chunk received.
    client_cpu_per_chunk: float
    acked: int
    unserved: int
    snapshots: int
    started_in: float = 0.0


def _percentile(histogram: dict[int, int], fraction: float) -> float:
    total = sum(histogram.values())
    if not total:
        return float("nan")
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= fraction * total:
            return math.exp((bucket + 0.5) * _BUCKET)
    return float("nan")


async def _line(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    raw = await process.stdout.readline()
    if not raw:
        raise RuntimeError("a client process ended early")
    decoded: dict[str, Any] = orjson.loads(raw)
    return decoded


async def run_once(target: Any, n: int, pushes: int, batch: int) -> ScaleFigures:
    """One round at ``n`` subscribers against ``target`` (a bench.streams target)."""
    from bench.streams import ROOT, chunk

    kind = "chatql" if hasattr(target, "gql") else "baseline"
    chat = ""
    if kind == "chatql":
        chat = f"scale-{uuid.uuid4().hex[:10]}"
        await target.gql("mutation($id: ID!) { createChat(input: {assistantId: \"b\", "
                         "id: $id}) { id } }", {"id": chat})
        target.chat = chat
    parts = [PER_PROCESS] * (n // PER_PROCESS) + ([n % PER_PROCESS] if n % PER_PROCESS else [])
    clients = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.streams", "--scale-client", kind, target.server.address,
        chat, str(part), cwd=ROOT, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE) for part in parts]

    async def tell() -> None:
        for process in clients:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
            await process.stdin.drain()

    try:
        await asyncio.gather(*(_line(p) for p in clients))  # connected
        if kind == "chatql":
            data = await target.gql("mutation($chat: ID!) { startStream(input: {chatId: "
                                    "$chat}) { id } }", {"chat": chat})
            target.stream_id = data["startStream"]["id"]
        await tell()
        opened = time.perf_counter()
        started = await asyncio.gather(*(_line(p) for p in clients))
        started_in = time.perf_counter() - opened
        push_times: list[float] = []
        cpu_before = cpu_seconds(target.server.process.pid)
        began_ns = time.perf_counter_ns()
        began = began_ns / 1e9
        for index in range(pushes):
            chunks = [chunk(index * batch + i) for i in range(batch)]
            for item in chunks:  # non-delta: each replaces the message's props
                item["delta"] = False
                # When this push was due: a server whose push holds the producer up
                # delays the chunks it has not been given yet, which "t" (stamped as
                # each chunk is made) cannot see.
                item["props"]["s"] = began_ns + index * 50_000_000
            sent = time.perf_counter()
            await target.push(chunks)
            push_times.append(time.perf_counter() - sent)
            await asyncio.sleep(max(0.0, began + (index + 1) * 0.05 - time.perf_counter()))
        await target.finish()
        await tell()
        reports = await asyncio.gather(*(_line(p) for p in clients))
        cpu = cpu_seconds(target.server.process.pid) - cpu_before
    finally:
        for process in clients:
            if process.returncode is None:
                try:
                    await asyncio.wait_for(process.wait(), 60)
                except TimeoutError:
                    process.kill()
                    await process.wait()
    histogram: dict[int, int] = {}
    scheduled: dict[int, int] = {}
    for report in reports:
        for bucket, count in report["histogram"]:
            histogram[bucket] = histogram.get(bucket, 0) + count
        for bucket, count in report["scheduled"]:
            scheduled[bucket] = scheduled.get(bucket, 0) + count
    chunks_received = sum(r["chunks"] for r in reports)
    # Each client's own CPU time from its subscriptions started to its last report.
    client_cpu = sum(r["cpu"] for r in reports) - sum(r["cpu"] for r in started)
    last = max((r["last"] for r in reports if r["chunks"]), default=0.0)
    # Both clocks are CLOCK_MONOTONIC: the producer's first push to the last arrival.
    elapsed = max(1e-9, last - began) if last else float("inf")
    push_times.sort()
    return ScaleFigures(
        n=n, rate=chunks_received / elapsed, p50=_percentile(histogram, 0.5),
        p99=_percentile(histogram, 0.99), push_p50=push_times[len(push_times) // 2],
        p99_due=_percentile(scheduled, 0.99), cpu_per_chunk=cpu / max(1, chunks_received),
        client_cpu_per_chunk=client_cpu / max(1, chunks_received),
        acked=sum(r["acked"] for r in reports),
        unserved=sum(r["acked"] - r["served"] for r in reports),
        snapshots=sum(r["snapshots"] for r in reports), started_in=started_in)


def _best(a: ScaleFigures | None, b: ScaleFigures) -> ScaleFigures:
    if a is None:
        return b
    return ScaleFigures(n=b.n, rate=max(a.rate, b.rate), p50=min(a.p50, b.p50),
                        p99=min(a.p99, b.p99), push_p50=min(a.push_p50, b.push_p50),
                        p99_due=min(a.p99_due, b.p99_due),
                        cpu_per_chunk=min(a.cpu_per_chunk, b.cpu_per_chunk),
                        client_cpu_per_chunk=min(a.client_cpu_per_chunk,
                                                 b.client_cpu_per_chunk),
                        acked=a.acked + b.acked, unserved=a.unserved + b.unserved,
                        snapshots=a.snapshots + b.snapshots,
                        started_in=min(a.started_in, b.started_in))


async def scale(chatql: Any, baseline: Any, http: httpx.AsyncClient, quick: bool,
                only: tuple[int, ...] = ()) -> None:
    """Print the scale table (chatql and the relay alternating, best of rounds)."""
    from bench.streams import BaselineTarget, ChatqlTarget

    limit = raise_file_limit()
    # N = 10 always comes first (the push latencies are divided by its own).
    sizes = [10, 100] if quick else [10, *(n for n in only or (1_000, 10_000) if n != 10)]
    rounds = 1 if quick else 2
    pushes, batch = (10, 2) if quick else (60, 2)
    print(f"scale: one push of {batch} non-delta chunks every 50 ms, {pushes} pushes; "
          f"<= {PER_PROCESS} sockets per client process (nice {client_nice()}); "
          f"open files limit {limit}; "
          f"best of {rounds} alternating rounds (unserved: summed over the rounds)")
    print(f"{'N':>6} {'chatql chunks/s':>16} {'bare chunks/s':>14} {'ratio':>6}"
          f"  p99 ms chatql|bare (ratio)  push p50 ms chatql (of N=10)|bare  unserved")
    base_push: float | None = None
    for n in sizes:
        ours = bare = None
        # 10,000 sockets take minutes a round on a small machine: one round there.
        for _ in range(rounds if n < 10_000 else 1):
            ours = _best(ours, await run_once(ChatqlTarget(chatql, http), n, pushes, batch))
            bare = _best(bare, await run_once(BaselineTarget(baseline, http), n, pushes,
                                              batch))
        assert ours is not None and bare is not None
        base_push = base_push or ours.push_p50
        print(f"{n:>6} {ours.rate:>16,.0f} {bare.rate:>14,.0f} {ours.rate / bare.rate:>6.2f}"
              f"  {ours.p99:.1f}|{bare.p99:.1f} ({ours.p99 / bare.p99:.2f})"
              f"  {ours.push_p50 * 1000:.2f} (x{ours.push_p50 / base_push:.2f} of N=10)"
              f"|{bare.push_p50 * 1000:.2f}  {ours.unserved} of {ours.acked}")
        print(f"{'':>6} p99 ms from when each push was due: {ours.p99_due:.1f}|"
              f"{bare.p99_due:.1f} ({ours.p99_due / bare.p99_due:.2f}); server CPU per chunk"
              f" delivered {ours.cpu_per_chunk * 1e6:.1f}|{bare.cpu_per_chunk * 1e6:.1f} µs")
        if n >= 1_000:
            print(f"{'':>6} every subscription served its first frame in {ours.started_in:.1f}"
                  f" s (chatql), {bare.started_in:.1f} s (relay); resync snapshots"
                  f" {ours.snapshots}; client CPU per chunk received"
                  f" {ours.client_cpu_per_chunk * 1e6:.1f}|"
                  f"{bare.client_cpu_per_chunk * 1e6:.1f} µs")
