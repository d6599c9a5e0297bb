"""The ecosystem's reply streams beside chatql's own: the same agent reply read through
``POST /ai/chat`` (the AI SDK's UI message chunks over SSE), ``POST /ag-ui`` (AG-UI
events over SSE) and ``chatStream`` over SSE (the graphql-sse protocol).

    python -m bench.ui_stream [--quick] [--tokens N] [--paced N]

One chatql server (a real uvicorn process on SQLite with the in-process broker, as
``bench.streams`` runs it). For each transport, a reader opens its request first — the
person's ``POST /ai/chat`` (which stores the question), or a ``chatStream`` subscription —
then a test agent answers over ``/graphql`` with ``startStream`` (under the question),
``pushChunks`` and ``endStream``. Both transports get the same reply, chunk for chunk.

- Throughput: a reply of ``--tokens`` text deltas pushed back to back in batches of 100;
  chunks per second from the first push to the reader holding the last token. Printed for
  every transport, and the ratios ``/ai/chat ÷ chatStream`` and ``/ag-ui ÷ chatStream``
  (goal ≥ 0.9 each: translating chatql's chunks to the protocol's events costs the
  reader little).
- Latency: a reply of ``--paced`` text deltas, one ``pushChunks`` each, 5 ms apart; for
  every token the time from just before its push to the reader parsing the SSE event that
  carries it (p50 and p99, every transport).

Rounds alternate the transports; without ``--quick`` each figure is the best of three.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from bench.streams import percentile, start_server, stop_server

__all__ = ["main"]

AGENT = {"X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent"}
PERSON = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = "mutation($input: StartStreamInput!) { startStream(input: $input) { id } }"
PUSH = ("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id, "
        "chunks: $chunks) { lastSeq } }")
END = "mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) { stream { id } } }"
SUBSCRIBE = """subscription($chat: ID!) { chatStream(chatId: $chat) {
  seq type messageId props delta snapshot } }"""
TOKEN = re.compile(r"w(\d+) ")
BATCH = 100
PACE = 0.005


@dataclass
class Figures:
    rate: float  # tokens per second
    p50: float
    p99: float


class Agent:
    """The test agent: answers a chat over ``/graphql``, stamping each token's push."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def gql(self, query: str, variables: dict[str, Any]) -> Any:
        response = await self.http.post("/graphql", content=orjson.dumps(
            {"query": query, "variables": variables}),
            headers={"content-type": "application/json"})
        body = orjson.loads(response.content)
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]

    async def answer(self, chat: str, parent: str | None, tokens: int, per_push: int,
                     pace: float, pushed: dict[int, float]) -> None:
        started = await self.gql(START, {"input": {
            "chatId": chat, "assistantId": "bot", "parentId": parent,
            "requestId": f"r-{uuid.uuid4().hex[:8]}"}})
        sid = started["startStream"]["id"]
        begin = time.perf_counter()
        for first in range(0, tokens, per_push):
            due = begin + (first // per_push) * pace
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            batch = range(first, min(tokens, first + per_push))
            now = time.perf_counter()
            for i in batch:
                pushed[i] = now
            await self.gql(PUSH, {"id": sid, "chunks": [
                {"chunkId": str(i), "messageId": "a", "type": "text", "delta": True,
                 "props": {"content": f"w{i} "}} for i in batch]})
        await self.gql(END, {"id": sid})


class Reader:
    """Stamps the arrival of every token in the text of a transport's events."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.arrived: dict[int, float] = {}
        self.done = asyncio.Event()

    def saw(self, text: str, now: float) -> None:
        for found in TOKEN.finditer(text):
            self.arrived.setdefault(int(found.group(1)), now)
        if len(self.arrived) >= self.tokens:
            self.done.set()


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data`` of each SSE event (comments skipped)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


#: One transport: ``(http, agent, tokens, per_push, pace) -> (reader, pushed)``.
Transport = Callable[[httpx.AsyncClient, Agent, int, int, float],
                     Awaitable[tuple[Reader, dict[int, float]]]]


async def via_ai_chat(http: httpx.AsyncClient, agent: Agent, tokens: int, per_push: int,
                      pace: float) -> tuple[Reader, dict[int, float]]:
    """The person's ``POST /ai/chat``; the agent answers under the stored question."""
    chat, question = f"ui-{uuid.uuid4().hex[:10]}", f"q-{uuid.uuid4().hex[:8]}"
    body = {"id": chat, "trigger": "submit-message", "messageId": None,
            "messages": [{"id": question, "role": "user",
                          "parts": [{"type": "text", "text": "Go"}]}]}
    reader = Reader(tokens)
    pushed: dict[int, float] = {}
    async with http.stream("POST", "/ai/chat", content=json.dumps(body), headers={
            "content-type": "application/json", **PERSON}) as response:
        assert response.status_code == 200, await response.aread()
        # The headers come once the question is stored and the reply subscribed to.
        agent_task = asyncio.create_task(
            agent.answer(chat, question, tokens, per_push, pace, pushed))
        async for data in sse_data(response):
            now = time.perf_counter()
            if data == "[DONE]":
                break
            chunk = orjson.loads(data)
            if chunk["type"] == "text-delta":
                reader.saw(chunk["delta"], now)
        await agent_task
    return reader, pushed


async def via_ag_ui(http: httpx.AsyncClient, agent: Agent, tokens: int, per_push: int,
                    pace: float) -> tuple[Reader, dict[int, float]]:
    """An AG-UI client's ``POST /ag-ui``; the agent answers under the stored message."""
    chat, question = f"ag-{uuid.uuid4().hex[:10]}", f"q-{uuid.uuid4().hex[:8]}"
    body = {"threadId": chat, "runId": f"run-{question}", "forwardedProps":
            {"assistantId": "bot"}, "messages": [{"id": question, "role": "user",
                                                  "content": "Go"}]}
    reader = Reader(tokens)
    pushed: dict[int, float] = {}
    async with http.stream("POST", "/ag-ui", content=json.dumps(body), headers={
            "content-type": "application/json", "accept": "text/event-stream",
            **PERSON}) as response:
        assert response.status_code == 200, await response.aread()
        agent_task = asyncio.create_task(
            agent.answer(chat, question, tokens, per_push, pace, pushed))
        async for data in sse_data(response):
            now = time.perf_counter()
            event = orjson.loads(data)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                reader.saw(event["delta"], now)
            elif event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                break
        await agent_task
    return reader, pushed


async def via_chat_stream(http: httpx.AsyncClient, agent: Agent, tokens: int,
                          per_push: int, pace: float) -> tuple[Reader, dict[int, float]]:
    """A ``chatStream`` subscription over graphql-sse; the agent answers the chat."""
    chat = f"sse-{uuid.uuid4().hex[:10]}"
    await agent.gql(CREATE, {"id": chat})
    reader = Reader(tokens)
    pushed: dict[int, float] = {}
    async with http.stream("POST", "/graphql", content=orjson.dumps(
            {"query": SUBSCRIBE, "variables": {"chat": chat}}), headers={
            "content-type": "application/json", "accept": "text/event-stream",
            **PERSON}) as response:
        assert response.status_code == 200, await response.aread()
        # graphql-sse does not acknowledge a subscription: give it time to register, so
        # every token arrives live rather than in a late-join snapshot.
        await asyncio.sleep(0.1)
        agent_task = asyncio.create_task(agent.answer(chat, None, tokens, per_push, pace,
                                                      pushed))
        async for data in sse_data(response):
            now = time.perf_counter()
            payload = orjson.loads(data) if data else {}
            chunk = (payload.get("data") or {}).get("chatStream")
            if chunk is None:
                continue
            if chunk["type"] == "text":
                reader.saw((chunk["props"] or {}).get("content") or "", now)
            elif chunk["type"] == "event" and (chunk["props"] or {}).get(
                    "event") == "stream_end":
                break
        await agent_task
    return reader, pushed


async def measure(http: httpx.AsyncClient, agent: Agent, transport: Transport, tokens: int,
                  per_push: int, pace: float) -> Figures:
    reader, pushed = await transport(http, agent, tokens, per_push, pace)
    missing = tokens - len(reader.arrived)
    assert missing == 0, f"{missing} tokens never arrived"
    elapsed = max(reader.arrived.values()) - min(pushed.values())
    latencies = [(reader.arrived[i] - pushed[i]) * 1000 for i in range(tokens)]
    return Figures(tokens / elapsed, percentile(latencies, 0.5),
                   percentile(latencies, 0.99))


def best(a: Figures | None, b: Figures) -> Figures:
    if a is None:
        return b
    return Figures(max(a.rate, b.rate), min(a.p50, b.p50), min(a.p99, b.p99))


TRANSPORTS: dict[str, Transport] = {"/ai/chat": via_ai_chat, "/ag-ui": via_ag_ui,
                                    "chatStream": via_chat_stream}


async def run(quick: bool, tokens: int, paced: int) -> None:
    rounds = 1 if quick else 3
    tmp = tempfile.mkdtemp(prefix="chatql-bench-")
    env = {"CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/bench.db",
           "CHATQL_SECRET": "bench-secret-0123456789", "CHATQL_BROKER_URL": "memory://"}
    server = await start_server("chatql", env)
    http = httpx.AsyncClient(base_url=f"http://{server.address}", timeout=60)
    agent = Agent(httpx.AsyncClient(base_url=f"http://{server.address}", headers=AGENT,
                                    timeout=60))
    try:
        for transport in TRANSPORTS.values():  # warm every path up
            await measure(http, agent, transport, 200, BATCH, 0.0)
        burst: dict[str, Figures | None] = dict.fromkeys(TRANSPORTS)
        slow: dict[str, Figures | None] = dict.fromkeys(TRANSPORTS)
        for _ in range(rounds):
            for name, transport in TRANSPORTS.items():
                burst[name] = best(burst[name], await measure(
                    http, agent, transport, tokens, BATCH, 0.0))
            for name, transport in TRANSPORTS.items():
                slow[name] = best(slow[name], await measure(
                    http, agent, transport, paced, 1, PACE))
        print(f"ui_stream: SQLite, memory broker; best of {rounds} round(s)")
        print(f"{'transport':>10} {'chunks/s':>10}   text delta push -> read ms p50/p99 "
              f"({paced} pushes {PACE * 1000:g} ms apart)")
        for name in TRANSPORTS:
            fast, paced_ = burst[name], slow[name]
            assert fast is not None and paced_ is not None
            print(f"{name:>10} {fast.rate:>10,.0f}   {paced_.p50:.2f}/{paced_.p99:.2f}")
        gql = burst["chatStream"]
        assert gql is not None
        for name in ("/ai/chat", "/ag-ui"):
            figures = burst[name]
            assert figures is not None
            print(f"throughput of a {tokens:,}-delta reply, {name} / chatStream over SSE "
                  f"= {figures.rate / gql.rate:.2f} (goal >= 0.9)")
    finally:
        await http.aclose()
        await agent.http.aclose()
        stop_server(server)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ui_stream", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round, small replies: "
                        "a few seconds")
    parser.add_argument("--tokens", type=int, help="text deltas in the throughput reply "
                        "(default 20,000; 3,000 with --quick)")
    parser.add_argument("--paced", type=int, help="text deltas in the latency reply "
                        "(default 1,000; 200 with --quick)")
    args = parser.parse_args(argv)
    tokens = args.tokens or (3000 if args.quick else 20000)
    paced = args.paced or (200 if args.quick else 1000)
    job = run(args.quick, tokens, paced)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is not built for every platform
        asyncio.run(job)
    else:
        uvloop.run(job)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
