"""``python -m bench.peers --quick`` runs chatql and PostGraphile side by side.

No timing is asserted (the figures depend on the machine); the run must install its
peers, load both servers, find the same rows in both answers and print every ratio.
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


@pytest.mark.slow
def test_quick_peer_bench_compares_with_postgraphile(postgres_url: str | None) -> None:
    if postgres_url is None:
        pytest.skip("Postgres is not reachable")
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs node and npm for the peer benchmark")
        pytest.skip("node and npm are not installed: the peer benchmark needs PostGraphile")
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers", "--quick", "--seconds", "0.5",
         "--postgres-url", postgres_url],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "peers: every answer carried the same rows: True" in out, out
    ratios = re.findall(r"chatql / PostGraphile throughput = ([0-9.]+)", out)
    assert len(ratios) == 4 and all(float(r) > 0 for r in ratios), out
    for read in ("newest page of 50 messages", "messages 1,000 back", "chat list page of 20"):
        assert read in out, out
