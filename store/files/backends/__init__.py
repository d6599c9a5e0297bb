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

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from datetime import timedelta

from chatql.store.errors import InvalidArgument

__all__ = ["FileStorage", "storage_from_url"]

#: Bytes handed over per chunk when an object is read.
READ_CHUNK = 256 * 1024


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
