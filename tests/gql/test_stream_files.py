"""A file named by a live stream's chunk is readable through the chat while the reply is
live — over real HTTP, on SQLite and Postgres, with the in-process and the Redis broker.

An agent uploads under its own identity and streams a ``file`` message into a person's
chat: from the moment the push is accepted the person reads ``file(id)`` and its signed
address (nobody who may not read the chat does); a producer naming a file it may not read
is refused NOT_FOUND and nothing changes; the stored reply keeps the file through its
message; a stream that is never stored, or whose final messages no longer name the file,
leaves no access behind, and the orphan sweep treats a live stream's link as a reference.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from chatql.gql.settings import Settings
from chatql.store.clock import now
from chatql.store.db.tables import files as files_table
from chatql.store.db.tables import message_files, stream_files
from chatql.store.keeping.retention import sweep_files
from chatql.store.streams import claims
from chatql.store.streams.service import StreamService
from tests.access.snapshot import store_fingerprint
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_files import ALICE, BOB, OTHER_ALICE, Service, png, serving
from tests.gql.test_streams_ws import END, PUSH, START

#: An agent runtime with an identity of its own (not the person's).
WORKER = {"X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent"}
#: An agent of another tenant.
OTHER_WORKER = {"X-User-Id": "worker", "X-Tenant-Id": "other", "X-Roles": "agent"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
PDF = b"%PDF-1.4\n%report\n"
ORPHAN_TTL = 60

CREATE = """mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }"""
DELETE = "mutation($id: ID!) { deleteChat(id: $id) }"
RESTORE = "mutation($id: ID!) { restoreChat(id: $id) { id } }"
PAGE = """query($chat: ID!) { messages(chatId: $chat) { edges { node {
  id type props files { id url } } } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return dataclasses.replace(on_backend(request, settings), sweep_interval=0,
                               file_orphan_ttl=ORPHAN_TTL)


def file_chunk(file: dict[str, Any], message_id: str = "f") -> dict[str, Any]:
    return {"messageId": message_id, "type": "file", "role": "ASSISTANT",
            "props": {"fileId": file["id"], "mediaType": file["mediaType"],
                      "filename": file["filename"]}}


def literal_push(stream_id: str, file_id: str) -> str:
    """A ``pushChunks`` with its chunks written in the document: the fast push plan
    leaves it to the ordinary resolver."""
    chunk = ('{messageId: "x", type: "file", role: ASSISTANT, props: {fileId: "'
             + file_id + '", mediaType: "image/png", filename: "x.png"}}')
    return ('mutation { pushChunks(streamId: "' + stream_id + '", chunks: [' + chunk
            + ']) { accepted lastSeq } }')


async def start(service: Service, chat_id: str, request_id: str,
                who: dict[str, str] = WORKER) -> str:
    started = await service.data(START, {"input": {"chatId": chat_id, "requestId": request_id}},
                                 who)
    return str(started["startStream"]["id"])


async def push(service: Service, stream_id: str, chunks: list[dict[str, Any]],
               who: dict[str, str] = WORKER) -> dict[str, Any]:
    pushed: dict[str, Any] = (await service.data(PUSH, {"id": stream_id, "chunks": chunks},
                                                 who))["pushChunks"]
    return pushed


async def count(service: Service, table: Any, **where: str) -> int:
    async with service.files.db.read() as conn:
        query = select(func.count()).select_from(table)
        for name, value in where.items():
            query = query.where(table.c[name] == value)
        return int(await conn.scalar(query) or 0)


async def state_of(service: Service, file_id: str) -> str | None:
    async with service.files.db.read() as conn:
        state = await conn.scalar(select(files_table.c.state).where(
            files_table.c.id == file_id))
    return None if state is None else str(state)


async def readable_by(service: Service, file_id: str, who: dict[str, str]) -> bool:
    """``file(id)`` answers the file, and ``GET /files/{id}`` serves it, or neither."""
    answered = await service.file(file_id, who)
    served = await service.http.get(f"/files/{file_id}", headers=who)
    assert (answered is not None) == (served.status_code == 200), (answered, served)
    return answered is not None


async def test_a_file_an_agent_streams_is_readable_by_the_chats_readers_while_live(
        settings: Settings) -> None:
    async with serving(settings) as service:
        report = await service.uploaded(PDF, "report.pdf", "application/pdf", who=WORKER)
        file_id = report["id"]
        await service.data(CREATE, {"id": "c1"})
        stream = await start(service, "c1", "r1")
        # Before the chunk: the worker's upload is the worker's alone.
        assert not await readable_by(service, file_id, ALICE)
        pushed = await push(service, stream, [
            {"messageId": "t", "type": "text", "role": "ASSISTANT",
             "props": {"content": "Here is the report:"}, "delta": True},
            file_chunk(report)])
        assert pushed["accepted"] == 2

        # Accepted: the person reads it, at a signed address that serves its bytes,
        # before the stream ends.
        seen = await service.file(file_id, ALICE)
        assert seen is not None and seen["filename"] == "report.pdf"
        downloaded = await service.download(seen["url"])
        assert downloaded.status_code == 200 and downloaded.content == PDF
        assert await readable_by(service, file_id, ALICE)
        # Nobody who may not read the chat: another user, another tenant (by the same
        # name, and its agent).
        for stranger in (BOB, CAROL, OTHER_ALICE, OTHER_WORKER):
            assert not await readable_by(service, file_id, stranger), stranger
        assert await count(service, stream_files, stream_id=stream) == 1
        # A second push naming it again links nothing twice.
        await push(service, stream, [{**file_chunk(report), "props": {
            **file_chunk(report)["props"], "filename": "report-v2.pdf"}}])
        assert await count(service, stream_files, stream_id=stream) == 1

        # The orphan sweep counts the live stream's link as a reference.
        await sweep_files(service.files, now=now() + timedelta(seconds=ORPHAN_TTL + 1))
        assert await state_of(service, file_id) == "READY"
        assert await readable_by(service, file_id, ALICE)

        ended = await service.data(END, {"id": stream, "status": "COMPLETED"}, WORKER)
        assert [m["type"] for m in ended["endStream"]["messages"]] == ["text", "file"]
        # Stored: the message's link replaces the stream's, and the file stays readable.
        assert await count(service, stream_files) == 0
        assert await count(service, message_files, file_id=file_id) == 1
        answer = (await service.data(PAGE, {"chat": "c1"}))["messages"]["edges"][-1]["node"]
        assert [f["id"] for f in answer["files"]] == [file_id]
        assert (await service.download(answer["files"][0]["url"])).content == PDF
        assert await readable_by(service, file_id, ALICE)
        for stranger in (BOB, OTHER_ALICE):
            assert not await readable_by(service, file_id, stranger)
        await sweep_files(service.files, now=now() + timedelta(seconds=ORPHAN_TTL + 1))
        assert await readable_by(service, file_id, ALICE)


async def test_a_producer_naming_a_file_it_may_not_read_is_refused(
        settings: Settings) -> None:
    async with serving(settings) as service:
        secret = await service.uploaded(png(2, 2), "secret.png", who=CAROL)
        elsewhere = await service.uploaded(png(2, 2, salt=3), "theirs.png", who=OTHER_WORKER)
        mine = await service.uploaded(png(3, 3), "mine.png", who=WORKER)
        await service.data(CREATE, {"id": "c1"})
        stream = await start(service, "c1", "r1")
        first = await push(service, stream, [{"messageId": "t", "type": "text",
                                              "role": "ASSISTANT", "props": {"content": "Hi"}}])
        unknown = {**mine, "id": "01" + "z" * 24}
        before = await store_fingerprint(service.files.db)
        for named in (secret, elsewhere, unknown):
            # The whole batch is refused, over the fast push plan and the resolver alike.
            code = await service.code(PUSH, {"id": stream, "chunks": [
                {"messageId": "t", "type": "text", "props": {"content": " more"},
                 "delta": True},
                file_chunk(mine, "mine"),
                file_chunk(named, "named")]}, WORKER)
            assert code == "NOT_FOUND", named
            assert await service.code(literal_push(stream, named["id"]),
                                      who=WORKER) == "NOT_FOUND"
            # A file named inside a content list is checked the same way.
            assert await service.code(PUSH, {"id": stream, "chunks": [
                {"messageId": "t", "type": "text", "props": {"content": [
                    {"type": "file", "fileId": named["id"], "mediaType": "image/png",
                     "filename": "x.png"}]}}]}, WORKER) == "NOT_FOUND"
        # Nothing of the refused batches took effect: the store is as it was, and the
        # stream gave them no numbers; no links, no access.
        assert await store_fingerprint(service.files.db) == before
        assert await count(service, stream_files) == 0
        assert not await readable_by(service, secret["id"], ALICE)
        assert not await readable_by(service, mine["id"], ALICE)
        again = await push(service, stream, [{"messageId": "t", "type": "text",
                                              "props": {"content": "!"}, "delta": True}])
        assert again["lastSeq"] == first["lastSeq"] + 1
        ended = await service.data(END, {"id": stream, "status": "COMPLETED"}, WORKER)
        assert [(m["type"], m["props"]) for m in ended["endStream"]["messages"]] == [
            ("text", {"content": "Hi!"})]
        assert await count(service, message_files) == 0
        assert not await readable_by(service, secret["id"], ALICE)
        assert not await readable_by(service, mine["id"], ALICE)


async def test_a_stream_that_no_longer_names_the_file_or_is_never_stored_leaves_no_access(
        settings: Settings) -> None:
    async with serving(settings) as service:
        await service.data(CREATE, {"id": "c1"})

        # Replaced: the file message becomes text before the stream ends.
        draft = await service.uploaded(PDF, "draft.pdf", "application/pdf", who=WORKER)
        stream = await start(service, "c1", "r1")
        await push(service, stream, [file_chunk(draft)])
        assert await readable_by(service, draft["id"], ALICE)
        await push(service, stream, [{"messageId": "f", "type": "text",
                                      "props": {"content": "No report after all."}}])
        await service.data(END, {"id": stream, "status": "COMPLETED"}, WORKER)
        assert not await readable_by(service, draft["id"], ALICE)
        assert await count(service, stream_files) == 0
        # Nothing references it: an orphan, swept as one.
        await sweep_files(service.files, now=now() + timedelta(seconds=ORPHAN_TTL + 1))
        assert await state_of(service, draft["id"]) is None

        # Never stored: the chat is deleted while the reply is live, so the stream can
        # never be written; restoring the chat does not bring the access back.
        lost = await service.uploaded(PDF, "lost.pdf", "application/pdf", who=WORKER)
        stream = await start(service, "c1", "r2")
        await push(service, stream, [file_chunk(lost)])
        assert await readable_by(service, lost["id"], ALICE)
        assert await service.data(DELETE, {"id": "c1"})
        assert not await readable_by(service, lost["id"], ALICE)
        assert await service.code(END, {"id": stream, "status": "COMPLETED"},
                                  WORKER) == "NOT_FOUND"
        await service.data(RESTORE, {"id": "c1"})
        assert not await readable_by(service, lost["id"], ALICE)
        assert await count(service, stream_files) == 0
        await sweep_files(service.files, now=now() + timedelta(seconds=ORPHAN_TTL + 1))
        assert await state_of(service, lost["id"]) is None

        # Stopped by the person: the stream is stored INTERRUPTED, its file message with
        # it, which keeps the file (as any stored message does).
        kept = await service.uploaded(PDF, "kept.pdf", "application/pdf", who=WORKER)
        stream = await start(service, "c1", "r3")
        await push(service, stream, [file_chunk(kept)])
        assert await service.data("mutation { stopStream(chatId: \"c1\") }")
        assert await readable_by(service, kept["id"], ALICE)
        assert await count(service, stream_files) == 0
        assert await count(service, message_files, file_id=kept["id"]) == 1


async def test_links_of_streams_lost_with_their_process_grant_nothing(
        settings: Settings) -> None:
    """A stream lost with its process (its claim ended by the next start) leaves its
    link behind only until the claims are ended: from then on it grants nothing, and
    the orphan sweep removes it."""
    async with serving(settings) as service:
        await service.data(CREATE, {"id": "c1"})
        lost = await service.uploaded(PDF, "lost.pdf", "application/pdf", who=WORKER)
        stream = await start(service, "c1", "r1")
        await push(service, stream, [file_chunk(lost)])
        assert await readable_by(service, lost["id"], ALICE)
        # What a restart of a single-process service does to the streams of the last run.
        assert await claims.end_live_claims(service.files.db) == 1
        assert not await readable_by(service, lost["id"], ALICE)
        assert await count(service, stream_files) == 0
        # A link left behind (written as the claim ended) counts for nothing either.
        async with service.files.db.write() as conn:
            await conn.execute(stream_files.insert().values(
                stream_id=stream, file_id=lost["id"], chat_id="c1"))
        assert not await readable_by(service, lost["id"], ALICE)
        await sweep_files(service.files, now=now() + timedelta(seconds=ORPHAN_TTL + 1))
        assert await count(service, stream_files) == 0
        assert await state_of(service, lost["id"]) is None


async def test_only_pushes_naming_a_file_cost_a_lookup(settings: Settings,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The push path stays as it was for chunks whose props hold no ``fileId``: only a
    batch naming one asks the database anything."""
    looked: list[int] = []
    original = StreamService._apply_naming_files

    async def counted(self: StreamService, *args: Any) -> Any:
        looked.append(1)
        return await original(self, *args)

    monkeypatch.setattr(StreamService, "_apply_naming_files", counted)
    async with serving(settings) as service:
        report = await service.uploaded(PDF, "report.pdf", "application/pdf", who=WORKER)
        await service.data(CREATE, {"id": "c1"})
        stream = await start(service, "c1", "r1")
        for n in range(20):
            await push(service, stream, [
                {"messageId": "t", "type": "text", "props": {"content": f"word {n} "},
                 "delta": True},
                {"messageId": "c", "type": "tool_call",
                 "props": {"name": "files", "arguments": '{"file": "id"}'}}])
        assert looked == []
        await push(service, stream, [file_chunk(report)])
        assert looked == [1]
        await service.data(END, {"id": stream, "status": "COMPLETED"}, WORKER)
