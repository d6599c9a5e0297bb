"""Token counts, usage records, channels, and no search index for TOOL messages.

- ``messages.tokens``: a message's token count as its producer reported it.
- ``usage_records``: one row per stream whose producer reported the model's usage.
- ``chats.channel`` (default ``api``) and ``chats.subject`` with a unique index on
  (tenant, assistant, channel, subject): the one chat ``chatFor`` hands out per person.
- Search: messages with role ``TOOL`` are never indexed, whatever their type. The
  index is re-derived for the rows already stored (SQLite: the triggers are redrawn
  and TOOL rows dropped from the FTS table; Postgres: the generated column is
  re-created with the new expression, which recomputes it for every row).

Revision ID: 0004_usage
Revises: 0003_memory
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_usage"
down_revision = "0003_memory"
branch_labels = None
depends_on = None

_SPOKEN_TYPES = "('user_input', 'text')"
INDEXED_CHARS = 100_000


def _sqlite_text(row: str, *, spoken_roles: bool) -> str:
    role = f" AND {row}.role <> 'TOOL'" if spoken_roles else ""
    return (
        f"CASE WHEN {row}.type IN {_SPOKEN_TYPES}{role} THEN CASE"
        f" WHEN json_type({row}.props, '$.content') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.content'), 1, {INDEXED_CHARS})"
        f" WHEN json_type({row}.props, '$.text') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.text'), 1, {INDEXED_CHARS}) END END"
    )


def _pg_text(*, spoken_roles: bool) -> str:
    role = " AND role <> 'TOOL'" if spoken_roles else ""
    return (
        f"CASE WHEN type IN {_SPOKEN_TYPES}{role} THEN CASE"
        " WHEN jsonb_typeof(props -> 'content') = 'string'"
        f" THEN left(props ->> 'content', {INDEXED_CHARS})"
        " WHEN jsonb_typeof(props -> 'text') = 'string'"
        f" THEN left(props ->> 'text', {INDEXED_CHARS}) END END"
    )


def _sqlite_triggers(*, spoken_roles: bool) -> None:
    for trigger in ("insert", "update"):
        op.execute(f"DROP TRIGGER IF EXISTS message_search_{trigger}")
    text = _sqlite_text("new", spoken_roles=spoken_roles)
    forget_old = (
        "DELETE FROM message_search WHERE rowid ="
        " (SELECT key FROM message_search_keys WHERE message_id = old.id);"
        " DELETE FROM message_search_keys WHERE message_id = old.id;"
    )
    remember_new = (
        f"INSERT INTO message_search_keys (message_id)"
        f" SELECT new.id WHERE ({text}) IS NOT NULL;"
        f" INSERT INTO message_search (rowid, body)"
        f" SELECT key, {text} FROM message_search_keys"
        f" WHERE message_id = new.id;"
    )
    when = f"new.type IN {_SPOKEN_TYPES}" + (" AND new.role <> 'TOOL'" if spoken_roles else "")
    op.execute(
        "CREATE TRIGGER message_search_insert AFTER INSERT ON messages"
        f" WHEN {when} BEGIN {remember_new} END"
    )
    columns = "id, type, props, role" if spoken_roles else "id, type, props"
    op.execute(
        f"CREATE TRIGGER message_search_update AFTER UPDATE OF {columns} ON messages"
        f" BEGIN {forget_old} {remember_new} END"
    )


def _sqlite_reindex(*, spoken_roles: bool) -> None:
    op.execute("DELETE FROM message_search")
    op.execute("DELETE FROM message_search_keys")
    text = _sqlite_text("new", spoken_roles=spoken_roles)
    op.execute(
        f"INSERT INTO message_search_keys (message_id) SELECT new.id FROM messages AS new"
        f" WHERE ({text}) IS NOT NULL ORDER BY new.chat_id, new.sequence"
    )
    op.execute(
        f"INSERT INTO message_search (rowid, body)"
        f" SELECT k.key, {text} FROM message_search_keys AS k"
        f" JOIN messages AS new ON new.id = k.message_id"
    )


def _pg_search_column(*, spoken_roles: bool) -> None:
    op.execute("DROP INDEX IF EXISTS ix_messages_search_vector")
    op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS search_vector")
    op.execute(
        "ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS"
        f" (to_tsvector('simple'::regconfig, {_pg_text(spoken_roles=spoken_roles)})) STORED"
    )
    op.execute("CREATE INDEX ix_messages_search_vector ON messages USING gin (search_vector)")


def _search(*, spoken_roles: bool) -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_triggers(spoken_roles=spoken_roles)
        _sqlite_reindex(spoken_roles=spoken_roles)
    else:
        _pg_search_column(spoken_roles=spoken_roles)


def upgrade() -> None:
    op.add_column("messages", sa.Column("tokens", sa.BigInteger(), nullable=True))
    op.add_column(
        "chats",
        sa.Column("channel", sa.String(length=64), server_default="api", nullable=False),
    )
    op.add_column("chats", sa.Column("subject", sa.String(length=200), nullable=True))
    op.create_index(
        op.f("ix_chats_tenant_id_assistant_id_channel_subject"),
        "chats",
        ["tenant_id", "assistant_id", "channel", "subject"],
        unique=True,
    )
    op.create_table(
        "usage_records",
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("stream_id", sa.String(length=128), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.Column("assistant_id", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"],
            name=op.f("fk_usage_records_chat_id_chats"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chat_id", "stream_id", name=op.f("pk_usage_records")),
    )
    op.create_index(
        op.f("ix_usage_records_created_at"), "usage_records", ["created_at"], unique=False
    )
    _search(spoken_roles=True)


def downgrade() -> None:
    _search(spoken_roles=False)
    op.drop_index(op.f("ix_usage_records_created_at"), table_name="usage_records")
    op.drop_table("usage_records")
    op.drop_index(op.f("ix_chats_tenant_id_assistant_id_channel_subject"), table_name="chats")
    # Plain DROP COLUMN (SQLite 3.35+): a batch rebuild of ``chats`` would cascade.
    op.drop_column("chats", "subject")
    op.drop_column("chats", "channel")
    op.drop_column("messages", "tokens")
