"""The benchmarks' per-read WebSocket client: handshake, frames split across reads,
pings and the closing handshake, against a recording transport."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from bench.events import Sidebar
from bench.rawsocket import CLOSE, PING, PONG, TEXT, RawSocket, connection_init

UPGRADED = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"


class Transport(asyncio.Transport):
    """Records what the client writes."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def write(self, data: Any) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def server_frame(opcode: int, payload: bytes) -> bytes:
    """An unmasked server frame."""
    size = len(payload)
    if size < 126:
        return bytes((0x80 | opcode, size)) + payload
    return bytes((0x80 | opcode, 126)) + size.to_bytes(2, "big") + payload


def client_frames(written: bytes) -> list[tuple[int, bytes]]:
    """The client's masked frames after its upgrade request, unmasked."""
    data = written[written.index(b"\r\n\r\n") + 4:]
    frames, at = [], 0
    while at < len(data):
        assert data[at + 1] & 0x80, "client frames are masked"
        length, start = data[at + 1] & 127, at + 2
        if length == 126:
            length, start = int.from_bytes(data[at + 2:at + 4], "big"), at + 4
        key, start = data[start:start + 4], start + 4
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(data[start:start + length]))
        frames.append((data[at] & 15, payload))
        at = start + length
    return frames


def event(kind: str, chat: str) -> bytes:
    return orjson.dumps({"id": "1", "type": "next", "payload": {
        "data": {"chatEvents": {"type": kind, "chatId": chat}}}})


def record(seen: list[tuple[bytes, bytes]]) -> Callable[[list[tuple[bytes, bytes]], float],
                                                        None]:
    """A sidebar callback that keeps every event it is given."""
    def on_events(found: list[tuple[bytes, bytes]], now: float) -> None:
        seen.extend(found)
    return on_events


async def test_handshake_sends_init_with_its_payload_then_subscribe_on_ack() -> None:
    sock = RawSocket("127.0.0.1:1", init=connection_init({"X-User-Id": "u1"}),
                     subscribe=b'{"id":"1","type":"subscribe"}')
    transport = Transport()
    sock.connection_made(transport)
    assert transport.written.startswith(b"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1:1\r\n")
    assert b"Sec-WebSocket-Protocol: graphql-transport-ws\r\n" in transport.written
    sock.data_received(UPGRADED[:10])  # the response in two reads
    sock.data_received(UPGRADED[10:])
    assert client_frames(transport.written) == [
        (TEXT, b'{"type":"connection_init","payload":{"X-User-Id":"u1"}}')]
    assert not sock.handshake.done()
    sock.data_received(server_frame(TEXT, b'{"type":"connection_ack"}'))
    assert sock.handshake.result() is True
    assert client_frames(transport.written)[1] == (TEXT, b'{"id":"1","type":"subscribe"}')


async def test_a_failed_upgrade_fails_the_handshake() -> None:
    sock = RawSocket("127.0.0.1:1")
    transport = Transport()
    sock.connection_made(transport)
    sock.data_received(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
    assert isinstance(sock.handshake.exception(), ConnectionError)
    assert transport.closed


async def test_sidebar_sees_every_event_once_however_the_frames_are_split() -> None:
    long_chat = "c" * 200  # a frame with a 16-bit length
    frames = [event("MESSAGES", "a"), event("UPDATED", "b"), event("MESSAGES", long_chat)]
    stream = b"".join(server_frame(TEXT, f) for f in frames)
    for split in range(1, len(stream)):
        seen: list[tuple[bytes, bytes]] = []
        sidebar = Sidebar("127.0.0.1:1", {"X-User-Id": "u1"}, record(seen))
        sidebar.connection_made(Transport())
        sidebar.data_received(UPGRADED + server_frame(TEXT, b'{"type":"connection_ack"}'))
        sidebar.data_received(stream[:split])
        sidebar.data_received(stream[split:])
        assert seen == [(b"MESSAGES", b"a"), (b"UPDATED", b"b"),
                        (b"MESSAGES", long_chat.encode())], split


async def test_pings_are_answered_and_a_server_close_is_answered_and_closes() -> None:
    seen: list[tuple[bytes, bytes]] = []
    sidebar = Sidebar("127.0.0.1:1", {}, record(seen))
    transport = Transport()
    sidebar.connection_made(transport)
    sidebar.data_received(UPGRADED + server_frame(TEXT, b'{"type":"connection_ack"}'))
    sidebar.data_received(server_frame(PING, b"hi") + server_frame(TEXT, event("MESSAGES", "a"))
                          + server_frame(CLOSE, (1001).to_bytes(2, "big")))
    assert seen == [(b"MESSAGES", b"a")]
    assert client_frames(transport.written)[-2:] == [(PONG, b"hi"),
                                                      (CLOSE, (1001).to_bytes(2, "big"))]
    assert transport.closed


async def test_close_sends_a_normal_closure_and_waits_for_the_connection_to_end() -> None:
    sock = RawSocket("127.0.0.1:1", init=connection_init())
    transport = Transport()
    sock.connection_made(transport)
    sock.data_received(UPGRADED + server_frame(TEXT, b'{"type":"connection_ack"}'))
    closing = asyncio.create_task(sock.close())
    await asyncio.sleep(0)
    assert client_frames(transport.written)[-1] == (CLOSE, (1000).to_bytes(2, "big"))
    sock.data_received(server_frame(CLOSE, (1000).to_bytes(2, "big")))
    assert transport.closed  # the server's answer is not answered again
    assert client_frames(transport.written)[-1] == (CLOSE, (1000).to_bytes(2, "big"))
    assert len([f for f in client_frames(transport.written) if f[0] == CLOSE]) == 1
    assert not closing.done()
    sock.connection_lost(None)
    await asyncio.wait_for(closing, 1)
