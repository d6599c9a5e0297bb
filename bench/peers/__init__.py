"""Peer benchmark: chatql against PostGraphile 4 on the same Postgres rows.

    python -m bench.peers [--quick] [--postgres-url URL] [--rounds N] [--seconds S] [--executor]

Creates its own Postgres database (dropped afterwards), migrates it, bulk-loads one chat
of 200,000 messages and 100,000 chats of one user (``--quick``: 2,000 and 500), then
starts, side by side on that database, ``chatql serve`` and PostGraphile 4 (installed by
this benchmark with ``npm ci`` into ``bench/peers/node_modules`` from the committed lock
file). The load generator is autocannon (same lock file): closed-loop keep-alive HTTP
clients, 8 by default, each request answered before the next is sent.

Three reads, each in alternating rounds (chatql, PostGraphile, chatql, …; the best
round of each counts, since noise on a shared machine only ever slows a run down):

- the newest page of 50 messages (``id sequence role type props createdAt``, cursors,
  page info): chatql ``messages(chatId, last: 50)`` against PostGraphile
  ``allMessages(condition: {chatId}, orderBy: SEQUENCE_DESC, first: 50)``;
- a page deep in the chat, 100,000 messages back (``--quick``: half way): chatql
  ``before`` a cursor there, PostGraphile ``after`` its own cursor for the same row;
- a chat-list page of 20 ordered by latest activity, for the chats' creator: chatql
  ``chats(first: 20)`` without totals, PostGraphile ``allChats`` with the same ordering
  and a tenant/creator condition; chatql with ``totalCount`` and ``groups`` is reported
  separately against the same PostGraphile figure.

Before measuring, one answer of each server is compared: both must carry the same rows.
With ``--executor`` a third server, chatql with ``CHATQL_DISABLED_PLANS=reads`` (every
document through the general GraphQL executor), takes part in the same alternating
rounds, and the compiled ÷ executor ratio is printed too.
Prints throughput (req/s), p50 and p99 latency of each, and chatql ÷ PostGraphile.
Without ``node`` it prints why and measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from sqlalchemy.engine import make_url

from bench.pagination import (
    DEFAULT_PG_URL,
    LONG_CHAT,
    SECRET,
    TENANT,
    USER,
    Sizes,
    free_port,
    migrate_url,
    seed_postgres,
)
from chatql.store.db.database import execute_on_server

__all__ = ["main"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = HERE / "node_modules" / ".bin"
PAGE = 50
LIST_PAGE = 20
MESSAGE_FIELDS = "id sequence role type props createdAt"
CHAT_FIELDS = "id title assistantId lastMessageAt createdAt"
PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
HEADERS = {"X-User-Id": USER, "X-Tenant-Id": TENANT, "content-type": "application/json"}


def _connection(call: str, fields: str, extra: str = "") -> str:
    """``call { extra edges { cursor node { fields } } pageInfo { … } }``."""
    return call + " { " + extra + "edges { cursor node { " + fields + " } } " + PAGE_INFO + " }"


CHATQL_NEWEST = "query($chatId: ID!) { " + _connection(
    f"messages(chatId: $chatId, last: {PAGE})", MESSAGE_FIELDS) + " }"
CHATQL_DEEP = "query($chatId: ID!, $before: String) { " + _connection(
    f"messages(chatId: $chatId, last: {PAGE}, before: $before)", MESSAGE_FIELDS) + " }"
CHATQL_CHATS = "query { " + _connection(f"chats(first: {LIST_PAGE})", CHAT_FIELDS) + " }"
CHATQL_CHATS_TOTALS = "query { " + _connection(
    f"chats(first: {LIST_PAGE})", CHAT_FIELDS, "totalCount groups { key count totalCount } ") + " }"
PEER_MESSAGES = "query($chatId: String!, $after: Cursor) { " + _connection(
    "allMessages(condition: {chatId: $chatId}, orderBy: SEQUENCE_DESC, "
    f"first: {PAGE}, after: $after)", MESSAGE_FIELDS) + " }"
PEER_CHATS = "query($tenant: String!, $user: String!) { " + _connection(
    "allChats(condition: {tenantId: $tenant, createdBy: $user, deletedAt: null}, "
    f"orderBy: [ACTIVITY_AT_DESC, ID_DESC], first: {LIST_PAGE})", CHAT_FIELDS) + " }"
PEER_CURSOR_AT = (
    "query($chatId: String!, $sequence: BigInt!) { allMessages(condition: {chatId: $chatId, "
    "sequence: $sequence}, orderBy: SEQUENCE_DESC, first: 1) { edges { cursor } } }"
)


@dataclass(frozen=True)
class Load:
    """One autocannon run: requests per second and latency percentiles in ms."""

    rps: float
    p50: float
    p99: float


@dataclass(frozen=True)
class Scenario:
    name: str
    chatql: dict[str, Any]
    peer: dict[str, Any]
    note: str = ""


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen[bytes]


# --- installing and starting the peers -------------------------------------------------


def ensure_installed() -> str | None:
    """Install the npm peers from the lock file; the reason when that is impossible."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed"
    if not (BIN / "postgraphile").exists() or not (BIN / "autocannon").exists():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE, capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"npm ci in {HERE} failed:\n{done.stderr}")
    return None


async def wait_ready(server: Server, probe: str) -> None:
    async with httpx.AsyncClient(timeout=2) as http:
        for _ in range(600):
            if server.process.poll() is not None:
                raise RuntimeError(f"{server.name} exited with {server.process.returncode}")
            try:
                response = await http.post(server.url, content=orjson.dumps({"query": probe}),
                                           headers=HEADERS)
                if response.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{server.name} did not answer in time")


async def start_chatql(database_url: str, *, compiled: bool = True) -> Server:
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": SECRET,
           "CHATQL_MIGRATE_ON_START": "false", "CHATQL_PLAYGROUND": "false",
           "CHATQL_AUTH": "dev", "CHATQL_DISABLED_PLANS": "" if compiled else "reads"}
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"], cwd=ROOT, env=env)
    name = "chatql" if compiled else "chatql executor"
    server = Server(name, f"http://127.0.0.1:{port}/graphql", process)
    await wait_ready(server, "{ __typename }")
    return server


async def start_postgraphile(database_url: str) -> Server:
    port = free_port()
    connection = make_url(database_url).set(drivername="postgres").render_as_string(
        hide_password=False)
    process = subprocess.Popen(
        [str(BIN / "postgraphile"), "--connection", connection, "--schema", "public",
         "--host", "127.0.0.1", "--port", str(port), "--disable-query-log",
         "--disable-default-mutations", "--dynamic-json", "--max-pool-size", "10"],
        cwd=HERE, stdout=subprocess.DEVNULL)
    server = Server("PostGraphile", f"http://127.0.0.1:{port}/graphql", process)
    await wait_ready(server, "{ __typename }")
    return server


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


# --- answers and load ------------------------------------------------------------------


async def answer(server: Server, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(server.url, content=orjson.dumps(body), headers=HEADERS)
    payload: dict[str, Any] = response.json()
    if response.status_code != 200 or payload.get("errors"):
        raise RuntimeError(f"{server.name} answered {response.status_code}: {payload}")
    data: dict[str, Any] = payload["data"]
    return data


def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes of a connection answer, in the order shown to a person (chatql's)."""
    (connection,) = data.values()
    return [edge["node"] for edge in connection["edges"]]


def same_rows(chatql: list[dict[str, Any]], peer: list[dict[str, Any]]) -> bool:
    # PostGraphile answers BigInt columns as strings; the rows are the same by value.
    def key(node: dict[str, Any]) -> tuple[str, ...]:
        return (*(str(node.get(field)) for field in ("id", "sequence", "title")),
                orjson.dumps(node.get("props"), option=orjson.OPT_SORT_KEYS).decode())

    return bool(chatql) and sorted(map(key, chatql)) == sorted(map(key, peer))


def load(server: Server, body: dict[str, Any], seconds: float, clients: int) -> Load:
    """Closed-loop load by autocannon: ``clients`` connections, one request in flight each."""
    headers = [arg for name, value in HEADERS.items() for arg in ("-H", f"{name}={value}")]
    done = subprocess.run(
        [str(BIN / "autocannon"), "--json", "-c", str(clients), "-p", "1",
         "-d", f"{seconds:g}", "-m", "POST", *headers, "-b", orjson.dumps(body).decode(),
         server.url],
        cwd=HERE, capture_output=True, text=True, timeout=seconds + 60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"autocannon failed: {done.stderr}")
    report = orjson.loads(done.stdout)
    if report["non2xx"] or report["errors"] or report["timeouts"]:
        raise RuntimeError(f"{server.name} failed requests under load: {report}")
    return Load(
        rps=report["requests"]["total"] / (report["duration"] or seconds),
        p50=float(report["latency"]["p50"]),
        p99=float(report["latency"]["p99"]),
    )


def best(runs: list[Load]) -> Load:
    return max(runs, key=lambda run: run.rps)


# --- the benchmark ---------------------------------------------------------------------


async def scenarios(chatql: Server, peer: Server, messages: int, depth: int) -> list[Scenario]:
    from chatql.gql.messages import _branch_scope
    from chatql.store.cursors import CursorSigner
    from chatql.store.messages.message import MessageFilter

    at = messages - depth
    # The chat is one branch: a message's depth on it is its sequence.
    chatql_cursor = CursorSigner(SECRET.encode()).encode(
        _branch_scope(LONG_CHAT, MessageFilter(), None),
        [f"m{at:09d}", at, f"m{messages:09d}"])
    found = await answer(peer, {"query": PEER_CURSOR_AT,
                                "variables": {"chatId": LONG_CHAT, "sequence": at}})
    peer_cursor = found["allMessages"]["edges"][0]["cursor"]
    chats_peer = {"query": PEER_CHATS, "variables": {"tenant": TENANT, "user": USER}}
    return [
        Scenario("newest page of 50 messages",
                 {"query": CHATQL_NEWEST, "variables": {"chatId": LONG_CHAT}},
                 {"query": PEER_MESSAGES, "variables": {"chatId": LONG_CHAT}}),
        Scenario(f"page of 50 messages {depth:,} back",
                 {"query": CHATQL_DEEP, "variables": {"chatId": LONG_CHAT,
                                                       "before": chatql_cursor}},
                 {"query": PEER_MESSAGES, "variables": {"chatId": LONG_CHAT,
                                                        "after": peer_cursor}}),
        Scenario("chat list page of 20", {"query": CHATQL_CHATS}, chats_peer),
        Scenario("chat list page of 20", {"query": CHATQL_CHATS_TOTALS}, chats_peer,
                 note="chatql with totalCount + groups"),
    ]


async def measure(chatql: Server, peer: Server, sizes: Sizes, rounds: int,
                  executor: Server | None = None) -> bool:
    depth = min(100_000, sizes.messages // 2)
    plans = await scenarios(chatql, peer, sizes.messages, depth)
    all_same = True
    for plan in plans:
        ours, theirs = rows(await answer(chatql, plan.chatql)), rows(await answer(peer, plan.peer))
        same = same_rows(ours, theirs)
        all_same = all_same and same
        runs: dict[str, list[Load]] = {"chatql": [], "peer": [], "executor": []}
        for _ in range(rounds):
            runs["chatql"].append(load(chatql, plan.chatql, sizes.seconds, sizes.clients))
            runs["peer"].append(load(peer, plan.peer, sizes.seconds, sizes.clients))
            if executor is not None:
                runs["executor"].append(load(executor, plan.chatql, sizes.seconds,
                                             sizes.clients))
        a, b = best(runs["chatql"]), best(runs["peer"])
        title = plan.name + (f" ({plan.note})" if plan.note else "")
        print(f"  {title}: same rows: {same}")
        print(f"    chatql       {a.rps:8,.0f} req/s  p50 {a.p50:6.2f} ms  p99 {a.p99:6.2f} ms")
        print(f"    PostGraphile {b.rps:8,.0f} req/s  p50 {b.p50:6.2f} ms  p99 {b.p99:6.2f} ms")
        print(f"    -> chatql / PostGraphile throughput = {a.rps / b.rps:.2f}  "
              f"(p50 {a.p50 / b.p50:.2f}x, p99 {a.p99 / b.p99:.2f}x)")
        if executor is not None:
            c = best(runs["executor"])
            print(f"    chatql, general executor only {c.rps:8,.0f} req/s  p50 {c.p50:6.2f} ms"
                  f"  p99 {c.p99:6.2f} ms  -> compiled / executor = {a.rps / c.rps:.2f}")
    return all_same


async def run(base_url: str, quick: bool, rounds: int | None, seconds: float | None,
              executor: bool = False) -> int:
    reason = ensure_installed()
    if reason:
        print(f"peers: skipped ({reason})")
        return 0
    base_url = base_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    name = f"chatql_peers_{uuid.uuid4().hex[:10]}"
    try:
        await execute_on_server(base_url, f'CREATE DATABASE "{name}"')
    except Exception as error:
        print(f"peers: skipped (Postgres at {base_url} unreachable: {error})")
        return 0
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    sizes = Sizes(
        messages=2_000 if quick else 200_000, chats=500 if quick else 100_000,
        repeats=1, seconds=seconds or (1.0 if quick else 5.0), clients=8,
    )
    servers: list[Server] = []
    try:
        await migrate_url(url)
        start = time.perf_counter()
        await seed_postgres(url, sizes)
        print(f"peers: seeded {sizes.messages:,} messages in one chat + {sizes.chats:,} chats "
              f"in {time.perf_counter() - start:.1f} s; {sizes.clients} closed-loop clients, "
              f"{sizes.seconds:g} s per round, best of {rounds or (1 if quick else 3)} "
              f"alternating rounds")
        servers.append(await start_chatql(url))
        servers.append(await start_postgraphile(url))
        if executor:
            servers.append(await start_chatql(url, compiled=False))
        same = await measure(servers[0], servers[1], sizes, rounds or (1 if quick else 3),
                             servers[2] if executor else None)
        print(f"peers: every answer carried the same rows: {same}")
        return 0 if same else 1
    finally:
        for server in servers:
            stop(server)
        await execute_on_server(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CHATQL_TEST_POSTGRES_URL", DEFAULT_PG_URL), help="server to create the database on")
    parser.add_argument("--rounds", type=int, help="alternating rounds per read")
    parser.add_argument("--seconds", type=float, help="seconds of load per round")
    parser.add_argument("--executor", action="store_true",
                        help="also measure chatql with compiled reads turned off")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.postgres_url, args.quick, args.rounds, args.seconds,
                           args.executor))
