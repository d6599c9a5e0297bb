"""``python -m bench.search --quick`` runs end to end and prints its ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_search_bench_reports_ratios(
    backend: str, request: pytest.FixtureRequest
) -> None:
    command = [sys.executable, "-m", "bench.search", "--quick", "--backend", backend]
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        if url is None:
            pytest.skip("Postgres is not reachable")
        command += ["--postgres-url", url]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"[{backend}] 2,000 messages seeded" in done.stdout
    search = re.search(r"search / lookup = ([0-9.]+)x", done.stdout)
    append = re.search(r"append throughput with index / without = ([0-9.]+)", done.stdout)
    assert search and float(search.group(1)) > 0, done.stdout
    assert append and float(append.group(1)) > 0, done.stdout
