"""Every HTTP request, observed once: its request id, its metrics and its log line.

:class:`RequestObserver` is the outermost HTTP layer. It takes the request id from
``X-Request-Id`` (1 to 128 visible ASCII characters; otherwise, or without one, it makes
one) and echoes it in the response, times the request to its last byte, and then:

- adds the GraphQL requests to ``chatql_requests_total`` and
  ``chatql_request_duration_seconds`` (see gql/metrics.py);
- with ``CHATQL_LOG_FORMAT=json``, writes one JSON line on the ``chatql.requests``
  logger: ``requestId``, ``method``, ``path``, ``status``, ``operation``, ``user``,
  ``tenant``, ``durationMs`` and ``outcome``. Nothing else of the request is logged —
  no headers (so no tokens), no variables or documents (so no message content).

The layers below fill the :class:`RequestRecord` of the request (:func:`current_record`)
as they learn the operation, the caller and the outcome; a response that never reached
the GraphQL layer gets its outcome from its status.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chatql.gql.metrics import Metrics

__all__ = ["REQUEST_LOGGER", "RequestObserver", "RequestRecord", "configure_json_logs",
           "current_record"]

REQUEST_LOGGER = "chatql.requests"
_request_logger = logging.getLogger(REQUEST_LOGGER)

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


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            return orjson.dumps(fields).decode()
        return orjson.dumps({"level": record.levelname, "logger": record.name,
                             "message": record.getMessage()}).decode()


def configure_json_logs() -> None:
    """Send request lines, one JSON object each, to stderr (once per process)."""
    if any(isinstance(handler.formatter, _JsonLines) for handler in _request_logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines())
    _request_logger.addHandler(handler)
    _request_logger.setLevel(logging.INFO)
    _request_logger.propagate = False


class RequestObserver:
    """The outermost HTTP layer: request ids, request metrics and request logs."""

    def __init__(self, app: ASGIApp, metrics: Metrics | None, log_json: bool,
                 graphql_path: str = "/graphql") -> None:
        self.app = app
        self.metrics = metrics
        self.log_json = log_json
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
        if self.log_json:
            fields: dict[str, Any] = {
                "requestId": record.request_id,
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "operation": record.operation or None,
                "user": record.user or None,
                "tenant": record.tenant or None,
                "durationMs": round(seconds * 1000, 3),
                "outcome": outcome,
            }
            _request_logger.info("request", extra={"fields": fields})
