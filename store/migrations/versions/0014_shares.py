"""Share links: read-only snapshots of a chat's branch, revocable and expiring.

- ``shares``: one row per link — the chat, the branch's leaf and the path to it as it
  was when shared, who may open it (``PUBLIC`` or ``TENANT``), when it expires or was
  revoked, how often it was read, and the SHA-256 of its token (never the token).

Revision ID: 0014_shares
Revises: 0013_files
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chatql.store.db.tables import JSONDocument, UTCDateTime

revision = "0014_shares"
down_revision = "0013_files"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shares",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(64), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("leaf_sequence", sa.BigInteger, nullable=False),
        sa.Column("message_ids", JSONDocument, nullable=False),
        sa.Column("audience", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime),
        sa.Column("revoked_at", UTCDateTime),
        sa.Column("views", sa.BigInteger, nullable=False, server_default="0"),
        sa.UniqueConstraint("token_hash", name=op.f("uq_shares_token_hash")),
    )
    op.create_index(op.f("ix_shares_chat_id_created_at"), "shares", ["chat_id", "created_at"])


def downgrade() -> None:
    op.drop_table("shares")
