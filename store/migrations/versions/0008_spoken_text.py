"""Search indexes multimodal user input and leaves tool results out; SYSTEM messages
are found by role.

- Search: the text of ``props.content`` given as a list of parts (the ``text`` of every
  part that has one, joined by spaces, in order) is indexed like a plain string, and
  a message whose ``metadata.is_tool_result`` is ``true`` is never indexed (a tool's
  output stored as an assistant's text would crowd out what people said). The index
  is re-derived for the rows already stored: SQLite's triggers are redrawn (an update
  of ``metadata`` now re-indexes too) and the FTS table refilled; Postgres' generated
  column is re-created over the function ``chatql_spoken_text`` (a generated column
  cannot hold a subquery, a function can), which recomputes it for every row.
- An index on (chat_id, role, sequence): the model's context opens with the chat's
  ``SYSTEM`` messages, found without reading the chat.

Revision ID: 0008_spoken_text
Revises: 0007_stream_claims
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0008_spoken_text"
down_revision = "0007_stream_claims"
branch_labels = None
depends_on = None

_SPOKEN_TYPES = "('user_input', 'text')"
INDEXED_CHARS = 100_000


def _sqlite_text(row: str) -> str:
    """The indexed text of ``row`` (``new`` or ``old``) as an SQLite expression."""
    # Parts are read through paths into ``props`` (always JSON): a part's own value
    # is not JSON when the part is a bare string.
    parts = (
        f"(SELECT group_concat(json_extract({row}.props, part.fullkey || '.text'), ' ')"
        f" FROM json_each({row}.props, '$.content') AS part"
        f" WHERE json_type({row}.props, part.fullkey || '.text') = 'text')"
    )
    return (
        f"CASE WHEN {row}.type IN {_SPOKEN_TYPES} AND {row}.role <> 'TOOL'"
        f" AND coalesce(json_type({row}.metadata, '$.is_tool_result'), '') <> 'true'"
        f" THEN substr(CASE"
        f" WHEN json_type({row}.props, '$.content') = 'text'"
        f" THEN json_extract({row}.props, '$.content')"
        f" WHEN json_type({row}.props, '$.content') = 'array' THEN {parts}"
        f" WHEN json_type({row}.props, '$.text') = 'text'"
        f" THEN json_extract({row}.props, '$.text') END, 1, {INDEXED_CHARS}) END"
    )


def _sqlite_old_text(row: str) -> str:
    """The expression the previous revision indexed."""
    return (
        f"CASE WHEN {row}.type IN {_SPOKEN_TYPES} AND {row}.role <> 'TOOL' THEN CASE"
        f" WHEN json_type({row}.props, '$.content') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.content'), 1, {INDEXED_CHARS})"
        f" WHEN json_type({row}.props, '$.text') = 'text'"
        f" THEN substr(json_extract({row}.props, '$.text'), 1, {INDEXED_CHARS}) END END"
    )


def _sqlite_search(text: str, columns: str) -> None:
    for trigger in ("insert", "update"):
        op.execute(f"DROP TRIGGER IF EXISTS message_search_{trigger}")
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
    op.execute(
        "CREATE TRIGGER message_search_insert AFTER INSERT ON messages"
        f" WHEN new.type IN {_SPOKEN_TYPES} AND new.role <> 'TOOL'"
        f" BEGIN {remember_new} END"
    )
    op.execute(
        f"CREATE TRIGGER message_search_update AFTER UPDATE OF {columns} ON messages"
        f" BEGIN {forget_old} {remember_new} END"
    )
    op.execute("DELETE FROM message_search")
    op.execute("DELETE FROM message_search_keys")
    op.execute(
        f"INSERT INTO message_search_keys (message_id) SELECT new.id FROM messages AS new"
        f" WHERE ({text}) IS NOT NULL ORDER BY new.chat_id, new.sequence"
    )
    op.execute(
        f"INSERT INTO message_search (rowid, body)"
        f" SELECT k.key, {text} FROM message_search_keys AS k"
        f" JOIN messages AS new ON new.id = k.message_id"
    )


_PG_FUNCTION = f"""
CREATE FUNCTION chatql_spoken_text(kind text, role text, props jsonb, meta jsonb)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN kind IN {_SPOKEN_TYPES} AND role <> 'TOOL'
  AND coalesce(meta -> 'is_tool_result', 'false'::jsonb) <> 'true'::jsonb
THEN left(CASE
  WHEN jsonb_typeof(props -> 'content') = 'string' THEN props ->> 'content'
  WHEN jsonb_typeof(props -> 'content') = 'array' THEN (
    SELECT string_agg(part ->> 'text', ' ' ORDER BY n)
    FROM jsonb_array_elements(props -> 'content') WITH ORDINALITY AS p(part, n)
    WHERE jsonb_typeof(part -> 'text') = 'string')
  WHEN jsonb_typeof(props -> 'text') = 'string' THEN props ->> 'text'
END, {INDEXED_CHARS}) END
$$
"""

_PG_OLD_TEXT = (
    f"CASE WHEN type IN {_SPOKEN_TYPES} AND role <> 'TOOL' THEN CASE"
    " WHEN jsonb_typeof(props -> 'content') = 'string'"
    f" THEN left(props ->> 'content', {INDEXED_CHARS})"
    " WHEN jsonb_typeof(props -> 'text') = 'string'"
    f" THEN left(props ->> 'text', {INDEXED_CHARS}) END END"
)


def _pg_search_column(text: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_messages_search_vector")
    op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS search_vector")
    op.execute(
        "ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS"
        f" (to_tsvector('simple'::regconfig, {text})) STORED"
    )
    op.execute("CREATE INDEX ix_messages_search_vector ON messages USING gin (search_vector)")


def upgrade() -> None:
    op.create_index(op.f("ix_messages_chat_id_role_sequence"), "messages",
                    ["chat_id", "role", "sequence"], unique=False)
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_search(_sqlite_text("new"), "id, type, props, role, metadata")
    else:
        op.execute(_PG_FUNCTION)
        _pg_search_column("chatql_spoken_text(type, role, props, metadata)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_search(_sqlite_old_text("new"), "id, type, props, role")
    else:
        _pg_search_column(_PG_OLD_TEXT)
        op.execute("DROP FUNCTION IF EXISTS chatql_spoken_text(text, text, jsonb, jsonb)")
    op.drop_index(op.f("ix_messages_chat_id_role_sequence"), table_name="messages")
