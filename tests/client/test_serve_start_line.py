"""An agent says at start which server, which assistant and which identity it serves.

An agent whose identity is in another tenant than the chats it should answer sees none of
them and stays silent — it looks dead. So ``serve()`` (the agent loop) logs, on the kit's
``chatql_client`` logger, one line naming the server URL, the assistant id and the user
and tenant it acts as, and the ``chatql-client demo`` command (what ``make demo`` runs)
shows that line on stderr.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import jwt
import pytest
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.types import Message

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from tests.client.conftest import AGENT, PERSON
from tests.conftest import uvicorn_serving

ASSISTANT = "helper"


#: One server setup is enough: what is checked is the agent's side.
ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
ON_MEMORY = pytest.mark.parametrize("settings", ["memory"], indirect=True)


async def _wait_for(check: Callable[[], bool | Awaitable[bool]], what: str,
                    timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        done = check()
        if inspect.isawaitable(done):
            done = await done
        if done:
            return
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _start_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records
            if record.name == "chatql_client" and "answering assistant" in record.getMessage()]


async def _answer(context: list[Message], s: StreamWriter) -> None:
    await s.text("Hello from the agent")


@ON_SQLITE
@ON_MEMORY
async def test_serve_logs_server_assistant_and_identity_and_answers(
        server_url: str, person: ChatqlClient, caplog: pytest.LogCaptureFixture) -> None:
    chat = await person.create_chat(ASSISTANT, title="Hi")
    await person.say(chat["id"], "Anyone there?")
    caplog.set_level(logging.INFO, logger="chatql_client")
    async with ChatqlClient(server_url, headers=AGENT, retry_backoff=0.01) as agent:
        serving = asyncio.create_task(agent.serve(ASSISTANT, _answer, relist_interval=1.0))
        try:
            await _wait_for(lambda: bool(_start_lines(caplog)), "the start line")

            async def answered() -> bool:
                return any(m["role"] == "ASSISTANT" for m in await person.messages(chat["id"]))

            await _wait_for(answered, "the answer")
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    [record] = _start_lines(caplog)  # once, at start
    assert record.levelno == logging.INFO
    line = record.getMessage()
    assert server_url in line
    assert f"assistant {ASSISTANT!r}" in line
    assert "user 'agent-1' in tenant 'acme'" in line
    assert "roles: agent" in line
    assert "default tenant" not in line


@ON_SQLITE
@ON_MEMORY
async def test_serve_in_another_tenant_says_which_tenant_it_serves(
        server_url: str, person: ChatqlClient, caplog: pytest.LogCaptureFixture) -> None:
    """The mismatch the line is for: the person chats in tenant ``acme``, the agent has no
    ``X-Tenant-Id`` and so acts in tenant ``default``; it never answers, and its start
    line says so."""
    chat = await person.create_chat(ASSISTANT, title="Hi")
    await person.say(chat["id"], "Anyone there?")
    caplog.set_level(logging.INFO, logger="chatql_client")
    headers = {"X-User-Id": "lost-agent", "X-Roles": "agent"}
    async with ChatqlClient(server_url, headers=headers, retry_backoff=0.01) as agent:
        serving = asyncio.create_task(agent.serve(ASSISTANT, _answer))
        try:
            await _wait_for(lambda: bool(_start_lines(caplog)), "the start line")
            await asyncio.sleep(1.0)  # time enough to answer, were the chat visible
            assert [m["role"] for m in await person.messages(chat["id"])] == ["USER"]
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    line = _start_lines(caplog)[0].getMessage()
    assert PERSON["X-Tenant-Id"] == "acme"
    assert "user 'lost-agent' in tenant 'default'" in line
    assert "no X-Tenant-Id header" in line
    assert "only the chats of tenant 'default'" in line
    assert server_url in line and f"assistant {ASSISTANT!r}" in line


def test_identity_from_a_bearer_token_and_from_headers_of_any_case() -> None:
    token = jwt.encode({"sub": "bot-7", "tenant_id": "globex", "team_id": "ops",
                        "roles": "agent,admin", "exp": 4102444800}, "k" * 32)
    identity = ChatqlClient("http://127.0.0.1:1/graphql", token=token).identity
    assert (identity.user_id, identity.tenant_id, identity.team_id, identity.roles,
            identity.source) == ("bot-7", "globex", "ops", ("agent", "admin"), "token")
    assert "user 'bot-7' in tenant 'globex'" in str(identity)
    assert token not in str(identity)

    unreadable = ChatqlClient("http://127.0.0.1:1/graphql", token="not-a-jwt").identity
    assert (unreadable.user_id, unreadable.tenant_id) == (None, None)
    assert "not a readable JWT" in str(unreadable)

    lower = ChatqlClient("http://127.0.0.1:1/graphql",
                         headers={"x-user-id": " a1 ", "x-tenant-id": "acme"}).identity
    assert (lower.user_id, lower.tenant_id, lower.roles, lower.defaults) == (
        "a1", "acme", (), ())
    bare = ChatqlClient("http://127.0.0.1:1/graphql").identity
    assert (bare.user_id, bare.tenant_id) == ("dev", "default")
    assert len(bare.defaults) == 2


@pytest.mark.slow
@ON_SQLITE
@ON_MEMORY
@pytest.mark.parametrize(("extra", "expected"), [
    ([], ["user 'demo-agent' in tenant 'default'", "no X-Tenant-Id header"]),
    (["--header", "X-User-Id=bot", "--header", "X-Tenant-Id=acme"],
     ["user 'bot' in tenant 'acme'"]),
])
async def test_the_demo_command_shows_the_start_line_on_stderr(
        settings: Settings, extra: list[str], expected: list[str]) -> None:
    """``make demo`` runs ``chatql-client demo --url ... --assistant demo``: without
    ``-v`` the start line still shows on stderr."""
    async with uvicorn_serving(create_app(settings)) as port:
        url = f"http://127.0.0.1:{port}/graphql"
        agent = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "chatql_client.cli", "demo", "--url", url,
            "--assistant", "demo", *extra, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        seen: list[str] = []
        try:
            assert agent.stderr is not None
            deadline = asyncio.get_running_loop().time() + 60
            while not any("answering assistant" in line for line in seen):
                left = deadline - asyncio.get_running_loop().time()
                assert left > 0, f"no start line on stderr: {seen}"
                raw = await asyncio.wait_for(agent.stderr.readline(), left)
                assert raw, f"the demo exited ({await agent.wait()}): {seen}"
                seen.append(raw.decode())
        finally:
            if agent.returncode is None:
                os.killpg(agent.pid, signal.SIGTERM)
            await agent.wait()
    [line] = [line for line in seen if "answering assistant" in line]
    assert " INFO " in line
    assert url in line and "assistant 'demo'" in line
    for text in expected:
        assert text in line
