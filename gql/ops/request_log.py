"""Every HTTP request, observed once: its request id, its metrics and its log line.

:class:`RequestObserver` is the outermost HTTP layer. It takes the request id from
``X-Request-Id`` (1 to 128 visible ASCII characters; otherwise, or without one, it makes
one) and echoes it in the response, times the request to its last byte, and then:

- adds the GraphQL requests to ``chatql_requests_total`` and
  ``chatql_request_duration_seconds`` (see gql/ops/metrics.py);
- when the ``chatql.requests`` logger takes ``INFO`` lines, writes one line (in the log
  format, in batches from a thread: see :mod:`gql.ops.logs`) with ``requestId``,
  ``client``, ``method``, ``path``, ``status``, ``operation``, ``user``, ``tenant``,
  ``durationMs`` and ``outcome``. Nothing else of the request is logged — no headers
  (so no tokens), no variables or documents (so no message content).

The layers below fill the :class:`RequestRecord` of the request (:func:`current_record`)
as they learn the operation, the caller and the outcome; a response that never reached
the GraphQL layer gets its outcome from its status.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chatql.gql.ops.logs import RequestLines
from chatql.gql.ops.metrics import Metrics

__all__ = ["RequestObserver", "RequestRecord", "current_record"]


_STATUS_OUTCOMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "FORBIDDEN",
                    404: "NOT_FOUND", 405: "INVALID_ARGUMENT", 413: "PAYLOAD_TOO_LARGE",
                    415: "INVALID_ARGUMENT", 429: "RATE_LIMITED"}


@dataclass(slots=True)
class RequestRecord:
    """What the layers of one HTTP request learned about it."""

    request_id: str
    operation: str = ""
    user: str = ""
    tenant: str = ""
    #: ``ok`` or an error code; empty until the GraphQL layer knows.
    outcome: str = ""


_current: ContextVar[RequestRecord | None] = ContextVar("chatql_request", default=None)


def current_record() -> RequestRecord | None:
    """The record of the HTTP request being served in this task, if any."""
    return _current.get()


class _RequestIds:
    """New request ids: 32 hex digits, a random half made once per process and a
    counter — unique across processes and instances like a random id, without asking
    the system for randomness on every request."""

    def __init__(self) -> None:
        self._pid = -1
        self._prefix = ""
        self._counter = itertools.count()

    def next(self) -> str:
        if os.getpid() != self._pid:  # a forked process makes its own half
            self._pid = os.getpid()
            self._prefix = uuid.uuid4().hex[:16]
            self._counter = itertools.count()
        return f"{self._prefix}{next(self._counter):016x}"


_new_request_id = _RequestIds().next


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            if 0 < len(value) <= 128 and all(0x21 <= byte <= 0x7E for byte in value):
                return str(value.decode("ascii"))
            break
    return _new_request_id()


def _outcome_of(status: int) -> str:
    if status < 400:
        return "ok"
    return _STATUS_OUTCOMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


class RequestObserver:
    """The outermost HTTP layer: request ids, request metrics and request logs."""

    def __init__(self, app: ASGIApp, metrics: Metrics | None,
                 lines: RequestLines | None = None, graphql_path: str = "/graphql") -> None:
        self.app = app
        self.metrics = metrics
        #: Where request lines go; None writes none.
        self.lines = lines
        self.graphql_path = graphql_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        record = RequestRecord(_request_id(scope))
        token = _current.set(record)
        header = (b"x-request-id", record.request_id.encode("ascii"))
        # A request that fails before its response starts is a 500.
        status = 500

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except ClientDisconnect:
            # The client went away while its body was being read: there is no one to
            # answer, and nothing went wrong on this side (nginx's 499).
            status, record.outcome = 499, "CLIENT_CLOSED"
        finally:
            _current.reset(token)
            self._observe(scope, record, status, time.perf_counter() - started)

    def _observe(self, scope: Scope, record: RequestRecord, status: int,
                 seconds: float) -> None:
        outcome = record.outcome or _outcome_of(status)
        if record.outcome == "ok" and status >= 400:
            outcome = _outcome_of(status)
        graphql = scope["path"] == self.graphql_path
        if graphql and self.metrics is not None and (record.operation or status >= 400):
            self.metrics.observe_request(record.operation or "unknown", outcome, seconds)
        if self.lines is not None:
            client = scope.get("client")
            fields: dict[str, Any] = {
                "requestId": record.request_id,
                "client": f"{client[0]}:{client[1]}" if client else None,
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "operation": record.operation or None,
                "user": record.user or None,
                "tenant": record.tenant or None,
                "durationMs": round(seconds * 1000, 3),
                "outcome": outcome,
            }
            self.lines.add(fields)
