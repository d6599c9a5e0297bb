"""``python -m bench.scale --quick`` runs end to end on partitioned Postgres and prints
every ratio.

No timing is asserted (the figures depend on the machine); the run must finish, read
the pages it expects, and report each measurement.
"""

from __future__ import annotations

import pytest

from tests.bench.quick import postgres_server, run_quick


def test_quick_scale_bench_runs(postgres_url: str | None) -> None:
    if postgres_url is None:
        pytest.skip("Postgres is not reachable")
    out = run_quick("scale", "--postgres-url", postgres_server())
    assert "16 hash partitions by chat id" in out, out
    for ratio in ("newest page:", "deep page:", "thread-filtered page:",
                  "thread-filtered / unfiltered at 20,000 ="):
        assert ratio in out, out
