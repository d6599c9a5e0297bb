"""The conversation tree in the store: the migration of existing chats, jump pointers."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import insert, select

from chatql.store.db.database import Database
from chatql.store.db.migrate import alembic_config, migrate
from chatql.store.db.tables import chats, messages
from chatql.store.messages import message as store_messages
from chatql.store.messages import tree
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="t1")
#: The revision before the conversation tree.
BEFORE_TREE = ScriptDirectory.from_config(alembic_config()).get_revision("0006_tree").down_revision
# More than one migration batch, with the holes deletes leave in sequences.
SEQUENCES = [n for n in range(1, 4_400) if n % 7 != 3]


async def _linear_chat_before_the_tree(db: Database) -> list[str]:
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), BEFORE_TREE))
    stamp = datetime.now(UTC)
    ids = [f"m{n:05d}" for n in SEQUENCES]
    async with db.write() as conn:
        for chat_id in ("old", "empty"):
            await conn.execute(insert(chats).values(
                id=chat_id, assistant_id="a", activity_at=stamp, created_at=stamp,
                updated_at=stamp, created_by=ALICE.user_id, tenant_id=ALICE.tenant_id,
                last_sequence=SEQUENCES[-1] if chat_id == "old" else 0))
        await conn.execute(insert(messages), [
            {"id": message_id, "chat_id": "old", "sequence": n, "role": "USER",
             "type": "text", "props": {"n": n}, "created_at": stamp, "updated_at": stamp}
            for message_id, n in zip(ids, SEQUENCES, strict=True)
        ])
    return ids


async def test_an_existing_linear_chat_reads_as_before_after_the_migration(
    db: Database,
) -> None:
    ids = await _linear_chat_before_the_tree(db)
    await migrate(db)
    async with db.read() as conn:
        rows = (await conn.execute(select(messages.c.id, messages.c.parent_id,
                                          messages.c.depth).where(messages.c.chat_id == "old")
                                   .order_by(messages.c.sequence))).all()
        leaf = await conn.scalar(select(chats.c.active_leaf_id).where(chats.c.id == "old"))
        assert await conn.scalar(select(chats.c.active_leaf_id)
                                 .where(chats.c.id == "empty")) is None
        # Jump pointers reach any ancestor: every 97th depth from the leaf.
        for depth in range(1, len(ids) + 1, 97):
            assert await conn.scalar(tree.ancestor_at(ids[-1], depth, chat="old",
                                                     dialect=conn.dialect.name)) == ids[depth - 1]
    assert [r.id for r in rows] == ids
    assert [r.parent_id for r in rows] == [None, *ids[:-1]]
    assert [r.depth for r in rows] == list(range(1, len(ids) + 1))
    assert leaf == ids[-1]
    # Pages along the (only) branch are the pages of the whole chat, flags included.
    flat = await store_messages.list_messages(db, ALICE, "old", last=120)
    branch = await store_messages.list_branch(db, ALICE, "old", last=120)
    assert branch.items == flat.items
    assert (branch.has_previous, branch.has_next) == (flat.has_previous, flat.has_next)
    forward = await store_messages.list_branch(db, ALICE, "old", first=200)
    assert [m.id for m in forward.items] == ids[:200]
    assert (forward.has_previous, forward.has_next) == (False, True)
    # New messages continue the chain.
    receipt = await store_messages.append_messages(
        db, ALICE, "old", "after", [NewMessage(role="USER", type="text", props={})])
    assert receipt.first_sequence == SEQUENCES[-1] + 1
    newest = await store_messages.list_branch(db, ALICE, "old", last=2)
    assert [m.id for m in newest.items] == [ids[-1], receipt.message_ids[0]]
    assert newest.items[1].parent_id == ids[-1]


async def test_a_chain_below_a_deep_message_reads_the_rows_above_in_one_statement(
    db: Database,
) -> None:
    """A chain of several messages (a stream's persist) below a message at any depth
    gets the tree columns of one long chain, with one read of the rows above it."""
    from sqlalchemy import event

    from chatql.store.chats.chat import create_chat

    await create_chat(db, ALICE, id="deep", assistant_id="a")
    ids: list[str] = []
    for append in range(3):
        receipt = await store_messages.append_messages(
            db, ALICE, "deep", f"fill-{append}",
            [NewMessage(role="USER", type="text", props={}) for _ in range(1_000)])
        ids.extend(receipt.message_ids)
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with db.read() as conn:
            for depth in (1, 2, 3, 97, 1_000, 2_047, 3_000):
                for count in (2, 3, 100, 2_500):
                    statements.clear()
                    chain = [f"new-{depth}-{n}" for n in range(count)]
                    links = list(await tree.chain_links(conn, "deep", ids[depth - 1],
                                                        chain))
                    assert len(statements) == 1
                    by_depth = [*ids[:depth], *chain]
                    jumps = tree.chain_jump_depths(depth + count)
                    assert links == [
                        tree.Link(chain[n], by_depth[depth + n - 1], depth + n + 1,
                                  by_depth[jumps[depth + n + 1] - 1], jumps[depth + n + 1])
                        for n in range(count)]
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
