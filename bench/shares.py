"""Share links: reading a shared branch costs about what its owner's page costs.

    python -m bench.shares [--quick] [--backend sqlite|postgres|both] [--postgres-url URL]

For each backend a ``chatql serve`` process on a fresh database (a temporary SQLite
file; a new Postgres database, dropped afterwards) gets one chat of 200 messages
(alternating questions and answers, one chain, written by one append) and a PUBLIC
link to it. Then, over one keep-alive HTTP connection each, in alternating bursts (the
best burst of each counts: noise on a shared machine only ever slows a run down):

- ``sharedChat(token)`` read with no identity at all — title, createdAt and the 200
  messages' id, role, type, props, createdAt and assistantId, each read counting a view;
- the owner's own ``messages(chatId, last: 200)`` page of the same 200 messages with
  the same six fields.

Printed per backend: requests/s of each and ``sharedChat / own page`` — the time a
link's read takes divided by the owner's page's (goal ≤ 1.2). ``--quick`` makes fewer,
shorter bursts so the run takes seconds (the test suite runs it).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import backends_parser, chatql_serve, fresh_postgres
from chatql.store.db.database import execute_on_server

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = 200
OWNER = {"X-User-Id": "owner", "X-Tenant-Id": "bench"}
FIELDS = "id role type props createdAt assistantId"
CREATE = ('mutation { createChat(input: {id: "shared", assistantId: "guide", '
          'title: "A long conversation"}) { id } }')
APPEND = """mutation($messages: [MessageInput!]!) {
  appendMessages(chatId: "shared", appendId: "seed", messages: $messages) { lastSequence } }"""
SHARE = 'mutation { shareChat(chatId: "shared", audience: PUBLIC) { token } }'
SHARED = ("query($token: String!) { sharedChat(token: $token) { title createdAt messages { "
          + FIELDS + " } } }")
OWN_PAGE = ('query { messages(chatId: "shared", last: 200) { edges { node { '
            + FIELDS + " } } } }")


def conversation() -> list[dict[str, Any]]:
    """Questions and answers of a few sentences each."""
    turns = []
    for n in range(MESSAGES):
        if n % 2 == 0:
            turns.append({"role": "USER", "type": "text", "props": {
                "content": f"Question {n // 2 + 1}: how do the trains run between Oslo and"
                           " Bergen in winter, and is the night train worth it?"}})
        else:
            turns.append({"role": "ASSISTANT", "type": "text", "assistantId": "guide",
                          "props": {"content": f"Answer {n // 2 + 1}: "
                                    + "The Bergen line runs all year; snow rarely stops it. "
                                    * 4}})
    return turns


@contextmanager
def server(database_url: str, folder: Path) -> Iterator[str]:
    """``chatql serve`` on a free port over ``database_url``; yields its base URL."""
    # Links are read far past the default limit here.
    with chatql_serve(database_url, folder,
                      {"CHATQL_RATE_LIMITS": "shares=1000000/second"}) as (base, _):
        yield base


async def prepare(base: str) -> str:
    """The chat of 200 messages and its PUBLIC link's token."""
    async with httpx.AsyncClient(base_url=base, headers=OWNER, timeout=60) as http:
        for body in ({"query": CREATE},
                     {"query": APPEND, "variables": {"messages": conversation()}}):
            answer = (await http.post("/graphql", json=body)).json()
            assert "errors" not in answer, answer
        made = (await http.post("/graphql", json={"query": SHARE})).json()
        token: str = made["data"]["shareChat"]["token"]
    return token


async def rate(base: str, body: dict[str, Any], headers: dict[str, str],
               requests: int) -> float:
    """Requests per second over one keep-alive connection, one request at a time."""
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        for _ in range(3):  # warm the connection and the caches
            await http.post("/graphql", json=body)
        began = time.perf_counter()
        for _ in range(requests):
            response = await http.post("/graphql", json=body)
            assert response.status_code == 200, response.text
        return requests / (time.perf_counter() - began)


async def check_same(base: str, token: str) -> None:
    """Both reads answer the same 200 messages, in the same order."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        shared = (await http.post("/graphql", json={
            "query": SHARED, "variables": {"token": token}})).json()["data"]["sharedChat"]
        own = (await http.post("/graphql", headers=OWNER, json={
            "query": OWN_PAGE})).json()["data"]["messages"]
    nodes = [edge["node"] for edge in own["edges"]]
    if shared["messages"] != nodes or len(nodes) != MESSAGES:
        raise RuntimeError("sharedChat and the owner's page answer different messages")


class Result:
    def __init__(self, backend: str, shared: float, own: float) -> None:
        self.backend, self.shared, self.own = backend, shared, own

    def report(self) -> str:
        return (f"{self.backend}: {MESSAGES}-message branch, best of alternating bursts\n"
                f"  sharedChat (no identity) {self.shared:,.0f} req/s, owner's messages"
                f" page {self.own:,.0f} req/s"
                f"  -> sharedChat / own page = {self.own / self.shared:.2f}  (goal <= 1.2)")


async def measure(backend: str, database_url: str, folder: Path, quick: bool) -> Result:
    requests, bursts = (30, 3) if quick else (400, 10)
    with server(database_url, folder) as base:
        token = await prepare(base)
        await check_same(base, token)
        best = {"shared": 0.0, "own": 0.0}
        for _ in range(bursts):
            best["shared"] = max(best["shared"], await rate(
                base, {"query": SHARED, "variables": {"token": token}}, {}, requests))
            best["own"] = max(best["own"], await rate(base, {"query": OWN_PAGE}, OWNER,
                                                      requests))
    return Result(backend, best["shared"], best["own"])


async def run_sqlite(quick: bool) -> Result:
    with tempfile.TemporaryDirectory(prefix="chatql-bench-") as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        return await measure("sqlite", url, Path(folder), quick)


async def run_postgres(base_url: str, quick: bool) -> Result | str:
    try:
        await execute_on_server(base_url.replace("postgresql://", "postgresql+asyncpg://", 1),
                                "SELECT 1")
    except Exception as error:  # reported, not raised: the other backend still runs
        return f"postgres: skipped ({base_url} unreachable: {error})"
    with tempfile.TemporaryDirectory(prefix="chatql-bench-") as folder:
        async with fresh_postgres(base_url) as (_db, url):
            return await measure("postgres", url, Path(folder), quick)


def main(argv: list[str] | None = None) -> int:
    parser = backends_parser("python -m bench.shares", __doc__)
    parser.add_argument("--quick", action="store_true", help="short bursts: a few seconds")
    args = parser.parse_args(argv)

    async def run() -> None:
        if args.backend in ("sqlite", "both"):
            print((await run_sqlite(args.quick)).report(), flush=True)
        if args.backend in ("postgres", "both"):
            result = await run_postgres(args.postgres_url, args.quick)
            print(result if isinstance(result, str) else result.report(), flush=True)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
