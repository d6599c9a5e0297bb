"""Retention over HTTP: expiresAt, temporary chats, and the sweeper in the running app."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.store import clock as store_clock
from tests.conftest import GraphQLClient, running_app

CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id expiresAt } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatInput!) {
  updateChat(id: $id, input: $input) { id expiresAt } }"""
CHAT = """query($id: ID!) { chat(id: $id) { id } }"""
LIST = """{ chats(filter: {includeSubagents: true}) { totalCount edges { node { id } } } }"""
TRASH = """{ chats(filter: {deleted: true}) { totalCount edges { node { id } } } }"""
APPEND = """mutation($id: ID!) { appendMessages(chatId: $id, appendId: "a1",
  messages: [{role: USER, type: "text", props: {content: "hi"}}]) { lastSequence } }"""
MESSAGES = """query($id: ID!) { messages(chatId: $id) { edges { node { id } } } }"""

Clock = Callable[[timedelta], None]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Moves the service's clock ahead of the real one by the given amount."""
    real = store_clock.now

    def move(ahead: timedelta) -> None:
        monkeypatch.setattr(store_clock, "now", lambda: real() + ahead)

    return move


@pytest.fixture
async def swept(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The app with a sweeper that runs every 50 ms and a one-hour temporary lifetime."""
    fast = dataclasses.replace(settings, sweep_interval=0.05, temporary_ttl=3600.0,
                               trash_days=30.0)
    async with running_app(fast) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield GraphQLClient(http)


async def _until_absent(client: GraphQLClient, chat_id: str) -> None:
    for _ in range(200):
        if await client.error_code(APPEND, {"id": chat_id}) == "CHAT_CLOSED":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{chat_id} was not purged")


async def test_expires_at_is_validated_and_settable(client: GraphQLClient) -> None:
    past = (store_clock.now() - timedelta(minutes=1)).isoformat()
    later = store_clock.now() + timedelta(days=2)
    assert await client.error_code(
        CREATE, {"input": {"id": "p", "assistantId": "a", "expiresAt": past}}
    ) == "INVALID_ARGUMENT"
    assert await client.error_code(
        CREATE, {"input": {"id": "p", "assistantId": "a", "temporary": True,
                           "expiresAt": later.isoformat()}}
    ) == "INVALID_ARGUMENT"
    assert (await client.data(CHAT, {"id": "p"}))["chat"] is None
    made = (await client.data(
        CREATE, {"input": {"id": "c", "assistantId": "a", "expiresAt": later.isoformat()}}
    ))["createChat"]
    assert datetime.fromisoformat(made["expiresAt"]) == later
    assert await client.error_code(UPDATE, {"id": "c", "input": {"expiresAt": past}}) == (
        "INVALID_ARGUMENT")
    cleared = (await client.data(UPDATE, {"id": "c", "input": {"expiresAt": None}}))
    assert cleared["updateChat"]["expiresAt"] is None


async def test_an_expired_chat_reads_as_absent_before_it_is_swept(
    client: GraphQLClient, clock: Clock
) -> None:
    # The default test settings sweep every 30 s: no sweep happens during this test.
    made = (await client.data(
        CREATE, {"input": {"id": "t", "assistantId": "a", "temporary": True}}))["createChat"]
    lifetime = datetime.fromisoformat(made["expiresAt"]) - store_clock.now()
    assert timedelta(hours=23, minutes=59) < lifetime <= timedelta(hours=24)
    await client.data(APPEND, {"id": "t"})
    assert (await client.data(LIST))["chats"]["totalCount"] == 1
    clock(timedelta(hours=24, seconds=1))
    assert (await client.data(CHAT, {"id": "t"}))["chat"] is None
    assert (await client.data(LIST))["chats"] == {"totalCount": 0, "edges": []}
    assert await client.error_code(MESSAGES, {"id": "t"}) == "NOT_FOUND"
    assert await client.error_code(UPDATE, {"id": "t", "input": {"title": "x"}}) == "NOT_FOUND"


async def test_a_temporary_chat_is_purged_and_its_id_closed(
    swept: GraphQLClient, clock: Clock
) -> None:
    await swept.data(CREATE, {"input": {"id": "tmp", "assistantId": "a", "temporary": True}})
    await swept.data(CREATE, {"input": {"id": "kept", "assistantId": "a"}})
    await swept.data(APPEND, {"id": "tmp"})
    await asyncio.sleep(0.2)  # several sweeps: not due yet
    assert (await swept.data(CHAT, {"id": "tmp"}))["chat"] == {"id": "tmp"}
    clock(timedelta(hours=1, seconds=1))
    await _until_absent(swept, "tmp")
    assert await swept.error_code(
        CREATE, {"input": {"id": "tmp", "assistantId": "a"}}) == "CONFLICT"
    assert (await swept.data(CHAT, {"id": "kept"}))["chat"] == {"id": "kept"}


async def test_the_trash_is_emptied_after_the_trash_days(
    swept: GraphQLClient, clock: Clock
) -> None:
    for chat_id in ("gone", "kept"):
        await swept.data(CREATE, {"input": {"id": chat_id, "assistantId": "a"}})
    await swept.data("""mutation { deleteChat(id: "gone") }""")
    clock(timedelta(days=29, hours=23))
    await asyncio.sleep(0.2)
    assert (await swept.data(TRASH))["chats"]["totalCount"] == 1
    clock(timedelta(days=30, seconds=1))
    await _until_absent(swept, "gone")
    assert (await swept.data(TRASH))["chats"]["totalCount"] == 0
    assert (await swept.data(CHAT, {"id": "kept"}))["chat"] == {"id": "kept"}
