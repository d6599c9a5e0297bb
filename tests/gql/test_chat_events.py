"""The live chat list (``chatEvents``) end to end over real WebSockets (both
subprotocols) and Server-Sent Events, on both databases and both brokers.

A real uvicorn server; writes go over HTTP, subscribers listen on both WebSocket
subprotocols. Each scenario ends with a marker write the subscriber may see, so "nothing
for that chat" is checked without waiting for a timeout.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.gql.transport.websocket import FrameWriter
from chatql.store.lists import events as store_events
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_sse import SSEStream
from tests.gql.test_streams_ws import PROTOCOLS, serve
from tests.gql.wsclient import WSClient, connect

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Team-Id": "red"}
BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme", "X-Team-Id": "red"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme", "X-Team-Id": "blue"}
AGENT = {"X-User-Id": "bot", "X-Tenant-Id": "acme", "X-Roles": "agent"}
OTHER_TENANT = {"X-User-Id": "alice", "X-Tenant-Id": "globex", "X-Roles": "admin"}

EVENTS = """subscription($filter: ChatFilter) { chatEvents(filter: $filter) {
  type chatId at chat { id title assistantId share public lastMessageAt } } }"""
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatInput!) { updateChat(id: $id, input: $input) {
  id } }"""
APPEND = """mutation($chat: ID!, $aid: String!) { appendMessages(chatId: $chat, appendId: $aid,
  messages: [{role: USER, type: "text", props: {content: "hi"}}]) { lastSequence } }"""
START = """mutation($chat: ID!) { startStream(input: {chatId: $chat}) { id } }"""
PUSH = """mutation($id: ID!) { pushChunks(streamId: $id, chunks: [{messageId: "m1",
  type: "text", props: {content: "hello"}}]) { accepted } }"""
END = """mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) { stream { id } } }"""
DELETE = "mutation($id: ID!) { deleteChat(id: $id) }"
RESTORE = "mutation($id: ID!) { restoreChat(id: $id) { id } }"
PURGE = "mutation($id: ID!) { purgeChat(id: $id) }"
LAST_MESSAGE_AT = "query($id: ID!) { chat(id: $id) { lastMessageAt } }"


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """Every scenario on both brokers (in-process and Redis)."""
    return on_backend(request, settings)


def new_id(prefix: str = "ev") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def call(server: str, query: str, variables: dict[str, Any],
               headers: dict[str, str]) -> Any:
    async with httpx.AsyncClient(timeout=30) as http:
        body = (await http.post(f"http://{server}/graphql", headers=headers,
                                json={"query": query, "variables": variables})).json()
    assert not body.get("errors"), body
    return body["data"]


async def create(server: str, headers: dict[str, str], **input: Any) -> str:
    input.setdefault("id", new_id())
    input.setdefault("assistantId", "bot")
    return str((await call(server, CREATE, {"input": input}, headers))["createChat"]["id"])


async def listening(app: Any, count: int = 1) -> None:
    """Wait until ``count`` chatEvents subscribers are registered."""
    for _ in range(500):
        if app.state.services.events.subscriber_count() >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the subscription never arrived")


async def events_over_sse(server: str, query: str, headers: dict[str, str],
                          timeout: float = 60) -> AsyncIterator[dict[str, Any]]:
    """The ``chatEvents`` of the subscription ``query``, heard over Server-Sent Events."""
    async with httpx.AsyncClient(timeout=timeout) as http, http.stream(
            "POST", f"http://{server}/graphql", json={"query": query},
            headers={**headers, "Accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                event = (json.loads(line[5:]).get("data") or {}).get("chatEvents")
                if event:
                    yield event


async def delivered(app: Any, count: int) -> None:
    """Wait until the listener has offered ``count`` events (a subscriber that joins
    then does not see them arrive late)."""
    events = app.state.services.events
    for _ in range(500):
        if events.received >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the events were never delivered")


class Sidebar:
    """One chatEvents subscription, read event by event."""

    def __init__(self, client: WSClient, op: str) -> None:
        self.client, self.op = client, op

    @classmethod
    async def open(cls, client: WSClient, filter: dict[str, Any] | None = None) -> Sidebar:
        return cls(client, await client.start(EVENTS, {"filter": filter}))

    async def next(self) -> dict[str, Any]:
        payload = await self.client.receive(self.op)
        assert payload is not None, "the subscription ended"
        assert not payload.get("errors"), payload
        event: dict[str, Any] = payload["data"]["chatEvents"]
        return event

    async def take(self, count: int) -> list[tuple[str, str]]:
        return [(e["type"], e["chatId"]) for e in [await self.next() for _ in range(count)]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_sidebar_sees_its_chats_change_in_commit_order(
        settings: Settings, protocol: str) -> None:
    async with serve(settings) as (server, app), connect(server, protocol, ALICE) as ws:
        sidebar = await Sidebar.open(ws)
        await listening(app)
        chat = await create(server, ALICE, title="Plans")
        created = await sidebar.next()
        assert (created["type"], created["chatId"]) == ("CREATED", chat)
        assert created["chat"]["title"] == "Plans" and created["chat"]["lastMessageAt"] is None

        await call(server, UPDATE, {"id": chat, "input": {"title": "Trip plans"}}, ALICE)
        updated = await sidebar.next()
        assert (updated["type"], updated["chat"]["title"]) == ("UPDATED", "Trip plans")

        await call(server, APPEND, {"chat": chat, "aid": "a1"}, ALICE)
        appended = await sidebar.next()
        stored = (await call(server, LAST_MESSAGE_AT, {"id": chat}, ALICE))["chat"]
        assert appended["type"] == "MESSAGES"
        assert appended["chat"]["lastMessageAt"] == stored["lastMessageAt"] is not None

        stream = (await call(server, START, {"chat": chat}, AGENT))["startStream"]["id"]
        assert await sidebar.take(1) == [("STREAM_STARTED", chat)]
        await call(server, PUSH, {"id": stream}, AGENT)
        await call(server, END, {"id": stream}, AGENT)
        ended, written = await sidebar.next(), await sidebar.next()
        assert [ended["type"], written["type"]] == ["STREAM_ENDED", "MESSAGES"]
        assert written["chat"]["lastMessageAt"] > appended["chat"]["lastMessageAt"]

        await call(server, DELETE, {"id": chat}, ALICE)
        await call(server, RESTORE, {"id": chat}, ALICE)
        await call(server, PURGE, {"id": chat}, ALICE)
        gone = [await sidebar.next() for _ in range(3)]
        assert [(e["type"], e["chatId"]) for e in gone] == [
            ("DELETED", chat), ("RESTORED", chat), ("PURGED", chat)]
        assert [e["chat"] is None for e in gone] == [True, False, True]

        # Chats alice may not read: carol's private one, another tenant's. Nothing of
        # them arrives; the marker after them comes first.
        hidden = await create(server, CAROL, title="secret")
        await call(server, APPEND, {"chat": hidden, "aid": "a1"}, CAROL)
        await call(server, UPDATE, {"id": hidden, "input": {"title": "still secret"}}, CAROL)
        await call(server, DELETE, {"id": hidden}, CAROL)
        await call(server, PURGE, {"id": hidden}, CAROL)
        await create(server, OTHER_TENANT, title="elsewhere")
        marker = await create(server, ALICE, title="marker")
        assert await sidebar.take(1) == [("CREATED", marker)]


async def test_filter_narrows_by_assistant_and_keywords(settings: Settings) -> None:
    async with serve(settings) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        sidebar = await Sidebar.open(ws, {"assistantId": "helper", "keywords": "TRIP"})
        await listening(app)
        await create(server, ALICE, assistantId="other", title="trip")
        untitled = await create(server, ALICE, assistantId="helper")
        await create(server, ALICE, assistantId="helper", title="groceries")
        wanted = await create(server, ALICE, assistantId="helper", title="Road trip")
        assert await sidebar.take(1) == [("CREATED", wanted)]
        # Renamed into the filter: it arrives; renamed out of it: the list drops it.
        await call(server, UPDATE, {"id": untitled, "input": {"title": "trip 2"}}, ALICE)
        await call(server, UPDATE, {"id": wanted, "input": {"title": "Road"}}, ALICE)
        await call(server, APPEND, {"chat": wanted, "aid": "a1"}, ALICE)
        marker = await create(server, ALICE, assistantId="helper", title="trip marker")
        assert await sidebar.take(3) == [("UPDATED", untitled), ("DELETED", wanted),
                                         ("CREATED", marker)]


async def test_a_bad_filter_is_invalid_argument(settings: Settings) -> None:
    async with serve(settings) as (server, _app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        op = await ws.start(EVENTS, {"filter": {"keywords": "x" * 500}})
        payload = await ws.receive(op)
        errors = (payload or {}).get("errors") or []
        assert errors and errors[0]["extensions"]["code"] == "INVALID_ARGUMENT", payload


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_chat_made_private_is_deleted_for_the_teammate_and_then_silent(
        settings: Settings, protocol: str) -> None:
    async with serve(settings) as (server, app), connect(server, protocol, BOB) as ws:
        sidebar = await Sidebar.open(ws)
        await listening(app)
        chat = await create(server, ALICE, title="team chat", share="TEAM")
        seen = await sidebar.next()
        assert (seen["type"], seen["chat"]["title"]) == ("CREATED", "team chat")
        await call(server, UPDATE, {"id": chat, "input": {"share": "PRIVATE",
                                                          "title": "now private"}}, ALICE)
        dropped = await sidebar.next()
        assert (dropped["type"], dropped["chatId"], dropped["chat"]) == ("DELETED", chat, None)
        # Later writes to it never reach bob.
        await call(server, UPDATE, {"id": chat, "input": {"title": "private news"}}, ALICE)
        await call(server, APPEND, {"chat": chat, "aid": "a1"}, ALICE)
        await call(server, PURGE, {"id": chat}, ALICE)
        marker = await create(server, BOB, title="marker")
        assert await sidebar.take(1) == [("CREATED", marker)]


async def test_a_write_on_one_instance_reaches_a_sidebar_on_another(
        settings: Settings, redis_url: str) -> None:
    shared = dataclasses.replace(settings, broker_url=redis_url)
    async with serve(shared) as (a, _app_a), serve(shared) as (b, app_b), \
            connect(b, "graphql-ws", ALICE) as ws:
        sidebar = await Sidebar.open(ws)
        await listening(app_b)
        chat = await create(a, ALICE, title="from A")
        await call(a, APPEND, {"chat": chat, "aid": "a1"}, ALICE)
        first, second = await sidebar.next(), await sidebar.next()
        assert [(first["type"], first["chat"]["title"]), (second["type"], second["chatId"])] == [
            ("CREATED", "from A"), ("MESSAGES", chat)]


async def test_a_sidebar_over_sse_sees_its_chats_and_not_others(settings: Settings) -> None:
    async with serve(settings) as (server, app), httpx.AsyncClient(timeout=30) as http, \
            http.stream("POST", f"http://{server}/graphql",
                        json={"query": EVENTS, "variables": {"filter": None}},
                        headers={"Accept": "text/event-stream", **BOB}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = SSEStream(response)
        await listening(app)
        team = await create(server, ALICE, title="team", share="TEAM")
        await create(server, CAROL, title="not for bob")
        await call(server, APPEND, {"chat": team, "aid": "a1"}, ALICE)
        await call(server, UPDATE, {"id": team, "input": {"share": "PRIVATE"}}, ALICE)
        await call(server, APPEND, {"chat": team, "aid": "a2"}, ALICE)
        marker = await create(server, BOB, title="marker")
        seen = []
        for _ in range(4):
            name, payload = await stream.event()
            assert name == "next" and not payload.get("errors"), payload
            event = payload["data"]["chatEvents"]
            seen.append((event["type"], event["chatId"], (event["chat"] or {}).get("title")))
        assert seen == [("CREATED", team, "team"), ("MESSAGES", team, "team"),
                        ("DELETED", team, None), ("CREATED", marker, "marker")]


async def test_filter_narrows_by_tags_and_the_sweeper_purges_an_expired_chat(
        settings: Settings) -> None:
    sweeping = dataclasses.replace(settings, sweep_interval=0.2)
    async with serve(sweeping) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        sidebar = await Sidebar.open(ws, {"tags": ["work"]})
        await listening(app)
        await create(server, ALICE, title="untagged")
        await create(server, ALICE, title="home", tags=["home"])
        soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
        work = await create(server, ALICE, title="work", tags=["work", "q3"], expiresAt=soon)
        created = await sidebar.next()
        assert (created["type"], created["chatId"]) == ("CREATED", work)
        # Past its expiry the sweeper purges it: the list is told, with no content.
        purged = await sidebar.next()
        assert (purged["type"], purged["chatId"], purged["chat"]) == ("PURGED", work, None)


CHAT_FOR = """mutation($assistant: String!) { chatFor(assistantId: $assistant, channel: "widget") {
  id } }"""
MESSAGE_IDS = """mutation($chat: ID!, $aid: String!) { appendMessages(chatId: $chat,
  appendId: $aid, messages: [{role: USER, type: "text", props: {content: "hi"}}]) {
  messageIds } }"""
EDIT = """mutation($id: ID!) { editMessage(id: $id, appendId: "e1",
  input: {props: {content: "hello"}}) { id } }"""
LEAF = """subscription { chatEvents { type chatId chat { activeLeafId lastMessageAt } } }"""


async def test_chat_for_bringing_a_chat_back_from_the_trash_sends_restored(
        settings: Settings) -> None:
    async with serve(settings) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        sidebar = await Sidebar.open(ws)
        await listening(app)
        chat = (await call(server, CHAT_FOR, {"assistant": "support"}, ALICE))["chatFor"]["id"]
        # Found again: nothing changed, nothing is sent.
        await call(server, CHAT_FOR, {"assistant": "support"}, ALICE)
        await call(server, DELETE, {"id": chat}, ALICE)
        again = (await call(server, CHAT_FOR, {"assistant": "support"}, ALICE))["chatFor"]["id"]
        assert again == chat
        marker = await create(server, ALICE, title="marker")
        events = [await sidebar.next() for _ in range(4)]
        assert [(e["type"], e["chatId"]) for e in events] == [
            ("CREATED", chat), ("DELETED", chat), ("RESTORED", chat), ("CREATED", marker)]
        assert events[2]["chat"]["assistantId"] == "support"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_edit_message_sends_messages_with_the_new_active_leaf(
        settings: Settings, protocol: str) -> None:
    async with serve(settings) as (server, app), connect(server, protocol, ALICE) as ws:
        chat = await create(server, ALICE, title="edits")
        await delivered(app, 1)  # its CREATED never reaches the sidebar opened next
        op = await ws.start(LEAF)
        await listening(app)
        first = (await call(server, MESSAGE_IDS, {"chat": chat, "aid": "a1"}, ALICE)
                 )["appendMessages"]["messageIds"][0]
        # Heard before the edit: the list has not seen this chat yet (its CREATED went
        # out before anyone listened), so it reads the chat as it delivers the append,
        # and a read after the edit would already show the edited leaf.
        events = [(await ws.receive(op) or {})["data"]["chatEvents"]]
        edited = (await call(server, EDIT, {"id": first}, ALICE))["editMessage"]["id"]
        events.append((await ws.receive(op) or {})["data"]["chatEvents"])
        assert [(e["type"], e["chatId"]) for e in events] == [("MESSAGES", chat)] * 2
        assert events[0]["chat"]["activeLeafId"] == first
        assert events[1]["chat"]["activeLeafId"] == edited != first


WHOLE = """id title assistantId mode status public share sort lastMessageAt metadata createdAt
  updatedAt createdBy updatedBy teamId tenantId tags pinned expiresAt archivedAt channel
  activeLeafId"""


@pytest.mark.parametrize("fast", [True, False], ids=["append-plan", "executor"])
async def test_an_append_is_sent_with_the_chat_it_committed_and_no_read(
        settings: Settings, fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidebar gets the chat exactly as a read of it answers after the append, and
    the listener does not read it: the append's event carries it (through either
    broker, from the append plan and from the ordinary resolver)."""
    reads: list[set[str]] = []
    read = store_events._read_chats

    async def counted(db: Any, chat_ids: Any) -> Any:
        if chat_ids:  # not the warm-up read at start
            reads.append(set(chat_ids))
        return await read(db, chat_ids)

    monkeypatch.setattr(store_events, "_read_chats", counted)
    if not fast:
        settings = dataclasses.replace(settings, disabled_plans=("append",))
    async with serve(settings) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        op = await ws.start(f"subscription {{ chatEvents {{ type chatId chat {{ {WHOLE} }} }} }}")
        await listening(app)
        chat = await create(server, ALICE, title="whole", tags=["x", "y"], pinned=True,
                            metadata={"k": [1, "v"]})
        created = (await ws.receive(op) or {})["data"]["chatEvents"]
        assert created["type"] == "CREATED" and reads == [{chat}]
        for n in range(3):
            await call(server, APPEND, {"chat": chat, "aid": f"w{n}"}, ALICE)
            event = (await ws.receive(op) or {})["data"]["chatEvents"]
            stored = (await call(server, f"query($id: ID!) {{ chat(id: $id) {{ {WHOLE} }} }}",
                                 {"id": chat}, ALICE))["chat"]
            assert (event["type"], event["chat"]) == ("MESSAGES", stored)
        assert reads == [{chat}]
        # Sent again, an append id is answered from its receipt: that event reads.
        await call(server, APPEND, {"chat": chat, "aid": "w2"}, ALICE)
        again = (await ws.receive(op) or {})["data"]["chatEvents"]
        assert again["chat"] == stored and reads == [{chat}, {chat}]


class Gate:
    """Holds the events listener before it offers a batch to its subscribers, so that
    the writes made meanwhile reach every subscriber at once when it opens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.open = asyncio.Event()
        self.waiting = asyncio.Event()
        offer = store_events.ChatEvents._offer

        async def gated(events: Any, batch: Any) -> Any:
            self.waiting.set()
            await self.open.wait()
            return await offer(events, batch)

        monkeypatch.setattr(store_events.ChatEvents, "_offer", gated)


async def overflow(server: str, app: Any, gate: Gate, chat: str) -> None:
    """Ten writes while the listener is held; its queue holds four. The gate opens once
    the listener holds all ten (through a broker the last may still be on its way; then
    it would come after the RESYNC, as a late event does)."""
    for n in range(10):
        await call(server, APPEND, {"chat": chat, "aid": f"burst-{n}"}, ALICE)
    await asyncio.wait_for(gate.waiting.wait(), 10)
    events = app.state.services.events
    for _ in range(1000):
        if events.taken - events.received >= 10:
            break
        await asyncio.sleep(0.01)
    gate.open.set()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_sidebar_that_falls_behind_gets_resync_over_websocket_then_continues(
        settings: Settings, protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve(settings) as (server, app), connect(server, protocol, ALICE) as ws:
        app.state.services.events.queue_limit = 4
        chat = await create(server, ALICE, title="busy")
        await delivered(app, 1)  # its CREATED is not part of what overflows
        sidebar = await Sidebar.open(ws)
        await listening(app)
        # A sidebar that does not read its socket: its transport is past the high-water
        # mark, so nothing is written straight to it and its events wait in its queue.
        monkeypatch.setattr(FrameWriter, "writable", lambda self: False)
        gate = Gate(monkeypatch)
        await overflow(server, app, gate, chat)
        seen = []
        while not seen or seen[-1]["type"] != "RESYNC":
            seen.append(await sidebar.next())
        # At most what was queued before the overflow, then one RESYNC with nothing in it.
        assert len(seen) <= 5 and all(e["type"] == "MESSAGES" for e in seen[:-1])
        assert (seen[-1]["chatId"], seen[-1]["chat"]) == ("", None)
        marker = await create(server, ALICE, title="after")
        after = await sidebar.next()
        assert (after["type"], after["chatId"], after["chat"]["title"]) == (
            "CREATED", marker, "after")


async def test_a_sidebar_that_falls_behind_gets_resync_over_sse_then_continues(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve(settings) as (server, app), httpx.AsyncClient(timeout=30) as http:
        app.state.services.events.queue_limit = 4
        chat = await create(server, ALICE, title="busy")
        await delivered(app, 1)  # its CREATED is not part of what overflows
        async with http.stream("POST", f"http://{server}/graphql",
                               json={"query": EVENTS, "variables": {"filter": None}},
                               headers={"Accept": "text/event-stream", **ALICE}) as response:
            stream = SSEStream(response)
            await listening(app)
            gate = Gate(monkeypatch)
            await overflow(server, app, gate, chat)

            async def next_event() -> dict[str, Any]:
                name, payload = await stream.event()
                assert name == "next" and not payload.get("errors"), payload
                event: dict[str, Any] = payload["data"]["chatEvents"]
                return event

            seen = []
            while not seen or seen[-1]["type"] != "RESYNC":
                seen.append(await next_event())
            assert len(seen) <= 5 and all(e["type"] == "MESSAGES" for e in seen[:-1])
            assert (seen[-1]["chatId"], seen[-1]["chat"]) == ("", None)
            marker = await create(server, ALICE, title="after")
            after = await next_event()
            assert (after["type"], after["chatId"]) == ("CREATED", marker)


async def test_a_write_does_not_wait_for_the_sidebars(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events are published after the commit and delivered by the listener's own task:
    a write answers while delivery is held, and the event follows once it is not."""
    async with serve(settings) as (server, app), \
            connect(server, "graphql-transport-ws", ALICE) as ws:
        chat = await create(server, ALICE, title="quick")
        events = app.state.services.events
        # The chat's CREATED goes by before the sidebar opens (through Redis it can
        # arrive late enough to reach a sidebar opened right after the create).
        for _ in range(500):
            if events.received:
                break
            await asyncio.sleep(0.01)
        assert events.received
        sidebar = await Sidebar.open(ws)
        await listening(app)
        delivered = events.received
        gate = Gate(monkeypatch)
        await asyncio.wait_for(call(server, APPEND, {"chat": chat, "aid": "a1"}, ALICE), 10)
        await asyncio.wait_for(gate.waiting.wait(), 10)
        assert events.received == delivered  # answered, and not delivered yet
        gate.open.set()
        assert await sidebar.take(1) == [("MESSAGES", chat)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_stopped_sidebar_is_unsubscribed_and_the_socket_carries_on(
        settings: Settings, protocol: str) -> None:
    async def until_subscribers(count: int) -> None:
        for _ in range(500):
            if events.subscriber_count() == count:
                return
            await asyncio.sleep(0.01)
        assert events.subscriber_count() == count

    async with serve(settings) as (server, app):
        events = app.state.services.events
        async with connect(server, protocol, ALICE) as ws:
            first, second = await Sidebar.open(ws), await Sidebar.open(ws)
            await listening(app, 2)
            await ws.stop(first.op)
            if protocol == "graphql-ws":  # the legacy protocol confirms with complete
                assert await ws.receive(first.op) is None
            await until_subscribers(1)
            chat = await create(server, ALICE, title="still here")
            assert await second.take(1) == [("CREATED", chat)]
        await until_subscribers(0)  # the socket closed: its subscription went with it
