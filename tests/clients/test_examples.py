"""The example apps in ``clients/examples`` install from their lock files and build.

Each example (a ``useChat`` page, an assistant-ui page) depends on the local
``@chatql/client`` (``file:../../js``, installed as a copy, built by its ``prepare``
script), so ``npm ci`` then ``npm run build`` (``tsc`` and ``vite build``) fails when the
client's exports, its declarations or the pinned ``ai`` / ``@assistant-ui/react`` APIs the
examples use drift apart. Skipped without Node.js, required under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from tests.clients.node import ROOT, require_node

EXAMPLES = ROOT / "clients" / "examples"
NAMES = ("use-chat", "assistant-ui")


def run(args: list[str], cwd: str) -> float:
    """Runs one npm command; returns its seconds, failing the test with its output."""
    started = time.monotonic()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"{' '.join(args)} in {cwd}:\n{done.stdout}\n{done.stderr}"
    return time.monotonic() - started


@pytest.mark.slow
def test_examples_install_and_build() -> None:
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
        # The client came from this checkout, with its built output.
        assert (folder / "node_modules" / "@chatql" / "client" / "dist" / "index.js").is_file()
