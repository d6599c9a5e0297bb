"""``python -m bench.memory --quick`` runs end to end and prints its ratios."""

from __future__ import annotations

import re

import pytest

from tests.bench.quick import backend_choice, run_quick


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_memory_bench_reports_ratios(
    backend: str, request: pytest.FixtureRequest
) -> None:
    out = run_quick("memory", *backend_choice(backend, request), timeout=120)
    assert f"[{backend}] 2,000 memory entries over 20 subjects seeded" in out
    for name in ("recent", "search"):
        ratio = re.search(rf"{name} / lookup = ([0-9.]+)x", out)
        assert ratio and float(ratio.group(1)) > 0, out
    hits = re.search(r"mean ([0-9.]+) hits", out)
    assert hits and float(hits.group(1)) > 0, out
