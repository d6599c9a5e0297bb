"""``python -m bench.shares --quick`` runs end to end on each backend and prints its ratio.

No timing is asserted (the figures depend on the machine); the run must finish, check
that both reads answer the same 200 messages, and report the ratio.
"""

from __future__ import annotations

import re

import pytest

from tests.bench.quick import backend_choice, run_quick


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_shares_bench_runs(backend: str, request: pytest.FixtureRequest) -> None:
    out = run_quick("shares", *backend_choice(backend, request))
    assert "skipped" not in out, out
    assert re.search(r"sharedChat / own page = \d+\.\d\d", out), out
