"""chatStream at scale over real WebSockets: shared access checks, frames written once.

Many subscribers of one chat arriving together share their access reads (a stranger
among them is still refused); frames written straight to the transport are the very
frames the ordinary send writes, on both subprotocols; a reader that stops reading
makes the direct path step aside (backpressure, then a snapshot), never a growing
buffer; sockets closed in the middle of a fan-out leave nothing in the logs.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
import websockets
from websockets.frames import Frame, Opcode

from chatql.gql.plans import chat_stream
from chatql.gql.plans.plan import text_frame
from chatql.gql.settings import Settings
from chatql.gql.transport import websocket as gws
from tests.client_reducer import client_apply
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_streams_ws import (
    ALICE,
    CREATE,
    END,
    PUSH,
    START,
    Http,
    persisted,
    serve,
    subscribed,
)
from tests.gql.wsclient import CHAT_STREAM

EVE = {"X-User-Id": "eve", "X-Tenant-Id": "acme"}


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


class Reader:
    """One raw socket with one chatStream subscription (id "1"), keeping every text."""

    def __init__(self, ws: Any, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol
        self.texts: list[str] = []
        self.view: dict[str, Any] = {}
        self.first = asyncio.Event()
        self.ended = asyncio.Event()
        self.snapshots = 0
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, server: str, chat: str, protocol: str = "graphql-transport-ws",
                   headers: dict[str, str] | None = None, *, read: bool = True,
                   **options: Any) -> Reader:
        ws = await websockets.connect(f"ws://{server}/graphql",
                                      subprotocols=[protocol],  # type: ignore[list-item]
                                      compression=None, additional_headers=headers,
                                      **options)
        await ws.send(json.dumps({"type": "connection_init", "payload": headers or ALICE}))
        while json.loads(await ws.recv())["type"] != "connection_ack":
            pass
        start = "subscribe" if protocol == "graphql-transport-ws" else "start"
        await ws.send(json.dumps({"id": "1", "type": start, "payload": {
            "query": CHAT_STREAM, "variables": {"chat": chat}}}))
        reader = cls(ws, protocol)
        if read:
            reader.read()
        return reader

    def read(self) -> None:
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                assert isinstance(raw, str)
                message = json.loads(raw)
                if message["type"] in ("ping", "ka"):
                    continue
                self.texts.append(raw)
                self.first.set()
                if message["type"] not in ("next", "data") or (
                        message["payload"].get("errors")):
                    self.ended.set()  # an error or complete
                    continue
                chunk = message["payload"]["data"]["chatStream"]
                self.snapshots += bool(chunk["snapshot"])
                client_apply(self.view, chunk)
                if (chunk["props"] or {}).get("event") == "stream_end":
                    self.ended.set()
        except websockets.ConnectionClosed:
            pass

    def shown(self) -> dict[str, tuple[str, Any]]:
        return {mid: (m["type"], m["props"]) for mid, m in self.view.items()}


def test_a_text_frame_is_what_websockets_writes() -> None:
    for size in (0, 1, 125, 126, 65_535, 65_536, 70_000):
        data = ("é" * size).encode()[:size]
        assert text_frame(data) == Frame(Opcode.TEXT, data).serialize(mask=False)


async def test_concurrent_subscribers_share_access_reads(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    arrived = 0
    release = asyncio.Event()
    get_chat, visible_chat = chat_stream.get_chat, chat_stream._visible_chat

    async def counted_read(db: Any, who: Any, chat_id: str) -> Any:
        reads.append(who.user_id)
        await release.wait()
        return await get_chat(db, who, chat_id)

    async def arrival(db: Any, who: Any, chat_id: str) -> Any:
        nonlocal arrived
        arrived += 1
        return await visible_chat(db, who, chat_id)

    monkeypatch.setattr(chat_stream, "get_chat", counted_read)
    monkeypatch.setattr(chat_stream, "_visible_chat", arrival)
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "crowd"})
        members = 160
        readers = await asyncio.gather(
            *(Reader.open(server, "crowd") for _ in range(members)),
            *(Reader.open(server, "crowd", headers=EVE) for _ in range(8)))
        async with asyncio.timeout(30):
            while arrived < len(readers):
                await asyncio.sleep(0.01)
        release.set()
        stream = (await http.data(START, {"input": {"chatId": "crowd"}}))["startStream"]["id"]
        async with asyncio.timeout(30):
            await asyncio.gather(*(r.first.wait() for r in readers))
        await http.data(END, {"id": stream, "status": "COMPLETED", "error": None})
        async with asyncio.timeout(30):
            await asyncio.gather(*(r.ended.wait() for r in readers))
        for reader in readers[:members]:
            served = [json.loads(text) for text in reader.texts]
            # The stream wrote nothing, so its end brings the note that says so.
            assert [m["payload"]["data"]["chatStream"]["props"].get("event")
                    for m in served] == ["stream_start", None, "stream_end"]
        for reader in readers[members:]:
            refused = json.loads(reader.texts[0])["payload"]
            assert refused["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        # The reads begun before everyone arrived (one per check slot), then one per
        # identity for everyone who waited: not one read per subscriber.
        assert len(reads) <= chat_stream._CONCURRENT_CHECKS + 2, len(reads)
        for reader in readers:
            await reader.ws.close()


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_direct_frames_are_the_ordinary_frames(
        settings: Settings, monkeypatch: pytest.MonkeyPatch, protocol: str) -> None:
    direct = 0
    sansio_protocol, write = gws._sansio_protocol, gws.FrameWriter.write

    def chosen(websocket: Any) -> Any:
        if (b"x-plain", b"1") in websocket.scope["headers"]:
            return None  # this socket sends the ordinary way
        return sansio_protocol(websocket)

    def counted(self: gws.FrameWriter, frames: bytes) -> bool:
        nonlocal direct
        written = write(self, frames)
        direct += written
        return written

    monkeypatch.setattr(gws, "_sansio_protocol", chosen)
    monkeypatch.setattr(gws.FrameWriter, "write", counted)
    async with serve(settings) as (server, app):
        http = Http(server)
        await http.data(CREATE, {"id": "same"})
        plain = await Reader.open(server, "same", protocol, {**ALICE, "X-Plain": "1"})
        fast = await Reader.open(server, "same", protocol, ALICE)
        await subscribed(app, "same", 2)
        stream = (await http.data(START, {"input": {"chatId": "same"}}))["startStream"]["id"]
        async with asyncio.timeout(30):
            await asyncio.gather(plain.first.wait(), fast.first.wait())
        chunks = [
            {"messageId": "a", "type": "text", "props": {"content": "short"}},
            {"messageId": "b", "type": "text", "props": {"content": "ü€😀 " * 40}},
            {"messageId": "c", "type": "text", "props": {"content": "x" * 70_000}},
            {"messageId": "d", "type": "text", "props": {"content": "tok"}, "delta": True},
            {"messageId": "d", "type": "text", "props": {"content": "en"}, "delta": True},
        ]
        for chunk in chunks:
            await http.data(PUSH, {"id": stream, "chunks": [chunk]})
        await http.data(PUSH, {"id": stream, "chunks": chunks[:2]})
        await http.data(END, {"id": stream, "status": "COMPLETED", "error": None})
        async with asyncio.timeout(30):
            await asyncio.gather(plain.ended.wait(), fast.ended.wait())
        assert fast.texts == plain.texts
        assert fast.shown() == persisted(await http.messages("same"))
        assert direct > 0
        await plain.ws.close()
        await fast.ws.close()


async def test_a_reader_that_stops_reading_is_caught_up_with_a_snapshot(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fallbacks = 0
    writers: list[gws.FrameWriter] = []
    fallback_send, made = gws.FrameWriter.__call__, gws.FrameWriter.__init__

    async def counted(self: gws.FrameWriter, text: str) -> None:
        nonlocal fallbacks
        fallbacks += not self.writable()
        await fallback_send(self, text)

    def kept(self: gws.FrameWriter, *args: Any) -> None:
        made(self, *args)
        writers.append(self)

    monkeypatch.setattr(gws.FrameWriter, "__call__", counted)
    monkeypatch.setattr(gws.FrameWriter, "__init__", kept)
    async with serve(settings) as (server, app):
        backend = app.state.services.streams.backend
        monkeypatch.setattr(backend, "_queue_limit", 64)
        http = Http(server)
        await http.data(CREATE, {"id": "slow"})
        # The client stops reading its socket after 2 messages until it is read again.
        slow = await Reader.open(server, "slow", read=False, max_queue=2)
        brisk = await Reader.open(server, "slow")
        await subscribed(app, "slow", 2)
        stream = (await http.data(START, {"input": {"chatId": "slow"}}))["startStream"]["id"]
        async with asyncio.timeout(30):
            await brisk.first.wait()
        buffered = 0
        piece = "y" * 8_000
        for index in range(100):
            chunks = [{"messageId": "m", "type": "text",
                       "props": {"content": f"{index}.{i} {piece}"}} for i in range(8)]
            await http.data(PUSH, {"id": stream, "chunks": chunks})
            for writer in writers:
                buffered = max(buffered, writer._transport.get_write_buffer_size())
        await http.data(END, {"id": stream, "status": "COMPLETED", "error": None})
        slow.read()
        async with asyncio.timeout(60):
            await asyncio.gather(slow.ended.wait(), brisk.ended.wait())
        rows = persisted(await http.messages("slow"))
        assert slow.shown() == rows and brisk.shown() == rows
        # 6.4 MB were pushed: the slow socket waited for its buffer to drain (the
        # ordinary send), and was then sent the state as a snapshot.
        assert fallbacks > 0
        assert slow.snapshots > 0
        assert buffered < 2_000_000, buffered
        await slow.ws.close()
        await brisk.ws.close()


async def test_sockets_closed_mid_fan_out_leave_no_trace(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with serve(settings) as (server, _app):
        http = Http(server)
        await http.data(CREATE, {"id": "leave"})
        readers = await asyncio.gather(*(Reader.open(server, "leave") for _ in range(60)))
        stream = (await http.data(START, {"input": {"chatId": "leave"}}))["startStream"]["id"]
        async with asyncio.timeout(30):
            await asyncio.gather(*(r.first.wait() for r in readers))
        leaving, staying = readers[:40], readers[40:]
        for index in range(40):
            chunks = [{"messageId": f"m{index % 3}", "type": "text",
                       "props": {"content": f"{index}.{i} " * 50}} for i in range(4)]
            await http.data(PUSH, {"id": stream, "chunks": chunks})
            gone = leaving[index]
            if index % 2:
                gone.ws.transport.abort()  # the connection drops
            else:
                await gone.ws.close()  # a closing handshake in the middle of the fan-out
        await http.data(END, {"id": stream, "status": "COMPLETED", "error": None})
        async with asyncio.timeout(30):
            await asyncio.gather(*(r.ended.wait() for r in staying))
        rows = persisted(await http.messages("leave"))
        assert all(r.shown() == rows for r in staying)
        for reader in staying:
            await reader.ws.close()
        await asyncio.sleep(0.2)
    noise = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not noise, [r.getMessage() for r in noise]
