"""Live streams: one service over pluggable backends.

- :mod:`store.streams.service` — :class:`StreamService`, the only door for ``gql/``;
- :mod:`store.streams.reducer` — the one merge rule set (pure);
- :mod:`store.streams.persist` — the one-write persist of an ended stream;
- :mod:`store.streams.backends` — where state and fan-out live (``memory``, ``redis``);
- :mod:`store.streams.topic` and :mod:`store.streams.queue` — a chat's log and fan-out,
  and one subscriber's bounded queue.
"""

from chatql.store.streams.backends import Backend, backend_from_url
from chatql.store.streams.buffer import PushResult, StreamInfo, StreamResult
from chatql.store.streams.queue import SubscriberQueue
from chatql.store.streams.service import END_STATUSES, MAX_PUSH_CHUNKS, StreamService

__all__ = [
    "END_STATUSES",
    "MAX_PUSH_CHUNKS",
    "Backend",
    "PushResult",
    "StreamInfo",
    "StreamResult",
    "StreamService",
    "SubscriberQueue",
    "backend_from_url",
]
