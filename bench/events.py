"""Live chat list benchmark: ``chatEvents`` sidebars while appends run.

    python -m bench.events [--quick]

One chatql server (a real uvicorn process, SQLite, ``memory://`` broker) and, in this
process, 100 users with 10 open sidebars each (1,000 ``chatEvents`` subscriptions over
real WebSockets; ``--quick``: 10 users x 2). Prints:

- the appends' throughput (``appendMessages`` over HTTP from 8 concurrent writers into
  the users' chats) with every sidebar subscribed, divided by the same without any
  subscriber (the mean of a run before the sidebars open and one after they close, so
  load drifting on a shared machine cancels out; target >= 0.9);
- the p99 write -> event latency (from sending an append to its ``MESSAGES`` event at
  each of the writer's sidebars, appends paced at a steady rate) divided by the p99 of
  a ``chatStream`` chunk (from sending a one-chunk push to the chunk at a subscriber),
  the chunks pushed at the same pace in the same run, at the same time (target <= 2);
- the server's CPU time per append with the sidebars and without (Linux), which a
  loaded machine moves far less than it moves throughput;
- this process's own CPU per append with the sidebars and without: the writers and the
  sidebars' sockets share the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
from typing import Any

import httpx
import orjson
import websockets

from bench.common import cpu_seconds
from bench.streams import percentile, start_server, stop_server

__all__ = ["main"]

EVENTS = "subscription { chatEvents { type chatId } }"
STREAM = "subscription($chat: ID!) { chatStream(chatId: $chat) { type props } }"
CREATE = "mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"
APPEND = ("mutation($chat: ID!, $aid: String!) { appendMessages(chatId: $chat, appendId: $aid,"
          " messages: [{role: USER, type: \"text\", props: {content: \"hello\"}}]) "
          "{ lastSequence } }")
START = "mutation($chat: ID!) { startStream(input: {chatId: $chat}) { id } }"
PUSH = ("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id, "
        "chunks: $chunks) { lastSeq } }")
AGENT = {"X-User-Id": "producer", "X-Tenant-Id": "bench", "X-Roles": "agent"}


def user(index: int) -> dict[str, str]:
    return {"X-User-Id": f"u{index}", "X-Tenant-Id": "bench"}


class Client:
    """GraphQL over HTTP to the server."""

    def __init__(self, address: str, http: httpx.AsyncClient) -> None:
        self.url = f"http://{address}/graphql"
        self.http = http

    async def gql(self, query: str, variables: dict[str, Any], headers: dict[str, str]) -> Any:
        response = await self.http.post(self.url, headers=headers, content=orjson.dumps(
            {"query": query, "variables": variables}))
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]


class Socket:
    """One subscription over graphql-transport-ws; ``on_event`` sees every payload."""

    def __init__(self, ws: Any, on_event: Any) -> None:
        self.ws = ws
        self.on_event = on_event
        self.task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, address: str, headers: dict[str, str], query: str,
                   variables: dict[str, Any], on_event: Any) -> Socket:
        ws = await websockets.connect(f"ws://{address}/graphql",
                                      subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                      compression=None, max_queue=None)
        await ws.send(orjson.dumps({"type": "connection_init", "payload": headers}).decode())
        while orjson.loads(await ws.recv())["type"] != "connection_ack":
            pass
        await ws.send(orjson.dumps({"id": "1", "type": "subscribe", "payload": {
            "query": query, "variables": variables}}).decode())
        return cls(ws, on_event)

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = orjson.loads(raw)
                if message["type"] == "next":
                    self.on_event(message["payload"]["data"])
                elif message["type"] == "ping":
                    await self.ws.send('{"type":"pong"}')
        except websockets.ConnectionClosed:
            pass

    async def close(self) -> None:
        await self.ws.close()
        await self.task


def _own_cpu() -> float:
    """User + system CPU seconds of this process so far."""
    times = os.times()
    return times.user + times.system


async def append_throughput(client: Client, chats: list[tuple[int, str]], count: int,
                            label: str) -> float:
    """Appends per second from 8 concurrent writers."""
    serial = itertools.count()
    jobs = iter(range(count))

    async def writer() -> None:
        for _ in jobs:
            index, chat = chats[next(serial) % len(chats)]
            await client.gql(APPEND, {"chat": chat, "aid": f"{label}-{next(serial)}"},
                             user(index))

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(8)))
    return count / (time.perf_counter() - started)


async def run(quick: bool) -> None:
    users, per_user = (10, 2) if quick else (100, 10)
    appends = 200 if quick else 2_000
    paced, pace = (60, 0.02) if quick else (500, 0.02)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/bench.db",
               "CHATQL_SECRET": "bench-secret-0123456789", "CHATQL_WS_KEEPALIVE": "0"}
        server = await start_server("chatql", env)
        try:
            async with httpx.AsyncClient(timeout=60, headers={
                    "content-type": "application/json"}) as http:
                client = Client(server.address, http)
                chats = []
                for index in range(users):
                    data = await client.gql(CREATE, {"input": {"assistantId": "bench"}},
                                            user(index))
                    chats.append((index, data["createChat"]["id"]))
                await append_throughput(client, chats, appends // 4, "warm")
                pid = server.process.pid
                cpu, own = cpu_seconds(pid), _own_cpu()
                without = await append_throughput(client, chats, appends, "plain")
                cpu_without = cpu_seconds(pid) - cpu
                own_without = _own_cpu() - own

                # 1,000 sidebars: every one of a user's sidebars sees its chats' events.
                pending: dict[str, float] = {}
                latencies: list[float] = []
                seen = [0]

                def on_event(data: dict[str, Any]) -> None:
                    event = data["chatEvents"]
                    seen[0] += 1
                    sent = pending.get(event["chatId"])
                    if sent is not None and event["type"] == "MESSAGES":
                        latencies.append(time.perf_counter() - sent)

                sidebars = []
                for index, _chat in chats:
                    for _ in range(per_user):
                        sidebars.append(await Socket.open(server.address, user(index), EVENTS,
                                                          {}, on_event))
                # Live: one touch of each chat reaches all of its user's sidebars.
                for index, chat in chats:
                    await client.gql(APPEND, {"chat": chat, "aid": f"ready-{index}"},
                                     user(index))
                for _ in range(3000):
                    if seen[0] >= len(sidebars):
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise RuntimeError(f"only {seen[0]} of {len(sidebars)} sidebars are live")
                cpu, own = cpu_seconds(pid), _own_cpu()
                with_subscribers = await append_throughput(client, chats, appends, "live")
                cpu_with = cpu_seconds(pid) - cpu
                own_with = _own_cpu() - own
                await asyncio.sleep(1.0)

                # Latency: appends and one-chunk pushes at the same steady pace.
                stream_chat = (await client.gql(CREATE, {"input": {"assistantId": "bench"}},
                                                AGENT))["createChat"]["id"]
                pushed: dict[str, float] = {}
                chunk_latencies: list[float] = []
                answered: list[float] = []

                def on_chunk(data: dict[str, Any]) -> None:
                    chunk = data["chatStream"]
                    sent = pushed.get(str((chunk["props"] or {}).get("content")))
                    if sent is not None and chunk["type"] == "text":
                        chunk_latencies.append(time.perf_counter() - sent)

                viewer = await Socket.open(server.address, AGENT, STREAM, {"chat": stream_chat},
                                           on_chunk)
                await asyncio.sleep(0.2)
                stream = (await client.gql(START, {"chat": stream_chat}, AGENT)
                          )["startStream"]["id"]

                async def appender() -> None:
                    for n in range(paced):
                        index, chat = chats[n % len(chats)]
                        pending[chat] = sent = time.perf_counter()
                        await client.gql(APPEND, {"chat": chat, "aid": f"paced-{n}"},
                                         user(index))
                        answered.append(time.perf_counter() - sent)
                        await asyncio.sleep(pace)

                async def pusher() -> None:
                    for n in range(paced):
                        pushed[str(n)] = time.perf_counter()
                        await client.gql(PUSH, {"id": stream, "chunks": [{
                            "messageId": f"m{n}", "type": "text",
                            "props": {"content": str(n)}}]}, AGENT)
                        await asyncio.sleep(pace)

                latencies.clear()
                await asyncio.gather(appender(), pusher())
                await asyncio.sleep(1.0)
                for socket in [*sidebars, viewer]:
                    await socket.close()
                # Without again, after: the baseline is the mean of the runs on either
                # side, so the machine's load drifting during the run cancels out.
                await asyncio.sleep(1.0)
                cpu = cpu_seconds(pid)
                after = await append_throughput(client, chats, appends, "after")
                cpu_without = (cpu_without + cpu_seconds(pid) - cpu) / 2
        finally:
            stop_server(server)
    event_p99 = percentile(latencies, 0.99) * 1000
    chunk_p99 = percentile(chunk_latencies, 0.99) * 1000
    answered_p99 = percentile(answered, 0.99) * 1000
    answered_p50 = percentile(answered, 0.5) * 1000
    event_p50 = percentile(latencies, 0.5) * 1000
    chunk_p50 = percentile(chunk_latencies, 0.5) * 1000
    print(f"{len(sidebars):,} sidebars ({users} users x {per_user}), {appends:,} appends "
          f"per throughput run, {paced} paced appends and pushes")
    baseline = (without + after) / 2
    print(f"appends/s without subscribers {without:,.0f} before and {after:,.0f} after, "
          f"with {with_subscribers:,.0f}: with / without = {with_subscribers / baseline:.2f}x "
          "(target >= 0.9)")
    print(f"p99 write -> event {event_p99:.1f} ms over {len(latencies):,} events, "
          f"p99 chatStream chunk {chunk_p99:.1f} ms over {len(chunk_latencies):,} chunks: "
          f"event / chunk = {event_p99 / chunk_p99:.2f}x (target <= 2)")
    if cpu_without > 0:
        # Load on a shared machine moves throughput a lot; the server's own CPU time
        # per append does not, and says what the sidebars cost it.
        print(f"server CPU per append: without {cpu_without / appends * 1000:.2f} ms, with "
              f"{cpu_with / appends * 1000:.2f} ms: with / without = "
              f"{cpu_with / cpu_without:.2f}x")
    # The writers and the sidebars' sockets run in this process, on the same cores as
    # the server: what reading the sidebars' frames costs the load generator is part of
    # the throughput with them.
    print(f"this process (writers and sidebars) CPU per append: without "
          f"{own_without / appends * 1000:.2f} ms, with {own_with / appends * 1000:.2f} ms")
    print(f"(p50 write -> event {event_p50:.1f} ms, p50 chunk {chunk_p50:.1f} ms; "
          f"the append's own answer p50 {answered_p50:.1f} ms, p99 {answered_p99:.1f} ms)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run for tests")
    args = parser.parse_args(argv)
    asyncio.run(run(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
