"""Apply the Alembic migrations to a database (``chatql migrate`` and server start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from chatql.store.db import partitions
from chatql.store.db.database import Database

__all__ = ["alembic_config", "current_revision", "head_revision", "migrate"]

MIGRATIONS = Path(__file__).parents[1] / "migrations"
# Any constant works; it only has to be the same for every instance.
_PG_MIGRATION_LOCK = 7_145_019_311


def alembic_config(connection: Any = None,
                   pg_partitions: int = partitions.DEFAULT_PARTITIONS) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    config.attributes["pg_partitions"] = pg_partitions
    return config


async def migrate(db: Database, revision: str = "head", *,
                  pg_partitions: int = partitions.DEFAULT_PARTITIONS,
                  convert: bool = False,
                  batch_rows: int = partitions.BATCH_ROWS,
                  progress: partitions.Progress | None = None) -> None:
    """Upgrade ``db`` to ``revision``; safe to run from several instances at once.

    On Postgres a new database gets its per-chat tables hash-partitioned into
    ``pg_partitions`` (0: plain tables). With ``convert``, a database whose per-chat
    tables already held rows is then converted to that layout batch by batch while it
    stays in use (store/db/partitions.py); without it such a database keeps its plain
    tables, which every statement also works on.
    """
    partitions.check_partitions(pg_partitions)
    async with db.engine.begin() as conn:
        if db.is_postgres:
            await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
        await conn.run_sync(
            lambda sync: command.upgrade(alembic_config(sync, pg_partitions), revision))
    if convert and db.is_postgres and pg_partitions and revision == "head":
        async with db.engine.connect() as conn:
            current = await conn.run_sync(partitions.layout_partitions)
        if current == 0:
            await partitions.convert(db, pg_partitions, batch_rows=batch_rows,
                                     progress=progress)


async def current_revision(db: Database) -> str | None:
    async with db.engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
