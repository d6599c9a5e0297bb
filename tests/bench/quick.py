"""Running a benchmark's ``--quick`` mode from a test, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["ROOT", "backend_choice", "backend_options", "postgres_server", "run_quick"]

ROOT = Path(__file__).resolve().parents[2]


def postgres_server() -> str:
    """The Postgres server the tests use; a benchmark makes (and drops) its own
    database there."""
    return os.environ.get("CHATQL_TEST_POSTGRES_URL",
                          "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


def backend_options(database_url: str) -> list[str]:
    """The options of the benchmarks that take ``--sqlite`` or ``--postgres-url`` for
    the backend of ``database_url``."""
    if database_url.startswith("sqlite"):
        return ["--sqlite"]
    return ["--postgres-url", postgres_server()]


def run_quick(module: str, *options: str, timeout: float = 180) -> str:
    """``python -m bench.<module> --quick OPTIONS`` from the repository root: its
    standard output, once it has exited cleanly."""
    done = subprocess.run([sys.executable, "-m", f"bench.{module}", "--quick", *options],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def backend_choice(backend: str, request: pytest.FixtureRequest) -> list[str]:
    """The options of the benchmarks that take ``--backend`` (and ``--postgres-url``,
    the session's Postgres, skipping when it is not reachable)."""
    if backend != "postgres":
        return ["--backend", backend]
    url = request.getfixturevalue("postgres_url")
    if url is None:
        pytest.skip("Postgres is not reachable")
    return ["--backend", backend, "--postgres-url", url]
