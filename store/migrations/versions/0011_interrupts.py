"""Interrupts: what a stream asked a person, and the decision.

- ``interrupts``: one row per tool call awaiting approval or question awaiting an
  answer, written with the stream that asked; its state (``PENDING``, ``RESOLVED``,
  ``EXPIRED``, ``CANCELLED``), the decision, and which stream resumed the chat after it.

Revision ID: 0011_interrupts
Revises: 0010_partitions
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chatql.store.db.tables import JSONDocument, UTCDateTime

revision = "0011_interrupts"
down_revision = "0010_partitions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "interrupts",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("chat_id", sa.String(64), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("stream_id", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(200)),
        sa.Column("assistant_id", sa.String(200)),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("tool_call_id", sa.String(200)),
        sa.Column("tool_name", sa.String(200)),
        sa.Column("arguments", JSONDocument),
        sa.Column("prompt", sa.Text),
        sa.Column("response_schema", JSONDocument),
        sa.Column("reason", sa.Text),
        sa.Column("requested_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime),
        sa.Column("decision", JSONDocument),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("decided_at", UTCDateTime),
        sa.Column("decision_id", sa.String(128)),
        sa.Column("resumed_by", sa.String(200)),
    )
    op.create_index(op.f("ix_interrupts_tenant_id_state_requested_at_id"), "interrupts",
                    ["tenant_id", "state", "requested_at", "id"])
    op.create_index(op.f("ix_interrupts_chat_id_state"), "interrupts", ["chat_id", "state"])
    op.create_index(op.f("ix_interrupts_stream_id"), "interrupts", ["stream_id"])


def downgrade() -> None:
    op.drop_table("interrupts")
