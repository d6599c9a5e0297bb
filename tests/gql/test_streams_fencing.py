"""Fenced leases with real processes: a stalled holder is refused, a dead one replaced.

Two chatql processes share the database and Redis. Instance A is caught inside an
operation (its lease exists in Redis while its big push runs: its copy of the stream
is not current, so the push is not written optimistically) and then stopped
(SIGSTOP) or killed (SIGKILL). The producer carries on with instance B, which waits
out the short lease and rebuilds the stream from its log. A stopped A that wakes up
has its write refused; in the end the persisted text equals an independent replay of
the stream's log: every accepted chunk exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import uuid
from typing import Any

import httpx
import orjson
import pytest
import redis.asyncio as aioredis

from chatql.store.streams.backends.redis import LEASE_SECONDS, split_prefix
from tests.client_reducer import client_apply
from tests.gql.test_streams_shared import Instance
from tests.gql.test_streams_shutdown import stored_rows
from tests.gql.test_streams_ws import CREATE, END, PUSH, START

# A push big enough to take a while, so the test can catch its instance inside it.
BIG = [{"messageId": "m", "type": "text", "props": {"content": f"a{i:04d}" + "." * 2_000},
        "delta": True} for i in range(1_000)]


def text(value: str) -> dict[str, Any]:
    return {"messageId": "m", "type": "text", "props": {"content": value}, "delta": True}


@pytest.fixture
def big_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATQL_MAX_BODY_BYTES", str(16 * 1024 * 1024))


async def caught_in_lease(redis: Any, prefix: str, sid: str, push: asyncio.Task[Any],
                          instance: Instance, sig: signal.Signals) -> bool:
    """Send ``sig`` to ``instance`` the moment it holds the stream's lease; False when
    its push finished first."""
    key = f"{prefix}lease:{sid}"
    while not push.done():
        if await redis.exists(key):
            instance.process.send_signal(sig)
            return True
        await asyncio.sleep(0)
    return False


async def replayed_log(redis: Any, prefix: str, chat: str, sid: str) -> list[tuple[str, Any]]:
    """An independent replay of the stream's log, as a subscriber would apply it."""
    view: dict[str, dict[str, Any]] = {}
    for _id, fields in await redis.xrange(f"{prefix}chat:{chat}", "-", "+"):
        # One entry per published batch, its chunks as one JSON array.
        for event in orjson.loads(fields[b"b"]):
            if event["streamId"] == sid:
                client_apply(view, event)
    return [(m["type"], m["props"]) for m in view.values()]


async def test_a_stopped_holder_is_refused_and_every_accepted_chunk_is_persisted_once(
        database_url: str, redis_url: str, big_bodies: None) -> None:
    url, prefix = split_prefix(redis_url)
    redis = aioredis.Redis.from_url(url)
    a, b = Instance(database_url, redis_url, 300), Instance(database_url, redis_url, 300)
    try:
        await asyncio.gather(a.ready(), b.ready())
        for _attempt in range(4):
            chat = f"fence-{uuid.uuid4().hex[:10]}"
            await a.http.data(CREATE, {"id": chat})
            sid = (await a.http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
            # Pushed on B, so A's copy is not current: A's big push is not written
            # optimistically (one conditional write, no lease) but under the lease.
            await b.http.data(PUSH, {"id": sid, "chunks": [text("kept ")]})
            push = asyncio.create_task(a.http.execute(PUSH, {"id": sid, "chunks": BIG}))
            if not await caught_in_lease(redis, prefix, sid, push, a, signal.SIGSTOP):
                await push
                continue
            # The producer gives up on A and carries on with B past A's lease.
            carried = (await b.http.data(PUSH, {"id": sid, "chunks": [
                text(f"b{i} ") for i in range(600)]}))["pushChunks"]
            a.process.send_signal(signal.SIGCONT)
            late = await push
            if not late.get("errors"):
                # A's write reached Redis before it stopped: B rebuilt with it. Only
                # the refusal proves the fence; try again.
                await b.http.data(END, {"id": sid, "status": "COMPLETED"})
                continue
            assert late["errors"][0]["extensions"]["code"] == "STREAM_ACTIVE"
            # B numbered on from the last accepted chunk (start 1, "kept " 2).
            assert (carried["accepted"], carried["lastSeq"]) == (600, 602)
            # A reloads from the log and serves the stream again, in order.
            again = (await a.http.data(PUSH, {"id": sid, "chunks": [text("end")]}))
            assert again["pushChunks"]["lastSeq"] == 603
            await b.http.data(END, {"id": sid, "status": "COMPLETED"})
            expected = "kept " + "".join(f"b{i} " for i in range(600)) + "end"
            assert await stored_rows(database_url, chat) == [
                ("text", {"content": expected}, "COMPLETED")]
            assert await replayed_log(redis, prefix, chat, sid) == [
                ("text", {"content": expected})]
            return
        pytest.fail("instance A was never caught inside its lease")
    finally:
        a.process.send_signal(signal.SIGCONT)
        a.stop()
        b.stop()
        await redis.aclose()


async def test_sigkill_of_the_holder_mid_push_another_instance_takes_over_within_5_s(
        database_url: str, redis_url: str, big_bodies: None) -> None:
    url, prefix = split_prefix(redis_url)
    redis = aioredis.Redis.from_url(url)
    b = Instance(database_url, redis_url, 300)
    try:
        for _attempt in range(3):
            a = Instance(database_url, redis_url, 300)
            try:
                await asyncio.gather(a.ready(), b.ready())
                chat = f"kill-{uuid.uuid4().hex[:10]}"
                await a.http.data(CREATE, {"id": chat})
                sid = (await a.http.data(START, {"input": {"chatId": chat}})
                       )["startStream"]["id"]
                # On B, so A's big push runs under the lease (see the test above).
                await b.http.data(PUSH, {"id": sid, "chunks": [text("before ")]})
                push = asyncio.create_task(a.http.execute(PUSH, {"id": sid, "chunks": BIG}))
                caught = await caught_in_lease(redis, prefix, sid, push, a, signal.SIGKILL)
                died = time.monotonic()
                if not caught:
                    await push
                    continue
                with contextlib.suppress(httpx.HTTPError):  # the connection just drops
                    await push
                await b.http.data(PUSH, {"id": sid, "chunks": [text("after")]})
                takeover = time.monotonic() - died
                print(f"writable on another instance {takeover:.2f} s after SIGKILL"
                      f" (lease {LEASE_SECONDS:.0f} s)")
                assert takeover < 5.0
                await b.http.data(END, {"id": sid, "status": "COMPLETED"})
                stored = await stored_rows(database_url, chat)
                assert [(kind, props) for kind, props, _status in stored] == (
                    await replayed_log(redis, prefix, chat, sid))
                content = stored[0][1]["content"]
                assert content.startswith("before ") and content.endswith("after")
                return
            finally:
                a.stop()
        pytest.fail("instance A was never caught inside its lease")
    finally:
        b.stop()
        await redis.aclose()
