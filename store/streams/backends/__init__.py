"""Where live streams' state and fan-out live: one small interface, one module per backend.

The :class:`store.streams.service.StreamService` drives every stream through a
:class:`Backend`, chosen once from the broker URL by :func:`backend_from_url`:

- ``memory://`` (:mod:`store.streams.backends.memory`): one process; the buffers stay
  in the service, claims and leases are local, fan-out goes straight to the topics.
- ``redis://`` (:mod:`store.streams.backends.redis`): several instances; a chat's claim,
  each stream's lease and saved state, and the chunks themselves (a Redis Stream per
  chat, followed by every instance that has subscribers) live in Redis.

The interface has two halves, each small:

- :class:`StreamLog` — a stream's log and state: claiming a chat for one stream, the
  lease that serialises a stream's operations, loading the latest state and saving it
  together with the chunks it publishes (one step, so no subscriber sees a chunk the
  state does not hold), retiring a persisted stream, the idle-stream index.
- :class:`FanOut` — delivery: a chat's subscribers on this instance (their queues get
  what a save published, on whichever instance it ran), and the live chat list's
  events (:mod:`store.lists.events`), carried to every instance: ``publish_chat_event``
  on one, each instance's ``chat_event_feed`` yields it.

A :class:`Backend` is both, over one connection to its broker; the stream service
drives the log and subscribes through the fan-out, the chat events use the fan-out only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from chatql.store.streams.buffer import StreamBuffer
from chatql.store.streams.queue import DEFAULT_QUEUE_LIMIT, SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent

__all__ = ["Backend", "FanOut", "StaleCopy", "StreamLog", "backend_from_url"]


class StaleCopy(Exception):
    """An optimistic operation found this instance's copy of the stream not current
    (or the stream busy elsewhere): nothing was written; redo it under the lease."""


class StreamLog(ABC):
    """A stream's log and state: who holds it, its latest state, its chunks."""

    #: True when another instance can carry on a stream this process holds, so a
    #: shutdown hands active streams over instead of ending them.
    hands_over: bool = False

    @abstractmethod
    async def claim(self, chat_id: str, stream_id: str) -> None:
        """Make ``stream_id`` the chat's one active stream; STREAM_ACTIVE when busy,
        CONFLICT when the stream id was used before."""

    @abstractmethod
    async def unclaim(self, chat_id: str, stream_id: str) -> None:
        """Undo :meth:`claim` of a stream that could not start."""

    @abstractmethod
    async def active_stream(self, chat_id: str) -> str | None:
        """The id of the chat's claimed stream, if any."""

    def lease(self, stream_id: str, *, wait: bool = True,
              optimistic: bool = False) -> AbstractAsyncContextManager[bool]:
        """Hold the stream for one operation (yields False when ``wait`` is off and
        another holder has it). ``optimistic``: a backend may skip taking the lease
        when its copy of the stream is current, and instead make the operation's one
        write conditional on nobody else having written or holding the stream; then
        :meth:`load` or :meth:`save` raise :class:`StaleCopy` and the caller redoes
        the operation without ``optimistic``."""
        return _always()

    async def is_current(self, stream_id: str) -> bool:
        """Whether this instance's copy of the stream is the latest state (checked
        after an optimistic operation that wrote nothing)."""
        return True

    async def load(self, stream_id: str, cached: StreamBuffer | None) -> StreamBuffer | None:
        """The stream's latest state (``cached`` when that is current), or None."""
        return cached

    @abstractmethod
    async def save(self, stream: StreamBuffer, events: Sequence[ChunkEvent] = (), *,
                   aliases: Mapping[str, str] | None = None, seen: Iterable[str] = (),
                   tokens: Mapping[str, int] | None = None, steps: bool = False) -> None:
        """Make ``stream``'s state current and publish ``events`` (in ``seq`` order) to
        the chat's subscribers, as one step. ``aliases`` and ``seen`` are what a push
        added to the reducer state besides its chunks, ``tokens`` the token counts it set
        (subscribers' chunks do not carry them); ``steps`` says the steps changed.
        A holder whose lease was taken over meanwhile is refused (STREAM_ACTIVE)."""

    @abstractmethod
    async def retire(self, stream: StreamBuffer) -> None:
        """``stream`` is written (or can never be): release the chat, keep its id known
        as ended, let its chunks expire."""

    async def closed_chat(self, stream_id: str) -> str | None:
        """The chat of ``stream_id`` if the stream ended and was retired."""
        return None

    async def idle_streams(self, before: float,
                           local: Mapping[str, StreamBuffer]) -> list[str]:
        """Ids of active streams whose last operation is older than ``before``
        (wall-clock seconds)."""
        return [sid for sid, s in local.items()
                if s.end_status is None and s.last_push <= before]

    async def still_idle(self, stream_id: str, before: float,
                         local: Mapping[str, StreamBuffer]) -> bool:
        """Checked again under the lease: nobody pushed since :meth:`idle_streams`."""
        stream = local.get(stream_id)
        return stream is not None and stream.end_status is None and stream.last_push <= before



class FanOut(ABC):
    """Delivery: a chat's subscribers on this instance, and the chat events every
    instance sees."""

    @abstractmethod
    async def subscribe(self, chat_id: str, after_seq: int | None = None) -> SubscriberQueue:
        """A queue that first holds the catch-up for ``after_seq`` (or the late-join
        snapshot when ``None``), then every chunk published from now on."""

    @abstractmethod
    async def unsubscribe(self, chat_id: str, queue: SubscriberQueue) -> None:
        """Stop delivering to ``queue``."""

    @abstractmethod
    def subscriber_count(self, chat_id: str) -> int:
        """Subscribers of ``chat_id`` on this instance (for tests and metrics)."""


    @abstractmethod
    async def publish_chat_event(self, payload: bytes) -> None:
        """Carry one encoded chat event to every instance's feed (this one's too)."""

    @abstractmethod
    async def chat_event_feed(self) -> AsyncIterator[bytes]:
        """Start following chat events; the iterator yields every event published from
        now on (on any instance), in the order the broker received them, and an empty
        payload where events may have been lost (a broker outage)."""



class Backend(StreamLog, FanOut):
    """A stream service's log and fan-out, over one broker."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections; subscribers' queues are closed."""

    async def reachable(self) -> bool:
        """Whether the broker answers (a process's own memory always does)."""
        return True


@asynccontextmanager
async def _always() -> AsyncIterator[bool]:
    yield True


def backend_from_url(url: str, *, queue_limit: int = DEFAULT_QUEUE_LIMIT) -> Backend:
    """The backend named by ``url``: ``memory://`` or ``redis://host:port/db``."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        from chatql.store.streams.backends.memory import MemoryBackend

        return MemoryBackend(queue_limit=queue_limit)
    if scheme in ("redis", "rediss", "unix"):
        from chatql.store.streams.backends.redis import RedisBackend

        return RedisBackend(url, queue_limit=queue_limit)
    raise ValueError(f"unsupported broker URL {url!r}: use memory:// or redis://")
