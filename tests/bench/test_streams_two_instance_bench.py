"""``python -m bench.streams --quick --two-instance`` runs on Redis and prints its ratios."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_two_instance_bench_quick_prints_latency_and_spread_ratios(redis_url: str) -> None:
    base = redis_url.split("?", 1)[0]
    run = subprocess.run(
        [sys.executable, "-m", "bench.streams", "--quick", "--two-instance"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "CHATQL_TEST_REDIS_URL": base},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    latency = re.search(r"cross-instance latency ms p50/p99 ([\d.]+)/([\d.]+), in-process "
                        r"([\d.]+)/([\d.]+), ratio ([\d.]+)/([\d.]+)", out)
    assert latency is not None, out
    p50, p99, local50, local99, r50, r99 = (float(x) for x in latency.groups())
    assert abs(r50 - p50 / local50) < 0.01 + 0.01 * r50
    assert abs(r99 - p99 / local99) < 0.01 + 0.01 * r99
    spread = re.search(r"spread over two ([\d,]+), all on one ([\d,]+), ratio ([\d.]+)", out)
    assert spread is not None, out
    two, one = (float(spread.group(i).replace(",", "")) for i in (1, 2))
    assert two > 0 and one > 0
    assert abs(float(spread.group(3)) - two / one) < 0.01 + 0.01 * two / one
