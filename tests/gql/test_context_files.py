"""``modelContext(files: …)`` over real HTTP, on SQLite and Postgres: the files a window's
messages reference as signed URLs (the default), inline (data URLs, text files' contents
cut at a limit, large files falling back to URLs) or left out; references the caller
may not read left bare; the token estimates a file reference makes."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from chatql.gql.schema.context_files import CUT_MARKER
from chatql.gql.settings import Settings
from chatql.store.db.tables import messages
from chatql.store.files.window import FILE_PART_TOKENS
from chatql.store.ids import new_id
from chatql.store.messages.lifecycle import estimate_tokens
from tests.gql.test_files import (
    AGENT,
    ALICE,
    APPEND,
    BOB,
    Service,
    asking_with,
    file_part,
    png,
    serving,
)
from tests.gql.test_streams_ws import END, PUSH, START
from tests.s3 import Seaweed, s3_environment, s3_server  # noqa: F401 - the fixture

CONTEXT = """query($chat: ID!, $files: FileMode!) {
  modelContext(chatId: $chat, limit: 20, files: $files) {
    id role type props tokens tokensEstimated } }"""
DEFAULT_CONTEXT = """query($chat: ID!) { modelContext(chatId: $chat, limit: 20) {
  id type props tokens tokensEstimated } }"""
NOTES = b"# notes\n\nremember the milk\n"
PDF = b"%PDF-1.4\n%report\n"
#: The text of the question each test asks, as it counts on its own.
QUESTION_TOKENS = estimate_tokens({"content": [{"type": "text", "text": "look"}]})


@pytest.fixture
def context_settings(settings: Settings, tmp_path: Path) -> Settings:
    return dataclasses.replace(settings, files_url=f"file://{tmp_path / 'files'}",
                               sweep_interval=0)


async def answer_with_file(service: Service, chat: str, props: dict[str, Any],
                           request: str = "r1") -> None:
    """The agent answers in ``chat`` with a ``file`` message of ``props`` (a stream:
    its references are linked only when the agent may read the file)."""
    started = await service.data(START, {"input": {"chatId": chat, "requestId": request}},
                                 AGENT)
    stream = started["startStream"]["id"]
    await service.data(PUSH, {"id": stream, "chunks": [
        {"messageId": "m1", "type": "file", "role": "ASSISTANT", "props": props}]}, AGENT)
    await service.data(END, {"id": stream, "status": "COMPLETED"}, AGENT)


async def chat_with_files(service: Service) -> dict[str, Any]:
    """Chat ``c1``: Alice asks about a chart and her notes, the agent answers with a PDF."""
    chart = await service.uploaded(png(3, 2), "chart.png")
    notes = await service.uploaded(NOTES, "notes.md", "text/markdown")
    report = await service.uploaded(PDF, "report.pdf", "application/pdf", who=AGENT)
    await service.chat("c1")
    await service.data(APPEND, {"chat": "c1", "aid": "a1",
                                "messages": asking_with(file_part(chart), file_part(notes))})
    await answer_with_file(service, "c1", {
        "fileId": report["id"], "mediaType": "application/pdf", "filename": "report.pdf"})
    return {"chart": chart, "notes": notes, "report": report}


async def window(service: Service, files: str | None, chat: str = "c1",
                 who: dict[str, str] = AGENT) -> list[dict[str, Any]]:
    if files is None:
        data = await service.data(DEFAULT_CONTEXT, {"chat": chat}, who)
    else:
        data = await service.data(CONTEXT, {"chat": chat, "files": files}, who)
    messages: list[dict[str, Any]] = data["modelContext"]
    return messages


def decoded(url: str, media_type: str) -> bytes:
    prefix = f"data:{media_type};base64,"
    assert url.startswith(prefix), url[:60]
    return base64.b64decode(url[len(prefix):])


async def test_url_is_the_default_and_signs_each_readable_file(
        context_settings: Settings) -> None:
    async with serving(context_settings) as service:
        uploaded = await chat_with_files(service)
        for files in (None, "URL"):
            question, answer = await window(service, files)
            text, chart, notes = question["props"]["content"]
            assert text == {"type": "text", "text": "look"}
            assert "text" not in notes
            for part, body in ((chart, png(3, 2)), (notes, NOTES)):
                assert part["url"].startswith(f"{service.base}/files/{part['fileId']}?")
                assert (await service.download(part["url"])).content == body
            assert answer["type"] == "file"
            assert answer["props"]["fileId"] == uploaded["report"]["id"]
            assert (await service.download(answer["props"]["url"])).content == PDF
            # A file reference counts a fixed estimate, never its JSON or its address.
            assert question["tokensEstimated"] is True
            assert question["tokens"] == QUESTION_TOKENS + 2 * FILE_PART_TOKENS
            assert answer["tokens"] == FILE_PART_TOKENS
        # Alice reads the same window: the agent's PDF is hers to read through the chat.
        _, answer = await window(service, "URL", who=ALICE)
        assert (await service.download(answer["props"]["url"])).content == PDF
        # The stored messages keep ids, never addresses.
        [stored] = (await service.data(
            """query { messages(chatId: "c1", first: 1) { edges { node { props } } } }"""
        ))["messages"]["edges"]
        assert all("url" not in part for part in stored["node"]["props"]["content"])


async def test_inline_gives_bytes_as_data_urls_and_text_files_as_text(
        context_settings: Settings) -> None:
    async with serving(context_settings) as service:
        await chat_with_files(service)
        question, answer = await window(service, "INLINE")
        _, chart, notes = question["props"]["content"]
        assert decoded(chart["url"], "image/png") == png(3, 2)
        assert decoded(notes["url"], "text/markdown") == NOTES
        assert notes["text"] == NOTES.decode()
        assert "text" not in chart
        assert decoded(answer["props"]["url"], "application/pdf") == PDF
        assert "text" not in answer["props"]
        # The text file counts as its text; the image as a file reference.
        assert question["tokens"] == QUESTION_TOKENS + FILE_PART_TOKENS + -(-len(NOTES) // 4)
        assert answer["tokens"] == FILE_PART_TOKENS

        # maxTokens counts a text file inline as its text: 8000 bytes need 2000 tokens,
        # while by URL the whole chat fits in 1500.
        query = """query($files: FileMode!, $t: Int!) {
          modelContext(chatId: "c1", maxTokens: $t, files: $files) { id } }"""
        big = await service.uploaded(b"x" * 8000, "big.txt", "text/plain")
        await service.data(APPEND, {"chat": "c1", "aid": "a2",
                                    "messages": asking_with(file_part(big))})
        assert await service.code(query, {"files": "INLINE", "t": 1500},
                                  AGENT) == "WINDOW_TOO_SMALL"
        assert len((await service.data(query, {"files": "URL", "t": 1500},
                                       AGENT))["modelContext"]) == 3


@pytest.mark.parametrize("backend", ["local", "s3"])
async def test_inline_cuts_long_text_and_large_files_fall_back_to_urls(
        context_settings: Settings, backend: str, request: pytest.FixtureRequest,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limited = dataclasses.replace(context_settings, context_file_text_bytes=64,
                                  context_file_inline_bytes=60)
    if backend == "s3":
        # Bytes read part way from an object store, the read closed early.
        server: Seaweed = request.getfixturevalue("s3_server")
        for name, value in s3_environment(server).items():
            monkeypatch.setenv(name, value)
        limited = dataclasses.replace(limited, files_url=f"s3://chatql/{tmp_path.name}")
    # 63 ASCII bytes, then a 2-byte character split by the limit: it is held back whole.
    text = ("a" * 63 + "é" + "b" * 100).encode()
    small = b"%PDF-1.4\n%small\n"
    image = png(40, 40)
    assert len(image) > 60 >= len(small)
    async with serving(limited) as service:
        long_text = await service.uploaded(text, "long.txt", "text/plain")
        exact = await service.uploaded(b"c" * 64, "exact.txt", "text/plain")
        big_image = await service.uploaded(image, "big.png")
        small_pdf = await service.uploaded(small, "small.pdf", "application/pdf")
        await service.chat("c1")
        await service.data(APPEND, {"chat": "c1", "aid": "a1", "messages": asking_with(
            file_part(long_text), file_part(exact), file_part(big_image),
            file_part(small_pdf))})
        [question] = await window(service, "INLINE")
        _, cut, whole, large, pdf = question["props"]["content"]
        assert cut["text"] == "a" * 63 + CUT_MARKER.format(shown=63, size=len(text))
        # Cut, its bytes are not inlined: the signed address reads them all.
        assert cut["url"].startswith(service.base)
        assert (await service.download(cut["url"])).content == text
        # A file exactly at the limit is whole: text and data URL.
        assert whole["text"] == "c" * 64
        assert decoded(whole["url"], "text/plain") == b"c" * 64
        # Past the inline limit an image gets its signed address.
        assert large["url"].startswith(service.base) and "text" not in large
        assert (await service.download(large["url"])).content == image
        assert decoded(pdf["url"], "application/pdf") == small
        # Each text file counts the text it shows (at most the limit).
        assert question["tokens"] == QUESTION_TOKENS + 16 + 16 + 2 * FILE_PART_TOKENS


async def test_none_drops_file_parts_and_file_messages(context_settings: Settings) -> None:
    async with serving(context_settings) as service:
        await chat_with_files(service)
        await service.data(APPEND, {"chat": "c1", "aid": "a2", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": "thanks"}}]})
        question, thanks = await window(service, "NONE")
        assert question["type"] == "user_input" and thanks["props"] == {"content": "thanks"}
        assert question["props"] == {"content": [{"type": "text", "text": "look"}]}
        assert question["tokens"] == QUESTION_TOKENS
        # The agent's file message is gone before counting: two messages fit limit 2.
        data = await service.data(
            """{ modelContext(chatId: "c1", limit: 2, files: NONE) { type } }""",
            who=AGENT)
        assert [m["type"] for m in data["modelContext"]] == ["user_input", "user_input"]


async def test_unreadable_and_missing_files_are_left_bare(context_settings: Settings) -> None:
    async with serving(context_settings) as service:
        mine = await service.uploaded(png(2, 2), "mine.png")
        # Bob's upload, referenced by no chat: the agent may not read it.
        private = await service.uploaded(b"secret", "secret.txt", "text/plain", who=BOB)
        gone = await service.uploaded(NOTES, "gone.md", "text/markdown")
        await service.chat("c1")
        await service.data(APPEND, {"chat": "c1", "aid": "a1",
                                    "messages": asking_with(file_part(mine), file_part(gone))})
        # The agent's stored answer names Bob's file and a file that never existed,
        # unlinked: what a stream stored before its pushes' file references were checked
        # may hold (such a push is refused now, so the stored answer is given them).
        nowhere = {"fileId": new_id(), "mediaType": "image/png", "filename": "no.png"}
        await answer_with_file(service, "c1", {"filename": "named later"})
        [stored] = (await service.page("c1"))[-1:]
        async with service.files.db.write() as conn:
            await conn.execute(update(messages).where(messages.c.id == stored["id"]).values(
                props={"fileId": private["id"], "mediaType": "text/plain",
                       "filename": "secret.txt", "content": [{"type": "file", **nowhere}]}))
        # The bytes of a linked file lost from the storage.
        await service.files.storage.delete(await service.key_of(gone["id"]))
        for files in ("URL", "INLINE"):
            question, answer = await window(service, files)
            _, linked, lost = question["props"]["content"]
            assert linked["url"]
            assert answer["props"]["fileId"] == private["id"]
            assert "url" not in answer["props"] and "text" not in answer["props"]
            assert answer["props"]["content"] == [{"type": "file", **nowhere}]
            if files == "INLINE":
                assert "url" not in lost and "text" not in lost
        [page_answer] = (await service.page("c1"))[-1:]
        assert page_answer["files"] == []


async def test_a_bad_file_mode_is_a_validation_error(context_settings: Settings) -> None:
    async with serving(context_settings) as service:
        await service.chat("c1")
        body = await service.execute(
            """{ modelContext(chatId: "c1", limit: 5, files: BYTES) { id } }""")
        assert body.get("data") is None and body["errors"]
        assert "BYTES" in body["errors"][0]["message"]
        body = await service.execute(CONTEXT, {"chat": "c1", "files": "inline"})
        assert body.get("data") is None and body["errors"]
        body = await service.execute(
            """{ modelContext(chatId: "c1", limit: 5, files: null) { id } }""")
        assert body.get("data") is None and body["errors"]


async def test_the_kit_asks_for_files_as_it_is_told(context_settings: Settings) -> None:
    from chatql_client import ChatqlClient

    async with serving(context_settings) as service:
        await chat_with_files(service)
        async with ChatqlClient(f"{service.base}/graphql", headers=AGENT) as agent:
            by_url = await agent.model_context("c1")
            inline = await agent.model_context("c1", files="INLINE")
            without = await agent.model_context("c1", files="NONE")
        assert by_url[1]["props"]["url"].startswith(service.base)
        assert decoded(inline[1]["props"]["url"], "application/pdf") == PDF
        assert inline[0]["props"]["content"][2]["text"] == NOTES.decode()
        assert [m["type"] for m in without] == ["user_input"]
