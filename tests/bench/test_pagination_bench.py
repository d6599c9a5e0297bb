"""``python -m bench.pagination --quick`` runs end to end and prints every ratio.

No timing is asserted (the figures depend on the machine); the run must finish, serve
identical JSON from GraphQL and the bare route, and report each measurement.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_pagination_bench_runs(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        backend = ["--sqlite"]
    else:
        # The bench makes (and drops) its own database on the same server.
        backend = ["--postgres-url", os.environ.get(
            "CHATQL_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")]
    result = subprocess.run(
        [sys.executable, "-m", "bench.pagination", "--quick", *backend],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "skipped" not in out, out
    for ratio in ("depth / first =", "OFFSET / keyset at depth =", "OFFSET / keyset =",
                  "branch depth / first =", "branch forward depth / first =",
                  "tree migration of a", "leaf walk / jump =",
                  "GraphQL / bare =", "responses identical: True"):
        assert ratio in out, out
