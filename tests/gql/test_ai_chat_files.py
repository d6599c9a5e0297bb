"""The AI SDK's file parts on ``POST /ai/chat`` over real HTTP: a data URL becomes a
stored file (the message keeps its id, never the bytes), readable through
``Message.files``; a wrong declared type or a broken data URL is refused and stores
nothing; an agent's ``file`` message reaches the client as a ``file`` chunk with a
signed address (the chunk made the agent's own upload readable through the chat), a
push naming a file the agent may not read is refused, and a ``file`` message naming no
file stays a ``data-file`` part. On both databases."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_ai_chat import ask, awaiting, posted, ui_chunks
from tests.gql.test_files import png
from tests.gql.test_streams_ws import END, PUSH, START, Http, serve

AGENT = {"X-User-Id": "bot", "X-Tenant-Id": "acme", "X-Roles": "agent"}
STRANGER = {"X-User-Id": "eve", "X-Tenant-Id": "elsewhere"}

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


async def graphql(server: str, who: dict[str, str], query: str,
                  variables: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(timeout=30) as client:
        body = (await client.post(f"http://{server}/graphql", headers=who, json={
            "query": query, "variables": variables})).json()
    assert not body.get("errors"), body
    return body["data"]


async def uploaded(server: str, who: dict[str, str], data: bytes, filename: str) -> Any:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"http://{server}/files", headers=who,
                                     files={"file": (filename, data, "image/png")})
    assert response.status_code == 201, response.text
    return response.json()


async def answer_with_file(server: str, http: Http, chat: str, question: str,
                           file: dict[str, Any]) -> None:
    """The agent (its own identity) answers with a line of text and the file."""
    await awaiting(http, chat, question)
    started = await graphql(server, AGENT, START, {"input": {
        "chatId": chat, "requestId": question, "assistantId": "bot", "parentId": question}})
    sid = started["startStream"]["id"]
    await graphql(server, AGENT, PUSH, {"id": sid, "chunks": [
        {"messageId": "a", "type": "text", "props": {"content": "Here is the chart."}},
        {"messageId": "f", "type": "file", "props": {
            "fileId": file["id"], "mediaType": file["mediaType"],
            "filename": file["filename"]}},
    ]})
    await graphql(server, AGENT, END, {"id": sid, "status": "COMPLETED"})


async def test_an_agents_file_message_streams_as_a_file_chunk_with_a_signed_url(
        settings: Settings) -> None:
    image = png(4, 4)
    async with serve(settings) as (server, _app):
        http = Http(server)
        # The agent's own upload: the person reads it once a chunk of the live reply
        # names it, so the live chunk carries its address.
        file = await uploaded(server, AGENT, image, "chart.png")
        async with posted(server, ask("f-3", "q1", "Draw me a chart")) as response:
            assert response.status_code == 200
            agent = asyncio.create_task(answer_with_file(server, http, "f-3", "q1", file))
            chunks = [chunk async for chunk in ui_chunks(response)]
            await agent
        [chunk] = [chunk for chunk in chunks if chunk["type"] == "file"]
        assert chunk["mediaType"] == "image/png" and set(chunk) == {"type", "url", "mediaType"}
        assert chunk["url"].startswith(f"http://{server}/files/{file['id']}?expires=")
        assert not [c for c in chunks if c["type"].startswith("data-")]
        async with httpx.AsyncClient() as client:
            served = await client.get(chunk["url"])
        assert served.status_code == 200 and served.content == image
        # Stored, the file message references the file, which the person may now read.
        stored = (await messages(http, "f-3"))[-1]
        assert stored["props"] == {"fileId": file["id"], "mediaType": "image/png",
                                   "filename": "chart.png"}
        assert [f["id"] for f in stored["files"]] == [file["id"]]


async def test_a_file_the_agent_may_not_read_is_refused_and_no_file_gets_no_address(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        theirs = await uploaded(server, STRANGER, png(2, 2, salt=7), "secret.png")
        # Naming another tenant's file: the push is refused as an append naming it is.
        await graphql(server, AGENT, """mutation { createChat(input: {id: "f-4",
          assistantId: "bot"}) { id } }""", {})
        started = await graphql(server, AGENT, START, {"input": {"chatId": "f-4"}})
        sid = started["startStream"]["id"]
        async with httpx.AsyncClient(timeout=30) as client:
            body = (await client.post(f"http://{server}/graphql", headers=AGENT, json={
                "query": PUSH, "variables": {"id": sid, "chunks": [
                    {"messageId": "f", "type": "file", "props": {
                        "fileId": theirs["id"], "mediaType": "image/png",
                        "filename": "secret.png"}}]}})).json()
        assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND", body
        await graphql(server, AGENT, END, {"id": sid, "status": "COMPLETED"})
        assert "fileId" not in json.dumps(await messages(http, "f-4"))

        # A ``file`` message whose fileId names no file is shown as the data part it is.
        nothing = {"id": "no such file!", "mediaType": "image/png", "filename": "none.png"}
        async with posted(server, ask("f-5", "q1", "Show me something")) as response:
            agent = asyncio.create_task(answer_with_file(server, http, "f-5", "q1", nothing))
            chunks = [chunk async for chunk in ui_chunks(response)]
            await agent
        assert not [c for c in chunks if c["type"] == "file"]
        [data] = [c for c in chunks if c["type"] == "data-file"]
        assert data["data"]["fileId"] == "no such file!"
        assert "/files/" not in json.dumps(chunks)
