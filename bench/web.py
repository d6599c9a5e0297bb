"""The web app in Chromium against a bare WebSocket page, in the same run: latency, long
tasks while an answer streams, and the JavaScript the app's page loads at start.

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
(at most 1.3) is about.

- **long tasks while an answer streams**: per page, a chat of 200 messages (questions and
  markdown answers) open, the agent streams 1,000 tokens (``--quick``: 200) at 100 a
  second, one chunk each; a ``PerformanceObserver`` of ``longtask`` entries counts the
  tasks over 50 ms until the last token is in the DOM (goal: none in the app), with the
  longest;
- **initial JavaScript**: the scripts ``gql/static/index.html`` loads at start (its module
  script, its ``modulepreload`` links and what they import statically — not the
  playground, not the chunks loaded later by ``import()``), gzipped (level 6, as ``gzip``
  does by default); goal at most 250 KB.

::

    .venv/bin/python -m bench.web            # 15 rounds of each page, 1,000 tokens
    .venv/bin/python -m bench.web --quick    # 3 rounds, 200 tokens (the test suite)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
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
STATIC_DIR = ROOT / "gql" / "static"
INITIAL_JS_GOAL = 250_000
# What a page's HTML loads at start, and a built chunk's static imports ("import{a}from"./x.js"",
# "import"./x.js"", "export*from"./x.js""); "import("./x.js")" (lazy) has a parenthesis.
_HTML_SCRIPTS = re.compile(
    r'<script[^>]*\bsrc="([^"]+\.js)"|<link[^>]*rel="modulepreload"[^>]*href="([^"]+\.js)"')
_STATIC_IMPORTS = re.compile(
    r'(?:\bimport|\bexport)\s*(?:[\w$*{}\s,]*?\bfrom\s*)?["\']([^"\']+\.js)["\']')


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


def initial_javascript(static: Path = STATIC_DIR) -> dict[str, int]:
    """Gzipped bytes (level 6) of every script ``index.html`` loads at start, by path."""
    html = (static / "index.html").read_text(encoding="utf-8")
    queue = [a or b for a, b in _HTML_SCRIPTS.findall(html)]
    sizes: dict[str, int] = {}
    while queue:
        path = queue.pop()
        if path in sizes:
            continue
        source = (static / path.lstrip("/")).read_bytes()
        sizes[path] = len(gzip.compress(source, compresslevel=6, mtime=0))
        folder = path.rsplit("/", 1)[0]
        for target in _STATIC_IMPORTS.findall(source.decode("utf-8")):
            if target.startswith("./"):
                queue.append(f"{folder}/{target[2:]}")
            elif target.startswith("/"):
                queue.append(target)
    return sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds, 200 tokens (the test suite)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--tokens", type=int, default=None)
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 15)
    tokens = args.tokens or (200 if args.quick else 1000)
    if not (STATIC_DIR / "index.html").is_file():
        raise SystemExit("the web app is not built: cd clients/web && npm run build")
    browser = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if browser is None or shutil.which("node") is None:
        raise SystemExit("bench.web needs Node.js and Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="chatql-bench-web-") as folder:
        process, base = _serve(Path(folder))
        try:
            run = subprocess.run(
                ["node", "bench/web.mjs"], cwd=WEB_DIR, capture_output=True, text=True,
                timeout=600, env={**os.environ, "CHATQL_URL": base, "CHROMIUM_PATH": browser,
                                  "BENCH_ROUNDS": str(rounds),
                                  "BENCH_TOKENS": str(tokens)})
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
    print(f"long tasks (over 50 ms) while {tokens} tokens stream at 100/s, 200-message chat open")
    for kind in ("app", "bare"):
        stream = result["stream"][kind]
        durations = stream["longTasks"]
        rate = stream["tokens"] / stream["seconds"]
        longest = max(durations, default=0.0)
        print(f"  {kind:<5} {len(durations):3d} long tasks, longest {longest:6.1f} ms, "
              f"total {sum(durations):7.1f} ms ({rate:.0f} tokens/s pushed)")
    sizes = initial_javascript()
    total = sum(sizes.values())
    print(f"initial JavaScript of index.html, gzipped: {total / 1000:.1f} KB in "
          f"{len(sizes)} files, ÷ the 250 KB goal {total / INITIAL_JS_GOAL:.2f}")


if __name__ == "__main__":
    main()
