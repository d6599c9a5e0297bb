"""Stream claims: one row per stream, written when it starts.

- ``stream_claims(stream_id, chat_id, request_id, started_at, ended_at)`` with a unique
  key on (chat_id, request_id): a request id names at most one stream of a chat.
- ``ended_at`` stays NULL while the stream is live; an index on (chat_id, ended_at)
  answers "does this chat have a live stream" with one probe.

Streams persisted before this revision have no row (their request ids are not
reserved); nothing is backfilled.

Revision ID: 0007_stream_claims
Revises: 0006_tree
Create Date: 2027-01-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_stream_claims"
down_revision = "0006_tree"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stream_claims",
        sa.Column("stream_id", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["chat_id"], ["chats.id"], ondelete="CASCADE",
                                name=op.f("fk_stream_claims_chat_id_chats")),
        sa.PrimaryKeyConstraint("stream_id", name=op.f("pk_stream_claims")),
        sa.UniqueConstraint("chat_id", "request_id",
                            name=op.f("uq_stream_claims_chat_id_request_id")),
    )
    op.create_index(op.f("ix_stream_claims_chat_id_ended_at"), "stream_claims",
                    ["chat_id", "ended_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_stream_claims_chat_id_ended_at"), table_name="stream_claims")
    op.drop_table("stream_claims")
