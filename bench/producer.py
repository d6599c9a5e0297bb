"""Producer-kit benchmark: a 1,000-token reply fed token by token through the stream writer,
beside the same tokens pushed by a hand-written, hand-batched ``pushChunks`` loop.

    python -m bench.producer [--quick] [--tokens N]

One chatql server (a real uvicorn process on SQLite, as ``bench.streams`` runs it) and one
``chatStream`` subscriber over a WebSocket. Each token is stamped when the agent hands it
over; the subscriber stamps it when the frame carrying it arrives. Two paces:

- ``burst``: every token at once, as fast as the agent can call ``s.text`` (a model
  replay, a fast local model);
- ``paced``: one token per millisecond (a fast hosted model).

For each pace and each path it prints the requests sent (start + pushes + end), the p50
and p99 token → subscriber latency (from when the model made the token: a burst's tokens
all at the start, a paced one's at its place in the schedule) and the ratio of the kit's
p99 to the hand-batched path's. The hand-batched path collects tokens and pushes them
when 256 are waiting or 20 ms passed since the first (the writer's defaults), awaiting
each push inline.

Then the kit's CPU per token: the process CPU time of feeding the tokens (writer calls,
JSON, HTTP) with no subscriber in the process, beside the hand-batched loop's.

Without ``--quick`` each figure is the best of three alternating rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import websockets
from chatql_client import ChatqlClient

from bench.streams import percentile, start_server, stop_server

__all__ = ["main"]

#: One way of producing a reply: ``(chat, tokens, pace, handed) -> requests sent``.
Path = Callable[[str, int, float, dict[int, float]], Awaitable[int]]

HEADERS = {"X-Roles": "agent"}
SUBSCRIBE = "subscription($chat: ID!) { chatStream(chatId: $chat) { type props } }"
TOKEN = re.compile(r"w(\d+) ")
PACES = {"burst": 0.0, "paced": 0.001}


@dataclass
class Run:
    requests: int
    p50: float
    p99: float
    cpu: float


class Subscriber:
    """Stamps the arrival of every token of the chat's stream."""

    def __init__(self, ws: Any, tokens: int) -> None:
        self.ws = ws
        self.arrived: dict[int, float] = {}
        self.tokens = tokens
        self.done = asyncio.Event()
        self.task = asyncio.create_task(self.read())

    async def read(self) -> None:
        async for frame in self.ws:
            now = time.perf_counter()
            message = orjson.loads(frame)
            if message.get("type") != "next":
                continue
            chunk = message["payload"]["data"]["chatStream"]
            if chunk["type"] == "event":
                continue
            content = (chunk["props"] or {}).get("content") or ""
            for found in TOKEN.finditer(content):
                self.arrived.setdefault(int(found.group(1)), now)
            if len(self.arrived) >= self.tokens:
                self.done.set()


async def subscribe(address: str, chat: str, tokens: int) -> Subscriber:
    ws = await websockets.connect(f"ws://{address}/graphql",
                                  subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                  compression=None, max_queue=None)
    await ws.send(orjson.dumps({"type": "connection_init", "payload": HEADERS}).decode())
    await ws.recv()
    await ws.send(orjson.dumps({"id": "1", "type": "subscribe", "payload": {
        "query": SUBSCRIBE, "variables": {"chat": chat}}}).decode())
    return Subscriber(ws, tokens)


async def feed(emit: Callable[[str], Awaitable[None]], tokens: int, pace: float,
               handed: dict[int, float]) -> None:
    """The agent: hands token after token to ``emit`` on the pace's schedule. A token is
    stamped when the model made it (its place in the schedule), so a producer that blocks
    on its pushes pays for the tokens that wait meanwhile."""
    start = time.perf_counter()
    for i in range(tokens):
        due = start + i * pace
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        handed[i] = due
        await emit(f"w{i} ")


def kit_path(client: ChatqlClient) -> Path:
    """The kit: ``s.text(token)`` for every token (the client is made beforehand)."""
    async def produce(chat: str, tokens: int, pace: float, handed: dict[int, float]) -> int:
        sent = client.requests_sent
        async with client.stream(chat) as s:
            await feed(s.text, tokens, pace, handed)
        return client.requests_sent - sent

    return produce


def raw_path(http: httpx.AsyncClient, url: str) -> Path:
    """What a producer writes by hand: startStream, pushChunks of 256 or every 20 ms,
    endStream."""
    async def produce(chat: str, tokens: int, pace: float, handed: dict[int, float]) -> int:
        requests = 0

        async def gql(query: str, variables: dict[str, Any]) -> Any:
            nonlocal requests
            requests += 1
            response = await http.post(url, content=orjson.dumps(
                {"query": query, "variables": variables}),
                headers={"content-type": "application/json"})
            body = orjson.loads(response.content)
            if body.get("errors"):
                raise RuntimeError(body["errors"])
            return body["data"]

        stream = (await gql("mutation($c: ID!) { startStream(input: {chatId: $c}) { id } }",
                            {"c": chat}))["startStream"]["id"]
        batch: list[dict[str, Any]] = []
        first = 0.0
        counter = 0

        async def push() -> None:
            await gql("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id,"
                      " chunks: $chunks) { lastSeq } }", {"id": stream, "chunks": batch})
            batch.clear()

        async def emit(token: str) -> None:
            nonlocal first, counter
            if not batch:
                first = time.perf_counter()
            counter += 1
            batch.append({"chunkId": str(counter), "messageId": "m", "type": "text",
                          "delta": True, "props": {"content": token}})
            if len(batch) >= 256 or time.perf_counter() - first >= 0.02:
                await push()

        await feed(emit, tokens, pace, handed)
        if batch:
            await push()
        await gql("mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) "
                  "{ stream { id } } }", {"id": stream})
        return requests

    return produce


async def new_chat(url: str) -> str:
    chat = f"bench-{uuid.uuid4().hex[:10]}"
    async with httpx.AsyncClient(headers=HEADERS) as http:
        response = await http.post(url, json={"query": "mutation($id: ID!) { createChat("
                                              "input: {assistantId: \"b\", id: $id}) { id } }",
                                              "variables": {"id": chat}})
        assert "errors" not in response.json(), response.text
    return chat


async def measure(address: str, path: Path, tokens: int, pace: float) -> Run:
    url = f"http://{address}/graphql"
    chat = await new_chat(url)
    subscriber = await subscribe(address, chat, tokens)
    handed: dict[int, float] = {}
    try:
        # graphql-transport-ws does not acknowledge a subscribe: give it time to register,
        # so every token arrives live rather than in a late-join snapshot.
        await asyncio.sleep(0.2)
        cpu = time.process_time()
        requests = await path(chat, tokens, pace, handed)
        cpu = time.process_time() - cpu
        await asyncio.wait_for(subscriber.done.wait(), 60)
    finally:
        await subscriber.ws.close()
        subscriber.task.cancel()
    latencies = [(subscriber.arrived[i] - handed[i]) * 1000 for i in range(tokens)]
    return Run(requests, percentile(latencies, 0.5), percentile(latencies, 0.99),
               cpu / tokens)


async def cpu_only(address: str, path: Path, tokens: int) -> float:
    """Process CPU seconds per token of feeding a burst, with no subscriber in-process."""
    url = f"http://{address}/graphql"
    chat = await new_chat(url)
    began = time.process_time()
    await path(chat, tokens, 0.0, {})
    return (time.process_time() - began) / tokens


def best(a: Run | None, b: Run) -> Run:
    if a is None:
        return b
    return Run(min(a.requests, b.requests), min(a.p50, b.p50), min(a.p99, b.p99),
               min(a.cpu, b.cpu))


async def run(quick: bool, tokens: int) -> None:
    rounds = 1 if quick else 3
    tmp = tempfile.mkdtemp(prefix="chatql-bench-")
    env = {"CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/bench.db",
           "CHATQL_SECRET": "bench-secret-0123456789", "CHATQL_WS_KEEPALIVE": "0"}
    server = await start_server("chatql", env)
    url = f"http://{server.address}/graphql"
    # Both producers' HTTP clients are made (and warmed) before anything is timed.
    client = ChatqlClient(url, headers=HEADERS)
    http = httpx.AsyncClient(headers=HEADERS, timeout=60)
    kit_path_ = kit_path(client)
    raw_path_ = raw_path(http, url)
    try:
        await kit_path_(await new_chat(url), 10, 0.0, {})
        await raw_path_(await new_chat(url), 10, 0.0, {})
        print(f"producer: a {tokens:,}-token reply fed token by token; one subscriber; "
              f"best of {rounds} round(s)")
        print(f"{'pace':>6} {'kit requests':>13} {'hand requests':>14}   "
              f"latency ms p50/p99 kit | hand   p99 ratio")
        for name, pace in PACES.items():
            kit = hand = None
            for _ in range(rounds):
                kit = best(kit, await measure(server.address, kit_path_, tokens, pace))
                hand = best(hand, await measure(server.address, raw_path_, tokens, pace))
            assert kit is not None and hand is not None
            print(f"{name:>6} {kit.requests:>13} {hand.requests:>14}   "
                  f"{kit.p50:.2f}/{kit.p99:.2f} | {hand.p50:.2f}/{hand.p99:.2f}   "
                  f"{kit.p99 / hand.p99:.2f}")
        kit_cpu = hand_cpu = float("inf")
        for _ in range(rounds):
            kit_cpu = min(kit_cpu, await cpu_only(server.address, kit_path_, tokens))
            hand_cpu = min(hand_cpu, await cpu_only(server.address, raw_path_, tokens))
        print(f"kit CPU per token: {kit_cpu * 1e6:.1f} µs; hand-batched loop "
              f"{hand_cpu * 1e6:.1f} µs; ratio {kit_cpu / hand_cpu:.2f}")
    finally:
        await client.aclose()
        await http.aclose()
        stop_server(server)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.producer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round: a few seconds")
    parser.add_argument("--tokens", type=int, default=1000, help="tokens in the reply")
    args = parser.parse_args(argv)
    job = run(args.quick, args.tokens)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is not built for every platform
        asyncio.run(job)
    else:
        uvloop.run(job)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
