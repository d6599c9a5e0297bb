"""``python -m bench.mcp --quick`` runs end to end and prints its ratio."""

from __future__ import annotations

import re

import pytest

from tests.bench.quick import backend_choice, run_quick


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_mcp_bench_reports_the_ratio(backend: str, request: pytest.FixtureRequest) -> None:
    out = run_quick("mcp", *backend_choice(backend, request), timeout=180)
    assert f"[{backend}] 2,000 messages, 20 queries" in out, out
    ratio = re.search(r"MCP / GraphQL = ([0-9.]+)x", out)
    assert ratio and float(ratio.group(1)) > 0, out
