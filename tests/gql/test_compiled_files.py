"""A compiled message page asking ``files`` answers what the general executor answers.

Two apps share one database, one files folder and one secret: one with compiled reads
(the default), one with the ``reads`` plan switched off. Messages with no file, one,
two (named in the props in the other order than they were uploaded) and references to
a file of another tenant (stored unlinked, as a stream stored before its pushes' file
references were checked may hold, so ``Message.files`` leaves it out) are read through
both, on SQLite and
Postgres. The bodies must be the same bytes but for each ``url``'s query string (its
expiry moves with the clock), and every address the compiled page gives must serve
the file's bytes.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from chatql.gql.plans.compiled_reads import CompiledReads
from chatql.gql.schema.root import build_schema
from chatql.gql.settings import Settings
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from chatql.store.files.service import FileService, _files_of_messages_statement
from tests.conftest import running_app
from tests.gql.test_files import (
    AGENT,
    ALICE,
    APPEND,
    CREATE,
    OTHER_ALICE,
    asking_with,
    file_part,
    png,
)
from tests.gql.test_streams_ws import END, PUSH, START

ALL_FIELDS = "__typename id filename mediaType size sha256 width height createdAt url"
#: Documents a front end might send: the bench's, every field, aliases and fragments,
#: a forward page, a page across branches, a page of one message.
DOCUMENTS = [
    ("query($chat: ID!) { messages(chatId: $chat, last: 50) { edges { node {"
     " id role type props createdAt files { id url } } } } }"),
    ("query($chat: ID!) { messages(chatId: $chat) { edges { cursor node {"
     f" id files {{ {ALL_FIELDS} }} }} }} pageInfo {{ hasNextPage endCursor }} }} }}"),
    ("query($chat: ID!) { messages(chatId: $chat, first: 3) { edges { node {"
     " a: files { url id } ...M b: files { ... on File { sha256 } } } } } }"
     " fragment M on Message { type files { filename width } }"),
    ("query($chat: ID!) { messages(chatId: $chat, allBranches: true, last: 4) {"
     " edges { node { sequence files { size mediaType createdAt height url } } } } }"),
    ("query($chat: ID!) { messages(chatId: $chat, last: 1) { edges { node {"
     " files { id } } } } }"),
]
#: A ``url`` without its query string (expiry and signature).
UNSIGNED = re.compile(rb'(/files/[^"?]+)\?[^"]*')


@pytest.fixture
async def apps(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    reference = replace(settings, disabled_plans=("reads",))
    async with (
        running_app(settings) as fast,
        running_app(reference) as slow,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=fast),
                          base_url="http://chatql") as a,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=slow),
                          base_url="http://chatql") as b,
    ):
        yield a, b


async def _data(http: httpx.AsyncClient, query: str, variables: dict[str, Any],
                who: dict[str, str] = ALICE) -> Any:
    body = (await http.post("/graphql", json={"query": query, "variables": variables},
                            headers=who)).json()
    assert not body.get("errors"), body
    return body["data"]


async def _upload(http: httpx.AsyncClient, data: bytes, filename: str, media_type: str,
                  who: dict[str, str] = ALICE) -> dict[str, Any]:
    response = await http.post("/files", files={"file": (filename, data, media_type)},
                               headers=who)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    answered: list[bool] = []
    original = CompiledReads.run

    async def spy(self: CompiledReads, *args: Any) -> Any:
        result = await original(self, *args)
        answered.append(result is not None)
        return result

    monkeypatch.setattr(CompiledReads, "run", spy)
    return answered


async def _name_unlinked(settings: Settings, message_id: str, props: dict[str, Any]) -> None:
    """Give a stored message ``props`` naming files it has no link to — what a stream
    stored before its pushes' file references were checked may hold (a push naming a file
    its producer may not read is refused now)."""
    db = Database(settings.database_url)
    try:
        async with db.write() as conn:
            await conn.execute(update(messages).where(messages.c.id == message_id)
                               .values(props=props))
    finally:
        await db.dispose()


async def test_compiled_pages_with_files_match_the_executor(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
) -> None:
    fast, slow = apps
    chart_bytes, notes_bytes, photo_bytes = png(3, 2), b"# notes\n", png(5, 4, salt=7)
    chart = await _upload(fast, chart_bytes, "chart.png", "image/png")
    notes = await _upload(fast, notes_bytes, "notes.md", "text/markdown")
    photo = await _upload(fast, photo_bytes, "photo.png", "image/png", AGENT)
    foreign = await _upload(fast, png(2, 2, salt=9), "theirs.png", "image/png", OTHER_ALICE)
    content = {chart["id"]: chart_bytes, notes["id"]: notes_bytes, photo["id"]: photo_bytes}
    await _data(fast, CREATE, {"id": "c1", "public": False})
    await _data(fast, APPEND, {"chat": "c1", "aid": "a1", "messages": [
        {"role": "USER", "type": "text", "props": {"text": "no file"}},
        *asking_with(file_part(chart)),
        # Named in the other order than uploaded (and than the store's lookup gives).
        *asking_with(file_part(notes), file_part(chart)),
    ]})
    # An agent's answer naming a file of another tenant (left unlinked) beside its own
    # upload and a file of the chat, then a `file` message of its own. (A push naming
    # the foreign file is refused: the stored answers are given it afterwards.)
    started = await _data(fast, START, {"input": {"chatId": "c1", "requestId": "r1"}}, AGENT)
    stream = started["startStream"]["id"]
    await _data(fast, PUSH, {"id": stream, "chunks": [
        {"messageId": "m1", "type": "assistant_output", "role": "ASSISTANT",
         "props": {"content": [file_part(photo), file_part(notes)]}},
        {"messageId": "m2", "type": "assistant_output", "role": "ASSISTANT",
         "props": {"content": []}},
        {"messageId": "m3", "type": "file", "role": "ASSISTANT",
         "props": {"fileId": photo["id"], "mediaType": "image/png",
                   "filename": "photo.png"}}]}, AGENT)
    ended = await _data(fast, END, {"id": stream, "status": "COMPLETED"}, AGENT)
    m1, m2 = (m["id"] for m in ended["endStream"]["messages"]
              if m["type"] == "assistant_output")
    await _name_unlinked(settings, m1, {"content": [file_part(foreign), file_part(photo),
                                                    file_part(notes)]})
    await _name_unlinked(settings, m2, {"content": [file_part(foreign)]})

    answered = _spy(monkeypatch)
    urls: list[str] = []
    for query in DOCUMENTS:
        body = {"query": query, "variables": {"chat": "c1"}}
        ours = await fast.post("/graphql", json=body, headers=ALICE)
        theirs = await slow.post("/graphql", json=body, headers=ALICE)
        assert ours.status_code == theirs.status_code == 200
        assert b'"errors"' not in ours.content
        assert UNSIGNED.sub(rb"\1", ours.content) == UNSIGNED.sub(rb"\1", theirs.content), query
        urls.extend(file["url"] for edge in ours.json()["data"]["messages"]["edges"]
                    for file in edge["node"].get("files", []) if "url" in file)
    assert answered == [True] * len(DOCUMENTS)

    page = (await _data(fast, DOCUMENTS[0], {"chat": "c1"}))["messages"]["edges"]
    assert [[file["id"] for file in edge["node"]["files"]] for edge in page] == [
        [], [chart["id"]], [notes["id"], chart["id"]], [photo["id"], notes["id"]], [],
        [photo["id"]]]
    assert urls and all(url.startswith("http://chatql/files/") for url in urls)
    # The addresses follow the host each request came to, one request after another.
    for host in ("chats.example", "other.example:8443", "chatql"):
        moved = await fast.post("/graphql", json={"query": DOCUMENTS[0],
                                                  "variables": {"chat": "c1"}},
                                headers={**ALICE, "host": host})
        seen = [file["url"] for edge in moved.json()["data"]["messages"]["edges"]
                for file in edge["node"]["files"]]
        assert seen and all(url.startswith(f"http://{host}/files/") for url in seen), seen
    for url in urls:  # no credentials: the signed address is enough
        response = await fast.get(url)
        assert response.status_code == 200, url
        assert response.content == content[url.split("/files/")[1].split("?")[0]]

    # Only the messages whose props name a file are looked up: a page naming none asks
    # the store nothing.
    asked: list[list[str]] = []
    looked_up = FileService.files_of_messages

    async def counting(self: FileService, message_ids: Sequence[str], *rest: Any) -> Any:
        asked.append(list(message_ids))
        return await looked_up(self, message_ids, *rest)

    monkeypatch.setattr(FileService, "files_of_messages", counting)
    page = (await _data(fast, DOCUMENTS[0], {"chat": "c1"}))["messages"]["edges"]
    [named] = asked
    assert named == [edge["node"]["id"] for edge in page[1:]]  # not the text-only one
    await _data(fast, CREATE, {"id": "c2", "public": False})
    await _data(fast, APPEND, {"chat": "c2", "aid": "a2", "messages": [
        {"role": "USER", "type": "text", "props": {"text": f"no file {n}"}} for n in range(3)]})
    plain = (await _data(fast, DOCUMENTS[0], {"chat": "c2"}))["messages"]["edges"]
    assert [edge["node"]["files"] for edge in plain] == [[], [], []]
    assert len(asked) == 1


UPDATE = """mutation($id: ID!, $props: JSON!) {
  updateMessage(id: $id, input: {props: $props}) { id } }"""


async def test_a_page_read_again_asks_the_store_for_its_files_once_until_props_change(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compiled page remembers each message's files by its props: read again, it asks
    the store nothing; once another instance changes a message's props (and so its
    links), the next read shows the new files."""
    fast, other = apps
    chart = await _upload(fast, png(3, 2), "chart.png", "image/png")
    photo = await _upload(fast, png(5, 4, salt=7), "photo.png", "image/png")
    await _data(fast, CREATE, {"id": "c1", "public": False})
    made = await _data(fast, APPEND, {"chat": "c1", "aid": "a1", "messages": [
        *asking_with(file_part(chart)), *asking_with(file_part(photo))]})
    first, _ = made["appendMessages"]["messageIds"]

    lookups: list[Any] = []
    fetch = prepared.fetch

    async def counting(db: Any, statement: Any, arguments: Any, **options: Any) -> Any:
        if statement is _files_of_messages_statement(db):
            lookups.append(arguments["ids"])
        return await fetch(db, statement, arguments, **options)

    monkeypatch.setattr(prepared, "fetch", counting)

    def files_of(page: Any) -> list[list[str]]:
        return [[file["id"] for file in edge["node"]["files"]]
                for edge in page["messages"]["edges"]]

    page = await _data(fast, DOCUMENTS[0], {"chat": "c1"})
    assert files_of(page) == [[chart["id"]], [photo["id"]]]
    assert len(lookups) == 1
    again = await _data(fast, DOCUMENTS[0], {"chat": "c1"})
    assert files_of(again) == files_of(page) and len(lookups) == 1

    # Another instance (the executor's app, on the same database) moves the first
    # message from the chart to the photo, then to no file at all.
    await _data(other, UPDATE, {"id": first, "props": {
        "content": [{"type": "text", "text": "look"}, file_part(photo)]}})
    moved = await _data(fast, DOCUMENTS[0], {"chat": "c1"})
    assert files_of(moved) == [[photo["id"]], [photo["id"]]]
    assert len(lookups) == 2
    await _data(other, UPDATE, {"id": first, "props": {
        "content": [{"type": "text", "text": "no file now"}]}})
    gone = await _data(fast, DOCUMENTS[0], {"chat": "c1"})
    assert files_of(gone) == [[], [photo["id"]]]
    assert len(lookups) == 2  # a message whose props name no file is not looked up

    # Addresses are remembered for the minute they expire on only: two hours later the
    # same page gives new ones, good for as long as ever.
    def expires(page: Any) -> int:
        [url] = [file["url"] for edge in page["messages"]["edges"]
                 for file in edge["node"]["files"]]
        return int(url.split("expires=")[1].split("&")[0])

    before = expires(gone)
    clock = time.time
    monkeypatch.setattr(time, "time", lambda: clock() + 7200)
    later = await _data(fast, DOCUMENTS[0], {"chat": "c1"})
    assert expires(later) - before >= 7200
    [url] = [file["url"] for edge in later["messages"]["edges"] for file in edge["node"]["files"]]
    assert (await fast.get(url)).status_code == 200


def test_files_is_compiled_in_its_plain_shape_only() -> None:
    """``Message.files`` with File's stored fields and ``url`` is compiled; a directive
    inside it, a field File lacks, or ``files`` where the plan does not fill messages
    from a page leave the document to the executor."""
    settings = Settings()
    reads = CompiledReads(build_schema(settings), settings)
    page = reads.compile('{ messages(chatId: "c") { edges { node { sequence files {'
                         f" {ALL_FIELDS} }} }} }} }} }}", None)
    # The message's type and props order its files, as the resolver orders them.
    assert page is not None and page.columns == ("id", "sequence", "type", "props")
    for declined in (
        '{ messages(chatId: "c") { edges { node { files @include(if: true) { id } } } } }',
        '{ messages(chatId: "c") { edges { node { files { id url @skip(if: false) } } } } }',
        '{ messages(chatId: "c") { edges { node { files { ... on File @skip(if: false)'
        " { id } } } } } }",
        '{ messages(chatId: "c") { edges { node { files(first: 1) { id } } } } }',
        '{ messages(chatId: "c") { edges { node { files { id uploader } } } } }',
        '{ messages(chatId: "c") { edges { node { files } } } }',
        '{ chat(id: "c") { lastMessage { files { id } } } }',
    ):
        assert reads.compile(declined, None) is None, declined
