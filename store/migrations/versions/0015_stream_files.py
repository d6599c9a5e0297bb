"""Files named by live streams.

- ``stream_files``: which files the accepted chunks of a live stream name (a ``file``
  message or part not stored yet), with the stream's chat: what makes such a file
  readable to whoever may read the chat while the reply is live. A row belongs to its
  stream's claim (deleted with it) and counts only while the claim is live.

Revision ID: 0015_stream_files
Revises: 0014_shares
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_stream_files"
down_revision = "0014_shares"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stream_files",
        sa.Column("stream_id", sa.String(128),
                  sa.ForeignKey("stream_claims.stream_id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("file_id", sa.String(64), sa.ForeignKey("files.id"), primary_key=True),
        sa.Column("chat_id", sa.String(64), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
    )
    op.create_index(op.f("ix_stream_files_file_id"), "stream_files", ["file_id"])
    op.create_index(op.f("ix_stream_files_chat_id"), "stream_files", ["chat_id"])


def downgrade() -> None:
    op.drop_table("stream_files")
