"""``/metrics``: the service's numbers in the Prometheus text format.

The families (all prefixed ``chatql_``):

- ``requests_total{operation,outcome}`` and ``request_duration_seconds{operation}``:
  GraphQL requests over HTTP (fast lanes included) by operation name and outcome
  (``ok`` or the first error's ``extensions.code``);
- ``ws_operations_total{operation,outcome}``: GraphQL operations over WebSocket (either
  subprotocol, fast plans included), counted when each ends, by the same operation
  names and outcomes;
- ``active_streams``, ``subscribers{transport}`` (``ws``/``sse``);
- ``chunks_pushed_total`` and ``chunks_delivered_total`` (chunks handed to subscribers);
- ``stream_persist_seconds``: writing an ended stream to the database;
- ``db_pool_connections{state}`` (``in_use``/``idle``);
- ``sweeper_runs_total{sweeper,outcome}`` (``retention``/``idle_streams``).

Hot paths only add to plain integers the store keeps (chunks pushed and delivered,
sweeps); :class:`MetricsFeed` turns their differences into counters when the endpoint is
scraped and every few seconds, and sets the gauges read from the services then too.

With several worker processes (``chatql serve --workers N``) ``chatql serve`` sets
``PROMETHEUS_MULTIPROC_DIR`` to a fresh folder before the workers start: every process
writes its values there and a scrape, answered by any one of them, sums them all
(prometheus_client's multiprocess mode; gauges are summed over live processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as prometheus_multiprocess
from starlette.requests import Request
from starlette.responses import Response

from chatql.store.streams.queue import DELIVERED

if TYPE_CHECKING:
    from chatql.gql.context import Services

__all__ = ["Metrics", "MetricsFeed", "multiprocess_dir", "process_metrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                    10.0)
#: Seconds between two feeds of the store's counts into the metrics.
FEED_INTERVAL = 5.0


def multiprocess_dir() -> str | None:
    """The folder of prometheus_client's multiprocess mode, when it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class Metrics:
    """The metric families of this process (one set, whatever number of apps)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter("chatql_requests", "GraphQL requests over HTTP",
                                ["operation", "outcome"], registry=registry)
        self.latency = Histogram("chatql_request_duration_seconds",
                                 "Time to answer a GraphQL request over HTTP", ["operation"],
                                 buckets=_LATENCY_BUCKETS, registry=registry)
        self.ws_operations = Counter("chatql_ws_operations",
                                     "GraphQL operations over WebSocket",
                                     ["operation", "outcome"], registry=registry)
        self.active_streams = Gauge("chatql_active_streams", "Live streams not yet ended",
                                    multiprocess_mode="livesum", registry=registry)
        self.subscribers = Gauge("chatql_subscribers", "Open subscriptions by transport",
                                 ["transport"], multiprocess_mode="livesum",
                                 registry=registry)
        self.chunks_pushed = Counter("chatql_chunks_pushed", "Chunks accepted by pushes",
                                     registry=registry)
        self.chunks_delivered = Counter("chatql_chunks_delivered",
                                        "Chunks handed to subscribers", registry=registry)
        self.persist_seconds = Histogram("chatql_stream_persist_seconds",
                                         "Time to write an ended stream to the database",
                                         buckets=_LATENCY_BUCKETS, registry=registry)
        self.pool = Gauge("chatql_db_pool_connections", "Database pool connections",
                          ["state"], multiprocess_mode="livesum", registry=registry)
        self.sweeps = Counter("chatql_sweeper_runs", "Sweeper runs",
                              ["sweeper", "outcome"], registry=registry)
        # Labelled children looked up once per label set: the request path stays a
        # dictionary lookup and two additions.
        self._request_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._ws_children: dict[tuple[str, str], Any] = {}
        self._delivered_seen = 0
        for transport in ("ws", "sse"):
            self.subscribers.labels(transport)

    def observe_request(self, operation: str, outcome: str, seconds: float) -> None:
        key = (operation, outcome)
        children = self._request_children.get(key)
        if children is None:
            children = (self.requests.labels(operation, outcome),
                        self.latency.labels(operation))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_ws_operation(self, operation: str, outcome: str) -> None:
        key = (operation, outcome)
        child = self._ws_children.get(key)
        if child is None:
            child = self._ws_children[key] = self.ws_operations.labels(operation, outcome)
        child.inc()

    def feed_delivered(self) -> None:
        """Add the chunks this process delivered since the last feed."""
        total = DELIVERED.chunks
        if total > self._delivered_seen:
            self.chunks_delivered.inc(total - self._delivered_seen)
        self._delivered_seen = total

    def exposition(self) -> bytes:
        """The text a scrape gets: this process's values, or every worker's summed."""
        if multiprocess_dir() is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        prometheus_multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)


_process_metrics: Metrics | None = None


def process_metrics() -> Metrics:
    """The process's metrics, made on first use."""
    global _process_metrics
    if _process_metrics is None:
        _process_metrics = Metrics()
    return _process_metrics


class MetricsFeed:
    """Feeds one app's services into the process's metrics (by differences)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._services: Services | None = None
        self._seen: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self, services: Services, sweepers: dict[str, Any]) -> None:
        self._services = services
        self._sweepers = sweepers
        if services.streams is not None:
            services.streams.on_persisted = self.metrics.persist_seconds.observe
        self._task = asyncio.create_task(self._run(), name="chatql-metrics-feed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.feed()
        directory = multiprocess_dir()
        if directory is not None:
            # This process's live gauges leave the sums.
            prometheus_multiprocess.mark_process_dead(  # type: ignore[no-untyped-call]
                os.getpid(), directory)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(FEED_INTERVAL)
            self.feed()

    def _delta(self, key: str, value: int) -> int:
        previous = self._seen.get(key, 0)
        self._seen[key] = value
        return max(0, value - previous)

    def feed(self) -> None:
        """Bring every counter and gauge up to date."""
        metrics = self.metrics
        metrics.feed_delivered()
        services = self._services
        if services is None:
            return
        streams = services.streams
        if streams is not None:
            metrics.active_streams.set(streams.active_count)
            pushed = self._delta("pushed", streams.chunks_pushed)
            if pushed:
                metrics.chunks_pushed.inc(pushed)
            swept = self._delta("idle_streams", streams.idle_sweeps)
            if swept:
                metrics.sweeps.labels("idle_streams", "ok").inc(swept)
        retention = self._sweepers.get("retention")
        if retention is not None:
            for outcome, count in (("ok", retention.runs), ("error", retention.failures)):
                runs = self._delta(f"retention_{outcome}", count)
                if runs:
                    metrics.sweeps.labels("retention", outcome).inc(runs)
        pool = services.db.engine.pool
        in_use = getattr(pool, "checkedout", None)
        idle = getattr(pool, "checkedin", None)
        if callable(in_use) and callable(idle):
            metrics.pool.labels("in_use").set(in_use())
            metrics.pool.labels("idle").set(idle())

    async def endpoint(self, request: Request) -> Response:
        self.feed()
        body = await asyncio.to_thread(self.metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
