"""A cheap WebSocket client for load generators: a plain asyncio protocol whose Python
work is per socket read, not per frame.

The benchmarks open hundreds or thousands of subscriptions on the same machine as the
server, and every microsecond the client spends per frame is taken from the server. A
WebSocket library calls back into Python once per frame, and that callback costs about
as much as everything done with the frame. :class:`RawSocket` instead writes the HTTP
upgrade request and its few (masked) frames itself and, on each read, walks only the
frame headers of what arrived (the server's frames are unmasked) to find the complete
frames; a partial frame waits in a buffer for the next read. A subclass then sees all
the complete frames of a read at once (:meth:`RawSocket.received`) and can find what it
needs in them with one compiled-pattern pass and one clock reading; whatever it does not
take that way is handled frame by frame (pings answered, a close answered and the socket
closed, text frames to :meth:`RawSocket.text`).

The handshake is graphql-transport-ws's when ``init`` is given: ``connection_init`` (with
its payload) once upgraded, and on the server's first text frame (``connection_ack``) the
``subscribe`` frame; :attr:`RawSocket.handshake` is resolved then. Without ``init`` the
first text frame alone acknowledges the socket (a bare relay's ready frame).
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import orjson

__all__ = ["CLOSE", "PING", "PONG", "TEXT", "RawSocket", "connect", "connection_init",
           "masked", "subscribe"]

TEXT, CLOSE, PING, PONG = 1, 8, 9, 10
_NORMAL_CLOSURE = (1000).to_bytes(2, "big")


def masked(opcode: int, payload: bytes) -> bytes:
    """One final client frame: ``opcode`` and ``payload`` masked with a random key."""
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 65_536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
    key = os.urandom(4)
    mask = (key * (size // 4 + 1))[:size]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(size, "big")
    return head + key + body


def connection_init(payload: Mapping[str, Any] | None = None) -> bytes:
    """graphql-transport-ws's ``connection_init`` carrying ``payload`` (the identity
    headers, for a server that authenticates the socket by them)."""
    return orjson.dumps({"type": "connection_init", "payload": payload or {}})


def subscribe(query: str, variables: Mapping[str, Any] | None = None, op: str = "1") -> bytes:
    """graphql-transport-ws's ``subscribe`` for operation ``op``."""
    return orjson.dumps({"id": op, "type": "subscribe", "payload": {
        "query": query, "variables": variables or {}}})


class RawSocket(asyncio.Protocol):
    """One WebSocket on a plain asyncio protocol (see the module docstring).

    ``path`` and ``subprotocol`` go into the upgrade request; ``init`` is sent once
    upgraded and ``subscribe`` on the server's first text frame (both optional).
    Subclasses override :meth:`received` (all complete frames of one read) and/or
    :meth:`text` (one text frame after the handshake).
    """

    def __init__(self, address: str, *, path: str = "/graphql",
                 subprotocol: str | None = "graphql-transport-ws", init: bytes | None = None,
                 subscribe: bytes | None = None) -> None:
        # The upgrade request, written as soon as the connection is made.
        protocol = (b"Sec-WebSocket-Protocol: " + subprotocol.encode() + b"\r\n"
                    if subprotocol else b"")
        self.request = (b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + address.encode()
                        + b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        b"Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16))
                        + b"\r\nSec-WebSocket-Version: 13\r\n" + protocol + b"\r\n")
        self.init, self.subscribe = init, subscribe
        self.acked = self.upgraded = self.closing = False
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.handshake: asyncio.Future[bool] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        transport.write(self.request)

    def _upgrade(self, data: bytes) -> bytes | None:
        """Read the upgrade response; the bytes after it, or None while incomplete."""
        data = self.buffer + data
        end = data.find(b"\r\n\r\n")
        if end < 0:
            self.buffer = data
            return None
        self.buffer = b""
        if not data.startswith(b"HTTP/1.1 101"):
            self._fail(ConnectionError(data[:end].split(b"\r\n", 1)[0].decode(errors="replace")))
            return None
        self.upgraded = True
        if self.init is not None:
            self.send(TEXT, self.init)
        return data[end + 4:]

    def data_received(self, data: bytes) -> None:
        if not self.upgraded:
            rest = self._upgrade(data)
            if not rest:
                return
            data = rest
        buf = self.buffer + data if self.buffer else data
        size = len(buf)
        at = frames = 0
        plain = True  # every complete frame a text frame
        while size - at >= 2:
            length = buf[at + 1] & 127
            if length < 126:
                end = at + 2 + length
            elif length == 126:
                if size - at < 4:
                    break
                end = at + 4 + (buf[at + 2] << 8 | buf[at + 3])
            else:
                if size - at < 10:
                    break
                end = at + 10 + int.from_bytes(buf[at + 2:at + 10], "big")
            if end > size:
                break
            if buf[at] & 15 != TEXT:
                plain = False
            frames += 1
            at = end
        self.buffer = buf[at:] if at < size else b""
        if frames:
            self.received(buf, at, frames, plain)

    def received(self, buf: bytes, stop: int, frames: int, plain: bool) -> None:
        """The ``frames`` complete frames of one read, ``buf[:stop]`` (``plain``: all of
        them text frames). By default each is handled on its own (:meth:`frames`); an
        override takes what it can from all of them at once and falls back to that."""
        self.frames(buf, stop, time.perf_counter_ns())

    def frames(self, buf: bytes, stop: int, now: int) -> None:
        """Handle the complete frames in ``buf[:stop]`` one by one (``now``: the read's
        ``perf_counter_ns``)."""
        at = 0
        while at < stop:
            length = buf[at + 1] & 127
            start = at + 2 if length < 126 else at + 4 if length == 126 else at + 10
            if length >= 126:
                length = int.from_bytes(buf[at + 2:start], "big")
            opcode, at = buf[at] & 15, start + length
            payload = buf[start:at]
            if opcode == TEXT:
                if self.acked:
                    self.text(payload, now)
                else:
                    self._acknowledge()
            elif opcode == PING:
                self.send(PONG, payload)
            elif opcode == CLOSE:
                if not self.closing:  # the server's close: answer it
                    self.send(CLOSE, payload[:2])
                assert self.transport is not None
                self.transport.close()
                return

    def _acknowledge(self) -> None:
        """The server's first text frame (``connection_ack``, or a relay's ready frame)."""
        if self.subscribe is not None:
            self.send(TEXT, self.subscribe)
        self.acked = True
        self.acknowledged()
        if not self.handshake.done():
            self.handshake.set_result(True)

    def acknowledged(self) -> None:
        """Called once the socket is acknowledged (and subscribed)."""

    def text(self, payload: bytes, now: int) -> None:
        """One text frame after the handshake (``now``: its read's ``perf_counter_ns``)."""

    def send(self, opcode: int, payload: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(masked(opcode, payload))

    def _fail(self, error: Exception) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(error)
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(ConnectionError("closed before acknowledged"))
        if not self.closed.done():
            self.closed.set_result(None)

    def disconnect(self) -> None:
        """Drop the connection at once, without a closing handshake."""
        if self.transport is not None:
            self.transport.close()

    async def close(self, timeout: float = 10) -> None:
        """Close cleanly: a close frame (normal closure), then wait for the server's
        answer to end the connection (dropped after ``timeout`` seconds)."""
        if not self.closing:
            self.closing = True
            self.send(CLOSE, _NORMAL_CLOSURE)
        try:
            await asyncio.wait_for(asyncio.shield(self.closed), timeout)
        except TimeoutError:
            self.disconnect()


Socket = TypeVar("Socket", bound=RawSocket)


async def connect(address: str, factory: Callable[[], Socket], timeout: float = 120) -> Socket:
    """Open one socket to ``host:port`` and wait until it is acknowledged."""
    host, port = address.rsplit(":", 1)
    _, sock = await asyncio.get_running_loop().create_connection(factory, host, int(port))
    await asyncio.wait_for(sock.handshake, timeout)
    return sock
