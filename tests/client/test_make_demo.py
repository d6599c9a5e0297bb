"""`make demo`, as the quick start has a newcomer run it beside `make serve`: it installs
the producer kit into the virtualenv and starts the demo agent against the server on
HOST/PORT, with the development identity the web app's default person shares a tenant
with — so a chat started in the web app gets an answer."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
from chatql_client import ChatqlClient

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from tests.conftest import uvicorn_serving

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("settings", ["memory"], indirect=True)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
async def test_make_demo_answers_a_chat_of_the_web_apps_default_person(
        settings: Settings, tmp_path: Path) -> None:
    # The target's virtualenv is this one (its bin/ linked in), so the test installs
    # nothing new; the target's own stamp lives in the temporary folder, so its
    # `pip install -e clients/python` runs for real.
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent)
    async with uvicorn_serving(create_app(settings)) as port:
        agent = await asyncio.create_subprocess_exec(
            "make", "--no-print-directory", "demo", f"VENV={venv}", "HOST=127.0.0.1",
            f"PORT={port}", cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
        url = f"http://127.0.0.1:{port}/graphql"
        try:
            async with ChatqlClient(url, headers={"X-User-Id": "dev"}) as person:
                chat = await person.create_chat("demo", title="Hello")
                await person.say(chat["id"], "How tall is the Eiffel tower?")
                deadline = asyncio.get_running_loop().time() + 120
                while True:
                    messages = await person.messages(chat["id"])
                    texts = [m for m in messages if m["type"] == "text"]
                    if texts and texts[-1]["status"] == "COMPLETED":
                        break
                    if agent.returncode is not None:
                        output = await agent.stdout.read() if agent.stdout else b""
                        pytest.fail(f"make demo exited {agent.returncode}: {output.decode()}")
                    assert asyncio.get_running_loop().time() < deadline, "no answer in 120 s"
                    await asyncio.sleep(0.2)
        finally:
            # make and the agent it started are one process group: stop both.
            if agent.returncode is None:
                os.killpg(agent.pid, signal.SIGTERM)
            await agent.wait()
    assert (venv / ".kit").exists()
    assert "**How tall is the Eiffel tower?**" in texts[-1]["props"]["content"]
