"""``python -m bench.scale --quick`` runs end to end on partitioned Postgres and prints
every ratio of both questions (the table grows; one chat grows).

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
    assert "the table grows: loaded 2 chats of 1,000 messages" in out, out
    for ratio in ("newest page:", "deep page:", "thread-filtered page:"):
        assert out.count(ratio) == 2, out
    assert "thread-filtered ÷ unfiltered at 20,000 messages =" in out, out
    assert "thread-filtered ÷ unfiltered at a chat of 20,000 =" in out, out
