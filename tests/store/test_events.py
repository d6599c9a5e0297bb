"""Chat events' per-subscriber decisions on every database: the in-memory access rule
and filter agree with the SQL ones ``chats`` uses, and a subscriber that falls behind
gets one RESYNC instead of a backlog."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, update

from chatql.store import access
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.lists import events as store_events
from chatql.store.lists.chat_lists import ChatListFilter
from chatql.store.lists.events import ChatEvents, load_chat, load_chats
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import AppendReceipt, Chat, Identity
from chatql.store.streams.backends.memory import MemoryBackend

OWNER = Identity(user_id="alice", tenant_id="acme", team_id="red")
CALLERS = [
    OWNER,
    Identity(user_id="bob", tenant_id="acme", team_id="red"),
    Identity(user_id="carol", tenant_id="acme", team_id="blue"),
    Identity(user_id="dan", tenant_id="acme"),
    Identity(user_id="eve", tenant_id="acme", roles=frozenset({"agent"})),
    Identity(user_id="root", tenant_id="acme", roles=frozenset({"admin"})),
    Identity(user_id="alice", tenant_id="globex", team_id="red",
             roles=frozenset({"admin"})),
]
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def _chats(db: Database) -> list[Chat]:
    made = []
    shapes = itertools.product(("PRIVATE", "TEAM"), (False, True), ("helper", "other"),
                               ("Road Trip", "groceries", None))
    for n, (share, public, assistant, title) in enumerate(shapes):
        chat = await store_chats.create_chat(
            db, OWNER, id=f"c{n}", share=share, public=public, assistant_id=assistant,
            title=title, tags=[["a"], ["a", "b"], []][n % 3], pinned=n % 4 == 0,
            mode="subagent" if n % 5 == 0 else "chat")
        async with db.write() as conn:
            stamp = T0 + timedelta(hours=n)
            await conn.execute(update(chats).where(chats.c.id == chat.id).values(
                created_at=T0 + timedelta(hours=n % 5), activity_at=stamp))
        loaded = await load_chat(db, chat.id)
        assert loaded is not None
        made.append(loaded)
    return made


async def test_may_read_and_matches_agree_with_the_sql_rule(db: Database) -> None:
    made = await _chats(db)
    filters = [
        ChatListFilter(),
        ChatListFilter(assistant_id="helper"),
        ChatListFilter(keywords="trip"),
        ChatListFilter(keywords="ROAD t", assistant_id="other"),
        ChatListFilter(start_time=T0 + timedelta(hours=5), end_time=T0 + timedelta(hours=9)),
        ChatListFilter(time_field="CREATED_AT", start_time=T0 + timedelta(hours=2)),
        ChatListFilter(status="ARCHIVED"),
        ChatListFilter(tags=("a",)),
        ChatListFilter(tags=("b", "a"), pinned=False),
        ChatListFilter(pinned=True, include_subagents=True),
        ChatListFilter(mode="subagent"),
        ChatListFilter(created_by="alice", team_id="red"),
    ]
    async with db.read() as conn:
        for who in CALLERS:
            for list_filter in filters:
                query = select(chats.c.id).where(*list_filter.visible(who),
                                                 *list_filter.clauses())
                in_sql = set((await conn.scalars(query)).all())
                in_memory = {c.id for c in made
                             if access.may_read(who, c) and list_filter.matches(c)}
                assert in_memory == in_sql, (who, list_filter)


async def test_a_subscriber_that_falls_behind_gets_one_resync(db: Database) -> None:
    backend = MemoryBackend()
    events = ChatEvents(db, backend, queue_limit=4)
    await events.start()
    try:
        chat = await store_chats.create_chat(db, OWNER, id="busy", assistant_id="helper")
        slow = events.subscribe(OWNER, ChatListFilter())
        for _ in range(10):
            await events.publish("MESSAGES", chat.id, OWNER.tenant_id)
        for _ in range(200):
            if events.received == 10:
                break
            await asyncio.sleep(0.01)
        assert events.received == 10
        stream = slow.events()
        # Four queued, the fifth overflowed: the backlog became one RESYNC, and the
        # rest (which the refetch it asks for covers) were not queued behind it.
        resync = await anext(stream)
        assert (resync.type, resync.chat_id, resync.chat, slow.resyncs) == (
            "RESYNC", "", None, 1)
        # Taken: live events follow as usual.
        await events.publish("UPDATED", chat.id, OWNER.tenant_id)
        updated = await asyncio.wait_for(anext(stream), 5)
        assert (updated.type, updated.chat_id, slow.resyncs) == ("UPDATED", "busy", 1)
    finally:
        await events.close()
        await backend.close()


async def test_a_sink_takes_events_while_its_consumer_is_idle_and_never_overtakes_it(
        db: Database) -> None:
    """Events go straight to a subscriber's sink while its consumer waits with nothing
    in hand; one the sink refuses is queued, and so is every event behind it until the
    consumer has taken the queue: the subscriber sees commit order either way."""
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()
    written: list[str] = []
    refuse = {"c2"}

    def sink(event: store_events.ChatEvent) -> bool:
        if event.chat_id in refuse:
            return False
        written.append(event.chat_id)
        return True

    try:
        made = [await store_chats.create_chat(db, OWNER, id=f"c{n}", assistant_id="helper")
                for n in range(5)]
        subscriber = events.subscribe(OWNER, ChatListFilter(), sink)
        stream = subscriber.events()
        taking = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.05)  # the consumer now waits with nothing in hand

        async def delivered(count: int) -> None:
            for _ in range(500):
                if events.received >= count:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError(f"{events.received} of {count} events delivered")

        await events.publish("UPDATED", made[0].id, OWNER.tenant_id)
        await events.publish("UPDATED", made[1].id, OWNER.tenant_id)
        await delivered(2)
        assert written == ["c0", "c1"] and not taking.done()
        # c2 is refused (its transport cannot take it now): it waits in the queue, and
        # so does c3 behind it, however willing the sink is.
        refuse.add("c2")
        await events.publish("UPDATED", made[2].id, OWNER.tenant_id)
        await events.publish("UPDATED", made[3].id, OWNER.tenant_id)
        await delivered(4)
        refuse.clear()
        assert [(await asyncio.wait_for(taking, 5)).chat_id,
                (await asyncio.wait_for(anext(stream), 5)).chat_id] == ["c2", "c3"]
        # The consumer holds c3 (sending it, say) with the queue empty: c4 must not be
        # written before it, so it is queued for the consumer too.
        await events.publish("UPDATED", made[4].id, OWNER.tenant_id)
        await delivered(5)
        assert written == ["c0", "c1"]
        assert (await asyncio.wait_for(anext(stream), 5)).chat_id == "c4"
        # Idle again: the sink takes the next one directly.
        taking = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.05)
        await events.publish("UPDATED", made[0].id, OWNER.tenant_id)
        await delivered(6)
        assert written == ["c0", "c1", "c0"] and not taking.done()
        taking.cancel()
    finally:
        await events.close()
        await backend.close()


async def test_every_subscriber_an_event_reaches_is_queued_the_same_object(
        db: Database) -> None:
    """One event object per published event and outcome, whoever and however many
    receive it: a transport serialises it once per selection."""
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()
    try:
        chat = await store_chats.create_chat(db, OWNER, id="shared", assistant_id="helper",
                                             public=True)
        readers = [(who, list_filter) for who in CALLERS[:6]
                   for list_filter in (ChatListFilter(), ChatListFilter(assistant_id="helper"))]
        subscribers = [events.subscribe(who, f) for who, f in readers for _ in range(2)]
        await events.publish("UPDATED", chat.id, OWNER.tenant_id)
        received = [await asyncio.wait_for(anext(s.events()), 5) for s in subscribers]
        assert {(e.type, e.chat_id) for e in received} == {("UPDATED", "shared")}
        assert len({id(e) for e in received}) == 1
        await store_chats.purge_chat(db, OWNER, chat.id)
        await events.publish("PURGED", chat.id, OWNER.tenant_id, before=chat)
        gone = [await asyncio.wait_for(anext(s.events()), 5) for s in subscribers]
        assert {(e.type, e.chat) for e in gone} == {("PURGED", None)}
        assert len({id(e) for e in gone}) == 1
    finally:
        await events.close()
        await backend.close()


async def test_a_chat_that_leaves_unannounced_is_deleted_for_those_it_was_sent_to(
        db: Database) -> None:
    """A write with no before-image (an append) after the chat stopped being readable:
    DELETED goes to each subscriber that was sent the chat, and only to those — not to
    one that never saw it, nor to one whose RESYNC made it forget."""
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()
    bob = CALLERS[1]
    try:
        chat = await store_chats.create_chat(db, OWNER, id="team", assistant_id="helper",
                                             share="TEAM")
        shown, forgetting = events.subscribe(bob, ChatListFilter()), events.subscribe(
            bob, ChatListFilter())
        await events.publish("UPDATED", chat.id, OWNER.tenant_id)
        for subscriber in (shown, forgetting):
            seen = await asyncio.wait_for(anext(subscriber.events()), 5)
            assert (seen.type, seen.chat_id) == ("UPDATED", "team")
        forgetting.resync(datetime.now(UTC))
        assert (await anext(forgetting.events())).type == "RESYNC"
        late = events.subscribe(bob, ChatListFilter())  # same audience, never sent it
        async with db.write() as conn:
            await conn.execute(update(chats).where(chats.c.id == chat.id).values(
                share="PRIVATE"))
        await events.publish("MESSAGES", chat.id, OWNER.tenant_id)
        marker = await store_chats.create_chat(db, bob, id="marker", assistant_id="helper")
        await events.publish("CREATED", marker.id, OWNER.tenant_id)
        for subscriber, expected in ((shown, [("DELETED", "team"), ("CREATED", "marker")]),
                                     (forgetting, [("CREATED", "marker")]),
                                     (late, [("CREATED", "marker")])):
            stream = subscriber.events()
            got = [await asyncio.wait_for(anext(stream), 5) for _ in expected]
            assert [(e.type, e.chat_id) for e in got] == expected
        # What the audience holds follows its members: the two still there hold the
        # marker; the one that left takes what it held with it.
        (audience,) = events._tenants["acme"].audiences.values()
        assert audience.holding == {"marker": 3}
        events.unsubscribe(shown)
        assert audience.holding == {"marker": 2}
    finally:
        await events.close()
        await backend.close()


async def test_the_delivery_read_gives_whole_records_as_stored(db: Database) -> None:
    made = await _chats(db)
    async with db.write() as conn:
        await conn.execute(update(chats).where(chats.c.id == "c1").values(
            deleted_at=T0, metadata={"k": [1, "v"]}, expires_at=T0 + timedelta(days=9),
            archived_at=T0, active_leaf_id="leaf"))
    async with db.read() as conn:
        rows = (await conn.execute(select(chats))).all()
    stored = {row.id: store_chats.chat_from_row(row) for row in rows}
    wanted = [chat.id for chat in made] + ["missing"]
    assert await load_chats(db, wanted) == stored
    assert stored["c1"].deleted_at == T0 and stored["c1"].active_leaf_id == "leaf"
    assert await load_chats(db, ["c2"]) == {"c2": stored["c2"]}
    assert await load_chats(db, []) == {}


async def test_the_chat_reads_of_events_see_each_commit_without_a_pooled_connection(
        db: Database) -> None:
    await _chats(db)
    await load_chats(db, ["c0"])  # opens what it reads with
    checkouts = []
    event.listen(db.engine.sync_engine.pool, "checkout", lambda *_: checkouts.append(1))
    for n in range(5):
        async with db.write() as conn:
            await conn.execute(update(chats).where(chats.c.id == "c0").values(title=f"t{n}"))
        taken = len(checkouts)
        assert (await load_chats(db, ["c0", "c3"]))["c0"].title == f"t{n}"
        # The before-image a change publishes is read the same way.
        before = await load_chat(db, "c0")
        assert before is not None and before.title == f"t{n}"
        assert len(checkouts) == taken


async def test_an_event_is_judged_only_by_the_audiences_it_may_concern(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tenant of many sidebars: an event for a private chat is decided for its
    creator's audiences, not once per audience of the tenant; the audiences found are
    never fewer than those ``may_read`` admits, now or before, or that hold the chat."""
    made = await _chats(db)
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()
    try:
        strangers = [Identity(user_id=f"s{n}", tenant_id="acme", team_id=f"t{n}")
                     for n in range(50)]
        for who in [*CALLERS, *strangers]:
            events.subscribe(who, ChatListFilter())
        tenant = events._tenants["acme"]
        for chat in made:
            for before in (None, *made):
                found = tenant.concerned(chat.id, chat, before)
                for (who, _), audience in tenant.audiences.items():
                    if access.may_read(who, chat) or (
                            before is not None and access.may_read(who, before)):
                        assert audience in found, (who, chat.id)
        private = made[1]  # (made[0] is a subagent chat, not in the default list)
        assert (private.share, private.public) == ("PRIVATE", False)
        judged = []
        may_read = access.may_read

        def counted(who: Identity, chat: Chat) -> bool:
            judged.append(who)
            return may_read(who, chat)

        monkeypatch.setattr(access, "may_read", counted)
        owner = events.subscribe(OWNER, ChatListFilter())
        await events.publish("MESSAGES", private.id, "acme")
        shown = await asyncio.wait_for(anext(owner.events()), 5)
        assert (shown.type, shown.chat_id) == ("MESSAGES", private.id)
        # The owner's audience, the admin's and the agent's: not the 50 strangers'.
        assert len(judged) <= 3 and OWNER in judged
        # A chat a member was sent stays its audience's concern after it leaves.
        holders = tenant.holders[private.id]
        assert tenant.audiences[(OWNER, ChatListFilter())] in holders
        assert private.id in tenant.holders
    finally:
        await events.close()
        await backend.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_on_sqlite_a_small_batch_is_read_without_a_thread_and_a_busy_file_waits(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    assert db.is_sqlite
    import aiosqlite

    made = await _chats(db)
    reader = await db.sqlite_reader()
    assert reader is not None
    handed: list[str] = []
    fetch = aiosqlite.Connection.execute_fetchall

    async def counted(self: Any, sql: str, parameters: Any = None) -> Any:
        handed.append(sql)
        return await fetch(self, sql, parameters)

    monkeypatch.setattr(aiosqlite.Connection, "execute_fetchall", counted)
    assert set(await load_chats(db, [c.id for c in made[:3]])) == {c.id for c in made[:3]}
    assert handed == []
    # A large batch goes to the thread, as does one the file answers busy.
    many = [c.id for c in made] + [f"missing{n}" for n in range(70)]
    assert set(await load_chats(db, many)) == {c.id for c in made}
    assert len(handed) == 1

    class Busy:
        def execute(self, *_: Any) -> Any:
            raise sqlite3.OperationalError("database is locked")

        def close(self) -> None:
            pass

    in_loop, reader.in_loop = reader.in_loop, Busy()  # type: ignore[assignment]
    try:
        assert (await load_chats(db, ["c2"]))["c2"].id == "c2"
        assert len(handed) == 2
    finally:
        reader.in_loop = in_loop


async def _append(db: Database, chat_id: str, append_id: str) -> AppendReceipt:
    return await store_messages.append_messages(
        db, OWNER, chat_id, append_id,
        [NewMessage(role="USER", type="text", props={"content": append_id})])


async def test_an_append_published_out_of_order_never_sends_an_older_chat(
        db: Database) -> None:
    """Appends to one chat commit in sequence order but may be published out of it. The
    chat an append committed is sent unless the listener already delivered a newer state
    of the chat: then that one is sent again. A change read at delivery is never undone
    by an append committed before it, and an append announced after its chat was
    purged shows nothing."""
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()

    async def appended(receipt: AppendReceipt) -> None:
        assert receipt.chat is not None
        await events.publish("MESSAGES", receipt.chat_id, OWNER.tenant_id,
                             after=receipt.chat, sequence=receipt.last_sequence)

    try:
        chat = await store_chats.create_chat(db, OWNER, id="late", assistant_id="helper")
        stream = events.subscribe(OWNER, ChatListFilter()).events()
        await events.publish("CREATED", chat.id, OWNER.tenant_id)
        assert (await asyncio.wait_for(anext(stream), 5)).chat == chat
        first, second = await _append(db, chat.id, "a1"), await _append(db, chat.id, "a2")
        assert second.chat == await load_chat(db, chat.id)
        await appended(second)
        await appended(first)
        got = [await asyncio.wait_for(anext(stream), 5) for _ in range(2)]
        assert [e.chat for e in got] == [second.chat] * 2
        assert second.chat.active_leaf_id == second.message_ids[-1]

        third = await _append(db, chat.id, "a3")
        renamed = await store_chats.update_chat(db, OWNER, chat.id, {"title": "renamed"})
        await events.publish("UPDATED", chat.id, OWNER.tenant_id)
        await appended(third)
        got = [await asyncio.wait_for(anext(stream), 5) for _ in range(2)]
        assert [e.chat for e in got] == [await load_chat(db, chat.id)] * 2
        assert got[1].chat is not None and got[1].chat.title == renamed.title == "renamed"
        assert got[1].chat.active_leaf_id == third.message_ids[-1]

        fourth = await _append(db, chat.id, "a4")
        await store_chats.purge_chat(db, OWNER, chat.id)
        await events.publish("PURGED", chat.id, OWNER.tenant_id, before=fourth.chat)
        await appended(fourth)
        marker = await store_chats.create_chat(db, OWNER, id="marker", assistant_id="helper")
        await events.publish("CREATED", marker.id, OWNER.tenant_id)
        got = [await asyncio.wait_for(anext(stream), 5) for _ in range(2)]
        assert [(e.type, e.chat_id, e.chat) for e in got] == [
            ("PURGED", "late", None), ("CREATED", "marker", marker)]
    finally:
        await events.close()
        await backend.close()


async def test_an_append_to_a_chat_the_listener_holds_nothing_of_reads_it(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat an append carries is trusted only against a state the listener
    delivered: the first event of a chat, and any after a loss, read it."""
    reads: list[list[str]] = []
    read = store_events._read_chats

    async def counted(db: Database, chat_ids: Any) -> Any:
        if chat_ids:
            reads.append(sorted(chat_ids))
        return await read(db, chat_ids)

    monkeypatch.setattr(store_events, "_read_chats", counted)
    backend = MemoryBackend()
    events = ChatEvents(db, backend)
    await events.start()
    try:
        chat = await store_chats.create_chat(db, OWNER, id="cold", assistant_id="helper")
        stream = events.subscribe(OWNER, ChatListFilter()).events()
        for n in range(3):
            receipt = await _append(db, chat.id, f"c{n}")
            if n == 2:  # the broker lost events: every list refetches, nothing is trusted
                await backend.publish_chat_event(b"")
                assert (await asyncio.wait_for(anext(stream), 5)).type == "RESYNC"
            await events.publish("MESSAGES", chat.id, OWNER.tenant_id,
                                 after=receipt.chat, sequence=receipt.last_sequence)
            seen = await asyncio.wait_for(anext(stream), 5)
            assert seen.chat == receipt.chat
        assert reads == [["cold"], ["cold"]]
        assert seen.chat == await load_chat(db, chat.id)
    finally:
        await events.close()
        await backend.close()
