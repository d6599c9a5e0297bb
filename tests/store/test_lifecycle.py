"""Purge and boundaries at the store level, on every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, insert, select

from chatql.store.chats.chat import create_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, closed_chats, messages
from chatql.store.errors import ChatClosed
from chatql.store.messages import lifecycle
from chatql.store.messages.message import NewMessage, append_messages
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")


async def test_append_waiting_on_a_purge_is_chat_closed(db: Database) -> None:
    """An append queued behind an uncommitted purge reports the closure, not NOT_FOUND."""
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    locked = asyncio.Event()

    async def purge_slowly() -> None:
        async with db.write() as conn:
            await conn.execute(select(chats.c.id).where(chats.c.id == "c1").with_for_update())
            locked.set()
            await asyncio.sleep(0.3)  # the append below queues on the chat lock meanwhile
            await conn.execute(delete(messages).where(messages.c.chat_id == "c1"))
            await conn.execute(delete(chats).where(chats.c.id == "c1"))
            await conn.execute(insert(closed_chats).values(
                id="c1", tenant_id="acme", closed_at=datetime.now(UTC)))

    async def append_late() -> None:
        await locked.wait()
        await append_messages(db, ALICE, "c1", "a1", [
            NewMessage(role="USER", type="user_input", props={"content": "late"})])

    purge = asyncio.create_task(purge_slowly())
    with pytest.raises(ChatClosed):
        await append_late()
    await purge
    async with db.read() as conn:
        assert (await conn.execute(select(messages))).all() == []


async def test_boundaries_are_system_boundary_messages(db: Database) -> None:
    await create_chat(db, ALICE, id="c1", assistant_id="a")
    plain = await lifecycle.start_over(db, ALICE, "c1")
    assert (plain.role, plain.type, plain.props, plain.sequence) == (
        "SYSTEM", "boundary", {}, 1)
    assert await lifecycle.start_over(db, ALICE, "c1") == plain
    recap = await lifecycle.compact_chat(db, ALICE, "c1", "so far")
    assert (recap.type, recap.props, recap.sequence) == ("boundary", {"summary": "so far"}, 2)
    [summary] = await lifecycle.model_context(db, ALICE, "c1", 1)
    assert (summary.id, summary.role, summary.type, summary.props) == (
        recap.id, "SYSTEM", "text", {"content": "so far"})
