"""The example apps in ``clients/examples`` install, build, and work in a browser.

The React examples (a ``useChat`` page, an assistant-ui page) depend on the local
``@chatql/client`` (``file:../../js``, installed as a copy, built by its ``prepare``
script), so ``npm ci`` then ``npm run build`` (``tsc`` and ``vite build``) fails when the
client's exports, its declarations or the pinned ``ai`` / ``@assistant-ui/react`` APIs the
examples use drift apart; the AG-UI page depends only on the protocol's own
``@ag-ui/client``, so its build fails when that client's interface drifts.

The built pages then run in Debian's Chromium (``clients/examples/test/examples.test.mjs``,
playwright-core through the web app's test helpers), each served by its own ``vite
preview`` — the way the READMEs run them, its proxy sending ``/ai`` and ``/graphql`` to a
real ``chatql serve`` on a fresh SQLite file — with the demo agent (``chatql-client demo
--assistant demo``, its default identity) answering: the ``useChat`` page sends a
message and streams the reply, Stop ends a reply (stored interrupted) and a reload
mid-reply resumes it to the end; the assistant-ui page lists the person's chats, opens
the ``useChat`` page's (its sockets slowed, so each reply must be followed before the
agent is asked), edits its first question (``editMessage``: a "2 / 2" branch the
agent answers), regenerates that answer (``regenerate``: a second answer) and switches
back to the first version; the AG-UI page (``HttpAgent`` over ``/ag-ui``) streams a
reply whose text equals the stored one, shows it again after a reload (the run's
``MESSAGES_SNAPSHOT``), and, against a second demo agent that asks for approval
(``CHATQL_DEMO_APPROVALS=1``, assistant ``demo-approvals``), ends its run with the
interrupt and resumes it on Approve. No page error, no chatql error answer, every other
host blocked; screenshots under the test's temporary folder. One test, so CI installs
and builds the examples once. Skipped without Node.js or Chromium, required under CI.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.clients.node import ROOT, require_node
from tests.clients.test_browser import (
    WEB_DIR,
    chatql_serve,  # noqa: F401  (a fixture)
    chromium,
    demo_agent_process,
)
from tests.conftest import free_port

EXAMPLES = ROOT / "clients" / "examples"
NAMES = ("use-chat", "assistant-ui", "ag-ui")
#: The examples built on the local @chatql/client (the AG-UI page needs only @ag-ui/client).
ON_CLIENT = ("use-chat", "assistant-ui")


def run(args: list[str], cwd: str) -> float:
    """Runs one npm command; returns its seconds, failing the test with its output."""
    started = time.monotonic()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"{' '.join(args)} in {cwd}:\n{done.stdout}\n{done.stderr}"
    return time.monotonic() - started


@contextlib.contextmanager
def preview(folder: Path, chatql: str, log: Path) -> Iterator[str]:
    """``vite preview`` of the built page, proxying to ``chatql``; yields its address."""
    port = free_port()
    vite = folder / "node_modules" / ".bin" / "vite"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(vite), "preview", "--host", "127.0.0.1", "--port", str(port), "--strictPort"],
            cwd=folder, env={**os.environ, "CHATQL_URL": chatql, "NO_COLOR": "1"},
            stdout=out, stderr=subprocess.STDOUT)
        address = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(address, timeout=1).status_code == 200:
                        break
                assert process.poll() is None, log.read_text()
                time.sleep(0.1)
            yield address
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.mark.slow
def test_examples_install_build_and_run_in_chromium(chatql_serve: str,  # noqa: F811
                                                    tmp_path: Path) -> None:
    require_node()   # the client's `prepare` build uses clients/js's own TypeScript
    npm = shutil.which("npm")
    assert npm is not None
    for name in NAMES:
        folder = EXAMPLES / name
        # --prefer-offline: the packages are those clients/js and clients/web already
        # fetched, so CI reuses npm's cache.
        install = run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"], str(folder))
        build = run([npm, "run", "build"], str(folder))
        print(f"{name}: npm ci {install:.1f} s, npm run build {build:.1f} s")
        page = (folder / "dist" / "index.html").read_text()
        scripts = list((folder / "dist" / "assets").glob("*.js"))
        assert '<div id="root">' in page and scripts, f"{name} built no page"
        if name in ON_CLIENT:
            # The client came from this checkout, with its built output.
            assert (folder / "node_modules" / "@chatql" / "client" / "dist" / "index.js"
                    ).is_file()

    # The built pages in Chromium (playwright-core comes with clients/web's packages).
    require_node(WEB_DIR)
    browser = chromium()
    screenshots = tmp_path / "screenshots"
    screenshots.mkdir()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        agent = stack.enter_context(demo_agent_process(chatql_serve, tmp_path / "demo-agent.log"))
        # For the AG-UI page's approval: a demo agent that asks before its lookup.
        approver = stack.enter_context(demo_agent_process(
            chatql_serve, tmp_path / "approvals-agent.log", assistant="demo-approvals",
            approvals=True))
        use_chat = stack.enter_context(
            preview(EXAMPLES / "use-chat", chatql_serve, tmp_path / "use-chat.log"))
        assistant_ui = stack.enter_context(
            preview(EXAMPLES / "assistant-ui", chatql_serve, tmp_path / "assistant-ui.log"))
        ag_ui = stack.enter_context(
            preview(EXAMPLES / "ag-ui", chatql_serve, tmp_path / "ag-ui.log"))
        done = subprocess.run(
            ["node", "--test", "--test-concurrency=1", "test/examples.test.mjs"],
            cwd=EXAMPLES, capture_output=True, text=True, timeout=300,
            env={**os.environ, "USE_CHAT_URL": use_chat, "ASSISTANT_UI_URL": assistant_ui,
                 "AG_UI_URL": ag_ui, "CHROMIUM_PATH": browser,
                 "SCREENSHOT_DIR": str(screenshots)},
        )
        # The agents' logs without their request lines: what they answered, stopped or failed.
        output = done.stdout + done.stderr
        for name, log in (("demo agent", agent), ("approvals agent", approver)):
            answers = [line for line in log.read_text().splitlines() if "HTTP Request" not in line]
            output += f"\n--- {name} ---\n" + "\n".join(answers[-100:])
    print(f"browser flows {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, output
    assert "# pass 3" in output and "# fail 0" in output, output
    shots = sorted(path.name for path in screenshots.glob("*.png"))
    for shot in ("use-chat-answered", "use-chat-stopped", "use-chat-resumed",
                 "assistant-ui-opened", "assistant-ui-edited", "assistant-ui-regenerated",
                 "assistant-ui-version-1", "ag-ui-answered", "ag-ui-reloaded",
                 "ag-ui-approval", "ag-ui-approved"):
        assert f"{shot}.png" in shots, shots
    print(f"screenshots in {screenshots}: {', '.join(shots)}")
