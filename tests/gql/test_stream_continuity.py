"""Chunk continuity (``fromSeq``, ``snapshot``) over real WebSockets, on both brokers.

A client that applies chunks in order and checks ``fromSeq == previous seq + 1``
(snapshot chunks excepted, a new stream starting at 1) must never see a false gap:
not when its queue merged deltas, not after a late-join snapshot, not on an
``afterSeq`` replay — on the fast relay and on ordinary GraphQL execution, on both
subprotocols, with ``memory://`` and ``redis://``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import (
    ALICE,
    CREATE,
    END,
    PUSH,
    START,
    Http,
    delta,
    persisted,
    serve,
    shown,
)
from tests.gql.wsclient import ChunkView, check_continuity, connect

# The ordinary execution path: fragments never take the fast relay.
ORDINARY = """subscription($chat: ID!, $after: Int) {
  chatStream(chatId: $chat, afterSeq: $after) { ...C } }
fragment C on Chunk {
  streamId seq chunkId messageId blockId threadId type role props delta deltaPath deltaAction
  fromSeq snapshot }"""


@pytest.fixture(params=BACKENDS)
def any_broker(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


async def subscribed(app: Any, chat: str, count: int) -> None:
    for _ in range(500):
        if app.state.services.streams.backend.subscriber_count(chat) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the subscriptions never arrived")


async def ordinary_until_end(ws: Any, op: str, after: int | None = None) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        payload = await ws.receive(op)
        assert payload is not None and not payload.get("errors"), payload
        chunk = payload["data"]["chatStream"]
        check_continuity(got[-1] if got else None, chunk, after)
        got.append(chunk)
        if chunk["type"] == "event" and chunk["props"].get("event") == "stream_end":
            return got


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_merged_deltas_and_a_late_join_pass_the_continuity_check(
        any_broker: Settings, protocol: str) -> None:
    chat = f"c-{uuid.uuid4().hex[:10]}"
    async with serve(any_broker) as (server, app), connect(server, protocol, ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": chat})
        fast = await ChunkView.open(ws, chat)
        ordinary = await ws.start(ORDINARY, {"chat": chat, "after": None})
        await subscribed(app, chat, 2)
        sid = (await http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        # One batch of appends to one message reaches each queue at once: the queue
        # merges them, and the merged chunk must say which seqs it stands for.
        await http.data(PUSH, {"id": sid, "chunks": [
            *(delta("m", f"{i} ") for i in range(60)),
            {"messageId": "t", "type": "tool_call", "role": "TOOL", "props": {"n": 1}},
            *(delta("m", f"+{i}") for i in range(30)),
        ]})
        await fast.until_seq(92)
        # A late joiner gets a snapshot, then live chunks without a gap.
        late = await ChunkView.open(ws, chat)
        await subscribed(app, chat, 3)
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "!"), delta("n", "new")]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        await fast.until_event("stream_end")
        await late.until_event("stream_end")
        slow = await ordinary_until_end(ws, ordinary)
        rows = persisted(await http.messages(chat))

    for chunks in (fast.chunks, slow):
        merged = [c for c in chunks if c["fromSeq"] < c["seq"] and not c["snapshot"]]
        assert merged, "the queue merged no deltas: the test proves nothing"
        assert chunks[-1]["seq"] == 95 and not any(c["snapshot"] for c in chunks)
        assert fast.chunks == chunks
    assert shown(fast) == rows
    snapshot = [c for c in late.chunks if c["snapshot"]]
    assert snapshot and snapshot == late.chunks[:len(snapshot)]
    assert {c["seq"] for c in snapshot} == {92}
    assert [c["seq"] for c in late.chunks[len(snapshot):]] == [93, 94, 95]
    assert shown(late) == rows


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_an_after_seq_replay_passes_the_continuity_check(
        any_broker: Settings, protocol: str) -> None:
    chat = f"c-{uuid.uuid4().hex[:10]}"
    async with serve(any_broker) as (server, app), connect(server, protocol, ALICE) as ws:
        http = Http(server)
        await http.data(CREATE, {"id": chat})
        sid = (await http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        await http.data(PUSH, {"id": sid, "chunks": [
            delta("m", "a"), delta("m", "b"), {"type": "event", "props": {"event": "x"}},
            delta("m", "c"), delta("m", "d"), delta("k", "z")]})
        # Reconnect after seq 3 (the stream holds 1..7): exactly 4.. arrive, none twice.
        replay = await ChunkView.open(ws, chat, after=3)
        ordinary = await ws.start(ORDINARY, {"chat": chat, "after": 3})
        await subscribed(app, chat, 2)
        await http.data(PUSH, {"id": sid, "chunks": [delta("m", "e")]})
        await http.data(END, {"id": sid, "status": "COMPLETED"})
        await replay.until_event("stream_end")
        slow = await ordinary_until_end(ws, ordinary, after=3)

    for chunks in (replay.chunks, slow):
        assert chunks[0]["fromSeq"] == 4 and not chunks[0]["snapshot"]
        assert chunks[-1]["seq"] == 9
        assert not any(c["snapshot"] for c in chunks)
        # Every seq from 4 to 9 is covered exactly once.
        covered = [s for c in chunks for s in range(c["fromSeq"], c["seq"] + 1)]
        assert covered == list(range(4, 10))
