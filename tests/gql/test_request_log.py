"""``CHATQL_LOG_FORMAT=json``: one JSON line per request from ``chatql serve``, with the
request id echoed — and never a token, a secret or what was said."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jwt
import pytest

from tests.conftest import TEST_SECRET, free_port

ROOT = Path(__file__).resolve().parents[2]
JWT_SECRET = "a-jwt-secret-that-is-long-enough-for-hs256"
CREATE = 'mutation Make($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
APPEND = """mutation Say($chat: ID!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: "a1", messages: $messages) { lastSequence } }"""
SECRET_TEXT = "the launch code is swordfish"


class _Served:
    """``chatql serve`` in a subprocess, with what it wrote once it stopped."""

    def __init__(self, database_url: str, *args: str, **env: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(self.port), *args],
            cwd=ROOT, env={**os.environ, "CHATQL_DATABASE_URL": database_url,
                           "CHATQL_SECRET": TEST_SECRET, "CHATQL_MIGRATE_ON_START": "false",
                           **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.output = ""

    async def ready(self, http: httpx.AsyncClient) -> None:
        for _ in range(600):
            try:
                if (await http.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                await asyncio.sleep(0.05)
        raise AssertionError("the server did not start")

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        try:
            out, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
        self.output = out.decode() + err.decode()
        return self.output


async def test_json_request_lines_name_the_request_and_never_its_content(
        database_url: str) -> None:
    served = _Served(database_url, CHATQL_LOG_FORMAT="json", CHATQL_AUTH="jwt",
                     CHATQL_JWT_SECRET=JWT_SECRET)
    token = jwt.encode({"sub": "alice", "tenant_id": "acme", "roles": ["agent"],
                        "exp": int(time.time()) + 300}, JWT_SECRET, algorithm="HS256")
    auth = {"Authorization": f"Bearer {token}"}
    chat = f"log-{os.getpid()}-{served.port}"
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}",
                                     timeout=30) as http:
            await served.ready(http)
            made = await http.post("/graphql", headers={**auth, "X-Request-Id": "req-42"},
                                   json={"query": CREATE, "variables": {"id": chat}})
            assert made.headers["x-request-id"] == "req-42"
            said = await http.post("/graphql", headers=auth, json={
                "query": APPEND, "variables": {"chat": chat, "messages": [
                    {"role": "USER", "type": "user_input",
                     "props": {"content": SECRET_TEXT}}]}})
            assert said.json()["data"]["appendMessages"]["lastSequence"] == 1
            generated = said.headers["x-request-id"]
            refused = await http.post("/graphql", json={"query": CREATE, "variables": {
                "id": "x"}}, headers={"Authorization": "Bearer not-a-token"})
            assert refused.status_code == 401
            # Made ids are unique: each request gets its own.
            assert refused.headers["x-request-id"] != generated
            assert len(refused.headers["x-request-id"]) == 32
    finally:
        output = served.stop()
    # Every line the server wrote is JSON, uvicorn's own and the start line included.
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    started = [line for line in lines if line.get("logger") == "chatql"]
    assert "auth jwt" in started[0]["message"] and "database " in started[0]["message"]
    assert any(line.get("logger") == "uvicorn.error" for line in lines)
    by_id = {line["requestId"]: line for line in lines if "requestId" in line}
    made_line = by_id["req-42"]
    assert made_line["operation"] == "Make" and made_line["outcome"] == "ok"
    assert (made_line["user"], made_line["tenant"], made_line["status"]) == (
        "alice", "acme", 200)
    assert made_line["durationMs"] > 0 and made_line["path"] == "/graphql"
    said_line = by_id[generated]
    assert len(generated) == 32 and said_line["operation"] == "Say"
    assert said_line["outcome"] == "ok"
    assert any(line.get("outcome") == "UNAUTHENTICATED" and line["status"] == 401
               for line in lines)
    # Never a token, a secret or what was said, anywhere in the output.
    for secret in (token, JWT_SECRET, TEST_SECRET, SECRET_TEXT, "not-a-token"):
        assert secret not in output


def test_made_request_ids_are_unique_within_and_across_processes() -> None:
    import multiprocessing

    from chatql.gql.ops.request_log import _new_request_id

    ours = [_new_request_id() for _ in range(1000)]
    assert len(set(ours)) == 1000
    assert all(len(made) == 32 and int(made, 16) >= 0 for made in ours)
    # A forked process makes its own random half, so its ids never repeat ours.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        theirs = pool.apply(_new_request_id)
    assert theirs[:16] != ours[0][:16] and theirs not in ours


async def test_text_lines_say_where_the_server_is_and_each_request(database_url: str) -> None:
    # The local Postgres trusts its clients: a password in the URL is accepted, unused.
    database_url = database_url.replace("://postgres@", "://postgres:s3cret-pw@")
    served = _Served(database_url)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}",
                                     timeout=30) as http:
            await served.ready(http)
            answered = await http.post("/graphql", headers={"X-Request-Id": "text-7"},
                                       json={"query": "query Hello { __typename }"})
            assert answered.status_code == 200
    finally:
        output = served.stop()
    first = output.splitlines()[0]
    # The start line names the address, the database (never its password) and the auth.
    assert first.startswith("INFO:") and f"http://127.0.0.1:{served.port}/" in first
    assert "auth dev" in first and "database " in first
    assert "s3cret-pw" not in output
    request = next(line for line in output.splitlines() if "id=text-7" in line)
    assert '"POST /graphql" 200 Hello' in request and request.startswith("INFO:")


async def test_warning_level_writes_no_request_line(database_url: str) -> None:
    served = _Served(database_url, "--log-level", "warning")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}",
                                     timeout=30) as http:
            await served.ready(http)
            await http.post("/graphql", headers={"X-Request-Id": "quiet-1"},
                            json={"query": "{ __typename }"})
    finally:
        output = served.stop()
    assert "quiet-1" not in output and "/healthz" not in output


async def test_a_client_gone_while_its_body_is_read_logs_no_traceback(
        database_url: str) -> None:
    served = _Served(database_url)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}",
                                     timeout=30) as http:
            await served.ready(http)
            for path in ("/graphql", "/ai/chat"):
                # A body shorter than its Content-Length, then the socket closes.
                _, writer = await asyncio.open_connection("127.0.0.1", served.port)
                writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone-1\r\n"
                             "Content-Type: application/json\r\nContent-Length: 5000\r\n"
                             '\r\n{"query": "{ __typ'.encode())
                await writer.drain()
                await asyncio.sleep(0.2)
                writer.close()
                await writer.wait_closed()
            await asyncio.sleep(0.3)
            # The server goes on serving.
            assert (await http.post("/graphql", json={"query": "{ __typename }"})
                    ).status_code == 200
    finally:
        output = served.stop()
    assert "Traceback" not in output and "Exception in ASGI application" not in output
    assert '"POST /graphql" 499' in output and "id=gone-1" in output


def test_help_is_plain_text() -> None:
    helped = subprocess.run([sys.executable, "-m", "chatql.gql.cli", "--help"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert "``" not in helped.stdout and "chatql serve" in helped.stdout


async def test_a_log_pipe_nobody_reads_never_holds_up_the_server(database_url: str) -> None:
    # stderr is a pipe this test never reads: it fills after ~64 KiB (some 600 request
    # lines), and the server must go on answering, its lines waiting in the writer.
    served = _Served(database_url)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.port}",
                                     timeout=10) as http:
            await served.ready(http)
            for round_ in range(30):
                answers = await asyncio.gather(*(
                    http.post("/graphql", json={"query": "{ __typename }"},
                              headers={"X-Request-Id": f"fill-{round_}-{n}-" + "x" * 90})
                    for n in range(50)))
                assert all(answer.status_code == 200 for answer in answers)
    finally:
        output = served.stop()
    # Once the pipe is read again (at exit), the queued lines come out, in order.
    assert output.count('"POST /graphql" 200') >= 1500
    assert output.index("id=fill-0-") < output.index("id=fill-29-")


def test_request_lines_follow_their_own_logger_not_an_inherited_level(
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from chatql.gql.ops.logs import REQUEST_LOGGER, RequestLines, request_lines_for

    # A root logger at INFO (a test's log capture, an embedder's basicConfig) does not
    # make an in-process app write request lines to stderr behind its handlers' back.
    logger = logging.getLogger(REQUEST_LOGGER)
    before = logger.level
    logger.setLevel(logging.NOTSET)  # as in a process that configured no logging
    caplog.set_level(logging.INFO)
    try:
        assert request_lines_for("text") is None
        logger.setLevel(logging.INFO)  # as chatql serve sets it
        assert isinstance(request_lines_for("text"), RequestLines)
        logger.setLevel(logging.WARNING)  # --log-level warning
        assert request_lines_for("json") is None
    finally:
        logger.setLevel(before)
