"""Feedback and titles: a person's rating of a message, and where a chat's title came from.

- ``feedback``: one row per (message, person) with the rating, comment and tags, and
  what an evaluation starts from (the question answered, the assistant, the stream's
  request and model).
- ``chats.title_source``: USER, AGENT or AUTO (NULL while the chat has no title). A
  title set before this revision was set by a person (``createChat``, ``updateChat``,
  an import), so those chats read USER.

Revision ID: 0012_feedback_titles
Revises: 0011_interrupts
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chatql.store.db.tables import JSONDocument, UTCDateTime

revision = "0012_feedback_titles"
down_revision = "0011_interrupts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("chats", sa.Column("title_source", sa.String(8), nullable=True))
    op.execute("UPDATE chats SET title_source = 'USER' WHERE title IS NOT NULL")
    op.create_table(
        "feedback",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("chat_id", sa.String(64), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("question_id", sa.String(64)),
        sa.Column("rated_by", sa.String(200), nullable=False),
        sa.Column("rating", sa.String(8), nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("tags", JSONDocument, nullable=False, server_default="[]"),
        sa.Column("assistant_id", sa.String(200)),
        sa.Column("request_id", sa.String(200)),
        sa.Column("model", sa.String(200)),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("message_id", "rated_by",
                            name=op.f("uq_feedback_message_id_rated_by")),
    )
    op.create_index(op.f("ix_feedback_tenant_id_updated_at_id"), "feedback",
                    ["tenant_id", "updated_at", "id"])
    op.create_index(op.f("ix_feedback_tenant_id_assistant_id_updated_at_id"), "feedback",
                    ["tenant_id", "assistant_id", "updated_at", "id"])
    op.create_index(op.f("ix_feedback_chat_id_updated_at_id"), "feedback",
                    ["chat_id", "updated_at", "id"])


def downgrade() -> None:
    op.drop_table("feedback")
    # Plain DROP COLUMN (SQLite 3.35+): a batch rebuild of ``chats`` would cascade.
    op.drop_column("chats", "title_source")
