"""``/healthz`` (the process is alive) and ``/readyz`` (it can serve).

``/healthz`` answers 200 while the process runs — also while the database is away, so
an orchestrator does not restart every instance when the database blips.

``/readyz`` answers 200 ``{"status": "ready"}`` when the database answers, its
migrations are at the head revision this code expects, and the stream broker answers;
otherwise 503 with ``{"status": "not ready", "failed": [...]}`` naming each check that
failed (``database``, ``migrations``, ``broker``, ``draining``). From the moment the
process is told to stop (SIGTERM or SIGINT) it answers 503 ``draining`` and never 200
again, while in-flight requests and live streams finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chatql.store.db.migrate import current_revision, head_revision

__all__ = ["Readiness"]

#: Seconds each check may take before it counts as failed.
_CHECK_TIMEOUT = 3.0


class Readiness:
    """One app's readiness: its checks and whether it is draining."""

    def __init__(self, services_of: Callable[[Any], Any]) -> None:
        self._services_of = services_of
        self.draining = False
        self._head: str | None = None
        self._restore: list[tuple[int, Any]] = []

    def watch_signals(self) -> None:
        """Start draining on SIGTERM/SIGINT, before the server's own handling of them
        (which is kept and still runs)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                previous = signal.getsignal(signum)
            except ValueError:  # not the main thread: the server owns the signals
                return

            def drain(received: int, frame: Any, previous: Any = previous) -> None:
                self.draining = True
                if callable(previous):
                    previous(received, frame)
                elif previous == signal.SIG_DFL:
                    signal.signal(received, signal.SIG_DFL)
                    os.kill(os.getpid(), received)

            try:
                signal.signal(signum, drain)
            except ValueError:
                return
            self._restore.append((signum, previous))

    def close(self) -> None:
        """Shutdown has begun: draining from now on; the signal handlers are restored."""
        self.draining = True
        for signum, previous in self._restore:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signum, previous)
        self._restore.clear()

    async def _database(self, services: Any) -> tuple[bool, bool]:
        """(reachable, at head)."""
        try:
            async with asyncio.timeout(_CHECK_TIMEOUT):
                current = await current_revision(services.db)
        except Exception:  # unreachable, refused, timed out: not ready
            return False, False
        if self._head is None:
            self._head = head_revision()
        return True, current == self._head

    async def _broker(self, services: Any) -> bool:
        streams = services.streams
        if streams is None:
            return True
        return bool(await streams.backend.reachable())

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        failed: list[str] = []
        if self.draining:
            failed.append("draining")
        else:
            services = self._services_of(request)
            (reachable, at_head), broker = await asyncio.gather(
                self._database(services), self._broker(services))
            if not reachable:
                failed.append("database")
            elif not at_head:
                failed.append("migrations")
            if not broker:
                failed.append("broker")
            # A signal may have come while the checks ran.
            if self.draining:
                failed.insert(0, "draining")
        if failed:
            return JSONResponse({"status": "not ready", "failed": failed}, status_code=503)
        return JSONResponse({"status": "ready"})
