"""The web app and the playground in Debian's Chromium, against a real ``chatql serve``.

Runs ``clients/web/test/app.test.mjs`` (Node's test runner driving Chromium through
playwright-core): a producer process streams thinking, a tool call with growing arguments
and text in two blocks and two threads while the page shows each part growing; stop
mid-stream then reload; a page opened mid-stream and a page whose socket is cut both end
with exactly the persisted messages; the chat list shows a new chat, and "typing…"
while it is streamed into, without a reload; the playground, with every other host blocked, runs
a query and a live ``chatStream``. The chat-client flows (``chat-client.test.mjs``, in the
same process and browser): a new chat, Enter sends and Shift+Enter breaks the line, a
scripted agent's answer streams in with rendered markdown; edit, a second version and back
to the first; a search hit on another branch opens there; rename, pin, tags, usage,
export, start over with its note, delete, the trash and restore; Stop mid-answer; a
reload mid-answer resumes. Each state is checked with axe-core (no serious or critical
violation), no page error and no request to another host, and saved as a screenshot
under the test's temporary folder. The server runs on a fresh SQLite file (the storage
paths are covered on both databases by the Python and TypeScript live tests).
Skipped without Node.js or Chromium, required under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.clients.node import ROOT, require_node
from tests.conftest import free_port

WEB_DIR = ROOT / "clients" / "web"


def chromium() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if path is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI requires the browser tests: Chromium is not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


@pytest.fixture
def chatql_serve(tmp_path: Path) -> Iterator[str]:
    """A real ``chatql serve`` process on a fresh SQLite database."""
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/chatql.db",
           "CHATQL_AUTH": "dev", "CHATQL_SECRET": "browser-test-secret-0123456789"}
    chatql = Path(sys.executable).with_name("chatql")
    process = subprocess.Popen([str(chatql), "serve", "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise AssertionError(process.stdout.read().decode() if process.stdout else "")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_app_and_playground_in_chromium(chatql_serve: str) -> None:
    require_node(WEB_DIR)
    browser = chromium()
    run = subprocess.run(
        ["node", "--test", "test/app.test.mjs"], cwd=WEB_DIR, capture_output=True, text=True,
        timeout=300, env={**os.environ, "CHATQL_URL": chatql_serve, "CHROMIUM_PATH": browser},
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "# pass 8" in output and "# fail 0" in output, output
