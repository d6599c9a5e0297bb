"""Files in a folder on this machine (``file:///path``).

Objects are plain files below the folder, named by their keys. An object is written to
a temporary name beside its place and renamed into it when complete, so a reader never
sees half a file, and a move (:meth:`LocalStorage.promote`) is one ``rename``. Disk work
runs in a worker thread, a batch of about 1 MiB at a time, while the event loop gathers
the next batch: it never waits on the disk.

A write or a move returns once it is on the disk: the file's bytes are synced before it
takes its name, and the folder after (so are new folders, in theirs). The caller records
a file only after that, so a power cut cannot leave a recorded file whose bytes were
still in memory.
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


def _sync_folder(folder: Path) -> None:
    """The names in ``folder`` (a new or renamed file) on the disk."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _make_folder(folder: Path) -> None:
    """``folder`` and its missing parents, each new one's name synced into its parent."""
    missing: list[Path] = []
    at = folder
    while not at.exists():
        missing.append(at)
        at = at.parent
    folder.mkdir(parents=True, exist_ok=True)
    for made in reversed(missing):
        _sync_folder(made.parent)


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
            _make_folder(target.parent)
            return open(partial, "wb")

        def settle_partial() -> None:
            # On the disk before it takes its name, and the name before the caller
            # records the file: a power cut never leaves a stored file's row naming
            # bytes that were only in memory.
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            os.replace(partial, target)
            _sync_folder(target.parent)

        handle = await asyncio.to_thread(open_partial)
        writes = ThreadLane(handle.writelines)
        try:
            async for chunk in chunks:
                await writes.add(chunk)
            await writes.finish()
            await asyncio.to_thread(settle_partial)
        except BaseException:
            await writes.settle()
            handle.close()
            with contextlib.suppress(OSError):
                partial.unlink()
            raise

    async def promote(self, staged: str, key: str) -> None:
        source, target = self.path_of(staged), self.path_of(key)

        def move() -> None:
            _make_folder(target.parent)
            os.replace(source, target)
            _sync_folder(target.parent)

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
