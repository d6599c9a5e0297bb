"""Shutdown ends and persists every active stream, in process and on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from tests.conftest import TEST_SECRET, free_port, running_app
from tests.gql.wsclient import ChunkView, connect

ROOT = Path(__file__).resolve().parents[2]
# An agent: the producer mutations need the agent (or admin) role.
HEADERS = {"X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent"}
CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = "mutation($chat: ID!) { startStream(input: {chatId: $chat, requestId: \"r\"}) { id } }"
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { lastSeq } }"""


async def post(http: httpx.AsyncClient, url: str, query: str, variables: dict[str, Any]) -> Any:
    response = await http.post(url, json={"query": query, "variables": variables},
                               headers=HEADERS)
    body = response.json()
    assert not body.get("errors"), body
    return body["data"]


async def stored_rows(database_url: str, chat: str) -> list[tuple[str, Any, str]]:
    db = Database(database_url)
    try:
        async with db.read() as conn:
            rows = (await conn.execute(
                select(messages.c.type, messages.c.props, messages.c.status)
                .where(messages.c.chat_id == chat).order_by(messages.c.sequence))).all()
    finally:
        await db.dispose()
    return [(row.type, row.props, row.status) for row in rows]


async def test_app_shutdown_persists_active_streams_interrupted(settings: Settings) -> None:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            await post(http, "/graphql", CREATE, {"id": "bye"})
            sid = (await post(http, "/graphql", START, {"chat": "bye"}))["startStream"]["id"]
            await post(http, "/graphql", PUSH, {"id": sid, "chunks": [
                {"messageId": "m", "type": "text", "props": {"content": "half"}}]})
    assert await stored_rows(settings.database_url, "bye") == [
        ("text", {"content": "half"}, "INTERRUPTED")]


async def test_sigterm_mid_stream_persists_partial_content(database_url: str) -> None:
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": TEST_SECRET}
    server = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port), "--log-level",
         "warning"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/graphql"
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            for _ in range(300):
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
            await post(http, url, CREATE, {"id": "term"})
            async with connect(f"127.0.0.1:{port}", "graphql-transport-ws", HEADERS) as ws:
                view = await ChunkView.open(ws, "term")
                sid = (await post(http, url, START, {"chat": "term"}))["startStream"]["id"]
                await view.until_event("stream_start")
                await post(http, url, PUSH, {"id": sid, "chunks": [
                    {"messageId": "m", "type": "text", "props": {"content": "partial "},
                     "delta": True},
                    {"messageId": "m", "type": "text", "props": {"content": "answer"},
                     "delta": True}]})
                await view.until_seq(3)
                server.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(server.wait, 30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.stdout is not None
    with server.stdout:
        output = server.stdout.read().decode()
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert code in (0, -signal.SIGTERM), output
    assert "Traceback" not in output, output
    assert await stored_rows(database_url, "term") == [
        ("text", {"content": "partial answer"}, "INTERRUPTED")]
