"""Where files' bytes live: one small interface, one module per backend.

:func:`storage_from_url` picks the backend once, from ``CHATQL_FILES_URL``:

- ``file:///path`` (:mod:`store.files.backends.local`): a folder on this machine.
- ``s3://bucket/prefix`` (:mod:`store.files.backends.s3`): any S3-compatible store
  (AWS, MinIO, SeaweedFS, R2), through ``obstore``; endpoint and credentials from the
  standard ``AWS_*`` variables.

Keys are ``/``-separated paths below the backend's root. A backend only stores, reads,
moves and deletes objects; what a key means (content addressing, staging of uploads)
is decided by :class:`store.files.service.FileService`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

from chatql.store.errors import InvalidArgument

__all__ = ["FileStorage", "ThreadLane", "storage_from_url"]

#: Bytes handed over per chunk when an object is read.
READ_CHUNK = 256 * 1024


#: Bytes handed to a :class:`ThreadLane`'s thread per job.
LANE_BATCH = 1024 * 1024


class ThreadLane:
    """Bytes handed to ``work`` in a worker thread, a batch (a list of chunks of about
    :data:`LANE_BATCH` bytes) at a time and in order, without the event loop waiting for
    it: :meth:`add` waits only for the batch before (usually long done), so an upload's
    next bytes are received while the last ones are hashed or written. ``work`` must
    release the GIL on large buffers (hashlib and file writes do)."""

    def __init__(self, work: Callable[[list[bytes]], Any]) -> None:
        self._work = work
        self._batch: list[bytes] = []
        self._gathered = 0
        self._job: asyncio.Future[Any] | None = None

    async def add(self, chunk: bytes) -> None:
        self._batch.append(chunk)
        self._gathered += len(chunk)
        if self._gathered >= LANE_BATCH:
            await self._hand_over()

    async def finish(self) -> None:
        """Hand over what is gathered and wait for every batch (raising what failed)."""
        await self._hand_over()
        await self._wait()

    async def settle(self) -> None:
        """Wait for the running batch, however it ends, and drop the rest: on the way out
        of a failure, before what ``work`` uses is closed (a cancellation does not stop
        a thread)."""
        job, self._job, self._batch = self._job, None, []
        if job is not None:
            await asyncio.wait([job])
            if not job.cancelled():
                job.exception()  # seen: the failure being handled is the one reported

    async def _wait(self) -> None:
        # Shielded: a cancellation leaves the batch running and known, for settle().
        if self._job is not None:
            await asyncio.shield(self._job)
            self._job = None

    async def _hand_over(self) -> None:
        await self._wait()
        batch, self._batch, self._gathered = self._batch, [], 0
        if batch:
            self._job = asyncio.get_running_loop().run_in_executor(None, self._work, batch)


class FileStorage(ABC):
    """Objects by key: written once from a stream, moved, read, deleted."""

    #: The URL the storage was made from.
    url: str
    #: Whether :meth:`promote` copies the bytes (object stores have no rename): the
    #: service then keeps an upload where it was staged, and the file's record names
    #: that key, rather than copying it to its content address.
    moves_by_copy: bool = False

    @abstractmethod
    async def write(self, key: str, chunks: AsyncIterator[bytes]) -> None:
        """Store the bytes of ``chunks`` under ``key``. Nothing is readable under the key
        unless every chunk was written: an exception from ``chunks`` (a refused or
        broken upload) propagates and leaves no object behind."""

    @abstractmethod
    async def promote(self, staged: str, key: str) -> None:
        """Make the object at ``staged`` the object at ``key`` (replacing what is there)
        and remove ``staged``."""

    @abstractmethod
    async def size(self, key: str) -> int | None:
        """The object's size in bytes; None when there is none."""

    @abstractmethod
    def read(self, key: str) -> AsyncIterator[bytes]:
        """The object's bytes, chunk by chunk (FileNotFoundError when there is none)."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Remove the object; a missing one is no error."""

    async def presign_put(self, key: str, expires_in: timedelta) -> str | None:
        """A URL a client can PUT the object's bytes to directly; None when the backend
        cannot give one (the service then offers its own upload address)."""
        return None


def storage_from_url(url: str) -> FileStorage:
    """The backend for ``url`` (``file:///path`` or ``s3://bucket/prefix``)."""
    if url.startswith("file://"):
        from chatql.store.files.backends.local import LocalStorage

        path = url.removeprefix("file://")
        if not path:
            raise InvalidArgument("a file:// files URL needs a path")
        return LocalStorage(path)
    if url.startswith("s3://"):
        from chatql.store.files.backends.s3 import S3Storage

        return S3Storage(url)
    raise InvalidArgument("the files URL must start with file:// or s3://")
