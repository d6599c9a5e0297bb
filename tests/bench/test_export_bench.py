"""``python -m bench.export --quick`` runs end to end and prints every figure.

No timing is asserted (the figures depend on the machine); the run must finish, export
and import every row, and report each measurement. The benchmark is Postgres only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quick_export_bench_runs(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        pytest.skip("the export benchmark compares with Postgres COPY")
    url = os.environ.get("CHATQL_TEST_POSTGRES_URL",
                         "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    result = subprocess.run(
        [sys.executable, "-m", "bench.export", "--quick", "--postgres-url", url],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    for figure in ("export / COPY =", "export peak RSS growth =",
                   "import / copy_records_to_table ="):
        assert figure in result.stdout, result.stdout
