"""SIGTERM to ``chatql serve``, seen from outside the process as a load balancer sees it.

While a stream is live and a subscriber follows it, the server gets SIGTERM. From then
on every readiness probe — over a connection kept alive from before, or a new one — is
refused or answered 503 (the server's handler marks it draining at once; uvicorn serves
on until its next tick, then stops listening), never 200; the subscriber's socket is
closed; and once the process has exited the live stream is in the database, ended
INTERRUPTED with every chunk the producer had been told was accepted.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets
from sqlalchemy import select

from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from tests.conftest import TEST_SECRET, free_port
from tests.gql.test_streams_ws import ALICE, CREATE, PUSH, START
from tests.test_serve_workers import graphql_data

ROOT = Path(__file__).resolve().parents[1]


async def _probe(http: httpx.AsyncClient) -> int | str:
    """The status of one GET /readyz, or how it failed to get one."""
    try:
        return (await http.get("/readyz")).status_code
    except httpx.TransportError as error:
        return type(error).__name__


@pytest.mark.slow
async def test_after_sigterm_readyz_never_answers_200_and_the_live_stream_persists(
        database_url: str) -> None:
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": TEST_SECRET,
           "CHATQL_BROKER_URL": "memory://", "CHATQL_MIGRATE_ON_START": "false"}
    server = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
         "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    after: list[int | str] = []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10) as kept:
            for _ in range(600):
                if await _probe(kept) == 200:
                    break
                assert server.poll() is None, "the server exited"
                await asyncio.sleep(0.05)
            assert await _probe(kept) == 200
            await graphql_data(kept, CREATE, {"id": "draining"})
            started = await graphql_data(kept, START, {"input": {"chatId": "draining"}})
            stream_id = started["startStream"]["id"]
            pushed = await graphql_data(kept, PUSH, {"id": stream_id, "chunks": [
                {"messageId": "m", "type": "text", "props": {"content": "half an "},
                 "delta": True},
                {"messageId": "m", "type": "text", "props": {"content": "answer"},
                 "delta": True}]})
            assert pushed["pushChunks"]["accepted"] == 2
            async with websockets.connect(
                    f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                    compression=None) as subscriber:
                await subscriber.send(json.dumps({"type": "connection_init", "payload": ALICE}))
                assert json.loads(await subscriber.recv())["type"] == "connection_ack"
                await subscriber.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
                    "query": 'subscription { chatStream(chatId: "draining") { seq } }'}}))
                assert json.loads(await subscriber.recv())["type"] == "next"
                # The keep-alive connection is idle and open when the signal arrives.
                server.send_signal(signal.SIGTERM)
                while server.poll() is None:
                    after.append(await _probe(kept))
                    async with httpx.AsyncClient(base_url=base, timeout=10) as fresh:
                        after.append(await _probe(fresh))
                    await asyncio.sleep(0.02)
                # The server closed the subscriber's socket on its way out.
                with pytest.raises(websockets.ConnectionClosed):
                    while True:
                        await asyncio.wait_for(subscriber.recv(), 10)
        # uvicorn ends by raising the signal it caught again, once shutdown is done.
        assert server.wait(30) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        assert server.stderr is not None
        stderr = server.stderr.read().decode()
        server.stderr.close()
    assert after, "no probe ran between the signal and the exit"
    # uvicorn notices the signal at its next tick (within 0.1 s) and then stops
    # listening: a probe that still got an answer in between was told 503 (draining).
    answered = [status for status in after if isinstance(status, int)]
    assert answered == [503] * len(answered), after
    assert "Traceback" not in stderr, stderr
    db = Database(database_url)
    try:
        async with db.read() as conn:
            rows = (await conn.execute(
                select(messages.c.type, messages.c.props, messages.c.status)
                .where(messages.c.chat_id == "draining"))).all()
    finally:
        await db.dispose()
    assert [(row.type, row.status) for row in rows] == [("text", "INTERRUPTED")]
    props = rows[0].props if isinstance(rows[0].props, dict) else json.loads(rows[0].props)
    assert props == {"content": "half an answer"}

