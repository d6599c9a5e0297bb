"""``python -m bench.memory --quick`` runs end to end and prints its ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_memory_bench_reports_ratios(
    backend: str, request: pytest.FixtureRequest
) -> None:
    command = [sys.executable, "-m", "bench.memory", "--quick", "--backend", backend]
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        if url is None:
            pytest.skip("Postgres is not reachable")
        command += ["--postgres-url", url]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"[{backend}] 2,000 memory entries over 20 subjects seeded" in done.stdout
    for name in ("recent", "search"):
        ratio = re.search(rf"{name} / lookup = ([0-9.]+)x", done.stdout)
        assert ratio and float(ratio.group(1)) > 0, done.stdout
    hits = re.search(r"mean ([0-9.]+) hits", done.stdout)
    assert hits and float(hits.group(1)) > 0, done.stdout
