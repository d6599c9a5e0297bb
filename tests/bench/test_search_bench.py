"""``python -m bench.search --quick`` runs end to end and prints its ratios."""

from __future__ import annotations

import re

import pytest

from tests.bench.quick import backend_choice, run_quick


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_search_bench_reports_ratios(
    backend: str, request: pytest.FixtureRequest
) -> None:
    out = run_quick("search", *backend_choice(backend, request), timeout=120)
    assert f"[{backend}] 2,000 messages seeded" in out
    search = re.search(r"search / lookup = ([0-9.]+)x", out)
    append = re.search(r"append throughput with index / without = ([0-9.]+)", out)
    assert search and float(search.group(1)) > 0, out
    assert append and float(append.group(1)) > 0, out
