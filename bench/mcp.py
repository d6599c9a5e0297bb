"""MCP benchmark: a ``search_messages`` tool call ÷ the same ``searchMessages`` over GraphQL.

For each backend it makes a fresh database, seeds it as ``bench.search`` does
(Zipf-distributed words in 100-message chats over ten tenants), starts ``chatql serve``
on it and, from one client process, sends each query of a mix twice, in alternating
order: as ``POST /graphql`` with the very document the tool runs (``httpx``, one
keep-alive connection), and as an MCP ``tools/call`` of ``search_messages`` with the
same arguments (the ``mcp`` SDK's streamable HTTP client). Both ask as the same caller
and get the same hits (checked). Printed: the median round trip of each and their
ratio, MCP ÷ GraphQL (the goal is at most 1.3).

Default size: 100,000 messages and 200 queries per backend; ``--quick`` seeds 2,000
messages and sends 20 queries (used by the test suite)::

    .venv/bin/python -m bench.mcp                     # both backends
    .venv/bin/python -m bench.mcp --backend sqlite --messages 200000
    .venv/bin/python -m bench.mcp --quick

Postgres is reached at ``CHATQL_BENCH_POSTGRES_URL`` (else ``CHATQL_TEST_POSTGRES_URL``,
else the local server), whose database is only used to create and drop the bench's own.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.common import backends_parser, fresh_postgres, fresh_sqlite, run_backends
from bench.search import SEED, Corpus, seed_postgres, seed_sqlite
from chatql.gql.transport.mcp_tools import SEARCH_MESSAGES

ROOT = Path(__file__).resolve().parents[1]
#: bench.search's reader: an admin of the first tenant.
HEADERS = {"X-User-Id": "bench-admin", "X-Tenant-Id": "t0", "X-Roles": "admin"}
#: The tool's arguments; the GraphQL request sends the same as variables.
LIMIT, WINDOW = 10, 1


@dataclass
class Result:
    backend: str
    messages: int
    graphql_ms: list[float]
    mcp_ms: list[float]
    hits_per_query: float

    def report(self) -> str:
        graphql = statistics.median(self.graphql_ms)
        mcp = statistics.median(self.mcp_ms)
        return "\n".join([
            f"[{self.backend}] {self.messages:,} messages, {len(self.mcp_ms)} queries"
            f" (mean {self.hits_per_query:.1f} hits)",
            f"  searchMessages over GraphQL: median {graphql:.3f} ms",
            f"  search_messages over MCP:    median {mcp:.3f} ms",
            f"  MCP / GraphQL = {mcp / graphql:.2f}x",
        ])


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(database_url: str) -> Iterator[str]:
    """``chatql serve`` on ``database_url`` (already migrated and seeded)."""
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CHATQL_")}
    env.update({"CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": "b" * 32,
                "CHATQL_MIGRATE_ON_START": "false"})
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
         "--log-level", "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(1200):
            assert process.poll() is None, "chatql serve exited"
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(30)


@asynccontextmanager
async def clients(base: str) -> AsyncIterator[tuple[httpx.AsyncClient, Client]]:
    async with httpx.AsyncClient(base_url=base, headers=HEADERS, timeout=60) as graphql, \
            httpx2.AsyncClient(headers=HEADERS, timeout=60) as http, \
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp:
        yield graphql, mcp


async def over_graphql(http: httpx.AsyncClient, query: str) -> list[str]:
    response = await http.post("/graphql", json={
        "query": SEARCH_MESSAGES.document, "operationName": SEARCH_MESSAGES.name,
        "variables": {"query": query, "first": LIMIT, "window": WINDOW}})
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    return [hit["message"]["id"] for hit in body["data"]["searchMessages"]]


async def over_mcp(client: Client, query: str) -> list[str]:
    result = await client.call_tool("search_messages", {"query": query, "limit": LIMIT,
                                                        "window": WINDOW})
    assert not result.is_error, result.content
    return [hit["message"]["id"] for hit in result.structured_content["hits"]]


async def measure(base: str, queries: list[str]) -> tuple[list[float], list[float], float]:
    graphql_ms: list[float] = []
    mcp_ms: list[float] = []
    hits = 0
    async with clients(base) as (graphql, mcp):
        for query in queries[:5]:  # warm connections, caches and plans of both
            assert await over_graphql(graphql, query) == await over_mcp(mcp, query)
        for index, query in enumerate(queries):
            # Alternating which goes first, so neither always meets a warm cache.
            order = ((over_graphql, graphql, graphql_ms), (over_mcp, mcp, mcp_ms))
            for send, client, times in order if index % 2 else reversed(order):
                began = time.perf_counter()
                found = await send(client, query)  # type: ignore[operator]
                times.append((time.perf_counter() - began) * 1000.0)
            hits += len(found)
    return graphql_ms, mcp_ms, hits / len(queries)


async def run_sqlite(total: int, queries: list[str]) -> Result:
    async with fresh_sqlite() as (_, path):
        await asyncio.to_thread(seed_sqlite, path, total)
        with serving(f"sqlite+aiosqlite:///{path}") as base:
            graphql_ms, mcp_ms, hits = await measure(base, queries)
    return Result("sqlite", total, graphql_ms, mcp_ms, hits)


async def run_postgres(server: str, total: int, queries: list[str]) -> Result:
    async with fresh_postgres(server) as (_, url):
        await seed_postgres(url, total)
        with serving(url) as base:
            graphql_ms, mcp_ms, hits = await measure(base, queries)
    return Result("postgres", total, graphql_ms, mcp_ms, hits)


def main(argv: list[str] | None = None) -> int:
    parser = backends_parser("python -m bench.mcp", __doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 20 queries")
    parser.add_argument("--messages", type=int, default=None,
                        help="messages seeded per backend (default 100,000)")
    parser.add_argument("--queries", type=int, default=None, help="default 200")
    args = parser.parse_args(argv)
    total = args.messages or (2_000 if args.quick else 100_000)
    queries = Corpus(SEED + 1).queries(args.queries or (20 if args.quick else 200))
    return run_backends(args, lambda: run_sqlite(total, queries),
                        lambda url: run_postgres(url, total, queries))


if __name__ == "__main__":
    raise SystemExit(main())
