"""Indexes for every filter of a message page, and for a request's messages.

- ``messages (chat_id, thread_id | block_id, sequence)``: with the existing
  ``request_id``, ``type`` and ``role`` indexes every filter a chat's page offers reads
  in the page's keyset order.
- ``messages (request_id, created_at, chat_id, sequence)``: a request's messages
  across chats (``messagesByRequest``) in that query's page order.

Revision ID: 0009_message_filters
Revises: 0008_spoken_text
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0009_message_filters"
down_revision = "0008_spoken_text"
branch_labels = None
depends_on = None

_INDEXES = (
    ("ix_messages_chat_id_thread_id_sequence", ["chat_id", "thread_id", "sequence"]),
    ("ix_messages_chat_id_block_id_sequence", ["chat_id", "block_id", "sequence"]),
    ("ix_messages_request_id_created_at_chat_id_sequence",
     ["request_id", "created_at", "chat_id", "sequence"]),
)


def upgrade() -> None:
    for name, columns in _INDEXES:
        op.create_index(op.f(name), "messages", columns, unique=False)


def downgrade() -> None:
    for name, _ in reversed(_INDEXES):
        op.drop_index(op.f(name), table_name="messages")
