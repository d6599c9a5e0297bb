"""The store tests also run on Postgres with the per-chat tables hash-partitioned by
chat id (the layout of a new database), besides SQLite and Postgres' plain tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fresh_database

BACKENDS = ["sqlite", "postgres", "postgres-partitioned"]


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    """The URL of an empty, migrated database of each backend and layout."""
    return fresh_database(request, tmp_path, sqlite_template, request.param)
