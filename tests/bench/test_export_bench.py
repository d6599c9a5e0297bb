"""``python -m bench.export --quick`` runs end to end and prints every figure.

No timing is asserted (the figures depend on the machine); the run must finish, export
and import every row, and report each measurement. The benchmark is Postgres only.
"""

from __future__ import annotations

import pytest

from tests.bench.quick import postgres_server, run_quick


def test_quick_export_bench_runs(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        pytest.skip("the export benchmark compares with Postgres COPY")
    out = run_quick("export", "--postgres-url", postgres_server())
    for figure in ("export / COPY =", "export peak RSS growth =",
                   "import / copy_records_to_table ="):
        assert figure in out, out
