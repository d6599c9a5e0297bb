"""Files end to end over real HTTP: uploads (multipart, raw, two-phase), limits, signed
addresses, safe serving, access through the chats that reference a file, and removal
— on SQLite and Postgres, on a folder and on a real S3 server (SeaweedFS)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import struct
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from chatql.store.clock import now
from chatql.store.db.tables import files as files_table
from chatql.store.db.tables import messages
from chatql.store.files.backends.local import LocalStorage
from chatql.store.files.service import FileService, content_key, kept_key, staging_key
from chatql.store.keeping.retention import sweep_files
from tests.conftest import uvicorn_serving
from tests.gql.test_streams_ws import END, PUSH, START
from tests.s3 import Seaweed, s3_environment, s3_server  # noqa: F401 - the fixture

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme"}
# The same user name in another tenant.
OTHER_ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "other"}
ADMIN = {"X-User-Id": "root", "X-Tenant-Id": "acme", "X-Roles": "admin"}
AGENT = {"X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent"}

FILE = """query($id: ID!) { file(id: $id) {
  id filename mediaType size sha256 width height createdAt url } }"""
CREATE = """mutation($id: ID!, $public: Boolean) {
  createChat(input: {assistantId: "bot", id: $id, public: $public}) { id } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { messageIds } }"""
PAGE = """query($chat: ID!) { messages(chatId: $chat) { edges { node {
  id type files { id filename mediaType size sha256 width height url } } } } }"""
PURGE = "mutation($id: ID!) { purgeChat(id: $id) }"
CREATE_UPLOAD = """mutation($input: CreateUploadInput!) {
  createUpload(input: $input) { fileId uploadUrl headers expiresAt } }"""
COMPLETE_UPLOAD = """mutation($id: ID!) { completeUpload(id: $id) {
  id size sha256 width height url } }"""
LIMITS = "{ fileLimits { maxBytes mediaTypes quotaBytes usedBytes } }"


def png(width: int, height: int, salt: int = 0) -> bytes:
    """A real PNG of ``width`` x ``height`` (``salt`` changes its bytes, not its size)."""
    raw = b"".join(b"\x00" + bytes([salt % 256]) * (width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def file_part(file: dict[str, Any]) -> dict[str, Any]:
    return {"type": "file", "fileId": file["id"], "mediaType": file["mediaType"],
            "filename": file["filename"]}


def asking_with(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "USER", "type": "user_input",
             "props": {"content": [{"type": "text", "text": "look"}, *parts]}}]


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def files_settings(settings: Settings, backend: str, request: pytest.FixtureRequest,
                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """``settings`` with files on ``backend`` (sweeps left to the tests)."""
    url = f"file://{tmp_path / 'files'}"
    if backend == "s3":
        server: Seaweed = request.getfixturevalue("s3_server")
        for name, value in s3_environment(server).items():
            monkeypatch.setenv(name, value)
        url = f"s3://chatql/{tmp_path.name}"
    return dataclasses.replace(settings, files_url=url, sweep_interval=0)


@pytest.fixture
def local_settings(settings: Settings, tmp_path: Path) -> Settings:
    return dataclasses.replace(settings, files_url=f"file://{tmp_path / 'files'}",
                               sweep_interval=0)


class Service:
    """A running chatql over real HTTP."""

    def __init__(self, base: str, app: Any) -> None:
        self.base = base
        self.app = app
        self.http = httpx.AsyncClient(base_url=base, timeout=60)

    @property
    def files(self) -> FileService:
        files: FileService = self.app.state.services.files
        return files

    async def upload(self, data: bytes, filename: str = "a.png",
                     media_type: str = "image/png", who: dict[str, str] = ALICE, *,
                     raw: bool = False) -> httpx.Response:
        if raw:
            return await self.http.post("/files", params={"filename": filename},
                                        content=data,
                                        headers={**who, "Content-Type": media_type})
        return await self.http.post("/files", files={"file": (filename, data, media_type)},
                                    headers=who)

    async def uploaded(self, data: bytes, filename: str = "a.png",
                       media_type: str = "image/png", who: dict[str, str] = ALICE,
                       **options: Any) -> dict[str, Any]:
        response = await self.upload(data, filename, media_type, who, **options)
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    async def execute(self, query: str, variables: dict[str, Any] | None = None,
                      who: dict[str, str] = ALICE) -> Any:
        response = await self.http.post("/graphql", json={"query": query,
                                                          "variables": variables or {}},
                                        headers=who)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = ALICE) -> Any:
        body = await self.execute(query, variables, who)
        assert not body.get("errors"), body
        return body["data"]

    async def code(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = ALICE) -> str:
        body = await self.execute(query, variables, who)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"])

    async def file(self, file_id: str, who: dict[str, str] = ALICE) -> Any:
        return (await self.data(FILE, {"id": file_id}, who))["file"]

    async def chat(self, chat_id: str, who: dict[str, str] = ALICE,
                   public: bool = False) -> None:
        await self.data(CREATE, {"id": chat_id, "public": public}, who)

    async def page(self, chat_id: str, who: dict[str, str] = ALICE) -> list[dict[str, Any]]:
        data = await self.data(PAGE, {"chat": chat_id}, who)
        return [edge["node"] for edge in data["messages"]["edges"]]

    async def download(self, url: str, **headers: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=60) as http:  # no identity: the URL is enough
            return await http.get(url, headers=headers)

    async def key_of(self, file_id: str) -> str:
        """Where the file's bytes are stored (its record's ``storage_key``)."""
        async with self.files.db.read() as conn:
            return str(await conn.scalar(select(files_table.c.storage_key).where(
                files_table.c.id == file_id)))

    async def rows(self) -> int:
        async with self.files.db.read() as conn:
            return int(await conn.scalar(select(func.count()).select_from(files_table)) or 0)

    async def message_rows(self) -> int:
        async with self.files.db.read() as conn:
            return int(await conn.scalar(select(func.count()).select_from(messages)) or 0)


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[Service]:
    app = create_app(settings)
    async with uvicorn_serving(app) as port:
        service = Service(f"http://127.0.0.1:{port}", app)
        try:
            yield service
        finally:
            await service.http.aclose()


def staged_leftovers(service: Service) -> list[Path]:
    """Staging objects left on a local backend (an upload's bytes before they are kept)."""
    storage = service.files.storage
    if not isinstance(storage, LocalStorage):
        return []
    return [path for path in (storage.root / "uploads").glob("*") if path.is_file()] if (
        storage.root / "uploads").exists() else []


# ---- uploads, on both backends and databases -----------------------------------------


async def test_upload_multipart_and_raw_stored_once_and_served(files_settings: Settings,
                                                               backend: str) -> None:
    image = png(7, 5)
    digest = hashlib.sha256(image).hexdigest()
    async with serving(files_settings) as service:
        first = await service.uploaded(image, "chart.png")
        assert {key: first[key] for key in ("filename", "mediaType", "size", "sha256",
                                            "width", "height")} == {
            "filename": "chart.png", "mediaType": "image/png", "size": len(image),
            "sha256": digest, "width": 7, "height": 5}
        # The same bytes again, as a raw body with another name: a file of its own,
        # the content kept once.
        second = await service.uploaded(image, "again.png", raw=True)
        assert second["id"] != first["id"] and second["sha256"] == digest
        # A folder moves the bytes to their content address; an object store (where a
        # move is a copy) keeps the first upload where it was written, and the second
        # names that object, its own copy removed.
        key = content_key("acme", digest) if backend == "local" else kept_key(
            "acme", first["id"])
        assert await service.files.storage.size(key) == len(image)
        async with service.files.db.read() as conn:
            keys = (await conn.scalars(select(files_table.c.storage_key))).all()
        assert keys == [key, key]
        assert await service.files.storage.size(kept_key("acme", second["id"])) is None
        # Another tenant's identical upload is stored apart.
        third = await service.uploaded(image, who=OTHER_ALICE)
        assert await service.key_of(third["id"]) != key
        assert await service.files.storage.size(await service.key_of(third["id"])) == len(
            image)

        found = await service.file(first["id"])
        assert found["filename"] == "chart.png" and found["width"] == 7
        response = await service.download(found["url"])
        assert response.status_code == 200
        assert response.content == image
        assert response.headers["content-type"] == "image/png"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-disposition"].startswith("inline")
        assert not staged_leftovers(service)


async def test_a_message_references_files_and_messages_files_answers_them(
        files_settings: Settings) -> None:
    async with serving(files_settings) as service:
        chart = await service.uploaded(png(3, 2), "chart.png")
        notes = await service.uploaded(b"# notes\n", "notes.md", "text/markdown")
        await service.chat("c1")
        await service.data(APPEND, {"chat": "c1", "aid": "a1",
                                    "messages": asking_with(file_part(notes),
                                                            file_part(chart))})
        [message] = await service.page("c1")
        # In the order the message names them.
        assert [f["id"] for f in message["files"]] == [notes["id"], chart["id"]]
        assert message["files"][1]["width"] == 3
        for file, body in zip(message["files"], (b"# notes\n", png(3, 2)), strict=True):
            response = await service.download(file["url"])
            assert response.status_code == 200 and response.content == body

        # An agent answers with a file of its own: a `file` message in its stream.
        report = await service.uploaded(b"%PDF-1.4\n%report\n", "report.pdf",
                                        "application/pdf", who=AGENT)
        started = await service.data(START, {"input": {"chatId": "c1", "requestId": "r1"}},
                                     AGENT)
        stream = started["startStream"]["id"]
        await service.data(PUSH, {"id": stream, "chunks": [
            {"messageId": "m1", "type": "file", "role": "ASSISTANT",
             "props": {"fileId": report["id"], "mediaType": "application/pdf",
                       "filename": "report.pdf"}}]}, AGENT)
        await service.data(END, {"id": stream, "status": "COMPLETED"}, AGENT)
        answer = (await service.page("c1"))[-1]
        assert answer["type"] == "file"
        assert [f["id"] for f in answer["files"]] == [report["id"]]
        # Alice never uploaded it; the chat she reads references it.
        pdf = await service.download(answer["files"][0]["url"])
        assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
        assert pdf.headers["content-disposition"].startswith("inline")
        assert (await service.file(report["id"]))["filename"] == "report.pdf"


async def test_a_file_shared_by_two_chats_survives_purging_one(
        files_settings: Settings) -> None:
    image = png(4, 4)
    async with serving(files_settings) as service:
        shared = await service.uploaded(image)
        key = await service.key_of(shared["id"])
        for chat in ("one", "two"):
            await service.chat(chat)
            await service.data(APPEND, {"chat": chat, "aid": chat,
                                        "messages": asking_with(file_part(shared))})
        assert await service.data(PURGE, {"id": "one"})
        await sweep_files(service.files, now=now())
        [message] = await service.page("two")
        response = await service.download(message["files"][0]["url"])
        assert response.status_code == 200 and response.content == image

        url = message["files"][0]["url"]
        assert await service.data(PURGE, {"id": "two"})
        # Nothing references it any more: gone at once, for its uploader too ...
        assert await service.file(shared["id"]) is None
        assert (await service.download(url)).status_code == 404
        # ... and its bytes with the next sweep.
        assert await service.files.storage.size(key) == len(image)
        await sweep_files(service.files, now=now())
        assert await service.files.storage.size(key) is None
        assert await service.rows() == 0


async def test_orphans_expire_and_referenced_files_stay(files_settings: Settings) -> None:
    async with serving(dataclasses.replace(files_settings, file_orphan_ttl=60)) as service:
        kept = await service.uploaded(png(2, 2, salt=1))
        orphan = await service.uploaded(png(2, 2, salt=2))
        twin = await service.uploaded(png(2, 2, salt=1), "twin.png")  # same bytes as kept
        await service.chat("c1")
        await service.data(APPEND, {"chat": "c1", "aid": "a1",
                                    "messages": asking_with(file_part(kept))})
        orphan_key = await service.key_of(orphan["id"])
        # Not yet old enough.
        await sweep_files(service.files, now=now())
        assert await service.file(orphan["id"]) is not None
        await sweep_files(service.files, now=now() + timedelta(seconds=61))
        assert await service.file(orphan["id"]) is None
        assert await service.file(twin["id"]) is None
        assert await service.files.storage.size(orphan_key) is None
        # The twin's bytes are the referenced file's: they stay.
        assert await service.file(kept["id"]) is not None
        [message] = await service.page("c1")
        response = await service.download(message["files"][0]["url"])
        assert response.status_code == 200 and response.content == png(2, 2, salt=1)


async def test_bytes_stay_while_any_file_names_them(files_settings: Settings) -> None:
    """Whichever upload's object holds some bytes (an object store keeps the first one
    where it was written), every later file of the same bytes, one-step or two-phase,
    names that object; it outlives the file it was uploaded as, and goes with the last
    file naming it."""
    image = png(3, 3, salt=7)
    digest = hashlib.sha256(image).hexdigest()
    async with serving(dataclasses.replace(files_settings, file_orphan_ttl=60)) as service:
        first = await service.uploaded(image)
        key = await service.key_of(first["id"])
        second = await service.uploaded(image, "b.png")
        ticket = (await service.data(CREATE_UPLOAD, {"input": {
            "filename": "c.png", "mediaType": "image/png", "size": len(image),
            "sha256": digest}}))["createUpload"]
        async with httpx.AsyncClient(timeout=60) as http:
            put = await http.put(ticket["uploadUrl"], content=image,
                                 headers=ticket["headers"])
        assert put.status_code in (200, 204), put.text
        await service.data(COMPLETE_UPLOAD, {"id": ticket["fileId"]})
        assert [await service.key_of(file_id) for file_id in (
            second["id"], ticket["fileId"])] == [key, key]
        assert await service.files.storage.size(staging_key(ticket["fileId"])) is None

        # The first upload (and the two-phase one) expire unreferenced; the second is
        # in a chat: the object stays for it.
        await service.chat("c1")
        await service.data(APPEND, {"chat": "c1", "aid": "a1",
                                    "messages": asking_with(file_part(second))})
        await sweep_files(service.files, now=now() + timedelta(seconds=61))
        assert await service.file(first["id"]) is None
        assert await service.file(ticket["fileId"]) is None
        assert await service.rows() == 1
        [message] = await service.page("c1")
        response = await service.download(message["files"][0]["url"])
        assert response.status_code == 200 and response.content == image

        assert await service.data(PURGE, {"id": "c1"})
        await sweep_files(service.files, now=now())
        assert await service.files.storage.size(key) is None
        assert await service.rows() == 0


async def test_two_phase_upload_checks_size_and_hash(files_settings: Settings,
                                                     backend: str) -> None:
    image = png(9, 4)
    digest = hashlib.sha256(image).hexdigest()
    async with serving(files_settings) as service:
        ticket = (await service.data(CREATE_UPLOAD, {"input": {
            "filename": "big.png", "mediaType": "image/png", "size": len(image),
            "sha256": digest}}))["createUpload"]
        if backend == "s3":
            # Straight to the object store.
            assert ticket["uploadUrl"].startswith(os.environ["AWS_ENDPOINT_URL"])
        else:
            assert ticket["uploadUrl"].startswith(service.base + "/files/")
        # Not usable, nor complete, before its bytes arrive.
        assert await service.file(ticket["fileId"]) is None
        assert await service.code(COMPLETE_UPLOAD, {"id": ticket["fileId"]}) == (
            "INVALID_ARGUMENT")
        async with httpx.AsyncClient(timeout=60) as http:
            put = await http.put(ticket["uploadUrl"], content=image,
                                 headers=ticket["headers"])
        assert put.status_code in (200, 204), put.text
        # Someone else cannot complete it.
        assert await service.code(COMPLETE_UPLOAD, {"id": ticket["fileId"]}, BOB) == (
            "NOT_FOUND")
        done = (await service.data(COMPLETE_UPLOAD, {"id": ticket["fileId"]}))[
            "completeUpload"]
        assert (done["size"], done["sha256"], done["width"], done["height"]) == (
            len(image), digest, 9, 4)
        assert (await service.download(done["url"])).content == image
        assert await service.files.storage.size(staging_key(ticket["fileId"])) is None

        # Bytes that are not what was declared: refused, and nothing readable is left.
        for declared in ({"size": len(image), "sha256": "0" * 64},
                         {"size": len(image) + 1, "sha256": digest}):
            bad = (await service.data(CREATE_UPLOAD, {"input": {
                "filename": "bad.png", "mediaType": "image/png", **declared}}))[
                "createUpload"]
            async with httpx.AsyncClient(timeout=60) as http:
                await http.put(bad["uploadUrl"], content=image, headers=bad["headers"])
            assert await service.code(COMPLETE_UPLOAD, {"id": bad["fileId"]}) == (
                "INVALID_ARGUMENT")
            assert await service.file(bad["fileId"]) is None
            assert await service.files.storage.size(staging_key(bad["fileId"])) is None
            assert await service.code(COMPLETE_UPLOAD, {"id": bad["fileId"]}) == "NOT_FOUND"


# ---- limits and bad input ----------------------------------------------------------------


async def test_limits_answer_their_codes(local_settings: Settings) -> None:
    settings = dataclasses.replace(local_settings, file_max_bytes=4000,
                                   file_types=("image/png", "text/plain"),
                                   file_quota_bytes=6000)
    async with serving(settings) as service:
        # What a client can check before sending: the limits and the quota's use so far.
        assert (await service.data(LIMITS))["fileLimits"] == {
            "maxBytes": 4000, "mediaTypes": ["image/png", "text/plain"], "quotaBytes": 6000,
            "usedBytes": 0}
        too_big = await service.upload(b"x" * 4001, "big.txt", "text/plain", raw=True)
        assert too_big.status_code == 413
        assert too_big.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
        multipart_big = await service.upload(b"x" * 4001, "big.txt", "text/plain")
        assert multipart_big.status_code == 413
        refused = await service.upload(b"{}", "a.json", "application/json", raw=True)
        assert refused.status_code == 415
        assert refused.json()["errors"][0]["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"

        await service.uploaded(b"a" * 3000, "one.txt", "text/plain", raw=True)
        # The same bytes again cost nothing.
        await service.uploaded(b"a" * 3000, "same.txt", "text/plain", raw=True)
        await service.uploaded(b"b" * 3000, "two.txt", "text/plain", raw=True)
        over = await service.upload(b"c" * 10, "three.txt", "text/plain", raw=True)
        assert over.status_code == 413
        assert over.json()["errors"][0]["extensions"]["code"] == "QUOTA_EXCEEDED"
        # Each distinct content counted once, as the refusal counted it.
        assert (await service.data(LIMITS))["fileLimits"]["usedBytes"] == 6000
        # Another tenant has its own quota.
        await service.uploaded(b"c" * 10, "three.txt", "text/plain", OTHER_ALICE, raw=True)
        assert (await service.data(LIMITS, who=OTHER_ALICE))["fileLimits"]["usedBytes"] == 10
        assert await service.rows() == 4
        assert not staged_leftovers(service)


async def test_without_a_quota_the_limits_say_none(local_settings: Settings) -> None:
    async with serving(local_settings) as service:
        limits = (await service.data(LIMITS))["fileLimits"]
        assert limits["maxBytes"] == local_settings.file_max_bytes
        assert limits["quotaBytes"] is None and limits["usedBytes"] is None
        assert "application/pdf" in limits["mediaTypes"]
        assert limits["mediaTypes"] == sorted(limits["mediaTypes"])


async def test_declared_types_must_match_the_bytes(local_settings: Settings) -> None:
    async with serving(local_settings) as service:
        rows = await service.rows()
        for data, name, kind in ((png(2, 2), "a.jpg", "image/jpeg"),
                                 (b"<svg onload=alert(1)>", "a.png", "image/png"),
                                 (b"just text", "a.pdf", "application/pdf")):
            for raw in (True, False):
                response = await service.upload(data, name, kind, raw=raw)
                assert response.status_code == 415, (name, response.text)
        missing_name = await service.upload(b"x", "", "text/plain", raw=True)
        assert missing_name.status_code == 400
        assert await service.rows() == rows
        assert not staged_leftovers(service)


async def test_a_truncated_multipart_body_keeps_nothing(local_settings: Settings) -> None:
    image = png(5, 5)
    boundary = "chatqlboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\";"
            f" filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n").encode()
    whole = head + image + f"\r\n--{boundary}--\r\n".encode()
    async with serving(local_settings) as service:
        for body in (head + image[:40],  # cut inside the file
                     head + image + b"\r\n",  # the file whole, the closing boundary lost
                     b"--other\r\n\r\n"):  # no file part at all
            response = await service.http.post(
                "/files", content=body,
                headers={**ALICE, "Content-Type": f"multipart/form-data; boundary={boundary}"})
            assert response.status_code == 400, response.text
            assert response.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
        assert await service.rows() == 0
        assert not staged_leftovers(service)
        response = await service.http.post(
            "/files", content=whole,
            headers={**ALICE, "Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert response.status_code == 201 and response.json()["width"] == 5


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
async def test_a_1gb_body_is_refused_at_the_limit_while_it_streams(
        files_settings: Settings) -> None:
    gigabyte, piece = 1 << 30, b"\0" * (1 << 20)
    limit = files_settings.file_max_bytes
    async with serving(files_settings) as service:
        for declared in (False, True):
            sent = 0

            async def body() -> AsyncIterator[bytes]:
                nonlocal sent
                while sent < gigabyte:
                    sent += len(piece)
                    yield piece

            headers = {**ALICE, "Content-Type": "text/plain"}
            if declared:
                headers["Content-Length"] = str(gigabyte)
            before = _rss()
            try:
                response = await service.http.post("/files", params={"filename": "big.txt"},
                                                   content=body(), headers=headers)
            except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
                pass  # the server closed the connection mid-body: refused all the same
            else:
                assert response.status_code == 413, response.text
                assert response.json()["errors"][0]["extensions"]["code"] == (
                    "PAYLOAD_TOO_LARGE")
            grown = _rss() - before
            # The server read no further than the limit (plus what sockets buffer), and
            # held no more than a few parts of it in memory.
            assert sent < limit + 64 * (1 << 20), sent
            assert grown < 64 * (1 << 20), grown
        assert await service.rows() == 0
        assert not staged_leftovers(service)


# ---- signed addresses and serving ----------------------------------------------------------


async def test_signed_addresses_refuse_tampering_and_expiry(local_settings: Settings) -> None:
    async with serving(local_settings) as service:
        uploaded = await service.uploaded(png(2, 3))
        url = (await service.file(uploaded["id"]))["url"]
        assert (await service.download(url)).status_code == 200
        address, _, query = url.partition("?")
        params = dict(part.split("=", 1) for part in query.split("&"))
        expires, signature = int(params["expires"]), params["signature"]
        flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
        other = await service.uploaded(png(2, 3, salt=9))
        for bad in (f"{address}?expires={expires}&signature={flipped}",
                    f"{address}?expires={expires + 3600}&signature={signature}",
                    f"{address}?expires={expires}",
                    f"{service.base}/files/{other['id']}?expires={expires}"
                    f"&signature={signature}"):
            response = await service.download(bad)
            assert response.status_code == 403, bad
            assert response.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        past = int(time.time()) - 1
        expired = service.files.signer.signature("read", uploaded["id"], past)
        response = await service.download(f"{address}?expires={past}&signature={expired}")
        assert response.status_code == 403
        assert "expired" in response.json()["errors"][0]["message"]
        # An upload address is no read address.
        upload_signature = service.files.signer.signature("upload", uploaded["id"], expires)
        response = await service.download(
            f"{address}?expires={expires}&signature={upload_signature}")
        assert response.status_code == 403


async def test_a_file_keeps_one_address_within_a_minute(local_settings: Settings) -> None:
    """An address expires on a whole minute, at least the lifetime after it was made:
    read again within the minute (the page asked again, the message's files), the same
    file has the same address, so a browser's cache answers it."""
    async with serving(local_settings) as service:
        uploaded = await service.uploaded(png(2, 3))
        ttl = service.files.limits.url_ttl
        while time.time() % 60 > 55:  # not across a minute's turn
            await asyncio.sleep(0.5)
        made = time.time()
        first = (await service.file(uploaded["id"]))["url"]
        second = (await service.file(uploaded["id"]))["url"]
        assert first == second
        expires = int(dict(part.split("=", 1) for part in first.partition("?")[2].split(
            "&"))["expires"])
        assert expires % 60 == 0 and made + ttl <= expires <= made + ttl + 60
        assert (await service.download(second)).status_code == 200


async def test_svg_and_html_are_never_served_inline(local_settings: Settings) -> None:
    async with serving(local_settings) as service:
        for data, name, kind in ((b"<svg xmlns='http://www.w3.org/2000/svg'>"
                                  b"<script>alert(1)</script></svg>", "x.svg", "image/svg+xml"),
                                 (b"<html><script>alert(1)</script></html>", "x.html",
                                  "text/html"),
                                 (b"a,b\n1,2\n", "x.csv", "text/csv")):
            uploaded = await service.uploaded(data, name, kind)
            response = await service.download((await service.file(uploaded["id"]))["url"])
            assert response.status_code == 200 and response.content == data
            assert response.headers["content-disposition"].startswith("attachment"), name
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "sandbox" in response.headers["content-security-policy"]


# ---- access ------------------------------------------------------------------------------


async def test_cross_user_and_cross_tenant_reads_are_refused(local_settings: Settings) -> None:
    async with serving(local_settings) as service:
        mine = await service.uploaded(png(3, 3), "mine.png")
        file_id = mine["id"]
        # Only its uploader (and the tenant's admin) reads an upload nothing references.
        assert await service.file(file_id) is not None
        assert await service.file(file_id, ADMIN) is not None
        for stranger in (BOB, OTHER_ALICE, AGENT):
            assert await service.file(file_id, stranger) is None
            response = await service.http.get(f"/files/{file_id}", headers=stranger)
            assert response.status_code == 404
        assert (await service.http.get(f"/files/{file_id}", headers=ALICE)).status_code == 200

        # Nor may anyone else reference it: NOT_FOUND, and the store is unchanged.
        await service.chat("bobs", BOB)
        await service.chat("theirs", OTHER_ALICE)
        before = await service.message_rows()
        assert await service.code(APPEND, {"chat": "bobs", "aid": "steal",
                                           "messages": asking_with(file_part(mine))},
                                  BOB) == "NOT_FOUND"
        assert await service.code(APPEND, {"chat": "theirs", "aid": "steal",
                                           "messages": asking_with(file_part(mine))},
                                  OTHER_ALICE) == "NOT_FOUND"
        assert await service.message_rows() == before
        assert await service.page("bobs", BOB) == []

        # Referenced in Alice's private chat: still hers alone (and the agents').
        await service.chat("private")
        await service.data(APPEND, {"chat": "private", "aid": "a1",
                                    "messages": asking_with(file_part(mine))})
        assert await service.file(file_id, BOB) is None
        assert await service.file(file_id, AGENT) is not None
        assert await service.file(file_id, OTHER_ALICE) is None
        # Referenced in a public chat: the tenant reads it, another tenant never.
        await service.chat("open", public=True)
        await service.data(APPEND, {"chat": "open", "aid": "a2",
                                    "messages": asking_with(file_part(mine))})
        assert (await service.file(file_id, BOB))["id"] == file_id
        assert (await service.http.get(f"/files/{file_id}", headers=BOB)).status_code == 200
        assert await service.file(file_id, OTHER_ALICE) is None
        assert (await service.http.get(f"/files/{file_id}",
                                       headers=OTHER_ALICE)).status_code == 404
        # A malformed reference is refused as such.
        assert await service.code(APPEND, {"chat": "private", "aid": "bad", "messages": [
            {"role": "USER", "type": "file", "props": {"fileId": 42}}]}) == "INVALID_ARGUMENT"


# ---- the kit ----------------------------------------------------------------------------


async def test_the_kit_uploads_and_writes_a_file_into_a_stream(
        files_settings: Settings, tmp_path: Path) -> None:
    from chatql_client import ChatqlClient

    report = tmp_path / "report.csv"
    report.write_bytes(b"month,total\njan,3\n")
    async with serving(files_settings) as service:
        async with ChatqlClient(f"{service.base}/graphql", headers=ALICE) as alice:
            uploaded = await alice.upload(png(6, 2), filename="shot.png",
                                          media_type="image/png")
            assert (uploaded["width"], uploaded["height"]) == (6, 2)
            from_path = await alice.upload(report, media_type="text/csv")
            assert from_path["filename"] == "report.csv" and from_path["size"] == 18
            limits = await alice.file_limits()
            assert limits["maxBytes"] == files_settings.file_max_bytes
            assert "text/csv" in limits["mediaTypes"] and limits["quotaBytes"] is None
            await alice.create_chat("bot", chat_id="k1")
            await alice.append("k1", asking_with(file_part(uploaded)))
        async with ChatqlClient(f"{service.base}/graphql", headers=AGENT) as agent:
            async with agent.stream("k1", request_id="r1") as s:
                await s.text("Here it is:")
                written = await s.file(report, media_type="text/csv")
                await s.text("Anything else?")
            assert written["filename"] == "report.csv"
            with pytest.raises(Exception) as refused:
                await agent.upload(b"{}", filename="x.bin",
                                   media_type="application/octet-stream")
            assert getattr(refused.value, "code", None) == "UNSUPPORTED_MEDIA_TYPE"
        page = await service.page("k1")
        assert [m["type"] for m in page] == ["user_input", "text", "file", "text"]
        assert page[0]["files"][0]["id"] == uploaded["id"]
        [attached] = page[2]["files"]
        assert attached["id"] == written["id"]
        assert (await service.download(attached["url"])).content == b"month,total\njan,3\n"
