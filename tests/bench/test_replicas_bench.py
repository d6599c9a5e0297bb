"""``python -m bench.replicas --quick`` starts a primary and replica and prints its figures."""

from __future__ import annotations

import os
import re

import pytest

from bench.postgres_pair import postgres_binaries
from tests.bench.quick import run_quick

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_quick_replicas_bench_reports_share_and_ratio() -> None:
    if postgres_binaries() is None:
        if os.environ.get("CHATQL_REQUIRE_POSTGRES", "") in ("1", "true", "yes"):
            pytest.fail("CHATQL_REQUIRE_POSTGRES=1 but the Postgres server binaries are missing")
        pytest.skip("the Postgres server binaries (initdb, pg_ctl, pg_basebackup) are missing")
    out = run_quick("replicas", timeout=300)
    share = re.search(r"the replica served (\d+)% of reads", out)
    assert share and int(share.group(1)) > 0, out
    ratio = re.search(r"p99 [0-9.]+ ms / [0-9.]+ ms = ([0-9.]+)", out)
    assert ratio and float(ratio.group(1)) > 0, out
