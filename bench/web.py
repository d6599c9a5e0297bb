"""The web app's latency in Chromium ÷ a bare WebSocket page's, in the same run.

Starts ``chatql serve`` on a fresh SQLite file and runs ``clients/web/bench/web.mjs``
(Node.js, playwright-core, Debian's Chromium), which measures per round, on a fresh chat,
for the app at ``/`` and for a bare page (a textarea that appends on Enter and one raw
``graphql-transport-ws`` subscription to ``chatStream`` writing text deltas into a div):

- **Enter → first token**: from the person's Enter (page clock) to the agent's first
  token in the page's DOM; the agent (the Node process) polls the chat for the person's
  message, then starts a stream and pushes;
- **last chunk → DOM**: from just before the agent pushes its last chunk to that text in
  the DOM (both read as the machine's wall clock at high resolution).

Each figure is the median over the rounds; the ratio app ÷ bare is the figure the goal
(at most 1.5) is about.

::

    .venv/bin/python -m bench.web            # 15 rounds of each page
    .venv/bin/python -m bench.web --quick    # 3 rounds (the test suite)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
WEB_DIR = ROOT / "clients" / "web"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{folder}/bench.db",
           "CHATQL_AUTH": "dev", "CHATQL_SECRET": "bench-web-secret-0123456789abcdef"}
    chatql = Path(sys.executable).with_name("chatql")
    process = subprocess.Popen([str(chatql), "serve", "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise SystemExit("chatql serve exited before it was ready")
        time.sleep(0.1)
    process.terminate()
    raise SystemExit("chatql serve did not become ready")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds (the test suite)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 15)
    browser = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if browser is None or shutil.which("node") is None:
        raise SystemExit("bench.web needs Node.js and Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="chatql-bench-web-") as folder:
        process, base = _serve(Path(folder))
        try:
            run = subprocess.run(
                ["node", "bench/web.mjs"], cwd=WEB_DIR, capture_output=True, text=True,
                timeout=600, env={**os.environ, "CHATQL_URL": base, "CHROMIUM_PATH": browser,
                                  "BENCH_ROUNDS": str(rounds)})
        finally:
            process.terminate()
            process.wait(timeout=30)
    if run.returncode != 0:
        raise SystemExit(run.stdout + run.stderr)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"web app vs bare WebSocket page, Chromium, {rounds} rounds each (medians)")
    for key, label in (("first", "Enter → first token"), ("last", "last chunk → DOM")):
        app = statistics.median(result["app"][key])
        bare = statistics.median(result["bare"][key])
        print(f"  {label:<22} app {app:8.1f} ms  bare {bare:8.1f} ms  ratio {app / bare:.2f}")


if __name__ == "__main__":
    main()
