"""``python -m bench.peers --quick`` runs chatql, PostGraphile 5 and PostGraphile 4 side by side
(and chatql with metrics off and with tracing on, for what each costs).

No timing is asserted (the figures depend on the machine); the run must install both
peers, run PostGraphile 5 on Node 24, load every server, find the same rows in each
peer's answers as in chatql's and print every ratio against each peer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READS = ("newest page of 50 messages", "messages 1,000 back", "chat list page of 20")


@pytest.mark.slow
def test_quick_peer_bench_compares_with_postgraphile_5_and_4(postgres_url: str | None) -> None:
    if postgres_url is None:
        pytest.skip("Postgres is not reachable")
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs node and npm for the peer benchmark")
        pytest.skip("node and npm are not installed: the peer benchmark needs PostGraphile")
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers", "--quick", "--seconds", "0.5", "--metrics-off",
         "--tracing", "--postgres-url", postgres_url],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "peers: skipped" not in out, out
    assert re.search(r"PostGraphile 5 5\.\d+\.\d+ on Node v24\.", out), out
    assert "peers: every answer carried the same rows: True" in out, out
    for peer in ("PostGraphile 5", "PostGraphile 4"):
        # Both peers took part in every read: rows compared, loaded, and a ratio printed.
        assert len(re.findall(rf"{peer} True", out)) == 4, out
        assert len(re.findall(rf"^    {peer} +[0-9,]+ req/s", out, re.MULTILINE)) == 4, out
        ratios = re.findall(rf"chatql / {peer} throughput = ([0-9.]+)", out)
        assert len(ratios) == 4 and all(float(r) > 0 for r in ratios), out
    for read in READS:
        assert read in out, out
    # chatql with metrics off took part in every read too: its ratio is printed.
    overheads = re.findall(r"^    chatql metrics off +[0-9,]+ req/s.*metrics on / off = ([0-9.]+)",
                           out, re.MULTILINE)
    assert len(overheads) == 4 and all(float(r) > 0 for r in overheads), out
    traced = re.findall(r"^    chatql tracing +[0-9,]+ req/s.*tracing on / off = ([0-9.]+)",
                        out, re.MULTILINE)
    assert len(traced) == 4 and all(float(r) > 0 for r in traced), out
