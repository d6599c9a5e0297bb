"""Organising and keeping chats: tags, pinned, expiry, and the indexes lists need.

- ``chats.tags`` (a sorted JSON list of distinct tags, read with the chat) and its
  mirror ``chat_tags`` (one row per tag), which answers "has every one of these tags"
  with index probes.
- ``chats.pinned`` and ``chats.expires_at``.
- ``(tenant_id, created_by, activity_at, id)``: a non-admin's own chat list in a
  tenant with many users reads one creator's range instead of the whole tenant's.
- ``expires_at`` and ``deleted_at``: the retention sweeper finds what is due directly.
- ``chats.archived_at``, ``chats.archive_key`` and an ``(archived_at, activity_at)``
  index for the idle-archive sweeper (cold archive).
- ``chat_imports``: one row per import id and tenant (idempotent, resumable imports).

Revision ID: 0005_organise
Revises: 0004_usage
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005_organise"
down_revision = "0004_usage"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tags", _JSON, server_default="[]", nullable=False))
        batch_op.add_column(sa.Column("pinned", sa.Boolean(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("archive_key", sa.String(length=400), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_chats_archived_at_activity_at"), ["archived_at", "activity_at"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_created_by_activity_at_id"),
            ["tenant_id", "created_by", "activity_at", "id"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_chats_expires_at"), ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_chats_deleted_at"), ["deleted_at"], unique=False)
    op.create_table(
        "chat_tags",
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_chat_tags_chat_id_chats"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chat_id", "tag", name=op.f("pk_chat_tags")),
    )
    with op.batch_alter_table("chat_tags", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_chat_tags_tenant_id_tag_chat_id"),
            ["tenant_id", "tag", "chat_id"],
            unique=False,
        )

    op.create_table(
        "chat_imports",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("import_id", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("lines_done", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("complete", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "import_id", name=op.f("pk_chat_imports")),
    )


def downgrade() -> None:
    op.drop_table("chat_imports")
    with op.batch_alter_table("chat_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chat_tags_tenant_id_tag_chat_id"))
    op.drop_table("chat_tags")
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chats_archived_at_activity_at"))
        batch_op.drop_column("archive_key")
        batch_op.drop_column("archived_at")
        batch_op.drop_index(batch_op.f("ix_chats_deleted_at"))
        batch_op.drop_index(batch_op.f("ix_chats_expires_at"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_created_by_activity_at_id"))
        batch_op.drop_column("expires_at")
        batch_op.drop_column("pinned")
        batch_op.drop_column("tags")
