"""Export, import and the cold archive carrying files and interrupts, over real HTTP on
both databases: ``?files=inline`` and ``?files=tar`` exports, ``POST /chats/import`` and
``importChat`` storing the files again (new ids, the messages' references renamed) on a
folder and on a real S3 server; interrupts kept with their state and decision; bad
documents refused with nothing written; an archived chat's files kept from the sweep
and readable again once restored."""

from __future__ import annotations

import base64
import dataclasses
import io
import tarfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select

from chatql.gql.settings import Settings
from chatql.store.clock import now
from chatql.store.db.tables import chats
from chatql.store.db.tables import files as files_table
from chatql.store.keeping.retention import sweep_files
from tests.gql.test_files import (
    ALICE,
    APPEND,
    BOB,
    OTHER_ALICE,
    PURGE,
    Service,
    asking_with,
    file_part,
    png,
    serving,
)
from tests.gql.test_interrupts import CHAT as INTERRUPTS
from tests.gql.test_interrupts import RESOLVE, question, tool_call
from tests.gql.test_streams_ws import END, PUSH, START
from tests.s3 import Seaweed, s3_environment, s3_server  # noqa: F401 - the fixture

AGENT = {"X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent"}
IMPORT = """mutation($input: ImportChatInput!) { importChat(input: $input) { id } }"""
CREATE = """mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }"""
NOTES = b"pack a coat\nand boots\n"


@pytest.fixture(params=["local", "s3"])
def any_storage(settings: Settings, request: pytest.FixtureRequest, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Settings:
    """``settings`` with files in a folder, then on a real S3 server (sweeps left to the
    tests)."""
    url = f"file://{tmp_path / 'files'}"
    if request.param == "s3":
        server: Seaweed = request.getfixturevalue("s3_server")
        for name, value in s3_environment(server).items():
            monkeypatch.setenv(name, value)
        url = f"s3://chatql/{tmp_path.name}"
    return dataclasses.replace(settings, files_url=url, sweep_interval=0)


@pytest.fixture
def in_folder(settings: Settings, tmp_path: Path) -> Settings:
    return dataclasses.replace(settings, files_url=f"file://{tmp_path / 'files'}",
                               sweep_interval=0)


def lines_of(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in body.splitlines()]


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


async def export(service: Service, chat: str, who: dict[str, str] = ALICE,
                 **params: str) -> Any:
    return await service.http.get(f"/chats/{chat}/export", params=params, headers=who)


async def import_body(service: Service, body: bytes, who: dict[str, str] = ALICE, *,
                      tar: bool = False, **params: str) -> Any:
    kind = "application/x-tar" if tar else "application/x-ndjson"
    return await service.http.post("/chats/import", params=params, content=body,
                                   headers={**who, "Content-Type": kind})


async def chat_with_files(service: Service) -> tuple[dict[str, Any], dict[str, Any]]:
    """Chat ``trip`` of Alice's: a question with an image and a text file, and an agent's
    answer that is the same image again (a ``file`` message)."""
    image = await service.uploaded(png(6, 4), "chart.png")
    notes = await service.uploaded(NOTES, "notes.txt", "text/plain")
    await service.chat("trip")
    await service.data(APPEND, {"chat": "trip", "aid": "a1", "messages": [
        *asking_with(file_part(image), file_part(notes)),
        {"role": "ASSISTANT", "type": "file", "props": {
            "fileId": image["id"], "mediaType": "image/png", "filename": "chart.png"}}]})
    return image, notes


async def purge_and_sweep(service: Service, chat: str) -> None:
    """The source chat purged and its files' bytes deleted: an import must bring them."""
    await service.data(PURGE, {"id": chat})
    await sweep_files(service.files, now=now())


async def read_back(service: Service, chat: str, who: dict[str, str]) -> list[bytes]:
    """Every file of the chat's messages, read through its signed url and through
    ``/files/{id}`` with ``who``'s identity (the two must agree)."""
    found = []
    for message in await service.page(chat, who):
        for file in message["files"]:
            signed = await service.download(file["url"])
            direct = await service.http.get(f"/files/{file['id']}", headers=who)
            assert signed.status_code == direct.status_code == 200, direct.text
            assert signed.content == direct.content
            found.append(direct.content)
    return found


@pytest.mark.parametrize("mode", ["inline", "tar"])
async def test_an_export_with_files_imports_into_another_tenant(
        any_storage: Settings, mode: str) -> None:
    async with serving(any_storage) as service:
        image, notes = await chat_with_files(service)
        assert await read_back(service, "trip", ALICE) == [png(6, 4), NOTES, png(6, 4)]

        # The default export is what it always was: messages name files by id.
        plain = await export(service, "trip")
        assert plain.headers["content-type"].startswith("application/x-ndjson")
        assert [line["kind"] for line in lines_of(plain.content)] == [
            "chat", "message", "message"]

        response = await export(service, "trip", files=mode)
        assert response.status_code == 200, response.text
        if mode == "inline":
            lines = lines_of(response.content)
            body = response.content
        else:
            assert response.headers["content-type"] == "application/x-tar"
            with tarfile.open(fileobj=io.BytesIO(response.content)) as archive:
                names = archive.getnames()
                lines = lines_of(archive.extractfile("chat.jsonl").read())  # type: ignore[union-attr]
                stored = {name: archive.extractfile(name).read()  # type: ignore[union-attr]
                          for name in names if name.startswith("files/")}
            # Each content once, named by its SHA-256.
            assert names[0] == "chat.jsonl" and stored == {
                f"files/{image['sha256']}": png(6, 4), f"files/{notes['sha256']}": NOTES}
            body = response.content
        assert [line["kind"] for line in lines] == [
            "chat", "file", "file", "message", "message"]
        described = {line["id"]: line for line in lines if line["kind"] == "file"}
        assert set(described) == {image["id"], notes["id"]}
        assert described[notes["id"]]["filename"] == "notes.txt"
        if mode == "inline":
            assert base64.b64decode(described[notes["id"]]["data"]) == NOTES
        else:
            assert described[notes["id"]]["path"] == f"files/{notes['sha256']}"

        # The source goes, and with it every stored byte: the import must bring them.
        source_key = await service.key_of(image["id"])
        await purge_and_sweep(service, "trip")
        assert await service.rows() == 0
        assert await service.files.storage.size(source_key) is None

        # Into another tenant, under a new chat id.
        if mode == "inline":
            made = await service.data(IMPORT, {"input": {
                "format": "CHATQL", "document": lines, "chatId": "copy",
                "importId": "once"}}, OTHER_ALICE)
            assert made["importChat"]["id"] == "copy"
        else:
            answer = await import_body(service, body, OTHER_ALICE, tar=True, chatId="copy")
            assert answer.status_code == 201, answer.text
            assert answer.json() == {"id": "copy"}
        page = await service.page("copy", OTHER_ALICE)
        assert await read_back(service, "copy", OTHER_ALICE) == [png(6, 4), NOTES, png(6, 4)]
        # New ids, consistently: the question's image and the answer's are one file.
        question_files = [file["id"] for file in page[0]["files"]]
        assert page[1]["files"][0]["id"] == question_files[0]
        assert not set(question_files) & {image["id"], notes["id"]}
        assert [part.get("fileId") for part in (await service.data(
            """query { messages(chatId: "copy") { edges { node { props } } } }""",
            who=OTHER_ALICE))["messages"]["edges"][0]["node"]["props"]["content"]
            if part["type"] == "file"] == question_files
        assert await service.files.storage.size(
            await service.key_of(question_files[0])) == len(png(6, 4))
        # The imported files are the importer's tenant's: nobody of acme reads them.
        refused = await service.http.get(f"/files/{question_files[0]}", headers=BOB)
        assert refused.status_code == 404

        # The same import again makes nothing new; the files are not stored twice.
        rows = await service.rows()
        if mode == "inline":
            again = await service.data(IMPORT, {"input": {
                "format": "CHATQL", "document": lines, "chatId": "copy",
                "importId": "once"}}, OTHER_ALICE)
            assert again["importChat"]["id"] == "copy"
        else:
            repeated = await import_body(service, body, OTHER_ALICE, tar=True, chatId="copy")
            assert repeated.status_code == 201 and repeated.json() == {"id": "copy"}
        assert await service.rows() == rows


async def test_a_file_imported_again_is_kept_once(in_folder: Settings) -> None:
    async with serving(in_folder) as service:
        image, notes = await chat_with_files(service)
        # Another chat of Alice's keeps the uploads alive when the source is purged.
        await service.chat("keep")
        await service.data(APPEND, {"chat": "keep", "aid": "k", "messages": asking_with(
            file_part(image), file_part(notes))})
        lines = lines_of((await export(service, "trip", files="inline")).content)
        await service.data(PURGE, {"id": "trip"})
        # The import reuses Alice's own files with the same bytes, name and type
        # instead of storing copies.
        answer = await import_body(service, jsonl(lines), chatId="back")
        assert answer.status_code == 201, answer.text
        page = await service.page("back")
        assert await read_back(service, "back", ALICE) == [png(6, 4), NOTES, png(6, 4)]
        async with service.files.db.read() as conn:
            live = await conn.scalar(select(func.count()).select_from(files_table).where(
                files_table.c.state == "READY"))
        assert live == 2
        assert page[0]["files"][0]["id"] == image["id"]


async def test_an_export_without_files_relinks_them_in_the_same_tenant(
        in_folder: Settings) -> None:
    async with serving(in_folder) as service:
        image, notes = await chat_with_files(service)
        await service.chat("keep")
        await service.data(APPEND, {"chat": "keep", "aid": "k", "messages": asking_with(
            file_part(image), file_part(notes))})
        plain = (await export(service, "trip")).content
        await service.data(PURGE, {"id": "trip"})
        answer = await import_body(service, plain, chatId="same")
        assert answer.status_code == 201, answer.text
        # The imported messages hold the files now: purging the other chat and
        # sweeping leaves them readable.
        await service.data(PURGE, {"id": "keep"})
        await sweep_files(service.files, now=now())
        assert await read_back(service, "same", ALICE) == [png(6, 4), NOTES, png(6, 4)]


async def test_bad_file_lines_are_refused_and_nothing_is_written(
        in_folder: Settings) -> None:
    async with serving(in_folder) as service:
        await chat_with_files(service)
        lines = lines_of((await export(service, "trip", files="inline")).content)
        tarred = (await export(service, "trip", files="tar")).content
        await purge_and_sweep(service, "trip")

        def changed(index: int, **fields: Any) -> bytes:
            copy = [dict(line) for line in lines]
            copy[index] = {**copy[index], **fields}
            return jsonl(copy)

        bad_bodies = {
            "bad base64": changed(1, data="not base64!"),
            "wrong hash": changed(1, data=base64.b64encode(b"other bytes").decode()),
            "no bytes": changed(1, data=None),
            "bad sha": changed(1, sha256="abc"),
            "refused type": changed(2, mediaType="application/x-msdownload"),
            "after messages": jsonl([lines[0], lines[3], lines[1]]),
        }
        for name, body in bad_bodies.items():
            answer = await import_body(service, body, chatId="never")
            code = "UNSUPPORTED_MEDIA_TYPE" if name == "refused type" else "INVALID_ARGUMENT"
            assert answer.json()["errors"][0]["extensions"]["code"] == code, name
            assert answer.status_code == (415 if code != "INVALID_ARGUMENT" else 400), name

        # A .tar without one of its files, a truncated one, and no tar at all.
        with tarfile.open(fileobj=io.BytesIO(tarred)) as archive:
            kept = [member for member in archive.getmembers()
                    if member.name != archive.getnames()[-1]]
            partial = io.BytesIO()
            with tarfile.open(fileobj=partial, mode="w") as out:
                for member in kept:
                    out.addfile(member, archive.extractfile(member))
        for body in (partial.getvalue(), tarred[:700], b"plain text"):
            answer = await import_body(service, body, tar=True, chatId="never")
            assert answer.status_code == 400, answer.text
            assert answer.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
        bogus = await export(service, "trip", files="zip")
        assert bogus.status_code == 400
        assert bogus.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"

        assert await service.rows() == 0
        async with service.files.db.read() as conn:
            assert (await conn.execute(select(chats.c.id))).all() == []


async def test_interrupts_travel_with_their_state_and_decision(
        in_folder: Settings) -> None:
    async with serving(in_folder) as service:
        await service.chat("ask")
        await service.data(APPEND, {"chat": "ask", "aid": "q1", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": "mail and ask"}}]})
        started = await service.data(START, {"input": {"chatId": "ask", "requestId": "q1"}},
                                     AGENT)
        stream = started["startStream"]["id"]
        await service.data(PUSH, {"id": stream, "chunks": [
            tool_call("m-call", "call-1", "send_email", '{"to": "a@acme.test"}',
                      needsApproval=True, reason="sends mail"),
            tool_call("m-drop", "call-2", "drop_table", '{"t": "users"}', needsApproval=True),
            question("m-ask", "Which day?", responseSchema={"type": "string"}),
        ]}, AGENT)
        ended = (await service.data(END, {"id": stream, "status": "COMPLETED"},
                                    AGENT))["endStream"]
        assert ended["stream"]["status"] == "AWAITING_INPUT"
        asked = (await service.data(INTERRUPTS, {"id": "ask", "state": None}))["chat"]
        by_tool = {i["toolName"] or "question": i for i in asked["interrupts"]}
        await service.data(RESOLVE, {"id": by_tool["drop_table"]["id"], "approved": False,
                                     "reason": "never in production"})
        await service.data(RESOLVE, {"id": by_tool["question"]["id"], "response": "Friday"})
        before = (await service.data(INTERRUPTS, {"id": "ask", "state": None}))["chat"]
        assert sorted(i["state"] for i in before["interrupts"]) == [
            "PENDING", "RESOLVED", "RESOLVED"]

        lines = lines_of((await export(service, "ask")).content)
        kinds = [line["kind"] for line in lines]
        assert kinds.count("interrupt") == 3 and kinds.index("interrupt") > max(
            i for i, kind in enumerate(kinds) if kind == "message")
        denied = next(line for line in lines if line.get("toolName") == "drop_table")
        assert (denied["interruptKind"], denied["state"], denied["decision"]["reason"]) == (
            "TOOL_APPROVAL", "RESOLVED", "never in production")

        await service.data(PURGE, {"id": "ask"})
        answer = await import_body(service, jsonl(lines), chatId="ask-again")
        assert answer.status_code == 201, answer.text
        after = (await service.data(INTERRUPTS, {"id": "ask-again", "state": None}))["chat"]

        def comparable(interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return sorted(({k: v for k, v in i.items() if k != "chatId"} for i in interrupts),
                          key=lambda i: i["id"])

        assert comparable(after["interrupts"]) == comparable(before["interrupts"])
        assert {i["chatId"] for i in after["interrupts"]} == {"ask-again"}
        # The pending approval is still a person's to decide, in the new chat.
        pending = next(i for i in after["interrupts"] if i["state"] == "PENDING")
        decided = await service.data(RESOLVE, {"id": pending["id"], "approved": True})
        assert decided["resolveInterrupt"]["state"] == "RESOLVED"
        assert await service.code(RESOLVE, {"id": pending["id"], "approved": False,
                                            "decision": "other"}) == "CONFLICT"

        # Bad interrupt lines are refused, nothing written.
        bad = [dict(line) for line in lines]
        index = next(i for i, line in enumerate(bad) if line["kind"] == "interrupt")
        await service.data(PURGE, {"id": "ask-again"})
        for fields in ({"state": "MAYBE"}, {"interruptKind": "VOTE"}, {"decision": "yes"},
                       {"messageId": None}):
            bad[index] = {**lines[index], **fields}
            refused = await import_body(service, jsonl(bad), chatId="never")
            assert refused.status_code == 400, fields
            assert refused.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
        async with service.files.db.read() as conn:
            assert (await conn.execute(select(chats.c.id))).all() == []


# ---- the cold archive ------------------------------------------------------------------

ARCHIVE = """mutation($id: ID!) { archiveChat(id: $id) { id archivedAt } }"""
RESTORE = """mutation($id: ID!) { restoreArchive(id: $id) { id archivedAt } }"""


async def test_an_archived_chat_keeps_its_files_and_restores_them(
        any_storage: Settings) -> None:
    async with serving(any_storage) as service:
        image, notes = await chat_with_files(service)
        archived = (await service.data(ARCHIVE, {"id": "trip"}))["archiveChat"]
        assert archived["archivedAt"] is not None
        assert await service.message_rows() == 0
        # Long past the orphan time, the sweep finds the files still referenced by the
        # archived messages: it deletes none.
        later = now() + timedelta(seconds=service.files.limits.orphan_ttl + 86_400)
        assert await sweep_files(service.files, now=later) == 0
        async with service.files.db.read() as conn:
            states = (await conn.scalars(select(files_table.c.state))).all()
        assert sorted(states) == ["READY", "READY"]
        for file in (image, notes):
            assert await service.files.storage.size(
                await service.key_of(file["id"])) == file["size"]
        # Still readable while archived, by whoever may read the chat.
        direct = await service.http.get(f"/files/{notes['id']}", headers=BOB)
        assert direct.status_code == 404  # Bob may not read Alice's chat
        direct = await service.http.get(f"/files/{notes['id']}", headers=ALICE)
        assert direct.status_code == 200 and direct.content == NOTES

        restored = (await service.data(RESTORE, {"id": "trip"}))["restoreArchive"]
        assert restored["archivedAt"] is None
        assert await read_back(service, "trip", ALICE) == [png(6, 4), NOTES, png(6, 4)]
        # Restored, the files are held by the messages as before: a purge releases them.
        await service.data(PURGE, {"id": "trip"})
        await sweep_files(service.files, now=now())
        assert await service.rows() == 0


async def test_an_archived_chat_keeps_its_interrupts(in_folder: Settings) -> None:
    async with serving(in_folder) as service:
        await service.chat("ask")
        await service.data(APPEND, {"chat": "ask", "aid": "q1", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": "mail it"}}]})
        stream = (await service.data(START, {"input": {"chatId": "ask", "requestId": "q1"}},
                                     AGENT))["startStream"]["id"]
        await service.data(PUSH, {"id": stream, "chunks": [
            tool_call("m-call", "call-1", "send_email", '{"to": "a@acme.test"}',
                      needsApproval=True),
            tool_call("m-drop", "call-2", "drop_table", "{}", needsApproval=True)]}, AGENT)
        await service.data(END, {"id": stream, "status": "COMPLETED"}, AGENT)
        asked = (await service.data(INTERRUPTS, {"id": "ask", "state": None}))["chat"]
        drop = next(i for i in asked["interrupts"] if i["toolName"] == "drop_table")
        await service.data(RESOLVE, {"id": drop["id"], "approved": False, "reason": "no"})
        before = (await service.data(INTERRUPTS, {"id": "ask", "state": None}))["chat"]

        await service.data(ARCHIVE, {"id": "ask"})
        assert await service.message_rows() == 0
        await service.data(RESTORE, {"id": "ask"})
        after = (await service.data(INTERRUPTS, {"id": "ask", "state": None}))["chat"]
        assert after["interrupts"] == before["interrupts"]
        pending = next(i for i in after["interrupts"] if i["state"] == "PENDING")
        decided = await service.data(RESOLVE, {"id": pending["id"], "approved": True})
        assert decided["resolveInterrupt"]["decision"]["approved"] is True
