"""``python -m bench.pagination --quick`` runs end to end and prints every ratio.

No timing is asserted (the figures depend on the machine); the run must finish, serve
identical JSON from GraphQL and the bare route, and report each measurement.
"""

from __future__ import annotations

from tests.bench.quick import backend_options, run_quick


def test_quick_pagination_bench_runs(database_url: str) -> None:
    out = run_quick("pagination", *backend_options(database_url))
    assert "skipped" not in out, out
    for ratio in ("depth / first =", "OFFSET / keyset at depth =", "OFFSET / keyset =",
                  "branch depth / first =", "branch forward depth / first =",
                  "thread / unfiltered =", "tree migration of a", "after deletes depth / first =",
                  "leaf walk / jump =",
                  "GraphQL / bare =", "responses identical: True"):
        assert ratio in out, out
