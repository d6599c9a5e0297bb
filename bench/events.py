"""Live chat list benchmark: ``chatEvents`` sidebars while appends run.

    python -m bench.events [--quick]

One chatql server (a real uvicorn process, SQLite, ``memory://`` broker) and, in this
process, 100 users with 10 open sidebars each (1,000 ``chatEvents`` subscriptions over
real WebSockets; ``--quick``: 10 users x 2). Prints:

- the appends' throughput (``appendMessages`` over HTTP from 8 concurrent writers into
  the users' chats) with every sidebar subscribed, divided by the same without any
  subscriber. Runs alternate: without, with, without, with, without — the sidebars
  opened before each run with them and closed after it — and the ratio is the mean
  of the runs with over the mean of the runs without, so load drifting on a shared
  machine cancels out (target >= 0.9);
- the p99 write -> event latency (from sending an append to its ``MESSAGES`` event at
  each of the writer's sidebars, appends paced at a steady rate) divided by the p99 of
  a ``chatStream`` chunk (from sending a one-chunk push to the chunk at a subscriber),
  the chunks pushed at the same pace in the same run, at the same time (target <= 2);
- the server's CPU time per append with the sidebars and without (Linux), which a
  loaded machine moves far less than it moves throughput;
- this process's own CPU per append with the sidebars and without: the writers and the
  sidebars' sockets share the machine's cores with the server.

The sidebars are a cheap load generator. In production they run in users' browsers, not
on the server's machine; here they share its cores, so every microsecond spent reading
their frames is taken from the server and lowers the throughput with them. Each append
sends one frame to each of its user's 10 sidebars, and a WebSocket library's per-frame
callback and JSON decoding cost tens of microseconds a frame. The sidebars are therefore
plain asyncio protocols (:class:`bench.rawsocket.RawSocket`) whose Python work is per
socket read: the frame headers are walked to find the complete frames, one compiled
pattern finds every event's type and chat in them, and one clock reading per read times
the ``MESSAGES`` events. The bench runs on uvloop when it is installed (uvicorn's
``standard`` extra brings it), which makes the writers and the sockets cheaper still.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from bench.common import cpu_seconds
from bench.rawsocket import RawSocket, connect, connection_init, subscribe
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


#: A ``chatEvents`` event's type and chat in a ``next`` frame (fields in the selection's
#: order, serialised compactly).
_EVENT = re.compile(rb'"chatEvents":\{"type":"(\w+)","chatId":"([^"]*)"')


class Sidebar(RawSocket):
    """One ``chatEvents`` subscription, read cheaply: per socket read, one pattern pass
    over all the complete frames finds every event's type and chat, and ``on_events``
    gets them (as bytes) with one clock reading (``perf_counter``) for the read."""

    def __init__(self, address: str, headers: dict[str, str],
                 on_events: Callable[[list[tuple[bytes, bytes]], float], None]) -> None:
        super().__init__(address, init=connection_init(headers), subscribe=subscribe(EVENTS))
        self.on_events = on_events

    def received(self, buf: bytes, stop: int, frames: int, plain: bool) -> None:
        if plain and self.acked:
            found = _EVENT.findall(buf, 0, stop)
            if len(found) == frames:  # every frame an event: the common case
                self.on_events(found, time.perf_counter())
                return
        self.frames(buf, stop, 0)

    def text(self, payload: bytes, now: int) -> None:
        found = _EVENT.findall(payload)
        if found:
            self.on_events(found, time.perf_counter())


class Viewer(RawSocket):
    """One subscription whose ``next`` payloads are decoded and given to ``on_event``
    frame by frame (the one ``chatStream`` viewer: a single socket needs no shortcut)."""

    def __init__(self, address: str, headers: dict[str, str], query: str,
                 variables: dict[str, Any], on_event: Callable[[Any], None]) -> None:
        super().__init__(address, init=connection_init(headers),
                         subscribe=subscribe(query, variables))
        self.on_event = on_event

    def text(self, payload: bytes, now: int) -> None:
        message = orjson.loads(payload)
        if message["type"] == "next":
            self.on_event(message["payload"]["data"])


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


#: Runs with the sidebars, each between two without them.
ROUNDS = 2


@dataclass
class Segment:
    """One throughput run: appends per second, and the CPU the server and this process
    spent on it."""

    rate: float
    server_cpu: float
    own_cpu: float


async def segment(client: Client, chats: list[tuple[int, str]], appends: int, label: str,
                  pid: int) -> Segment:
    cpu, own = cpu_seconds(pid), _own_cpu()
    rate = await append_throughput(client, chats, appends, label)
    return Segment(rate, cpu_seconds(pid) - cpu, _own_cpu() - own)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


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
                without = [await segment(client, chats, appends, "plain-0", pid)]
                with_subscribers: list[Segment] = []

                # 1,000 sidebars: every one of a user's sidebars sees its chats' events.
                pending: dict[str, float] = {}
                latencies: list[float] = []
                seen = [0]

                def on_events(found: list[tuple[bytes, bytes]], now: float) -> None:
                    seen[0] += len(found)
                    for kind, chat in found:
                        if kind == b"MESSAGES":
                            sent = pending.get(chat.decode())
                            if sent is not None:
                                latencies.append(now - sent)

                async def open_sidebars(round_: int) -> list[Sidebar]:
                    opened: list[Sidebar] = []
                    for index, _chat in chats:
                        for _ in range(per_user):
                            opened.append(await connect(server.address, functools.partial(
                                Sidebar, server.address, user(index), on_events)))
                    # Live: one touch of each chat reaches all of its user's sidebars.
                    seen[0] = 0
                    for index, chat in chats:
                        await client.gql(APPEND, {"chat": chat,
                                                  "aid": f"ready-{round_}-{index}"}, user(index))
                    for _ in range(3000):
                        if seen[0] >= len(opened):
                            return opened
                        await asyncio.sleep(0.01)
                    raise RuntimeError(f"only {seen[0]} of {len(opened)} sidebars are live")

                for round_ in range(ROUNDS):
                    sidebars = await open_sidebars(round_)
                    with_subscribers.append(await segment(client, chats, appends,
                                                          f"live-{round_}", pid))
                    await asyncio.sleep(1.0)
                    if round_ == ROUNDS - 1:
                        latency = await paced_latency(server.address, client, chats, paced,
                                                      pace, pending, latencies)
                    await asyncio.gather(*(sock.close() for sock in sidebars))
                    # Without again: the baseline is every run without, on either side of
                    # each run with, so the machine's load drifting cancels out.
                    await asyncio.sleep(1.0)
                    without.append(await segment(client, chats, appends,
                                                 f"plain-{round_ + 1}", pid))
        finally:
            stop_server(server)
    chunk_latencies, answered = latency
    event_p99 = percentile(latencies, 0.99) * 1000
    chunk_p99 = percentile(chunk_latencies, 0.99) * 1000
    answered_p99 = percentile(answered, 0.99) * 1000
    answered_p50 = percentile(answered, 0.5) * 1000
    event_p50 = percentile(latencies, 0.5) * 1000
    chunk_p50 = percentile(chunk_latencies, 0.5) * 1000
    print(f"{len(sidebars):,} sidebars ({users} users x {per_user}), {appends:,} appends "
          f"per throughput run, {paced} paced appends and pushes")
    plain_rate = _mean([s.rate for s in without])
    live_rate = _mean([s.rate for s in with_subscribers])
    print("appends/s without subscribers " + " / ".join(f"{s.rate:,.0f}" for s in without)
          + ", with " + " / ".join(f"{s.rate:,.0f}" for s in with_subscribers)
          + f" (alternating): with / without = {live_rate / plain_rate:.2f}x (target >= 0.9)")
    print(f"p99 write -> event {event_p99:.1f} ms over {len(latencies):,} events, "
          f"p99 chatStream chunk {chunk_p99:.1f} ms over {len(chunk_latencies):,} chunks: "
          f"event / chunk = {event_p99 / chunk_p99:.2f}x (target <= 2)")
    cpu_without = _mean([s.server_cpu for s in without]) / appends * 1000
    cpu_with = _mean([s.server_cpu for s in with_subscribers]) / appends * 1000
    if cpu_without > 0:
        # Load on a shared machine moves throughput a lot; the server's own CPU time
        # per append does not, and says what the sidebars cost it.
        print(f"server CPU per append: without {cpu_without:.2f} ms, with {cpu_with:.2f} ms: "
              f"with / without = {cpu_with / cpu_without:.2f}x")
    # The writers and the sidebars' sockets run in this process, on the same cores as
    # the server: what reading the sidebars' frames costs the load generator is part of
    # the throughput with them.
    own_without = _mean([s.own_cpu for s in without]) / appends * 1000
    own_with = _mean([s.own_cpu for s in with_subscribers]) / appends * 1000
    print(f"this process (writers and sidebars) CPU per append: without "
          f"{own_without:.2f} ms, with {own_with:.2f} ms")
    print(f"(p50 write -> event {event_p50:.1f} ms, p50 chunk {chunk_p50:.1f} ms; "
          f"the append's own answer p50 {answered_p50:.1f} ms, p99 {answered_p99:.1f} ms)")


async def paced_latency(address: str, client: Client, chats: list[tuple[int, str]],
                        paced: int, pace: float, pending: dict[str, float],
                        latencies: list[float]) -> tuple[list[float], list[float]]:
    """Appends and one-chunk pushes at the same steady pace, the sidebars open: the
    write -> event latencies land in ``latencies``; returns the chunks' latencies and
    the appends' own answer times."""
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

    viewer = await connect(address, lambda: Viewer(address, AGENT, STREAM,
                                                   {"chat": stream_chat}, on_chunk))
    await asyncio.sleep(0.2)
    stream = (await client.gql(START, {"chat": stream_chat}, AGENT))["startStream"]["id"]

    async def appender() -> None:
        for n in range(paced):
            index, chat = chats[n % len(chats)]
            pending[chat] = sent = time.perf_counter()
            await client.gql(APPEND, {"chat": chat, "aid": f"paced-{n}"}, user(index))
            answered.append(time.perf_counter() - sent)
            await asyncio.sleep(pace)

    async def pusher() -> None:
        for n in range(paced):
            pushed[str(n)] = time.perf_counter()
            await client.gql(PUSH, {"id": stream, "chunks": [{
                "messageId": f"m{n}", "type": "text", "props": {"content": str(n)}}]}, AGENT)
            await asyncio.sleep(pace)

    latencies.clear()
    await asyncio.gather(appender(), pusher())
    await asyncio.sleep(1.0)
    await viewer.close()
    return chunk_latencies, answered


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run for tests")
    args = parser.parse_args(argv)
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        asyncio.run(run(args.quick))
    else:  # the writers and the sidebars both take less CPU on uvloop
        uvloop.run(run(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
