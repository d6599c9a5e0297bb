"""The TypeScript reducer of ``clients/js`` against the Python reducer, same chunks.

Runs ``npm run bench -- --json`` in ``clients/js`` (Node.js; it builds ``dist/`` first)
and measures ``store.streams.reducer`` in this process on the same work:

- appending 10,000 deltas to one message, timed per 1,000: the last 1,000 over the first
  1,000 (the target for the TypeScript reducer is at most 1.5 — no quadratic rebuilds);
- chunks/s applied on the conformance cases' accepted batches
  (``conformance/reducer/*.json``), TypeScript ÷ Python.

::

    .venv/bin/python -m bench.client_reducer
    .venv/bin/python -m bench.client_reducer --quick   # tiny sizes (the test suite)
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chatql.store.streams.reducer import ChunkIn, StreamState, apply_chunks

ROOT = Path(__file__).resolve().parents[1]
JS_DIR = ROOT / "clients" / "js"


def _chunk(raw: dict[str, Any]) -> ChunkIn:
    return ChunkIn(type=raw["type"], chunk_id=raw.get("chunkId"),
                   message_id=raw.get("messageId"), block_id=raw.get("blockId"),
                   thread_id=raw.get("threadId"), role=raw.get("role"),
                   props=raw.get("props"), delta=bool(raw.get("delta")),
                   delta_path=raw.get("deltaPath"), delta_action=raw.get("deltaAction"))


def conformance_batches() -> list[list[list[ChunkIn]]]:
    cases = []
    for path in sorted((ROOT / "conformance" / "reducer").glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            cases.append([[_chunk(raw) for raw in step["batch"]]
                          for step in case["steps"] if "error" not in step])
    return cases


def python_append_blocks(total: int, block: int) -> list[float]:
    """The service's own path (``apply_chunks``), which appends in place."""
    state = StreamState(stream_id="s")
    counter = itertools.count()
    apply_chunks(state, [ChunkIn(type="text", message_id="m", props={"content": ""})],
                 make_id=lambda: f"svc-{next(counter)}")
    delta = [ChunkIn(type="text", message_id="m", props={"content": "token "}, delta=True)]
    times = []
    started = time.perf_counter()
    for index in range(1, total + 1):
        apply_chunks(state, delta)
        if index % block == 0:
            now = time.perf_counter()
            times.append((now - started) * 1000)
            started = now
    (message,) = state.messages.values()
    assert len(message.props["content"]) == 6 * total
    return times


def python_chunks_per_second(cases: list[list[list[ChunkIn]]], seconds: float) -> float:
    counter = itertools.count()
    chunks = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for batches in cases:
            state = StreamState(stream_id="s")
            for batch in batches:
                apply_chunks(state, batch, make_id=lambda: f"svc-{next(counter)}")
                chunks += len(batch)
    return chunks / (time.perf_counter() - started)


def typescript_figures(quick: bool) -> dict[str, float]:
    npm = shutil.which("npm")
    if npm is None or not (JS_DIR / "node_modules").is_dir():
        raise SystemExit("Node.js and `npm ci` in clients/js are needed for this benchmark")
    args = [npm, "run", "-s", "bench", "--", "--json", *(["--quick"] if quick else [])]
    run = subprocess.run(args, cwd=JS_DIR, capture_output=True, text=True, timeout=600,
                         check=True)
    figures: dict[str, float] = json.loads(run.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_reducer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a second or two")
    args = parser.parse_args(argv)
    ts = typescript_figures(args.quick)
    total = int(ts["appends"])
    block = int(ts["block"])
    python_append_blocks(total, block)  # warm-up, as on the Node side
    py_blocks = python_append_blocks(total, block)
    cases = conformance_batches()
    py_rate = python_chunks_per_second(cases, 0.1 if args.quick else 2.0)
    print(f"appending {total:,} deltas to one message, last {block:,} / first {block:,}:")
    print(f"  TypeScript {ts['lastBlockMs']:.2f} / {ts['firstBlockMs']:.2f} ms = "
          f"{ts['lastOverFirst']:.2f} (target <= 1.5)")
    print(f"  Python     {py_blocks[-1]:.2f} / {py_blocks[0]:.2f} ms = "
          f"{py_blocks[-1] / py_blocks[0]:.2f}")
    print("conformance cases, chunks/s applied (accepted batches):")
    print(f"  TypeScript {ts['chunksPerSecond']:,.0f}  Python {py_rate:,.0f}  "
          f"ratio {ts['chunksPerSecond'] / py_rate:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
