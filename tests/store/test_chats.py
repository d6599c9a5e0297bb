"""Chat lifecycle in the store, on every backend."""

from __future__ import annotations

import pytest

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.errors import Conflict, Forbidden, InvalidArgument, NotFound
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme", team_id="red")
BOB = Identity(user_id="bob", tenant_id="acme", team_id="red")
EVE = Identity(user_id="alice", tenant_id="evil")


async def test_create_records_owner_and_defaults(db: Database) -> None:
    chat = await store_chats.create_chat(db, ALICE, assistant_id="helper", title="Plans")
    assert len(chat.id) == 26
    assert (chat.created_by, chat.updated_by, chat.team_id, chat.tenant_id) == (
        "alice", "alice", "red", "acme")
    assert (chat.mode, chat.status, chat.share, chat.public, chat.sort) == (
        "chat", "ACTIVE", "PRIVATE", False, 0)
    assert chat.created_at.tzinfo is not None
    assert await store_chats.get_chat(db, ALICE, chat.id) == chat


async def test_ids_are_checked_and_unique(db: Database) -> None:
    await store_chats.create_chat(db, ALICE, id="a.b:c-d_e", assistant_id="x")
    with pytest.raises(Conflict):
        await store_chats.create_chat(db, ALICE, id="a.b:c-d_e", assistant_id="x")
    for bad in ("", "x" * 65, "has space", "slash/"):
        with pytest.raises(InvalidArgument):
            await store_chats.create_chat(db, ALICE, id=bad, assistant_id="x")


async def test_update_soft_delete_restore(db: Database) -> None:
    chat = await store_chats.create_chat(db, ALICE, id="c1", assistant_id="x")
    updated = await store_chats.update_chat(
        db, ALICE, "c1", {"title": "New", "status": "ARCHIVED", "metadata": {"k": 1}}
    )
    assert (updated.title, updated.status, updated.metadata) == ("New", "ARCHIVED", {"k": 1})
    assert updated.updated_at >= chat.updated_at
    assert await store_chats.delete_chat(db, ALICE, "c1")
    assert await store_chats.get_chat(db, ALICE, "c1") is None
    with pytest.raises(NotFound):
        await store_chats.update_chat(db, ALICE, "c1", {"title": "x"})
    restored = await store_chats.restore_chat(db, ALICE, "c1")
    assert restored.title == "New" and restored.deleted_at is None


async def test_purge_closes_the_id_forever(db: Database) -> None:
    await store_chats.create_chat(db, ALICE, id="c1", assistant_id="x")
    assert await store_chats.purge_chat(db, ALICE, "c1")
    assert await store_chats.purge_chat(db, ALICE, "c1")
    assert await store_chats.get_chat(db, ALICE, "c1") is None
    with pytest.raises(Conflict):
        await store_chats.create_chat(db, ALICE, id="c1", assistant_id="x")
    with pytest.raises(NotFound):
        await store_chats.restore_chat(db, ALICE, "c1")


async def test_other_tenants_and_private_chats_are_invisible(db: Database) -> None:
    await store_chats.create_chat(db, ALICE, id="c1", assistant_id="x")
    assert await store_chats.get_chat(db, EVE, "c1") is None
    assert await store_chats.get_chat(db, BOB, "c1") is None
    with pytest.raises(NotFound):
        await store_chats.delete_chat(db, EVE, "c1")
    await store_chats.update_chat(db, ALICE, "c1", {"public": True})
    assert await store_chats.get_chat(db, BOB, "c1") is not None
    with pytest.raises(Forbidden):
        await store_chats.update_chat(db, BOB, "c1", {"title": "mine now"})
