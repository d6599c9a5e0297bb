"""Alembic migrations create exactly the schema ``store/tables.py`` describes."""

from __future__ import annotations

import re
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from chatql.store.db.database import Database
from chatql.store.db.migrate import current_revision, head_revision, migrate
from chatql.store.db.tables import metadata

# The full-text search objects (of messages and of memory entries) live outside the
# metadata on purpose: SQLAlchemy cannot describe an FTS5 virtual table (nor its shadow
# tables) or the triggers that keep it, and the Postgres generated tsvector columns are
# kept out so ``SELECT messages.*`` never carries them. Everything else must match exactly.
SEARCH_TABLES = ("message_search", "memory_search")
SEARCH_COLUMNS = ("search_vector",)
SEARCH_INDEXES = ("ix_messages_search_vector", "ix_memory_entries_search_vector")
# So are the hash partitions of the per-chat tables on Postgres (each one a copy of its
# table's definition) and ``message_chats``, a view or a table depending on the layout.
PARTITION = re.compile(r"^(messages|append_receipts|resume_records|usage_records)_p\d+$")


def _include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "table" and name is not None and (
            name.startswith(SEARCH_TABLES) or PARTITION.match(name)
            or name == "message_chats"):
        return False
    # The partitioned layout's index finding a resume record's chat from its id (the
    # plain layout's primary key does that).
    return not (type_ == "index" and name in (*SEARCH_INDEXES, "ix_resume_records_id"))


def _include_object(obj: Any, name: str | None, type_: str, reflected: bool,
                    compare_to: Any) -> bool:
    return not (type_ == "column" and reflected and compare_to is None
                and name in SEARCH_COLUMNS)


async def test_migrated_database_matches_tables(db: Database) -> None:
    assert await current_revision(db) == head_revision()
    opts = {"include_name": _include_name, "include_object": _include_object}
    async with db.engine.connect() as conn:
        diff = await conn.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync, opts=opts), metadata)
        )
    assert diff == []


async def test_search_objects_exist(db: Database) -> None:
    """The comparison above skips the search objects, so check they are really there."""
    async with db.engine.connect() as conn:
        if db.is_sqlite:
            names = set((await conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE name LIKE 'message_search%'"
            )).scalars())
            assert {"message_search", "message_search_keys", "message_search_insert",
                    "message_search_update", "message_search_delete"} <= names
        else:
            names = set((await conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'messages'"
            )).scalars())
            assert "ix_messages_search_vector" in names


async def test_migrate_is_repeatable(db: Database) -> None:
    await migrate(db)
    assert await current_revision(db) == head_revision()
