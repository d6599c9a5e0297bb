"""Initial schema: chats, messages, append receipts, closed-chat tombstones, resume records.

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("assistant_id", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=32), server_default="chat", nullable=False),
        sa.Column("status", sa.String(length=16), server_default="ACTIVE", nullable=False),
        sa.Column("public", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("share", sa.String(length=16), server_default="PRIVATE", nullable=False),
        sa.Column("sort", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("activity_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_sequence", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=True),
        sa.Column("updated_by", sa.String(length=200), nullable=True),
        sa.Column("team_id", sa.String(length=200), nullable=True),
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chats")),
    )
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_activity_at_id"),
            ["tenant_id", "activity_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_assistant_id_activity_at_id"),
            ["tenant_id", "assistant_id", "activity_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_created_at_id"),
            ["tenant_id", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_sort_id"), ["tenant_id", "sort", "id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_title_id"), ["tenant_id", "title", "id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_chats_tenant_id_updated_at_id"),
            ["tenant_id", "updated_at", "id"],
            unique=False,
        )

    op.create_table(
        "closed_chats",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_closed_chats")),
    )
    op.create_table(
        "service_state",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_service_state")),
    )
    op.create_table(
        "append_receipts",
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("append_id", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column(
            "message_ids",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("first_sequence", sa.BigInteger(), nullable=False),
        sa.Column("last_sequence", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"],
            ["chats.id"],
            name=op.f("fk_append_receipts_chat_id_chats"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chat_id", "append_id", name=op.f("pk_append_receipts")),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column(
            "props",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("block_id", sa.String(length=200), nullable=True),
        sa.Column("thread_id", sa.String(length=200), nullable=True),
        sa.Column("assistant_id", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="COMPLETED", nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_messages_chat_id_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint("chat_id", "sequence", name=op.f("uq_messages_chat_id_sequence")),
    )
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_messages_chat_id_request_id_sequence"),
            ["chat_id", "request_id", "sequence"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_messages_chat_id_type_sequence"),
            ["chat_id", "type", "sequence"],
            unique=False,
        )

    op.create_table(
        "resume_records",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.Column("assistant_id", sa.String(length=200), nullable=True),
        sa.Column("stack_id", sa.String(length=200), nullable=True),
        sa.Column("stack_parent_id", sa.String(length=200), nullable=True),
        sa.Column("stack_depth", sa.Integer(), server_default="0", nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "input",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "output",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "space_snapshot",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"],
            ["chats.id"],
            name=op.f("fk_resume_records_chat_id_chats"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resume_records")),
    )
    with op.batch_alter_table("resume_records", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_resume_records_chat_id_sequence"), ["chat_id", "sequence"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_resume_records_stack_id"), ["stack_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("resume_records", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resume_records_stack_id"))
        batch_op.drop_index(batch_op.f("ix_resume_records_chat_id_sequence"))

    op.drop_table("resume_records")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_messages_chat_id_type_sequence"))
        batch_op.drop_index(batch_op.f("ix_messages_chat_id_request_id_sequence"))

    op.drop_table("messages")
    op.drop_table("append_receipts")
    op.drop_table("service_state")
    op.drop_table("closed_chats")
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_updated_at_id"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_title_id"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_sort_id"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_created_at_id"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_assistant_id_activity_at_id"))
        batch_op.drop_index(batch_op.f("ix_chats_tenant_id_activity_at_id"))

    op.drop_table("chats")
