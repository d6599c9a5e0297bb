"""The file storage backends, each against the real thing: a folder, and a SeaweedFS S3
server (never a mock)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from chatql.store.errors import InvalidArgument
from chatql.store.files.backends import LANE_BATCH, FileStorage, ThreadLane, storage_from_url
from chatql.store.files.backends.local import LocalStorage
from chatql.store.files.backends.s3 import S3Storage
from chatql.store.files.service import content_key, staging_key
from tests.s3 import Seaweed, s3_environment, s3_server  # noqa: F401 - the fixture


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FileStorage]:
    if request.param == "local":
        yield storage_from_url(f"file://{tmp_path / 'files'}")
        return
    server: Seaweed = request.getfixturevalue("s3_server")
    saved = {name: os.environ.get(name) for name in s3_environment(server)}
    os.environ.update(s3_environment(server))
    try:
        yield storage_from_url(f"s3://chatql/{tmp_path.name}")
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def pieces(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def read_all(storage: FileStorage, key: str) -> bytes:
    return b"".join([chunk async for chunk in storage.read(key)])


def test_the_url_picks_the_backend(tmp_path: Path) -> None:
    assert isinstance(storage_from_url(f"file://{tmp_path}"), LocalStorage)
    assert isinstance(storage_from_url("s3://bucket/prefix"), S3Storage)
    for url in ("file://", "gs://bucket", "/plain/path"):
        with pytest.raises(InvalidArgument):
            storage_from_url(url)


def test_keys_are_content_addressed_per_tenant() -> None:
    digest = "ab" + "0" * 62
    assert content_key("acme", digest) == f"objects/acme/ab/{digest}"
    # A tenant id that is no safe path segment is hashed, never a path of its own.
    for tenant in ("..", "a/b", "x" * 150, "ünïcode"):
        key = content_key(tenant, digest)
        assert key.startswith("objects/~") and key.count("/") == 3
    assert content_key("acme", digest) != content_key("other", digest)
    assert staging_key("f1") == "uploads/f1"


async def test_write_read_promote_delete(storage: FileStorage) -> None:
    data = os.urandom(6 * 1024 * 1024 + 123)  # more than one multipart part
    await storage.write("uploads/one", pieces(data))
    assert await storage.size("uploads/one") == len(data)
    await storage.promote("uploads/one", "objects/t/ab/one")
    assert await storage.size("uploads/one") is None
    assert await read_all(storage, "objects/t/ab/one") == data
    # Promoting onto an existing object replaces it.
    await storage.write("uploads/two", pieces(b"second"))
    await storage.promote("uploads/two", "objects/t/ab/one")
    assert await read_all(storage, "objects/t/ab/one") == b"second"
    await storage.delete("objects/t/ab/one")
    await storage.delete("objects/t/ab/one")  # gone already: no error
    assert await storage.size("objects/t/ab/one") is None
    with pytest.raises(FileNotFoundError):
        await read_all(storage, "objects/t/ab/one")


async def test_a_failed_write_leaves_nothing(storage: FileStorage) -> None:
    class Refused(Exception):
        pass

    async def broken() -> AsyncIterator[bytes]:
        yield b"x" * (6 * 1024 * 1024)
        raise Refused

    with pytest.raises(Refused):
        await storage.write("uploads/broken", broken())
    assert await storage.size("uploads/broken") is None


async def test_presigned_put(storage: FileStorage) -> None:
    url = await storage.presign_put("uploads/signed", timedelta(minutes=5))
    if isinstance(storage, LocalStorage):
        assert url is None  # the service offers its own upload address instead
        return
    assert url is not None
    async with httpx.AsyncClient() as http:
        response = await http.put(url, content=b"put directly")
    assert response.status_code == 200
    assert await read_all(storage, "uploads/signed") == b"put directly"


def test_local_keys_stay_inside_the_folder(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    for key in ("../escape", "a/../../b", "", "/abs", "a//b"):
        with pytest.raises(InvalidArgument):
            storage.path_of(key)


async def test_a_lane_hands_batches_over_in_order_and_settles_after_a_cancellation() -> None:
    """The thread lane gives ``work`` every byte in order, a batch of about 1 MiB at a
    time; and a task cancelled while it waits for a batch leaves that batch known, so
    ``settle`` returns only once the thread is done with it (what it uses is closed
    after that)."""
    seen: list[bytes] = []
    lane = ThreadLane(lambda batch: seen.extend(batch))
    chunks = [bytes([n]) * (300 * 1024) for n in range(10)]
    for chunk in chunks:
        await lane.add(chunk)
    await lane.finish()
    assert seen == chunks

    release, finished = threading.Event(), threading.Event()

    def slow(batch: list[bytes]) -> None:
        release.wait(10)
        finished.set()

    lane = ThreadLane(slow)
    await lane.add(bytes(LANE_BATCH))  # handed to the thread, which waits
    waiting = asyncio.create_task(lane.add(bytes(LANE_BATCH)))  # waits for the first
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    settling = asyncio.create_task(lane.settle())
    await asyncio.sleep(0.05)
    assert not settling.done() and not finished.is_set()
    release.set()
    await asyncio.wait_for(settling, 10)
    assert finished.is_set()


def test_the_s3_server_starts_on_fresh_ports_when_its_filers_port_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test harness itself: a CI run once lost its S3 tests because another process
    held the filer's gRPC port when SeaweedFS came to bind it. The first start here finds
    its filer's gRPC port taken (SeaweedFS exits), and the second, on fresh ports, serves."""
    import socket

    import bench.files

    draw = bench.files._weed_ports
    chosen = draw(6)
    taken = socket.socket()
    taken.bind(("127.0.0.1", chosen[3] + 10_000))  # the filer's gRPC port
    taken.listen()
    draws: list[list[int]] = []

    def ports(count: int) -> list[int]:
        draws.append(draw(count) if draws else chosen)
        return draws[-1]

    monkeypatch.setattr(bench.files, "_weed_ports", ports)
    server = Seaweed(tmp_path)
    try:
        server.start()
        assert len(draws) == 2 and server.port == draws[1][0]
        first = (tmp_path / "run1" / "weed.log").read_text(errors="replace")
        assert f"failed to listen on grpc port {chosen[3] + 10_000}" in first
        assert httpx.put(f"{server.endpoint}/chatql/probe", content=b"x").status_code == 200
    finally:
        server.stop()
        taken.close()


async def test_a_local_write_and_move_are_on_the_disk_before_they_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The folder backend syncs a file's bytes before the file takes its name, and the
    folder holding the name (and each folder it made, in its parent) before returning:
    the caller records the file only then, so a power cut cannot leave a recorded file
    whose bytes were only in memory."""
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync
    root = tmp_path / "store"
    target = root / "files" / "t1" / "ab"

    def fsync(descriptor: int) -> None:
        # What was synced, and whether the file already had its name then.
        synced.append((os.readlink(f"/proc/self/fd/{descriptor}"), target.exists()))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    storage = LocalStorage(str(root))

    async def body() -> AsyncIterator[bytes]:
        yield b"x" * 300_000
        yield b"y" * 300_000

    await storage.write("files/t1/ab", body())
    paths = [path for path, _ in synced]
    # The new folders' names in their parents; the bytes, before the file had its name;
    # then the file's name in its folder.
    assert paths[:3] == [str(tmp_path), str(root), str(root / "files")]
    assert paths[3].startswith(str(target.parent / ".ab.")) and paths[3].endswith(".part")
    assert synced[3][1] is False
    assert paths[4:] == [str(target.parent)]
    assert target.read_bytes() == b"x" * 300_000 + b"y" * 300_000

    synced.clear()
    await storage.promote("files/t1/ab", "kept/t1/cd")
    kept = root / "kept"
    assert [path for path, _ in synced] == [str(root), str(kept), str(kept / "t1")]
    assert (root / "kept" / "t1" / "cd").exists() and not target.exists()
