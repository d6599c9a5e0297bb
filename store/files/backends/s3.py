"""Files in S3-compatible object storage (``s3://bucket/prefix``), through ``obstore``.

The endpoint, region and credentials come from the standard ``AWS_*`` variables
(``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ALLOW_HTTP`` for a plain-HTTP endpoint …), read by obstore. An object is written as
a multipart upload of 5 MiB parts, at most two in flight, so an upload holds about
15 MiB of memory however large it is; an upload that fails part-way is aborted and
leaves no object (an abort the store never received leaves hidden parts: a bucket
lifecycle rule that aborts incomplete multipart uploads reclaims them).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import obstore
from obstore.store import from_url

from chatql.store.files.backends import READ_CHUNK, FileStorage

__all__ = ["S3Storage"]

#: Multipart part size (S3's smallest) and parts in flight: the memory an upload holds.
_PART_BYTES = 5 * 1024 * 1024
_PARTS_IN_FLIGHT = 2


class S3Storage(FileStorage):
    """A bucket (and prefix) of objects."""

    #: S3 has no rename: a promote is a server-side copy of every byte.
    moves_by_copy = True

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self._options = options
        self._made: Any = None

    def _store(self) -> Any:
        # Made on first use: a service that never stores a file never connects.
        if self._made is None:
            options = {"retry_config": {"max_retries": 2,
                                        "retry_timeout": timedelta(seconds=10)},
                       **self._options}
            self._made = from_url(self.url, **options)
        return self._made

    async def write(self, key: str, chunks: AsyncIterator[bytes]) -> None:
        await obstore.put_async(self._store(), key, chunks, use_multipart=True,
                                chunk_size=_PART_BYTES, max_concurrency=_PARTS_IN_FLIGHT)

    async def promote(self, staged: str, key: str) -> None:
        store = self._store()
        await obstore.copy_async(store, staged, key)
        await self.delete(staged)

    async def size(self, key: str) -> int | None:
        try:
            meta = await obstore.head_async(self._store(), key)
        except FileNotFoundError:
            return None
        return int(meta["size"])

    async def read(self, key: str) -> AsyncIterator[bytes]:
        response = await obstore.get_async(self._store(), key)
        async for chunk in response.stream(min_chunk_size=READ_CHUNK):
            yield bytes(chunk)

    async def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await obstore.delete_async(self._store(), key)

    async def presign_put(self, key: str, expires_in: timedelta) -> str | None:
        url: str = await obstore.sign_async(self._store(), "PUT", key, expires_in)
        return url
