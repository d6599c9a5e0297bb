"""Hash partitions by chat id for the per-chat tables on Postgres, and the id → chat
map of messages.

- ``message_chats (id, chat_id)``: where statements find a message's chat from its id
  alone. SQLite (and Postgres' plain tables): a view over ``messages``.
- Postgres: a database with no rows in the per-chat tables (a new one) gets them
  hash-partitioned by ``chat_id`` here, with the count ``chatql migrate`` was given
  (``CHATQL_PG_PARTITIONS``, 0 keeps plain tables); ``message_chats`` then becomes a
  table kept by a trigger on ``messages``. A database that already has rows keeps its
  plain tables in this revision: ``chatql migrate`` converts them afterwards in
  batches while the service keeps running (store/db/partitions.py).

Downgrading a partitioned database copies the rows back into plain tables in one
transaction.

Revision ID: 0010_partitions
Revises: 0009_message_filters
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy.engine import Connection

from chatql.store.db import partitions

revision = "0010_partitions"
down_revision = "0009_message_filters"
branch_labels = None
depends_on = None


def _empty(bind: Connection) -> bool:
    for table in partitions.PER_CHAT_TABLES:
        if bind.exec_driver_sql(
                f"SELECT EXISTS (SELECT 1 FROM {table.name})").scalar():
            return False
    return True


def upgrade() -> None:
    bind = op.get_bind()
    partitions.create_map_view(bind)
    if bind.dialect.name == "sqlite":
        return
    count = partitions.check_partitions(
        context.config.attributes.get("pg_partitions", partitions.DEFAULT_PARTITIONS))
    if count and _empty(bind):
        partitions.convert_now(bind, count)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        partitions.convert_now(bind, 0)
    op.execute("DROP VIEW IF EXISTS message_chats")
