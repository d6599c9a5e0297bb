"""Full-text search over spoken text, maintained by the database itself.

Only ``props.content`` (or, failing that, ``props.text``) of ``user_input`` and
``text`` messages is indexed, and only when it is a JSON string: tool calls,
retrieval dumps, boundaries and loading states never are. Of a very long text only
the first ``INDEXED_CHARS`` characters are indexed.

The index is kept by the database, not by application code, so every write path
(appends, stream persists, updates, deletes, purges, cascades) updates it in the same
transaction as the message row and it can never drift:

- SQLite: an FTS5 table ``message_search`` (``unicode61`` tokenizer, diacritics
  folded, ranked with ``bm25``) kept by triggers on ``messages``. FTS5 rows are keyed
  by integers, and the implicit rowid of ``messages`` may be renumbered by VACUUM, so
  ``message_search_keys`` (an INTEGER PRIMARY KEY, which VACUUM keeps) maps each
  indexed message id to its FTS5 row.
- Postgres: a stored generated ``tsvector`` column ``messages.search_vector`` with a
  GIN index. The ``simple`` configuration is used on purpose: chats are written in
  many languages, so no language's stemming or stop words are imposed (SQLite's
  tokenizer does not stem either, so both backends match the same words).

None of these objects are in ``store/tables.py``: SQLAlchemy metadata cannot describe
an FTS5 table or a trigger, and leaving the generated column out keeps the large
vector out of every ``SELECT messages.*``. ``tests/store/test_migrations.py`` skips
them when comparing the migrated database with the metadata.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_SPOKEN_TYPES = "('user_input', 'text')"
#: Only a message's first characters are indexed. Postgres refuses a tsvector over
#: 1 MiB (which would fail the whole write), and no character costs more than ~7 bytes
#: of tsvector; SQLite indexes the same prefix so both backends find the same words.
INDEXED_CHARS = 100_000


def _sqlite_text(row: str) -> str:
    """The spoken text of ``row`` (``new`` or ``old``) as an SQLite expression."""
    return (
        f"CASE WHEN {row}.type IN {_SPOKEN_TYPES} THEN CASE"
        f" WHEN json_type({row}.props, '$.content') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.content'), 1, {INDEXED_CHARS})"
        f" WHEN json_type({row}.props, '$.text') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.text'), 1, {INDEXED_CHARS}) END END"
    )


_PG_TEXT = (
    f"CASE WHEN type IN {_SPOKEN_TYPES} THEN CASE"
    " WHEN jsonb_typeof(props -> 'content') = 'string'"
    f" THEN left(props ->> 'content', {INDEXED_CHARS})"
    " WHEN jsonb_typeof(props -> 'text') = 'string'"
    f" THEN left(props ->> 'text', {INDEXED_CHARS}) END END"
)


def _sqlite_upgrade() -> None:
    op.execute(
        "CREATE TABLE message_search_keys ("
        " key INTEGER PRIMARY KEY,"
        " message_id VARCHAR(64) NOT NULL UNIQUE)"
    )
    op.execute(
        "CREATE VIRTUAL TABLE message_search USING fts5("
        "body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    forget_old = (
        "DELETE FROM message_search WHERE rowid ="
        " (SELECT key FROM message_search_keys WHERE message_id = old.id);"
        " DELETE FROM message_search_keys WHERE message_id = old.id;"
    )
    remember_new = (
        f"INSERT INTO message_search_keys (message_id)"
        f" SELECT new.id WHERE ({_sqlite_text('new')}) IS NOT NULL;"
        f" INSERT INTO message_search (rowid, body)"
        f" SELECT key, {_sqlite_text('new')} FROM message_search_keys"
        f" WHERE message_id = new.id;"
    )
    op.execute(
        "CREATE TRIGGER message_search_insert AFTER INSERT ON messages"
        f" WHEN new.type IN {_SPOKEN_TYPES} BEGIN {remember_new} END"
    )
    op.execute(
        f"CREATE TRIGGER message_search_delete AFTER DELETE ON messages BEGIN {forget_old} END"
    )
    op.execute(
        "CREATE TRIGGER message_search_update AFTER UPDATE OF id, type, props ON messages"
        f" BEGIN {forget_old} {remember_new} END"
    )
    # Messages written before this migration.
    op.execute(
        f"INSERT INTO message_search_keys (message_id) SELECT new.id FROM messages AS new"
        f" WHERE ({_sqlite_text('new')}) IS NOT NULL ORDER BY new.chat_id, new.sequence"
    )
    op.execute(
        f"INSERT INTO message_search (rowid, body)"
        f" SELECT k.key, {_sqlite_text('new')} FROM message_search_keys AS k"
        f" JOIN messages AS new ON new.id = k.message_id"
    )


def _postgres_upgrade() -> None:
    op.execute(
        "ALTER TABLE messages ADD COLUMN search_vector tsvector"
        f" GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, {_PG_TEXT})) STORED"
    )
    op.execute(
        "CREATE INDEX ix_messages_search_vector ON messages USING gin (search_vector)"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgres_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS message_search_{trigger}")
        op.execute("DROP TABLE IF EXISTS message_search")
        op.execute("DROP TABLE IF EXISTS message_search_keys")
    else:
        op.execute("DROP INDEX IF EXISTS ix_messages_search_vector")
        op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS search_vector")
