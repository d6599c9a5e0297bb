"""The cold archive over HTTP, on file:// and on a real S3-compatible server (SeaweedFS)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import obstore
import pytest
from sqlalchemy import func, select

from chatql.gql.settings import Settings
from chatql.store import clock
from chatql.store.db.database import Database
from chatql.store.db.tables import messages, resume_records
from chatql.store.keeping import archive as store_archive
from tests.conftest import GraphQLClient, running_app
from tests.s3 import Seaweed, s3_environment, s3_server  # noqa: F401 - a fixture

Headers = Callable[..., dict[str, str]]
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """mutation($id: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $id, appendId: $appendId, messages: $messages) { lastSequence } }"""
ARCHIVE = """mutation($id: ID!) { archiveChat(id: $id) { id archivedAt } }"""
RESTORE = """mutation($id: ID!) { restoreArchive(id: $id) { id archivedAt } }"""
CHAT = """query($id: ID!) { chat(id: $id) { id archivedAt } }"""
PAGE = """query($id: ID!) { messages(chatId: $id, first: 200) {
  edges { node { id sequence role type props status createdAt tokens } } } }"""
SEARCH = """query($q: String!) { searchMessages(query: $q) { message { id } } }"""
LIST = """{ chats { totalCount edges { node { id archivedAt } } } }"""


def _ahead(real: Callable[[], datetime], by: timedelta) -> Callable[[], datetime]:
    return lambda: real() + by


async def _client(settings: Settings) -> AsyncIterator[GraphQLClient]:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield GraphQLClient(http)


async def _fill(client: GraphQLClient, headers: dict[str, str], chat_id: str = "c1") -> Any:
    await client.data(CREATE, {"input": {"id": chat_id, "assistantId": "a"}}, headers)
    await client.data(APPEND, {"id": chat_id, "appendId": "first", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "zebra crossing"},
         "tokens": 3},
        {"role": "ASSISTANT", "type": "text", "props": {"content": "stripes", "n": 1.5}},
        {"role": "ASSISTANT", "type": "tool_call", "props": {"args": [1, {"x": None}]}},
    ]}, headers)
    return (await client.data(PAGE, {"id": chat_id}, headers))["messages"]["edges"]


async def _rows(settings: Settings, chat_id: str = "c1") -> int:
    db = Database(settings.database_url)
    try:
        async with db.read() as conn:
            count = await conn.scalar(
                select(func.count()).select_from(messages).where(messages.c.chat_id == chat_id))
            return int(count or 0)
    finally:
        await db.dispose()


async def _round_trip(client: GraphQLClient, settings: Settings, alice: dict[str, str]) -> None:
    before = await _fill(client, alice)
    assert len((await client.data(SEARCH, {"q": "zebra"}, alice))["searchMessages"]) == 1
    archived = (await client.data(ARCHIVE, {"id": "c1"}, alice))["archiveChat"]
    assert archived["archivedAt"] is not None
    assert await _rows(settings) == 0
    # Still listed; search does not find archived messages until they are restored.
    listed = (await client.data(LIST, None, alice))["chats"]["edges"]
    assert listed == [{"node": {"id": "c1", "archivedAt": archived["archivedAt"]}}]
    assert (await client.data(SEARCH, {"q": "zebra"}, alice))["searchMessages"] == []
    # Archiving again changes nothing.
    assert (await client.data(ARCHIVE, {"id": "c1"}, alice))["archiveChat"] == archived
    # Reading brings the very same messages back.
    assert (await client.data(PAGE, {"id": "c1"}, alice))["messages"]["edges"] == before
    assert (await client.data(CHAT, {"id": "c1"}, alice))["chat"]["archivedAt"] is None
    assert await _rows(settings) == 3
    assert len((await client.data(SEARCH, {"q": "zebra"}, alice))["searchMessages"]) == 1


async def test_archive_then_read_on_file(
    settings: Settings, make_headers: Headers, tmp_path: Path
) -> None:
    alice = make_headers("alice")
    async for client in _client(settings):
        await _round_trip(client, settings, alice)
        # The object is removed once its rows are back.
        assert not any(p.is_file() for p in (tmp_path / "archive").rglob("*"))


async def test_append_and_explicit_restore_bring_a_chat_back(
    settings: Settings, make_headers: Headers
) -> None:
    alice = make_headers("alice")
    async for client in _client(settings):
        await _fill(client, alice)
        await client.data(ARCHIVE, {"id": "c1"}, alice)
        after = await client.data(APPEND, {"id": "c1", "appendId": "second", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": "more"}}]}, alice)
        assert after["appendMessages"]["lastSequence"] == 4
        assert await _rows(settings) == 4
        # A retried append is still answered from its receipt after an archive.
        await client.data(ARCHIVE, {"id": "c1"}, alice)
        again = await client.data(APPEND, {"id": "c1", "appendId": "second", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": "more"}}]}, alice)
        assert again == after
        await client.data(ARCHIVE, {"id": "c1"}, alice)
        restored = (await client.data(RESTORE, {"id": "c1"}, alice))["restoreArchive"]
        assert restored == {"id": "c1", "archivedAt": None}
        assert await _rows(settings) == 4
        # Only someone who may change the chat archives it; a stranger sees nothing.
        bob = make_headers("bob")
        assert await client.error_code(ARCHIVE, {"id": "c1"}, bob) == "NOT_FOUND"


async def test_an_append_refused_on_an_archived_chat_still_restores_it_and_writes_nothing(
    settings: Settings, make_headers: Headers
) -> None:
    alice, bob = make_headers("alice"), make_headers("bob")
    more = {"id": "c1", "appendId": "bob", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "more"}}]}
    async for client in _client(settings):
        await client.data(CREATE, {"input": {"id": "c1", "assistantId": "a", "public": True}},
                          alice)
        await client.data(APPEND, {**more, "appendId": "first"}, alice)
        await client.data(ARCHIVE, {"id": "c1"}, alice)
        # Bob may read the public chat (and so bring it back) but not append to it.
        assert await client.error_code(APPEND, more, bob) == "FORBIDDEN"
        assert (await client.data(CHAT, {"id": "c1"}, alice))["chat"]["archivedAt"] is None
        assert await _rows(settings) == 1
        # A stranger to the chat's tenant learns nothing and restores nothing.
        await client.data(ARCHIVE, {"id": "c1"}, alice)
        stranger = make_headers("eve", tenant="other")
        assert await client.error_code(APPEND, more, stranger) == "NOT_FOUND"
        assert (await client.data(CHAT, {"id": "c1"}, alice))["chat"]["archivedAt"] is not None
        # Its owner's append restores it and lands after the restored message.
        after = await client.data(APPEND, {**more, "appendId": "second"}, alice)
        assert after["appendMessages"]["lastSequence"] == 2
        assert await _rows(settings) == 2


async def test_a_failed_archive_write_deletes_nothing(
    settings: Settings, make_headers: Headers, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = make_headers("alice")
    real_put = obstore.put_async

    async def put_then_fail(store: Any, key: str, lines: Any, **kwargs: Any) -> Any:
        async def then_fail() -> AsyncIterator[bytes]:
            async for chunk in lines:
                yield chunk  # the chat line goes through, then the disk goes away
                raise OSError("disk went away")
        return await real_put(store, key, then_fail(), **kwargs)

    async for client in _client(settings):
        before = await _fill(client, alice)
        monkeypatch.setattr(obstore, "put_async", put_then_fail)
        assert await client.error_code(ARCHIVE, {"id": "c1"}, alice) == "PERSIST_FAILED"
        monkeypatch.setattr(obstore, "put_async", real_put)
        assert (await client.data(CHAT, {"id": "c1"}, alice))["chat"]["archivedAt"] is None
        assert (await client.data(PAGE, {"id": "c1"}, alice))["messages"]["edges"] == before


async def test_the_idle_sweeper_archives_quiet_chats(
    settings: Settings, make_headers: Headers, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = make_headers("alice")
    fast = dataclasses.replace(settings, sweep_interval=0.05, archive_after_days=7)
    async for client in _client(fast):
        before = await _fill(client, alice)
        await client.data(CREATE, {"input": {"id": "empty", "assistantId": "a"}}, alice)
        real = clock.now
        monkeypatch.setattr(clock, "now", _ahead(real, timedelta(days=7, minutes=1)))
        for _ in range(200):
            if await _rows(fast) == 0:
                break
            time.sleep(0.02)
        assert await _rows(fast) == 0
        # A chat without messages has nothing to archive.
        assert (await client.data(CHAT, {"id": "empty"}, alice))["chat"]["archivedAt"] is None
        monkeypatch.setattr(clock, "now", real)
        assert (await client.data(PAGE, {"id": "c1"}, alice))["messages"]["edges"] == before


async def test_archive_keeps_resume_records(
    settings: Settings, make_headers: Headers
) -> None:
    from chatql.store.messages.resume import StepIn, insert_resume
    from chatql.store.records import Identity

    alice = make_headers("alice")
    async for client in _client(settings):
        await _fill(client, alice)
        db = Database(settings.database_url)
        try:
            async with db.write() as conn:
                await insert_resume(conn, "c1", [StepIn(id="s", type="llm", input={"q": 1})],
                                    request_id="r", assistant_id="a")
            await store_archive.archive_chat(
                db, store_archive.ChatArchive(settings.archive_url),
                Identity(user_id="alice", tenant_id="acme"), "c1")
            async with db.read() as conn:
                assert await conn.scalar(select(func.count()).select_from(resume_records)) == 0
            resume = await client.data(
                '{ resumeRecords(chatId: "c1") { type input } }', None, alice)
            # Resume records come back with the messages (read restores them first).
            await client.data(PAGE, {"id": "c1"}, alice)
            resume = await client.data(
                '{ resumeRecords(chatId: "c1") { type input } }', None, alice)
            assert resume["resumeRecords"] == [{"type": "llm", "input": {"q": 1}}]
        finally:
            await db.dispose()


# ---- s3:// against SeaweedFS -------------------------------------------------------


@pytest.fixture
def s3_settings(settings: Settings, request: pytest.FixtureRequest,
                monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    server: Seaweed = request.getfixturevalue("s3_server")
    # obstore reads the standard AWS variables.
    for name, value in s3_environment(server).items():
        monkeypatch.setenv(name, value)
    return dataclasses.replace(settings, archive_url=f"s3://chatql/{tmp_path.name}")


async def test_archive_then_read_on_s3(s3_settings: Settings, make_headers: Headers) -> None:
    async for client in _client(s3_settings):
        await _round_trip(client, s3_settings, make_headers("alice"))


async def test_a_stopped_s3_server_deletes_nothing(
    s3_settings: Settings, make_headers: Headers, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server of its own, stopped before the archive is written.
    doomed = Seaweed(tmp_path / "doomed")
    doomed.folder.mkdir()
    doomed.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{doomed.port}")
    alice = make_headers("alice")
    try:
        async for client in _client(s3_settings):
            before = await _fill(client, alice)
            doomed.stop()
            assert await client.error_code(ARCHIVE, {"id": "c1"}, alice) == "PERSIST_FAILED"
            assert (await client.data(CHAT, {"id": "c1"}, alice))["chat"]["archivedAt"] is None
            assert (await client.data(PAGE, {"id": "c1"}, alice))["messages"]["edges"] == before
    finally:
        doomed.stop()
