"""Files in a folder on this machine (``file:///path``).

Objects are plain files below the folder, named by their keys. An object is written to
a temporary name beside its place and renamed into it when complete, so a reader never
sees half a file, and a move (:meth:`LocalStorage.promote`) is one ``rename``. Disk work
runs in a worker thread, a batch of about 1 MiB at a time, while the event loop gathers
the next batch: it never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from chatql.store.errors import InvalidArgument
from chatql.store.files.backends import READ_CHUNK, FileStorage, ThreadLane

__all__ = ["LocalStorage"]

class LocalStorage(FileStorage):
    """A folder of objects (created on first write)."""

    def __init__(self, path: str) -> None:
        self.root = Path(os.path.abspath(path))
        self.url = f"file://{self.root}"

    def path_of(self, key: str) -> Path:
        parts = key.split("/")
        if not key or any(part in ("", ".", "..") for part in parts):
            raise InvalidArgument(f"not a storage key: {key!r}")
        return self.root.joinpath(*parts)

    async def write(self, key: str, chunks: AsyncIterator[bytes]) -> None:
        target = self.path_of(key)
        partial = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")

        def open_partial() -> BinaryIO:
            target.parent.mkdir(parents=True, exist_ok=True)
            return open(partial, "wb")

        handle = await asyncio.to_thread(open_partial)
        writes = ThreadLane(handle.writelines)
        try:
            async for chunk in chunks:
                await writes.add(chunk)
            await writes.finish()
            await asyncio.to_thread(handle.close)
            await asyncio.to_thread(os.replace, partial, target)
        except BaseException:
            await writes.settle()
            handle.close()
            with contextlib.suppress(OSError):
                partial.unlink()
            raise

    async def promote(self, staged: str, key: str) -> None:
        source, target = self.path_of(staged), self.path_of(key)

        def move() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)

        await asyncio.to_thread(move)

    async def size(self, key: str) -> int | None:
        try:
            return (await asyncio.to_thread(self.path_of(key).stat)).st_size
        except FileNotFoundError:
            return None

    async def read(self, key: str) -> AsyncIterator[bytes]:
        handle = await asyncio.to_thread(open, self.path_of(key), "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, READ_CHUNK):
                yield chunk
        finally:
            handle.close()

    async def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(self.path_of(key).unlink)
