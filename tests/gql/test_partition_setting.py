"""``CHATQL_PG_PARTITIONS``: read from the environment, used by the server's own
migration of a new Postgres database, refused when out of range."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.partitions import layout_partitions
from tests.conftest import TEST_SECRET, running_app
from tests.store.test_partition_conversion import fresh_postgres_url  # noqa: F401 - a fixture


def test_the_partition_count_is_read_from_the_environment() -> None:
    assert Settings().pg_partitions == 16
    assert Settings.from_env({"CHATQL_PG_PARTITIONS": "4"}).pg_partitions == 4


async def test_a_new_database_gets_the_configured_partitions(
        fresh_postgres_url: str, tmp_path: Path) -> None:  # noqa: F811
    settings = Settings(database_url=fresh_postgres_url, secret=TEST_SECRET,
                        archive_url=f"file://{tmp_path / 'archive'}", pg_partitions=4)
    with pytest.raises(ValueError, match="from 0 to 1024"):
        async with running_app(dataclasses.replace(settings, pg_partitions=5000)):
            pass
    async with running_app(settings):
        pass
    db = Database(fresh_postgres_url)
    try:
        async with db.read() as conn:
            assert await conn.run_sync(layout_partitions) == 4
    finally:
        await db.dispose()
