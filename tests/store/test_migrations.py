"""Alembic migrations create exactly the schema ``store/tables.py`` describes."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from store.database import Database
from store.migrate import current_revision, head_revision, migrate
from store.tables import metadata


async def test_migrated_database_matches_tables(db: Database) -> None:
    assert await current_revision(db) == head_revision()
    async with db.engine.connect() as conn:
        diff = await conn.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync), metadata)
        )
    assert diff == []


async def test_migrate_is_repeatable(db: Database) -> None:
    await migrate(db)
    assert await current_revision(db) == head_revision()
