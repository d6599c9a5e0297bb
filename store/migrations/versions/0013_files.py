"""Files: stored once per tenant by content hash, referenced by messages.

- ``files``: one row per upload (filename, media type, size, SHA-256, image size, the
  object's key, and its state: PENDING, READY or DELETED).
- ``message_files``: which messages reference which files, with the chat.

Revision ID: 0013_files
Revises: 0012_feedback_titles
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chatql.store.db.tables import UTCDateTime

revision = "0013_files"
down_revision = "0012_feedback_titles"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("uploader", sa.String(200), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("media_type", sa.String(200), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("width", sa.Integer),
        sa.Column("height", sa.Integer),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("storage_key", sa.String(400), nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="READY"),
    )
    op.create_index(op.f("ix_files_tenant_id_sha256"), "files", ["tenant_id", "sha256"])
    op.create_index(op.f("ix_files_state_created_at"), "files", ["state", "created_at"])
    op.create_table(
        "message_files",
        sa.Column("message_id", sa.String(64), primary_key=True),
        sa.Column("file_id", sa.String(64), sa.ForeignKey("files.id"), primary_key=True),
        sa.Column("chat_id", sa.String(64), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
    )
    op.create_index(op.f("ix_message_files_file_id_chat_id"), "message_files",
                    ["file_id", "chat_id"])
    op.create_index(op.f("ix_message_files_chat_id"), "message_files", ["chat_id"])


def downgrade() -> None:
    op.drop_table("message_files")
    op.drop_table("files")
