"""``python -m bench.model_window --quick`` runs end to end and prints every ratio.

No timing is asserted (the figures depend on the machine); the run must finish and
report each measurement.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_model_window_bench_runs(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        backend = ["--sqlite"]
    else:
        # The bench makes (and drops) its own database on the same server.
        backend = ["--postgres-url", os.environ.get(
            "CHATQL_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")]
    result = subprocess.run(
        [sys.executable, "-m", "bench.model_window", "--quick", *backend],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "skipped" not in out, out
    for ratio in ("maxTokens long / short =", "limit long / short =",
                  "maxTokens + limit long / short =", "whole chat / window =", "estimated)"):
        assert ratio in out, out
