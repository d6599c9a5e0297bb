"""Apply the Alembic migrations to a database (``chatql migrate`` and server start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from chatql.store.db.database import Database

__all__ = ["alembic_config", "current_revision", "head_revision", "migrate"]

MIGRATIONS = Path(__file__).parents[1] / "migrations"
# Any constant works; it only has to be the same for every instance.
_PG_MIGRATION_LOCK = 7_145_019_311


def alembic_config(connection: Any = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def migrate(db: Database, revision: str = "head") -> None:
    """Upgrade ``db`` to ``revision``; safe to run from several instances at once."""
    async with db.engine.begin() as conn:
        if db.is_postgres:
            await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), revision))


async def current_revision(db: Database) -> str | None:
    async with db.engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
