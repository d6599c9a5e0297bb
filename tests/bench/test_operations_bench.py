"""``python -m bench.operations --quick`` runs and prints every variant's ratio."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_operations_bench_quick() -> None:
    output = run_quick("operations", timeout=300)
    rows = [line.split() for line in output.splitlines()[1:]]
    assert [row[0] for row in rows] == ["off", "metrics", "metrics+limits", "metrics+json",
                                        "tracing"]
    for row in rows:
        assert float(row[-1]) > 0 and float(row[-3]) > 0
