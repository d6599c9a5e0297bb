"""The AI SDK's file parts on ``POST /ai/chat`` over real HTTP: a data URL becomes a
stored file (the message keeps its id, never the bytes), readable through
``Message.files``; a wrong declared type or a broken data URL is refused and stores
nothing. On both databases."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_ai_chat import posted
from tests.gql.test_files import png
from tests.gql.test_streams_ws import Http, serve

STORED = """query($c: ID!) { chat(id: $c) { messages(first: 10) { edges { node {
  id props files { id filename mediaType size width height url } } } } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def with_file(chat: str, message_id: str, url: str, media_type: str) -> dict[str, Any]:
    return {"id": chat, "trigger": "submit-message", "messageId": None, "messages": [
        {"id": message_id, "role": "user", "parts": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "file", "mediaType": media_type, "filename": "dot.png", "url": url}]}]}


async def messages(http: Http, chat: str) -> list[dict[str, Any]]:
    data = (await http.execute(STORED, {"c": chat})).get("data") or {}
    return [edge["node"] for edge in ((data.get("chat") or {}).get("messages") or {}).get(
        "edges", [])]


async def test_a_data_url_becomes_a_stored_file_and_the_message_keeps_its_id(
        settings: Settings) -> None:
    image = png(3, 2)
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, with_file("f-1", "q1", url, "image/png")) as response:
            assert response.status_code == 200
            await response.aclose()
        [question] = await messages(http, "f-1")
        [file] = question["files"]
        assert (file["filename"], file["mediaType"], file["size"], file["width"],
                file["height"]) == ("dot.png", "image/png", len(image), 3, 2)
        assert question["props"]["content"] == [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "file", "fileId": file["id"], "mediaType": "image/png",
             "filename": "dot.png"}]
        assert "base64" not in json.dumps(question)
        async with httpx.AsyncClient() as client:
            served = await client.get(file["url"])
        assert served.status_code == 200 and served.content == image

        # The service's own (signed) file address names the same file.
        body = with_file("f-1", "q2", file["url"], "image/png")
        async with posted(server, body) as response:
            assert response.status_code == 200
            await response.aclose()
        second = (await messages(http, "f-1"))[-1]
        assert [f["id"] for f in second["files"]] == [file["id"]]


async def test_a_wrong_type_or_a_broken_data_url_stores_nothing(settings: Settings) -> None:
    text = "data:image/png;base64," + base64.b64encode(b"just some text").decode()
    async with serve(settings) as (server, _app):
        http = Http(server)
        async with posted(server, with_file("f-2", "q1", text, "image/png")) as response:
            assert response.status_code == 415
            assert json.loads(await response.aread())["errors"][0]["extensions"][
                "code"] == "UNSUPPORTED_MEDIA_TYPE"
        async with posted(server, with_file("f-2", "q1", "data:image/png;base64,%%%",
                                            "image/png")) as response:
            assert response.status_code == 400
        assert await messages(http, "f-2") == []
