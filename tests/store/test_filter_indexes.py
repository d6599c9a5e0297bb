"""Every filter of a message page reads through an index of its own, in page order.

A chat of 4,000 messages in which each filtered value is rare: the plan of the page a
front end reads (the prepared statement the product runs) must scan the filter's own
``(chat_id, <column>, sequence)`` index, not walk the chat and filter. A request's
messages across chats read through ``(request_id, created_at, chat_id, sequence)``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.messages.pages import MessagePageShape, message_page_statement
from chatql.store.messages.requests import request_messages_query
from chatql.store.records import Identity
from tests.store.explain import plan_of, plan_of_query, uses_index

ALICE = Identity(user_id="alice", tenant_id="acme")
RARE = {"thread_id": "t-rare", "block_id": "b-rare", "role": "SYSTEM", "type": "rare_type",
        "request_id": "r-rare"}


def message(n: int) -> NewMessage:
    rare = n % 97 == 0
    return NewMessage(
        role="SYSTEM" if rare else ("USER" if n % 2 else "ASSISTANT"),
        type="rare_type" if rare else "text", props={"n": n},
        thread_id="t-rare" if rare else f"t{n % 3}", block_id="b-rare" if rare else f"b{n % 3}",
        request_id="r-rare" if rare else f"r{n % 3}")


@pytest.fixture
async def big_chat(db: Database) -> Database:
    await store_chats.create_chat(db, ALICE, id="big", assistant_id="helper")
    for part in range(4):
        await store_messages.append_messages(
            db, ALICE, "big", f"seed{part}",
            [message(part * 1000 + n) for n in range(1000)])
    async with db.write() as conn:
        await conn.exec_driver_sql("ANALYZE")
    return db


@pytest.mark.parametrize("column", sorted(RARE))
@pytest.mark.parametrize("forward", [False, True])
async def test_a_filtered_page_scans_the_filters_index(big_chat: Database, column: str,
                                                       forward: bool) -> None:
    db = big_chat
    shape = MessagePageShape.of(db, ALICE, forward=forward, after=forward, before=False,
                                filters=(column,))
    values = {"chat": "big", "user": ALICE.user_id, "tenant": ALICE.tenant_id, "team": None,
              "after": 10 if forward else None, "before": None, "limit": 51,
              column: RARE[column]}
    plan = await plan_of(db, message_page_statement(db, shape), values)
    assert uses_index(plan, "messages", f"chat_id_{column}_sequence"), plan


async def test_a_requests_page_scans_the_request_index(big_chat: Database) -> None:
    # A tenant of many chats: the plan must start from the request, not the chats.
    stamp = datetime.now(UTC)
    async with big_chat.write() as conn:
        await conn.execute(insert(chats), [
            {"id": f"c{n}", "assistant_id": "helper", "tenant_id": ALICE.tenant_id,
             "created_by": ALICE.user_id, "activity_at": stamp, "created_at": stamp,
             "updated_at": stamp} for n in range(3000)])
        await conn.exec_driver_sql("ANALYZE")
    plan = await plan_of_query(big_chat, request_messages_query(ALICE, "r-rare", after=None,
                                                                limit=51))
    assert uses_index(plan, "messages", "request_id_created_at_chat_id_sequence"), plan
