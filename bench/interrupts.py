"""A person in the loop: a decision resumes a reply as fast as a question starts one,
and the inbox pages as fast as the chat list.

    python -m bench.interrupts [--quick] [--backend sqlite|postgres|both] [--postgres-url URL]

For each backend a ``chatql serve`` process on a fresh database (a temporary SQLite
file; a new Postgres database, dropped afterwards), and two measurements:

- **Resuming.** An agent worker — the Python kit's ``serve()`` agent loop, in this
  process — answers the chats of one assistant. A person (plain HTTP) asks in a new
  chat, watching it on a ``chatStream`` WebSocket subscription opened first. Rounds
  alternate: an ordinary question, answered with text — timed from the append's HTTP
  response to the first chunk of the reply on the subscription; and a question the
  worker answers with a tool call needing approval (the stream ends AWAITING_INPUT),
  which the person approves with ``resolveInterrupt`` — timed from the decision's HTTP
  response to the first chunk of the resumed reply (the loop sees the chat await a
  reply again, claims ``<request id>.resume.1`` and calls the handler with the
  decision). Printed: the median of each and ``decision / question`` (goal <= 1.2).
- **The inbox.** 10,000 pending interrupts (``--quick``: 300) in 200 of the person's
  chats, written in bulk through the store's tables (then ``ANALYZE``), then, over one
  keep-alive connection each, in alternating bursts (the best burst of each counts: noise on a
  shared machine only ever slows a run down): the inbox's first page
  ``interrupts(first: 20)`` and the chat list's ``chats(first: 20)`` for the same
  person. Printed: requests/s of each and ``inbox / chat list``, the time an inbox page
  takes divided by a chat-list page's (goal <= 1.2). Both pages, in their default
  shapes, are compiled reads (answered without field-by-field execution); the same
  chat-list page forced through the general executor (a directive does that) is timed
  too, for context: ``inbox / chat list (executor)``, no goal.

A table at the end gives each figure, its goal and whether it was met.
``--quick`` makes few rounds and short bursts, so the run takes seconds (the test suite
runs it).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import websockets
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.types import Message
from sqlalchemy import insert, text

from bench.common import backends_parser, chatql_serve, fresh_postgres
from chatql.store.db.database import Database, execute_on_server
from chatql.store.db.tables import interrupts

ROOT = Path(__file__).resolve().parents[1]
ASSISTANT = "clerk"
TENANT = "bench"
PERSON = {"X-User-Id": "person", "X-Tenant-Id": TENANT}
AGENT = {"X-User-Id": "worker", "X-Tenant-Id": TENANT, "X-Roles": "agent"}
GOAL = 1.2
#: The word in a question that makes the worker ask for approval first.
SENSITIVE = "send"

CREATE = """mutation($id: ID!, $title: String!) { createChat(input: {id: $id,
  assistantId: "clerk", title: $title}) { id } }"""
ASK = """mutation($chat: ID!, $text: String!) { appendMessages(chatId: $chat,
  appendId: "ask", messages: [{role: USER, type: "text", props: {content: $text}}]) {
  messageIds } }"""
PENDING = """query($chat: ID!) { chat(id: $chat) { interrupts(state: PENDING) { id } } }"""
RESOLVE = """mutation($id: ID!) { resolveInterrupt(id: $id, approved: true) { state } }"""
SUBSCRIBE = """subscription($chat: ID!) { chatStream(chatId: $chat) {
  streamId type snapshot } }"""
INBOX = """query { interrupts(first: 20) { edges { cursor node { id chatId kind toolName
  arguments prompt requestedAt } } pageInfo { hasNextPage endCursor } } }"""
CHAT_LIST = """query { chats(first: 20) { edges { cursor node { id title assistantId
  updatedAt } } pageInfo { hasNextPage endCursor } } }"""
#: The same page through the general executor: a directive keeps a document off the
#: compiled reads, for context.
CHAT_LIST_EXECUTOR = CHAT_LIST.replace("edges {", "edges @include(if: true) {")


@contextmanager
def server(database_url: str, folder: Path) -> Iterator[str]:
    """``chatql serve`` on a free port over ``database_url``; yields its base URL."""
    with chatql_serve(database_url, folder) as (base, _):
        yield base


async def gql(http: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    answer = (await http.post("/graphql", json={"query": query, "variables": variables or {}},
                              headers=headers or PERSON)).json()
    if answer.get("errors"):
        raise RuntimeError(f"{query.split('(')[0]}: {answer['errors']}")
    data: dict[str, Any] = answer["data"]
    return data


# ---- the worker --------------------------------------------------------------------------


async def handler(context: list[Message], s: StreamWriter,
                  resume: list[dict[str, Any]] | None = None) -> None:
    """Asks for approval before sending; otherwise (or once decided) answers in text."""
    question = next((m for m in reversed(context) if m.get("role") == "USER"), None)
    content = str((question or {}).get("props", {}).get("content", ""))
    if resume is None and SENSITIVE in content:
        await s.tool_call("c1", "send_email", '{"to": "board@acme.test"}',
                          needs_approval=True, reason="it leaves the company")
        return
    await s.text("Sent." if resume else "Here is the answer.")


@asynccontextmanager
async def worker(base: str) -> AsyncIterator[None]:
    async with ChatqlClient(f"{base}/graphql", headers=AGENT, retry_backoff=0.01) as agent:
        task = asyncio.create_task(agent.serve(ASSISTANT, handler))
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


# ---- the person's view: chatStream over a WebSocket --------------------------------------


class Watch:
    """A ``chatStream`` subscription: when each stream's first chunk arrived."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.arrived = asyncio.Event()


@asynccontextmanager
async def watching(base: str, chat_id: str) -> AsyncIterator[Watch]:
    watch = Watch()
    url = base.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                  compression=None) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": PERSON}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != "connection_ack":
            pass
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
            "query": SUBSCRIBE, "variables": {"chat": chat_id}}}))

        async def read() -> None:
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                if message["type"] != "next":
                    continue
                chunk = message["payload"]["data"]["chatStream"]
                if not chunk["snapshot"]:
                    watch.first.setdefault(chunk["streamId"], time.perf_counter())
                    watch.arrived.set()

        reader = asyncio.create_task(read())
        # The subscription is live once the server has taken it; a ping round trip
        # after the subscribe message is enough on one connection.
        await asyncio.sleep(0.05)
        try:
            yield watch
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


async def first_chunk(watch: Watch, since: float, known: set[str],
                      timeout: float = 30.0) -> tuple[float, str]:
    """Milliseconds from ``since`` to the first chunk of a new stream, and its id."""
    deadline = time.perf_counter() + timeout
    while True:
        for stream, at in watch.first.items():
            if stream not in known:
                return (at - since) * 1000.0, stream
        if time.perf_counter() > deadline:
            raise RuntimeError("no reply arrived")
        watch.arrived.clear()
        with suppress(TimeoutError):
            await asyncio.wait_for(watch.arrived.wait(),
                                   max(0.01, deadline - time.perf_counter()))


_chats = iter(range(1, 1_000_000))


async def question_round(http: httpx.AsyncClient, base: str) -> float:
    """A question's append -> the first chunk of its reply, in milliseconds."""
    chat = f"q{next(_chats)}"
    await gql(http, CREATE, {"id": chat, "title": chat})
    async with watching(base, chat) as watch:
        await gql(http, ASK, {"chat": chat, "text": "What is on the agenda?"})
        asked = time.perf_counter()
        took, _ = await first_chunk(watch, asked, set())
    return took


async def decision_round(http: httpx.AsyncClient, base: str) -> float:
    """A decision's response -> the first chunk of the resumed reply, in milliseconds."""
    chat = f"d{next(_chats)}"
    await gql(http, CREATE, {"id": chat, "title": chat})
    async with watching(base, chat) as watch:
        await gql(http, ASK, {"chat": chat, "text": "Please send the report to the board."})
        _, asking = await first_chunk(watch, time.perf_counter(), set())
        pending: list[dict[str, str]] = []
        deadline = time.perf_counter() + 30
        while not pending:  # the asking stream ends AWAITING_INPUT
            pending = (await gql(http, PENDING, {"chat": chat}))["chat"]["interrupts"]
            if not pending:
                if time.perf_counter() > deadline:
                    raise RuntimeError("the worker never asked")
                await asyncio.sleep(0.01)
        await gql(http, RESOLVE, {"id": pending[0]["id"]})
        decided = time.perf_counter()
        took, _ = await first_chunk(watch, decided, {asking})
    return took


async def resuming(base: str, rounds: int) -> tuple[float, float]:
    """Median milliseconds of (question -> reply, decision -> resumed reply)."""
    questions: list[float] = []
    decisions: list[float] = []
    async with worker(base), httpx.AsyncClient(base_url=base, timeout=60) as http:
        await question_round(http, base)  # warm up the worker, the server and the caches
        await decision_round(http, base)
        for _ in range(rounds):
            questions.append(await question_round(http, base))
            decisions.append(await decision_round(http, base))
    return statistics.median(questions), statistics.median(decisions)


# ---- the inbox ---------------------------------------------------------------------------


async def seed_inbox(base: str, database_url: str, total: int, chats: int = 200) -> None:
    """``chats`` chats of the person, and ``total`` pending interrupts among them,
    written in bulk straight into the store's tables."""
    ids = [f"inbox{n}" for n in range(chats)]
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        gate = asyncio.Semaphore(8)

        async def create(chat_id: str) -> None:
            async with gate:
                await gql(http, CREATE, {"id": chat_id, "title": chat_id})

        await asyncio.gather(*(create(chat_id) for chat_id in ids))
    start = datetime.now(UTC) - timedelta(days=1)
    rows = []
    for n in range(total):
        chat_id = ids[n % chats]
        question = n % 3 == 0
        rows.append({
            "id": f"seed-{n:06d}", "chat_id": chat_id, "tenant_id": TENANT,
            "message_id": f"seed-{n:06d}", "sequence": n + 1, "stream_id": f"s-{n}",
            "request_id": f"r-{n}", "assistant_id": ASSISTANT,
            "kind": "INPUT" if question else "TOOL_APPROVAL", "state": "PENDING",
            "tool_call_id": None if question else f"call-{n}",
            "tool_name": None if question else "send_email",
            "arguments": None if question else {"to": f"person{n}@acme.test"},
            "prompt": f"Which city for trip {n}?" if question else None,
            "response_schema": {"type": "string"} if question else None,
            "reason": None, "requested_at": start + timedelta(seconds=n),
        })
    db = Database(database_url)
    try:
        async with db.write() as conn:
            for at in range(0, total, 1_000):
                await conn.execute(insert(interrupts), rows[at:at + 1_000])
            await conn.execute(text("ANALYZE"))  # as autovacuum would after a bulk load
    finally:
        await db.dispose()


async def rate(base: str, query: str, requests: int) -> float:
    """Requests per second over one keep-alive connection, one request at a time."""
    async with httpx.AsyncClient(base_url=base, headers=PERSON, timeout=60) as http:
        for _ in range(3):  # warm the connection and the caches
            await gql(http, query)
        began = time.perf_counter()
        for _ in range(requests):
            await gql(http, query)
        return requests / (time.perf_counter() - began)


async def check_inbox(base: str, total: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        page = (await gql(http, INBOX))["interrupts"]
    if len(page["edges"]) != min(20, total) or not page["pageInfo"]["hasNextPage"]:
        raise RuntimeError(f"the inbox does not show the seeded interrupts: {page}")


# ---- a run -------------------------------------------------------------------------------


class Result:
    def __init__(self, backend: str, total: int, question: float, decision: float,
                 inbox: float, chat_list: float, executor: float) -> None:
        self.backend, self.total = backend, total
        self.question, self.decision = question, decision
        self.inbox, self.chat_list, self.executor = inbox, chat_list, executor

    @property
    def resume_ratio(self) -> float:
        return self.decision / self.question

    @property
    def inbox_ratio(self) -> float:
        return self.chat_list / self.inbox

    @property
    def chat_list_executor_ratio(self) -> float:
        return self.executor / self.inbox

    def report(self) -> str:
        return (f"{self.backend}: question -> first chunk {self.question:.1f} ms, decision ->"
                f" first chunk of the resumed reply {self.decision:.1f} ms (medians)"
                f"  -> decision / question = {self.resume_ratio:.2f}  (goal <= {GOAL})\n"
                f"{self.backend}: inbox with {self.total:,} pending {self.inbox:,.0f} req/s,"
                f" chat list {self.chat_list:,.0f} req/s"
                f"  -> inbox / chat list = {self.inbox_ratio:.2f}  (goal <= {GOAL})\n"
                f"{self.backend}: chat list through the executor {self.executor:,.0f} req/s"
                f"  -> inbox / chat list (executor) = {self.chat_list_executor_ratio:.2f}"
                "  (no goal)")

    def rows(self) -> list[tuple[str, float, float | None]]:
        return [(f"{self.backend} decision / question", self.resume_ratio, GOAL),
                (f"{self.backend} inbox ({self.total:,}) / chat list", self.inbox_ratio,
                 GOAL),
                (f"{self.backend} inbox / chat list (executor)",
                 self.chat_list_executor_ratio, None)]


async def measure(backend: str, database_url: str, folder: Path, quick: bool) -> Result:
    rounds, total, requests, bursts = (3, 300, 30, 3) if quick else (21, 10_000, 300, 8)
    with server(database_url, folder) as base:
        question, decision = await resuming(base, rounds)
        await seed_inbox(base, database_url, total, chats=30 if quick else 200)
        await check_inbox(base, total)
        best = {"inbox": 0.0, "chats": 0.0, "executor": 0.0}
        for _ in range(bursts):
            best["inbox"] = max(best["inbox"], await rate(base, INBOX, requests))
            best["chats"] = max(best["chats"], await rate(base, CHAT_LIST, requests))
            best["executor"] = max(best["executor"],
                                   await rate(base, CHAT_LIST_EXECUTOR, requests))
    return Result(backend, total, question, decision, best["inbox"], best["chats"],
                  best["executor"])


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


def table(results: list[Result]) -> str:
    lines = [f"{'figure':<40} {'value':>7}  {'goal':>6}  met",
             f"{'-' * 40} {'-' * 7}  {'-' * 6}  ---"]
    for result in results:
        for name, value, goal in result.rows():
            if goal is None:
                lines.append(f"{name:<40} {value:>7.2f}  {'-':>6}  -")
            else:
                lines.append(f"{name:<40} {value:>7.2f}  {'<= ' + str(goal):>6}  "
                             f"{'yes' if value <= goal else 'no'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = backends_parser("python -m bench.interrupts", __doc__)
    parser.add_argument("--quick", action="store_true", help="few rounds: a few seconds")
    args = parser.parse_args(argv)

    async def run() -> None:
        results: list[Result] = []
        if args.backend in ("sqlite", "both"):
            results.append(await run_sqlite(args.quick))
            print(results[-1].report(), flush=True)
        if args.backend in ("postgres", "both"):
            result = await run_postgres(args.postgres_url, args.quick)
            if isinstance(result, str):
                print(result, flush=True)
            else:
                results.append(result)
                print(result.report(), flush=True)
        print(table(results), flush=True)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
