"""The service's logs: one configuration for uvicorn's lines and chatql's, in text or JSON,
with the per-request lines written off the event loop.

``CHATQL_LOG_FORMAT`` picks the format of *every* line the server writes — uvicorn's
start-up and error lines, chatql's start line and the request lines — so a log shipper
that expects JSON never meets a plain-text line. ``chatql serve --log-level`` sets the
level of all of them: at ``warning`` no request line is made at all.

Request lines are the one kind written on every request. Formatting a line and writing it
to a pipe costs more than a small read costs to answer, so the event loop only hands each
record to a queue (:class:`BackgroundHandler`); a thread formats and writes them, in
order, and a pipe that nobody drains blocks that thread, never the server.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import sys
from logging.handlers import QueueHandler, QueueListener
from typing import Any

import orjson

__all__ = ["REQUEST_LOGGER", "SERVICE_LOGGER", "BackgroundHandler", "JsonLines", "TextLines",
           "log_config", "request_logger_ready"]

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
            REQUEST_LOGGER: {"handlers": ["default"], "level": level, "propagate": False},
        },
    }


def request_logger_ready(log_format: str) -> None:
    """Give the request logger a background handler in ``log_format`` unless it has a
    handler already: an app served without ``chatql serve`` (``uvicorn --factory``) and
    ``CHATQL_LOG_FORMAT=json`` still writes its JSON request lines."""
    logger = logging.getLogger(REQUEST_LOGGER)
    if logger.handlers:
        return
    logger.addHandler(BackgroundHandler(log_format))
    logger.setLevel(logging.INFO)
    logger.propagate = False
