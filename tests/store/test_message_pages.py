"""Walking a 1,000-message chat one message at a time, both ways, on every backend.

The larger page sizes run over HTTP (tests/gql/test_message_pages.py); size 1 is
2,000 pages, so it runs against the store to keep the suite quick.
"""

from __future__ import annotations

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")
TOTAL = 1_000


async def test_walk_one_message_at_a_time(db: Database) -> None:
    await store_chats.create_chat(db, ALICE, id="long", assistant_id="helper")
    await store_messages.append_messages(db, ALICE, "long", "seed", [
        NewMessage(role="USER", type="text", props={"n": n}) for n in range(TOTAL)])

    forward: list[int] = []
    page = await store_messages.list_messages(db, ALICE, "long", first=1)
    while True:
        assert len(page.items) == 1
        forward.append(page.items[0].sequence)
        assert (page.has_previous, page.has_next) == (len(forward) > 1, len(forward) < TOTAL)
        if not page.has_next:
            break
        page = await store_messages.list_messages(
            db, ALICE, "long", first=1, after=page.items[-1].sequence)
    assert forward == list(range(1, TOTAL + 1))

    backward: list[int] = []
    page = await store_messages.list_messages(db, ALICE, "long", last=1)
    while True:
        assert len(page.items) == 1
        backward.append(page.items[0].sequence)
        assert (page.has_next, page.has_previous) == (len(backward) > 1, len(backward) < TOTAL)
        if not page.has_previous:
            break
        page = await store_messages.list_messages(
            db, ALICE, "long", last=1, before=page.items[0].sequence)
    assert backward == list(range(TOTAL, 0, -1))
