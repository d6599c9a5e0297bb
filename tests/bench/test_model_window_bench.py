"""``python -m bench.model_window --quick`` runs end to end and prints every ratio.

No timing is asserted (the figures depend on the machine); the run must finish and
report each measurement.
"""

from __future__ import annotations

from tests.bench.quick import backend_options, run_quick


def test_quick_model_window_bench_runs(database_url: str) -> None:
    out = run_quick("model_window", *backend_options(database_url))
    assert "skipped" not in out, out
    for ratio in ("maxTokens long / short =", "limit long / short =",
                  "maxTokens + limit long / short =", "whole chat / window =", "estimated)"):
        assert ratio in out, out
