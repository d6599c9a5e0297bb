"""The service's logs: one configuration for uvicorn's lines and chatql's, in text or JSON,
with the per-request lines written off the event loop.

``CHATQL_LOG_FORMAT`` picks the format of *every* line the server writes — uvicorn's
start-up and error lines, chatql's start line and the request lines — so a log shipper
that expects JSON never meets a plain-text line. ``chatql serve --log-level`` sets the
level of all of them: at ``warning`` no request line is made at all.

Request lines are the one kind written on every request: making a log record, formatting
it and writing it costs a small read a tenth of its throughput, so they skip the logging
machinery. The event loop appends each line's fields to :class:`RequestLines`, and a
thread formats what gathered every 50 ms and writes it in one call. The
``chatql.requests`` logger only says whether they are written (at ``INFO``). Every other
line goes through one :class:`BackgroundHandler`, also written by a thread. Either way a
pipe that nobody drains blocks a thread, never the server.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import queue
import sys
import threading
from logging.handlers import QueueHandler, QueueListener
from typing import Any

import orjson

__all__ = ["REQUEST_LOGGER", "SERVICE_LOGGER", "BackgroundHandler", "JsonLines",
           "RequestLines", "TextLines", "log_config", "request_lines_for"]

#: The logger of the request lines (one per HTTP request).
REQUEST_LOGGER = "chatql.requests"
#: The logger of the service's own lines (its start line, its warnings).
SERVICE_LOGGER = "chatql"

FORMATS = ("text", "json")


class JsonLines(logging.Formatter):
    """One JSON object per line: a request line's fields as they are, any other line as
    ``{"level", "logger", "message"}``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            return orjson.dumps(fields).decode()
        line: dict[str, Any] = {"level": record.levelname, "logger": record.name,
                                "message": record.getMessage()}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line).decode()


class TextLines(logging.Formatter):
    """Plain lines in uvicorn's style (``INFO:     …``); a request line reads like
    uvicorn's access line, followed by the operation, the time taken and the request id."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        prefix = f"{record.levelname}:".ljust(10)
        if not isinstance(fields, dict):
            return prefix + super().format(record)
        client = fields.get("client") or "-"
        operation = f" {fields['operation']}" if fields.get("operation") else ""
        return (f'{prefix}{client} - "{fields["method"]} {fields["path"]}" {fields["status"]}'
                f'{operation} {fields["durationMs"]}ms id={fields["requestId"]}')


class BackgroundHandler(QueueHandler):
    """Hands records to a thread that formats and writes them to stderr.

    The caller's cost is making the record and one queue put; the formatting and the
    write happen in the thread. Records are queued as they are (not pre-formatted, as
    :class:`~logging.handlers.QueueHandler` would do in the caller). A forked worker
    starts its own thread on its first record; lines still queued at exit are written.
    While stderr takes nothing (a pipe nobody reads), up to :attr:`MAX_QUEUED` records
    wait; beyond that they are dropped and counted, and the server goes on.
    """

    #: Records held while the writer cannot write (a stuck pipe); past this many, new
    #: records are dropped and counted (:attr:`dropped`) rather than held without bound.
    MAX_QUEUED = 100_000

    def __init__(self, format: str = "text") -> None:
        super().__init__(queue.Queue(self.MAX_QUEUED))
        #: Records dropped because the queue was full.
        self.dropped = 0
        self._target = logging.StreamHandler(sys.stderr)
        self._target.setFormatter(JsonLines() if format == "json" else TextLines())
        self._listener: QueueListener | None = None
        self._pid = -1

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record

    def emit(self, record: logging.LogRecord) -> None:
        if self._pid != os.getpid():
            self._start()
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _start(self) -> None:
        self._pid = os.getpid()
        self._listener = QueueListener(self.queue, self._target)
        self._listener.start()
        atexit.register(self.close)

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None and self._pid == os.getpid():
            listener.stop()  # writes what is still queued
        self._target.flush()
        super().close()


class RequestLines:
    """Request lines, written in batches by a thread.

    :meth:`add` is all a request pays: one append of the line's fields. Every
    :attr:`INTERVAL` seconds the thread formats what gathered (JSON or text, as the rest
    of the log) and writes it to stderr in one call. While stderr takes nothing, up to
    :attr:`MAX_PENDING` lines wait; beyond that new lines are dropped and counted
    (:attr:`dropped`). What is still pending at exit is written then.
    """

    INTERVAL = 0.05
    MAX_PENDING = 100_000

    def __init__(self, log_format: str = "text") -> None:
        self._format = (JsonLines() if log_format == "json" else TextLines()).format
        self._pending: collections.deque[dict[str, Any]] = collections.deque()
        self._stop = threading.Event()
        self._pid = -1
        self._lock = threading.Lock()
        #: Lines dropped because too many were pending.
        self.dropped = 0

    def add(self, fields: dict[str, Any]) -> None:
        """Queue one request's line."""
        if self._pid != os.getpid():
            self._start()
        if len(self._pending) >= self.MAX_PENDING:
            self.dropped += 1
            return
        self._pending.append(fields)

    def _start(self) -> None:
        self._pid = os.getpid()
        self._stop.clear()
        threading.Thread(target=self._run, name="chatql-request-lines", daemon=True).start()
        atexit.register(self.flush)

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self.flush()

    def flush(self) -> None:
        """Write every pending line now (the thread's work; also at exit)."""
        with self._lock:
            pending, lines = self._pending, []
            while pending:
                record = logging.LogRecord(REQUEST_LOGGER, logging.INFO, "", 0, "request",
                                           None, None)
                record.fields = pending.popleft()
                lines.append(self._format(record))
            if lines:
                try:
                    sys.stderr.write("\n".join(lines) + "\n")
                    sys.stderr.flush()
                except (OSError, ValueError):  # stderr closed: nothing more to say
                    pass

    def close(self) -> None:
        """Stop the thread, writing what is pending."""
        self._stop.set()
        self.flush()


def log_config(log_format: str, level: str = "info") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a served process: uvicorn's loggers and
    chatql's, all in ``log_format`` at ``level``.

    uvicorn's own access line is left off (``chatql serve`` turns it off): chatql writes
    its request line instead, in the same format as the rest. Every line is written by
    one :class:`BackgroundHandler`.
    """
    if log_format not in FORMATS:
        raise ValueError(f"CHATQL_LOG_FORMAT must be text or json, got {log_format!r}")
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # One handler, one thread, one order for every line: nothing the event loop logs
        # waits on stderr (a full pipe blocks the thread, not the server).
        "handlers": {"default": {"()": BackgroundHandler, "format": log_format}},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            SERVICE_LOGGER: {"handlers": ["default"], "level": level, "propagate": False},
            # Only its level counts: request lines are written by RequestLines.
            REQUEST_LOGGER: {"handlers": [], "level": level, "propagate": False},
        },
    }


def request_lines_for(log_format: str) -> RequestLines | None:
    """The writer of an app's request lines in ``log_format``, or None.

    Request lines are written when the ``chatql.requests`` logger's own level is
    ``INFO`` or lower: ``chatql serve`` sets it from ``--log-level``. A level only
    inherited (a root logger at ``INFO``, as a test's log capture sets it) writes none,
    since these lines go to stderr themselves rather than through the root's handlers.
    ``CHATQL_LOG_FORMAT=json`` turns them on where nothing set the logger's level (an app
    served by ``uvicorn --factory`` rather than ``chatql serve``).
    """
    logger = logging.getLogger(REQUEST_LOGGER)
    if log_format == "json" and logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if logger.level == logging.NOTSET or not logger.isEnabledFor(logging.INFO):
        return None
    return RequestLines(log_format)
