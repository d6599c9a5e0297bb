"""The conversation tree: parent links, depth and jump pointers; the active leaf.

- ``messages.parent_id``, ``depth``, ``jump_id``, ``jump_depth`` (see ``store.tree``)
  and an index on (chat_id, parent_id, sequence) for siblings and subtrees.
- ``chats.active_leaf_id``: the last message of the active branch.

Existing chats become one chain each: every message's parent is the one before it by
``sequence``. The new columns are added empty (no table rewrite on either backend),
then filled chat by chat in batches of ``BATCH`` rows, each one short statement keyed
by primary key, so no statement holds a large table for long.

Revision ID: 0006_tree
Revises: 0005_organise
Create Date: 2026-12-01
"""

from __future__ import annotations

from array import array
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006_tree"
down_revision = "0005_organise"
branch_labels = None
depends_on = None

BATCH = 2_000


def _jump_depths(upto: int) -> array[int]:
    """Skew-binary jump targets by depth along a chain (index 0 unused)."""
    jumps = array("q", [0, 1])
    for depth in range(2, upto + 1):
        parent = depth - 1
        parent_jump = jumps[parent]
        if parent - parent_jump == parent_jump - jumps[parent_jump]:
            jumps.append(jumps[parent_jump])
        else:
            jumps.append(parent)
    return jumps


def _write_links(bind: Any, rows: list[tuple[str, str | None, int, str, int]]) -> None:
    if bind.dialect.name == "postgresql":
        ids, parents, depths, jump_ids, jump_depths = (list(c) for c in zip(*rows, strict=True))
        bind.execute(
            sa.text(
                "UPDATE messages SET parent_id = v.parent_id, depth = v.depth,"
                " jump_id = v.jump_id, jump_depth = v.jump_depth FROM ("
                "SELECT unnest(CAST(:ids AS text[])) AS id,"
                " unnest(CAST(:parents AS text[])) AS parent_id,"
                " unnest(CAST(:depths AS bigint[])) AS depth,"
                " unnest(CAST(:jump_ids AS text[])) AS jump_id,"
                " unnest(CAST(:jump_depths AS bigint[])) AS jump_depth) AS v"
                " WHERE messages.id = v.id"
            ),
            {"ids": ids, "parents": parents, "depths": depths, "jump_ids": jump_ids,
             "jump_depths": jump_depths},
        )
    else:
        bind.execute(
            sa.text("UPDATE messages SET parent_id = :p, depth = :d, jump_id = :j,"
                    " jump_depth = :jd WHERE id = :id"),
            [{"id": r[0], "p": r[1], "d": r[2], "j": r[3], "jd": r[4]} for r in rows],
        )


def _link_chat(bind: Any, chat_id: str, jumps: array[int]) -> str | None:
    """Chain one chat's messages by sequence; returns its last message's id."""
    sequence_at = array("q", [0])  # depth -> sequence, to find jump targets again
    previous: str | None = None
    depth = 0
    after = -1
    while True:
        batch = bind.execute(
            sa.text("SELECT id, sequence FROM messages WHERE chat_id = :c AND sequence > :s"
                    " ORDER BY sequence LIMIT :n"),
            {"c": chat_id, "s": after, "n": BATCH},
        ).all()
        if not batch:
            return previous
        first_depth = depth + 1
        wanted = {jumps[d] for d in range(first_depth, first_depth + len(batch))}
        earlier = sorted(sequence_at[t] for t in wanted if t < first_depth)
        by_sequence: dict[int, str] = {}
        if earlier:
            by_sequence = {int(seq): str(mid) for seq, mid in bind.execute(
                sa.text("SELECT sequence, id FROM messages WHERE chat_id = :c"
                        " AND sequence IN :seqs").bindparams(sa.bindparam("seqs", expanding=True)),
                {"c": chat_id, "seqs": earlier},
            )}
        in_batch: dict[int, str] = {}
        rows: list[tuple[str, str | None, int, str, int]] = []
        for message_id, sequence in batch:
            depth += 1
            sequence_at.append(sequence)
            in_batch[depth] = message_id
            target = jumps[depth]
            jump_id = in_batch.get(target) or by_sequence[sequence_at[target]]
            rows.append((message_id, previous, depth, jump_id, target))
            previous = message_id
        _write_links(bind, rows)
        after = batch[-1][1]


def upgrade() -> None:
    op.add_column("messages", sa.Column("parent_id", sa.String(length=64), nullable=True))
    op.add_column("messages", sa.Column("depth", sa.BigInteger(), nullable=True))
    op.add_column("messages", sa.Column("jump_id", sa.String(length=64), nullable=True))
    op.add_column("messages", sa.Column("jump_depth", sa.BigInteger(), nullable=True))
    op.add_column("chats", sa.Column("active_leaf_id", sa.String(length=64), nullable=True))
    bind = op.get_bind()
    sizes = bind.execute(sa.text(
        "SELECT chat_id, COUNT(*) FROM messages GROUP BY chat_id ORDER BY chat_id")).all()
    if sizes:
        jumps = _jump_depths(max(int(count) for _, count in sizes))
        for chat_id, _ in sizes:
            leaf = _link_chat(bind, chat_id, jumps)
            bind.execute(sa.text("UPDATE chats SET active_leaf_id = :leaf WHERE id = :c"),
                         {"leaf": leaf, "c": chat_id})
    op.create_index(
        op.f("ix_messages_chat_id_parent_id_sequence"),
        "messages",
        ["chat_id", "parent_id", "sequence"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_messages_chat_id_parent_id_sequence"), table_name="messages")
    with op.batch_alter_table("chats") as batch:
        batch.drop_column("active_leaf_id")
    with op.batch_alter_table("messages") as batch:
        for column in ("jump_depth", "jump_id", "depth", "parent_id"):
            batch.drop_column(column)
