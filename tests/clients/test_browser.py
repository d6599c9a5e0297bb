"""The web app and the playground in Debian's Chromium, against a real ``chatql serve``.

Runs ``clients/web/test/app.test.mjs`` (Node's test runner driving Chromium through
playwright-core): a producer process streams thinking, a tool call with growing arguments
and text in two blocks and two threads while the page shows each part growing; stop
mid-stream then reload; a page opened mid-stream and a page whose socket is cut both end
with exactly the persisted messages; the chat list shows a new chat, and "typing…" while it
is streamed into, without a reload; an answer whose first words follow its start at once
drawn once, with them (no empty answer and Stop a frame before), and a start without words
still offering Stop; the Pinned section not read again while an unpinned chat's answer
starts, streams and ends, but for a pinned chat's messages; the playground, with every
other host blocked, runs a query and a live ``chatStream``. The chat-client flows
(``chat-client.test.mjs``, in the same process and browser) talk to the real demo agent —
``chatql-client demo --assistant demo``, a separate process beside the server for the whole
session, answering every chat of assistant "demo" through the agent loop: a new chat, Enter
sends and Shift+Enter breaks the line, the agent's answer streams in with rendered
markdown; edit, the agent answers the second version, back to the first; regenerate,
version 2 of the answer, back to version 1; a search hit on another branch opens there;
rename, pin, tags, usage, export, start over with its note, delete, the trash and restore;
Stop mid-answer; a reload mid-answer resumes; New chat creates nothing until the first
message (typed at once after the click, Shift+Enter kept), the usage line counts the answer
without a reload, a Pinned section, search snippets cut between words with the match
marked, a deleted chat's hit leaving the results and its link (and one to a missing chat)
saying so once and sending no more requests; math and highlighted code; thumbs and a share
link with its read-only page, continued as a chat of one's own; a second demo agent
(assistant "demo-approvals", ``CHATQL_DEMO_APPROVALS=1``) asking before its lookup:
approved, the resumed answer streams in; denied with a reason, the agent says so; at 390,
768 and 1280 px in light and dark (the chat column at least 300 px on a phone, the list a
drawer behind the menu button), the theme toggle kept across a reload, identity in a
settings dialog. Approvals inline on a producer's tool calls (approve, deny with a reason,
edit the arguments as validated JSON, answer a question), the "Waiting for you" inbox
following them, all kept across a reload; on a phone the menu button's badge counting what
waits (named for a screen reader, following a decision) and one sidebar across 768 px (its
search text and element kept, a modal drawer below); attachments in the composer (the
attach button, a pasted image, dropped files, a refused file's reason) sent as file parts
and shown from the server (a thumbnail, a download), and a file over the limit the page
names refused before any upload. Each state is checked with axe-core (no serious or
critical violation), no page error and no request to another host, and saved as a
screenshot under the test's temporary folder (``screenshots/``, each path printed). The
server runs on a fresh SQLite file (the storage paths are covered on both databases by the
Python and TypeScript live tests).
Skipped without Node.js or Chromium, required under CI.
"""

from __future__ import annotations

import contextlib
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
    # The server's lines (one per request) go to a file: a pipe nobody reads fills up
    # and then blocks the server's writes.
    log = tmp_path / "chatql-serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(chatql), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise AssertionError(log.read_text())
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


# The demo agent's identity: an agent of the tenant the page's person (alice) is in.
DEMO_AGENT_HEADERS = {"X-User-Id": "demo-agent", "X-Tenant-Id": "acme", "X-Roles": "agent"}
# Seconds between the offline model's tokens: slow enough that a person (the test) can
# press Stop or reload while an answer is still streaming, about five seconds an answer.
DEMO_PACE = 0.06


@contextlib.contextmanager
def demo_agent_process(url: str, log: Path,
                       headers: dict[str, str] | None = None, *, assistant: str = "demo",
                       approvals: bool = False) -> Iterator[Path]:
    """``chatql-client demo`` answering ``assistant`` (default "demo") of the server at
    ``url``; with ``approvals`` it asks the person to approve its lookup first
    (``CHATQL_DEMO_APPROVALS=1``).

    ``headers`` (the agent's identity) left out, the demo uses its own default, as a
    person running ``chatql-client demo --assistant demo`` beside ``make serve`` does.
    Yields the log file.
    """
    command = [str(Path(sys.executable).with_name("chatql-client")), "demo",
               "--url", f"{url}/graphql", "--assistant", assistant,
               "--pace", str(DEMO_PACE), "--verbose"]
    for name, value in (headers or {}).items():
        command += ["--header", f"{name}={value}"]
    env = {key: value for key, value in os.environ.items()
           if key not in ("OPENAI_BASE_URL", "OPENAI_API_KEY",  # the offline model
                          "CHATQL_DEMO_APPROVALS")}
    if approvals:
        env["CHATQL_DEMO_APPROVALS"] = "1"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            time.sleep(0.5)
            assert process.poll() is None, log.read_text()
            yield log
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def demo_agent(chatql_serve: str, tmp_path: Path) -> Iterator[Path]:
    """The demo agent beside the server, in the web app's tenant; yields its log."""
    with demo_agent_process(chatql_serve, tmp_path / "demo-agent.log",
                            DEMO_AGENT_HEADERS) as log:
        yield log


@pytest.fixture
def approvals_agent(chatql_serve: str, tmp_path: Path) -> Iterator[Path]:
    """A second demo agent, of assistant "demo-approvals", that asks the person to approve
    its lookup before it runs; yields its log."""
    with demo_agent_process(chatql_serve, tmp_path / "approvals-agent.log",
                            DEMO_AGENT_HEADERS, assistant="demo-approvals",
                            approvals=True) as log:
        yield log


def test_app_and_playground_in_chromium(chatql_serve: str, demo_agent: Path,
                                        approvals_agent: Path, tmp_path: Path) -> None:
    require_node(WEB_DIR)
    browser = chromium()
    screenshots = tmp_path / "screenshots"
    screenshots.mkdir()
    run = subprocess.run(
        ["node", "--test", "test/app.test.mjs"], cwd=WEB_DIR, capture_output=True, text=True,
        timeout=300, env={**os.environ, "CHATQL_URL": chatql_serve, "CHROMIUM_PATH": browser,
                          "SCREENSHOT_DIR": str(screenshots)},
    )
    output = (run.stdout + run.stderr + "\n--- demo agent ---\n" + demo_agent.read_text()
              + "\n--- approvals agent ---\n" + approvals_agent.read_text())
    assert run.returncode == 0, output
    # Every test of the two files ran and passed (none skipped, none left out).
    tests = sum(text.count('\ntest("') for text in (
        (WEB_DIR / "test" / name).read_text() for name in ("app.test.mjs", "chat-client.test.mjs")))
    assert f"# pass {tests}\n" in output and "# fail 0" in output, (tests, output)
    shots = sorted(path.name for path in screenshots.glob("*.png"))
    for name in ("streaming", "answered", "edited", "version-1", "regenerated",
                 "regenerated-version-1", "search-hit", "started-over", "trash", "restored",
                 "stopped", "resumed", "app", "playground",
                 "390-light", "390-light-drawer", "768-light", "1280-light",
                 "390-dark", "390-dark-drawer", "768-dark", "1280-dark",
                 "settings", "math", "shared", "new-chat", "forked", "approval", "approved",
                 "approvals", "decided", "attachments", "sent-files", "390-waiting",
                 "too-large"):
        assert f"{name}.png" in shots, shots
    print(f"screenshots in {screenshots}: {', '.join(shots)}")
