"""What every fast plan is: made from a document once, then run per request or declined.

A plan serves the documents of one root field (or a few read together). The planner
(:mod:`gql.plans.planner`) offers it an operation in two steps:

- :meth:`Plan.compile` turns a document's text into what the plan needs to run it (its
  selection's shape, its arguments as AST, the converters read from the schema), kept
  in the plan's own cache; None when the document is not one the plan serves.
- :meth:`Plan.run` answers one request of a compiled document on one transport
  (:class:`Call`), or declines with None *before doing anything*, so the executor
  answers and every error looks as the executor makes it. A write the plan tried is
  never declined afterwards: its failure is the plan's answer
  (:func:`gql.errors.failed_root_field`).

What a plan answers depends on the operation: a query or mutation answers
``{"data": …}``, which the transport sends as it sends any result; a subscription
answers a :class:`Relay`, which the transport drives — over a WebSocket by handing it
the :class:`Socket` to write to, over Server-Sent Events by iterating its texts
(:class:`TextRelay`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from chatql.gql.context import Context

__all__ = ["TRANSPORTS", "Answer", "Call", "FrameSink", "Plan", "Relay", "Socket", "TextRelay",
           "text_frame"]

C = TypeVar("C")

#: The three ways in a plan may serve: a plain POST (before or inside the view),
#: Server-Sent Events, and either WebSocket subprotocol.
TRANSPORTS = frozenset({"http", "sse", "ws"})


class FrameSink(Protocol):
    """A socket's transport, written to directly (see gql/transport/websocket.py)."""

    def writable(self) -> bool: ...

    def write(self, data: bytes) -> bool: ...


@dataclass(frozen=True, slots=True)
class Socket:
    """Where a subscription answered on a WebSocket writes its results."""

    #: What each result frame says before its ``{"data": …}`` payload (the operation
    #: id and message type of the socket's subprotocol); a frame ends with ``}``.
    prefix: str
    #: Sends one whole frame's text the ordinary way (waits while the socket drains).
    send: Callable[[str], Awaitable[None]]
    #: The socket's transport when frames may be written to it straight away, else None.
    frames: FrameSink | None
    #: True once the client completed the operation: nothing more is sent.
    completed: Callable[[], bool]

    def envelope(self, payload: str) -> str:
        return self.prefix + payload + "}"


@dataclass(frozen=True, slots=True)
class Call:
    """One request a transport offers a plan."""

    #: ``http``, ``sse`` or ``ws``.
    transport: str
    context: Context
    variables: dict[str, Any] | None
    #: The caller knows no string in ``variables`` holds NUL (a JSON body without the
    #: ``\\u0000`` escape has none), so a plan need not look.
    nul_free: bool = False


class Relay(Protocol):
    """A subscription a plan took on: it runs until the client or the source ends it."""

    async def serve(self, socket: Socket) -> None:
        """Send every result to ``socket`` until the subscription ends."""
        ...


@runtime_checkable
class TextRelay(Relay, Protocol):
    """A relay that also runs over Server-Sent Events: what a plan serving ``sse``
    answers."""

    def texts(self) -> AsyncGenerator[str, None]:
        """Each result's ``{"data": …}`` text; iterate it in ``aclosing``."""
        ...


#: What :meth:`Plan.run` gives back when it does not decline.
Answer = dict[str, Any] | Relay


class Plan(Protocol[C]):
    """A fast path for the documents of :attr:`fields`, on :attr:`transports`."""

    #: The name ``CHATQL_DISABLED_PLANS`` switches it off by.
    name: ClassVar[str]
    #: ``query``, ``mutation`` or ``subscription``.
    operation: ClassVar[str]
    #: The root fields whose documents it answers.
    fields: ClassVar[tuple[str, ...]]
    #: Where it runs: some of :data:`TRANSPORTS`.
    transports: ClassVar[frozenset[str]]
    #: One line for the docs and the settings' error messages.
    summary: ClassVar[str]

    def compile(self, query: str, operation_name: str | None) -> C | None:
        """What the plan needs to run ``query`` (cached), or None: not one it serves."""
        ...

    async def run(self, compiled: C, call: Call) -> Answer | None:
        """The answer to one request, or None, having done nothing: the executor's."""
        ...


def text_frame(data: bytes) -> bytes:
    """One unfragmented, unmasked text frame (server to client, RFC 6455 §5.2) of
    ``data``: the same bytes for every socket, so a payload is framed once."""
    size = len(data)
    if size < 126:
        return bytes((0x81, size)) + data
    if size < 65_536:
        return b"\x81\x7e" + size.to_bytes(2, "big") + data
    return b"\x81\x7f" + size.to_bytes(8, "big") + data
