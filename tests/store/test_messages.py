"""Appends, idempotency, sequences, updates, deletes and pages, on every backend."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import append_receipts, chats, messages
from chatql.store.errors import (
    AppendConflict,
    ChatClosed,
    Conflict,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
)
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")


def text(content: str, **extra: object) -> NewMessage:
    return NewMessage(role="USER", type="user_input", props={"content": content}, **extra)  # type: ignore[arg-type]


async def row_counts(db: Database) -> tuple[int, int, int]:
    async with db.read() as conn:
        counts = [
            await conn.scalar(select(func.count()).select_from(table))
            for table in (chats, messages, append_receipts)
        ]
    return counts[0], counts[1], counts[2]


@pytest.fixture
async def chat_id(db: Database) -> str:
    chat = await store_chats.create_chat(db, ALICE, id="c1", assistant_id="helper")
    return chat.id


async def test_append_assigns_consecutive_sequences_and_updates_chat(
    db: Database, chat_id: str
) -> None:
    first = await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi"), text("x")])
    second = await store_messages.append_messages(db, ALICE, chat_id, "a2", [text("again")])
    assert (first.first_sequence, first.last_sequence) == (1, 2)
    assert (second.first_sequence, second.last_sequence) == (3, 3)
    chat = await store_chats.get_chat(db, ALICE, chat_id)
    assert chat is not None and chat.last_message_at is not None
    page = await store_messages.list_messages(db, ALICE, chat_id)
    assert [m.props["content"] for m in page.items] == ["hi", "x", "again"]
    assert [m.id for m in page.items] == first.message_ids + second.message_ids


async def test_retry_with_same_content_returns_original_receipt(
    db: Database, chat_id: str
) -> None:
    original = await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi")])
    before = await row_counts(db)
    retry = await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi")])
    assert retry == original
    assert await row_counts(db) == before


async def test_same_append_id_with_other_content_conflicts(db: Database, chat_id: str) -> None:
    await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi")])
    before = await row_counts(db)
    with pytest.raises(AppendConflict):
        await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("bye")])
    assert await row_counts(db) == before


async def test_digest_is_canonical_json_sha256(db: Database, chat_id: str) -> None:
    import hashlib

    receipt = await store_messages.append_messages(
        db, ALICE, chat_id, "a1", [text("héllo", metadata={"b": 1, "a": [1.5, "x"]})]
    )
    canonical = (
        '[{"metadata":{"a":[1.5,"x"],"b":1},"props":{"content":"héllo"},'
        '"role":"USER","type":"user_input"}]'
    )
    assert receipt.digest == hashlib.sha256(canonical.encode()).hexdigest()


async def test_purged_chat_rejects_even_retries(db: Database, chat_id: str) -> None:
    await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi")])
    await store_chats.purge_chat(db, ALICE, chat_id)
    with pytest.raises(ChatClosed):
        await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("hi")])
    with pytest.raises(ChatClosed):
        await store_messages.append_messages(db, ALICE, chat_id, "a2", [text("new")])


@pytest.mark.parametrize(
    ("append_id", "batch", "error"),
    [
        ("", [text("x")], InvalidArgument),
        ("x" * 129, [text("x")], InvalidArgument),
        (" lead", [text("x")], InvalidArgument),
        ("tab\there", [text("x")], InvalidArgument),
        ("ok", [], InvalidArgument),
        ("ok", [NewMessage(role="USER", type="text", props=[1])], InvalidArgument),  # type: ignore[arg-type]
        ("ok", [NewMessage(role="BOSS", type="text", props={})], InvalidArgument),
        ("ok", [NewMessage(role="USER", type="event", props={})], InvalidArgument),
        ("ok", [text("x", id="bad id!")], InvalidArgument),
        ("ok", [text("x", id="same"), text("y", id="same")], InvalidArgument),
        ("ok", [text("x")] * 1001, PayloadTooLarge),
    ],
)
async def test_bad_appends_write_nothing(
    db: Database, chat_id: str, append_id: str, batch: list[NewMessage], error: type[Exception]
) -> None:
    before = await row_counts(db)
    with pytest.raises(error):
        await store_messages.append_messages(db, ALICE, chat_id, append_id, batch)
    assert await row_counts(db) == before


async def test_unknown_chat_is_not_found(db: Database) -> None:
    with pytest.raises(NotFound):
        await store_messages.append_messages(db, ALICE, "nope", "a1", [text("x")])


async def test_taken_message_id_conflicts_and_writes_nothing(db: Database, chat_id: str) -> None:
    await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("x", id="m-1")])
    before = await row_counts(db)
    with pytest.raises(Conflict):
        await store_messages.append_messages(
            db, ALICE, chat_id, "a2", [text("y"), text("z", id="m-1")]
        )
    assert await row_counts(db) == before


async def test_concurrent_appends_get_gap_free_sequences(db: Database, chat_id: str) -> None:
    receipts = await asyncio.gather(
        *(
            store_messages.append_messages(db, ALICE, chat_id, f"a{i}", [text(str(i)), text("+")])
            for i in range(20)
        )
    )
    sequences = sorted(
        s for r in receipts for s in range(r.first_sequence, r.last_sequence + 1)
    )
    assert sequences == list(range(1, 41))
    async with db.read() as conn:
        stored = (await conn.scalars(
            select(messages.c.sequence).where(messages.c.chat_id == chat_id)
            .order_by(messages.c.sequence)
        )).all()
    assert list(stored) == list(range(1, 41))


async def test_concurrent_retries_write_once(db: Database, chat_id: str) -> None:
    receipts = await asyncio.gather(
        *(store_messages.append_messages(db, ALICE, chat_id, "same", [text("x")])
          for _ in range(20))
    )
    assert len({(r.first_sequence, tuple(r.message_ids)) for r in receipts}) == 1
    assert await row_counts(db) == (1, 1, 1)


async def test_update_and_delete_messages(db: Database, chat_id: str) -> None:
    receipt = await store_messages.append_messages(
        db, ALICE, chat_id, "a1", [text("a"), text("b"), text("c")]
    )
    updated = await store_messages.update_message(
        db, ALICE, receipt.message_ids[0], props={"content": "A"}, status="FAILED"
    )
    assert updated.props == {"content": "A"} and updated.status == "FAILED"
    assert updated.sequence == 1
    deleted = await store_messages.delete_messages(
        db, ALICE, chat_id, [receipt.message_ids[1], "missing"]
    )
    # Exactly the message goes; what followed it now follows its parent.
    assert deleted == 1
    page = await store_messages.list_messages(db, ALICE, chat_id)
    assert [m.sequence for m in page.items] == [1, 3]
    assert page.items[1].parent_id == receipt.message_ids[0]
    # With its replies, a message goes with everything that follows it in the tree.
    assert await store_messages.delete_messages(
        db, ALICE, chat_id, [receipt.message_ids[2]], with_replies=True) == 1
    # Deleting leaves a hole; the next append continues after the highest number,
    # after the nearest surviving message of the branch.
    later = await store_messages.append_messages(db, ALICE, chat_id, "a2", [text("d")])
    assert later.first_sequence == 4
    page = await store_messages.list_branch(db, ALICE, chat_id)
    assert [m.sequence for m in page.items] == [1, 4]
    assert page.items[1].parent_id == receipt.message_ids[0]


async def test_pages_walk_both_ways_with_exact_flags(db: Database, chat_id: str) -> None:
    await store_messages.append_messages(
        db, ALICE, chat_id, "a1", [text(str(i)) for i in range(10)]
    )
    newest = await store_messages.list_messages(db, ALICE, chat_id, last=4)
    assert [m.sequence for m in newest.items] == [7, 8, 9, 10]
    assert (newest.has_previous, newest.has_next) == (True, False)
    older = await store_messages.list_messages(db, ALICE, chat_id, last=4, before=7)
    assert [m.sequence for m in older.items] == [3, 4, 5, 6]
    oldest = await store_messages.list_messages(db, ALICE, chat_id, last=4, before=3)
    assert [m.sequence for m in oldest.items] == [1, 2]
    assert (oldest.has_previous, oldest.has_next) == (False, True)
    exact = await store_messages.list_messages(db, ALICE, chat_id, first=5, after=5)
    assert [m.sequence for m in exact.items] == [6, 7, 8, 9, 10]
    assert (exact.has_previous, exact.has_next) == (True, False)
    with pytest.raises(InvalidArgument):
        await store_messages.list_messages(db, ALICE, chat_id, first=0)


async def test_an_append_after_the_active_leaf_reads_everything_with_the_chat_lock(
        db: Database, chat_id: str) -> None:
    """One message after the active leaf: the receipt and the leaf's tree rows come
    back with the lock read (SQLite) or in one statement after it (Postgres), and the
    tree columns are those a read of the rows gives."""
    from sqlalchemy import event

    from chatql.store.messages import tree

    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if not statement.startswith(("PRAGMA", "BEGIN")):  # checkpoints, SQLite's BEGIN
            statements.append(statement.split()[0].upper())

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        ids = []
        for n in range(40):
            statements.clear()
            receipt = await store_messages.append_messages(db, ALICE, chat_id, f"one-{n}",
                                                           [text(str(n))])
            ids.extend(receipt.message_ids)
            reads = 1 if db.is_sqlite else 2  # the lock read, then (Postgres) the rest
            # The first question of an untitled chat also names it, once.
            titled = ["UPDATE"] if n == 0 else []
            assert statements == ["SELECT"] * reads + ["INSERT", "UPDATE", *titled,
                                                       "INSERT"], statements
        statements.clear()
        again = await store_messages.append_messages(db, ALICE, chat_id, "one-7", [text("7")])
        assert again.message_ids == [ids[7]] and statements.count("SELECT") == reads
        assert "INSERT" not in statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    jumps = tree.chain_jump_depths(len(ids))
    async with db.read() as conn:
        rows = {row.id: row for row in await conn.execute(
            select(messages.c.id, messages.c.parent_id, messages.c.depth, messages.c.jump_id,
                   messages.c.jump_depth).where(messages.c.chat_id == chat_id))}
    for depth, message_id in enumerate(ids, start=1):
        row = rows[message_id]
        assert (row.parent_id, row.depth, row.jump_id, row.jump_depth) == (
            ids[depth - 2] if depth > 1 else None, depth, ids[jumps[depth] - 1], jumps[depth])


async def test_the_lock_statement_is_built_once_per_shape_and_bound_per_caller(
        db: Database, chat_id: str) -> None:
    from chatql.store import access

    bob = Identity(user_id="bob", tenant_id="acme")
    agent = Identity(user_id="bot", tenant_id="acme", roles=frozenset({"agent"}))
    elsewhere = Identity(user_id="alice", tenant_id="globex")
    access._statements.clear()
    await store_messages.append_messages(db, ALICE, chat_id, "a1", [text("a")])
    built = dict(access._statements)
    # Bob's lock read is the same statement, bound to Bob: Alice's chat is not his.
    with pytest.raises(NotFound):
        await store_messages.append_messages(db, bob, chat_id, "b1", [text("b")])
    with pytest.raises(NotFound):
        await store_messages.append_messages(db, elsewhere, chat_id, "c1", [text("c")])
    assert access._statements == built
    # An agent's access rule has another text: a statement of its own.
    await store_messages.append_messages(db, agent, chat_id, "d1", [text("d")])
    assert len(access._statements) == len(built) + 1
    assert await row_counts(db) == (1, 2, 2)
