"""Usage records and the usage report in the store, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chatql.store.chats.chat import create_chat
from chatql.store.chats.usage import UsageIn, chat_usage, record_usage, usage_report
from chatql.store.db.database import Database
from chatql.store.errors import InvalidArgument
from chatql.store.messages.message import NewMessage, append_messages
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")
BOB = Identity(user_id="bob", tenant_id="acme")


async def test_a_stream_id_records_usage_once(db: Database) -> None:
    await create_chat(db, ALICE, id="c1", assistant_id="planner")
    await append_messages(db, ALICE, "c1", "a1", [
        NewMessage(role="USER", type="user_input", props={}, tokens=12),
        NewMessage(role="ASSISTANT", type="text", props={}),
    ])
    for prompt in (10, 99):  # the second write of the same stream id is ignored
        async with db.write() as conn:
            await record_usage(conn, chat_id="c1", stream_id="s1", request_id="r",
                               assistant_id=None, usage=UsageIn(prompt, 3, "m"))
    totals = await chat_usage(db, ["c1", "c1"])
    assert (totals["c1"].prompt_tokens, totals["c1"].completion_tokens,
            totals["c1"].message_tokens) == (10, 3, 12)
    now = datetime.now(UTC)
    rows = await usage_report(db, ALICE, start_time=now - timedelta(minutes=5),
                              end_time=now + timedelta(minutes=5), group_by="ASSISTANT")
    # The chat's assistant stands in for a stream that named none.
    assert [(r.key, r.prompt_tokens, r.requests) for r in rows] == [("planner", 10, 1)]
    assert await usage_report(db, BOB, start_time=now - timedelta(minutes=5),
                              end_time=now + timedelta(minutes=5)) == []


async def test_bad_report_arguments(db: Database) -> None:
    now = datetime.now(UTC)
    for kwargs in ({"group_by": "WEEK"}, {"end_time": now},
                   {"start_time": now.replace(tzinfo=None)}):
        arguments = {"start_time": now, "end_time": now + timedelta(days=1), **kwargs}
        with pytest.raises(InvalidArgument):
            await usage_report(db, ALICE, **arguments)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        UsageIn(prompt_tokens=-1).check()
    with pytest.raises(InvalidArgument):
        UsageIn(model="").check()
