"""What the operations layer costs on the hot paths: chatql with metrics, rate limits,
JSON request logs or tracing on, divided by chatql with all of them off, in one run.

    python -m bench.operations [--quick] [--rounds N]

Each variant is a ``chatql serve`` process on its own SQLite file (memory broker), all
serving at once. One client drives them in short alternating bursts (the best burst of
each counts, as noise on a shared machine only ever slows a run down) with two
workloads over one keep-alive HTTP connection per burst: ``pushChunks`` of 10 chunks
into a live stream (the push fast lane) and ``messages`` of a chat (the reads plan).
Printed: requests/s of each variant and its ratio to the variant with everything off.
Tracing exports to an OTLP/HTTP stand-in in this process that accepts and drops every batch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
HEADERS = {"X-User-Id": "bench", "X-Tenant-Id": "bench", "X-Roles": "agent"}
CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = "mutation($chat: ID!) { startStream(input: {chatId: $chat}) { id } }"
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted } }"""
APPEND = """mutation($chat: ID!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: "seed", messages: $messages) { lastSequence } }"""
READ = "query($chat: ID!) { messages(chatId: $chat, last: 20) { edges { node { id props } } } }"

VARIANTS: dict[str, dict[str, str]] = {
    "off": {"CHATQL_METRICS": "false"},
    "metrics": {},
    "metrics+limits": {"CHATQL_RATE_LIMITS": "pushes=100000/second;reads=100000/second"},
    "metrics+json logs": {"CHATQL_LOG_FORMAT": "json"},
    "tracing": {"CHATQL_METRICS": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "<collector>"},
}


@contextmanager
def collector() -> Iterator[str]:
    class Drop(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drop)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(env: dict[str, str], folder: Path) -> Iterator[str]:
    port = free_port()
    full = {key: value for key, value in os.environ.items()
            if not key.startswith(("CHATQL_", "OTEL_"))}
    full.update({"CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{folder / f'{port}.db'}",
                 "CHATQL_SECRET": "b" * 32, "OTEL_BSP_SCHEDULE_DELAY": "500", **env})
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
         "--log-level", "warning"], cwd=ROOT, env=full, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(30)


async def prepare(base: str) -> tuple[str, str]:
    async with httpx.AsyncClient(base_url=base, headers=HEADERS, timeout=30) as http:
        await http.post("/graphql", json={"query": CREATE, "variables": {"id": "b"}})
        await http.post("/graphql", json={"query": APPEND, "variables": {
            "chat": "b", "messages": [{"role": "USER", "type": "text",
                                       "props": {"content": f"m{i}"}} for i in range(20)]}})
        started = await http.post("/graphql", json={"query": START,
                                                     "variables": {"chat": "b"}})
        return "b", started.json()["data"]["startStream"]["id"]


async def rate(base: str, body: dict[str, Any], requests: int) -> float:
    async with httpx.AsyncClient(base_url=base, headers=HEADERS, timeout=30) as http:
        for _ in range(5):  # warm the connection and the plans
            await http.post("/graphql", json=body)
        began = time.perf_counter()
        for _ in range(requests):
            response = await http.post("/graphql", json=body)
            assert response.status_code == 200, response.text
        return requests / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: a few seconds")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 3, quick 1)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    requests = 40 if args.quick else 2000
    bursts = 2 if args.quick else 10
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as folder, collector() as endpoint, \
            contextlib.ExitStack() as stack:
        # Every variant serves at once and the client alternates short bursts between
        # them, so a slow moment of the machine falls on all of them alike.
        bodies: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for env in VARIANTS.values():
            env = {key: endpoint if value == "<collector>" else value
                   for key, value in env.items()}
            base = stack.enter_context(server(env, Path(folder)))
            chat, stream = asyncio.run(prepare(base))
            push = {"query": PUSH, "variables": {"id": stream, "chunks": [
                {"messageId": "m", "type": "text", "delta": True,
                 "props": {"content": "x"}}] * 10}}
            bodies[base] = [("pushChunks", push),
                            ("messages", {"query": READ, "variables": {"chat": chat}})]
        names = dict(zip(bodies, VARIANTS, strict=True))
        for _ in range(rounds * bursts):
            for base, workloads in bodies.items():
                for workload, body in workloads:
                    measured = asyncio.run(rate(base, body, requests // bursts))
                    key = (names[base], workload)
                    best[key] = max(best.get(key, 0.0), measured)
    print(f"{'variant':<20}{'pushChunks req/s':>18}{'ratio':>8}{'messages req/s':>17}"
          f"{'ratio':>8}")
    for name in VARIANTS:
        push_rate, read_rate = best[(name, "pushChunks")], best[(name, "messages")]
        print(f"{name:<20}{push_rate:>18,.0f}{push_rate / best[('off', 'pushChunks')]:>8.2f}"
              f"{read_rate:>17,.0f}{read_rate / best[('off', 'messages')]:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
