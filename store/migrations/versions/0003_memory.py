"""Agent memory: entries, per-scope size counters and their full-text index.

``memory_entries`` holds what an agent chose to remember about a person (a subject of a
tenant), keyed by scope; ``memory_scopes`` holds one running total of content length
per (tenant, subject, scope), which writes change with a conditional UPDATE so the
per-scope cap holds under concurrent writers.

The full-text index is kept by the database in the same transaction as every write,
update and delete, exactly as for messages:

- SQLite: an FTS5 table ``memory_search`` with two columns, ``owner`` (one token, the
  hex of tenant and subject, so a search reads only that person's postings) and
  ``body`` (the content; ``unicode61`` tokenizer, diacritics folded), kept by triggers.
  ``memory_search_keys`` maps each entry id to its FTS5 row (an INTEGER PRIMARY KEY,
  which VACUUM keeps).
- Postgres: a stored generated ``tsvector`` column ``memory_entries.search_vector``
  (``simple`` configuration: no language's stemming or stop words) with a GIN index.

Revision ID: 0003_memory
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_memory"
down_revision = "0002"
branch_labels = None
depends_on = None

#: Only an entry's first characters are indexed (Postgres refuses a tsvector over 1 MiB).
INDEXED_CHARS = 100_000


def _create_tables() -> None:
    op.create_table(
        "memory_entries",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=True),
        sa.Column("write_id", sa.String(length=128), nullable=True),
        sa.Column("write_digest", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_entries")),
        sa.UniqueConstraint(
            "tenant_id", "subject", "write_id",
            name=op.f("uq_memory_entries_tenant_id_subject_write_id"),
        ),
    )
    with op.batch_alter_table("memory_entries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_memory_entries_tenant_id_subject_scope_pinned_created_at_id"),
            ["tenant_id", "subject", "scope", "pinned", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_memory_entries_tenant_id_subject_scope_pinned_updated_at_id"),
            ["tenant_id", "subject", "scope", "pinned", "updated_at", "id"],
            unique=False,
        )
    op.create_table(
        "memory_scopes",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("chars", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "subject", "scope", name=op.f("pk_memory_scopes")),
    )


def _sqlite_upgrade() -> None:
    op.execute(
        "CREATE TABLE memory_search_keys ("
        " key INTEGER PRIMARY KEY,"
        " entry_id VARCHAR(64) NOT NULL UNIQUE)"
    )
    op.execute(
        "CREATE VIRTUAL TABLE memory_search USING fts5("
        "owner, body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    forget_old = (
        "DELETE FROM memory_search WHERE rowid ="
        " (SELECT key FROM memory_search_keys WHERE entry_id = old.id);"
        " DELETE FROM memory_search_keys WHERE entry_id = old.id;"
    )
    remember_new = (
        "INSERT INTO memory_search_keys (entry_id) VALUES (new.id);"
        " INSERT INTO memory_search (rowid, owner, body)"
        " SELECT key, hex(new.tenant_id || char(31) || new.subject),"
        f" substr(new.content, 1, {INDEXED_CHARS})"
        " FROM memory_search_keys WHERE entry_id = new.id;"
    )
    op.execute(f"CREATE TRIGGER memory_search_insert AFTER INSERT ON memory_entries"
               f" BEGIN {remember_new} END")
    op.execute(f"CREATE TRIGGER memory_search_delete AFTER DELETE ON memory_entries"
               f" BEGIN {forget_old} END")
    op.execute(
        "CREATE TRIGGER memory_search_update"
        " AFTER UPDATE OF id, tenant_id, subject, content ON memory_entries"
        f" BEGIN {forget_old} {remember_new} END"
    )


def _postgres_upgrade() -> None:
    op.execute(
        "ALTER TABLE memory_entries ADD COLUMN search_vector tsvector GENERATED ALWAYS AS"
        f" (to_tsvector('simple'::regconfig, left(content, {INDEXED_CHARS}))) STORED"
    )
    op.execute(
        "CREATE INDEX ix_memory_entries_search_vector ON memory_entries"
        " USING gin (search_vector)"
    )


def upgrade() -> None:
    _create_tables()
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgres_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS memory_search_{trigger}")
        op.execute("DROP TABLE IF EXISTS memory_search")
        op.execute("DROP TABLE IF EXISTS memory_search_keys")
    op.drop_table("memory_scopes")
    op.drop_table("memory_entries")
