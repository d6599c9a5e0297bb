"""Channels and chatFor over HTTP on every backend: one chat per (tenant, assistant,
channel, person), even under concurrent first calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sqlalchemy import func, select

from chatql.store.chats.chat import chat_for
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.records import Identity
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

CHAT_FOR = """mutation($assistant: String!, $channel: String!, $subject: String) {
  chatFor(assistantId: $assistant, channel: $channel, subject: $subject) {
    id channel assistantId createdBy tenantId } }"""
CREATE = """mutation($input: CreateChatInput!) { createChat(input: $input) { id channel } }"""
LIST = """query($channel: String) { chats(filter: {channel: $channel}) {
  totalCount edges { node { id channel } } } }"""
PURGE = "mutation($id: ID!) { purgeChat(id: $id) }"


async def test_channel_defaults_to_api_and_filters_lists(
    client: GraphQLClient, db: Database
) -> None:
    made = await client.data(CREATE, {"input": {"id": "c1", "assistantId": "a"}})
    assert made["createChat"] == {"id": "c1", "channel": "api"}
    made = await client.data(CREATE, {"input": {"id": "c2", "assistantId": "a",
                                                "channel": "telegram"}})
    assert made["createChat"] == {"id": "c2", "channel": "telegram"}
    listed = (await client.data(LIST, {"channel": "telegram"}))["chats"]
    assert listed == {"totalCount": 1, "edges": [{"node": {"id": "c2", "channel": "telegram"}}]}
    assert (await client.data(LIST, {"channel": "api"}))["chats"]["totalCount"] == 1
    assert (await client.data(LIST, {"channel": None}))["chats"]["totalCount"] == 2
    before = await store_fingerprint(db)
    for channel in ("", "x" * 65):
        code = await client.error_code(CREATE, {"input": {"id": "c3", "assistantId": "a",
                                                          "channel": channel}})
        assert code == "INVALID_ARGUMENT"
        assert await client.error_code(LIST, {"channel": channel}) == "INVALID_ARGUMENT"
        assert await client.error_code(CHAT_FOR, {"assistant": "a", "channel": channel}) == (
            "INVALID_ARGUMENT")
    assert await store_fingerprint(db) == before


async def test_chat_for_returns_the_one_chat_per_person(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice, bob = make_headers(user="alice"), make_headers(user="bob")
    bot = make_headers(user="bot", roles="agent")
    first = (await client.data(CHAT_FOR, {"assistant": "support", "channel": "widget"},
                               alice))["chatFor"]
    assert {k: first[k] for k in ("channel", "assistantId", "createdBy", "tenantId")} == {
        "channel": "widget", "assistantId": "support", "createdBy": "alice",
        "tenantId": "acme"}
    again = await client.data(CHAT_FOR, {"assistant": "support", "channel": "widget"}, alice)
    assert again["chatFor"] == first
    # An agent asking on alice's behalf finds the same chat.
    on_behalf = await client.data(CHAT_FOR, {"assistant": "support", "channel": "widget",
                                             "subject": "alice"}, bot)
    assert on_behalf["chatFor"] == first
    # Every other key is another chat.
    others = [
        (CHAT_FOR, {"assistant": "support", "channel": "widget"}, bob),
        (CHAT_FOR, {"assistant": "support", "channel": "telegram"}, alice),
        (CHAT_FOR, {"assistant": "sales", "channel": "widget"}, alice),
        (CHAT_FOR, {"assistant": "support", "channel": "widget"},
         make_headers(user="alice", tenant="elsewhere")),
    ]
    ids = {(await client.data(doc, variables, headers))["chatFor"]["id"]
           for doc, variables, headers in others}
    assert len(ids) == 4 and first["id"] not in ids
    # The chat is its person's: private to them, listed for them.
    assert (await client.data('query($id: ID!) { chat(id: $id) { id } }', {"id": first["id"]},
                              bob))["chat"] is None
    assert (await client.data(LIST, {"channel": "widget"}, alice))["chats"]["totalCount"] == 2
    # Only agents and admins may ask for someone else's chat.
    assert await client.error_code(CHAT_FOR, {"assistant": "support", "channel": "widget",
                                              "subject": "alice"}, bob) == "FORBIDDEN"
    own = await client.data(CHAT_FOR, {"assistant": "support", "channel": "widget",
                                       "subject": "bob"}, bob)
    assert own["chatFor"]["createdBy"] == "bob"


async def test_twenty_concurrent_first_calls_make_one_chat(
    client: GraphQLClient, db: Database, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice")
    answers = await asyncio.gather(*(
        client.execute(CHAT_FOR, {"assistant": "support", "channel": "widget"}, alice)
        for _ in range(20)))
    assert all("errors" not in body for body in answers), answers
    assert len({body["data"]["chatFor"]["id"] for body in answers}) == 1
    async with db.read() as conn:
        assert await conn.scalar(select(func.count()).select_from(chats)) == 1


async def test_twenty_concurrent_store_calls_make_one_chat(db: Database) -> None:
    """Straight at the store, without the HTTP layer's scheduling in between."""
    who = Identity(user_id="bob", tenant_id="acme")
    made = await asyncio.gather(*(
        chat_for(db, who, assistant_id="support", channel="telegram") for _ in range(20)))
    assert len({chat.id for chat in made}) == 1


async def test_purge_then_chat_for_gives_a_new_chat(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    alice = make_headers(user="alice")
    key = {"assistant": "support", "channel": "widget"}
    first = (await client.data(CHAT_FOR, key, alice))["chatFor"]["id"]
    assert (await client.data(PURGE, {"id": first}, alice))["purgeChat"] is True
    second = (await client.data(CHAT_FOR, key, alice))["chatFor"]["id"]
    assert second != first
    assert (await client.data(CHAT_FOR, key, alice))["chatFor"]["id"] == second
    # A soft-deleted one is the same conversation: it comes back.
    await client.data("mutation($id: ID!) { deleteChat(id: $id) }", {"id": second}, alice)
    assert (await client.data(CHAT_FOR, key, alice))["chatFor"]["id"] == second
    assert (await client.data('query($id: ID!) { chat(id: $id) { id } }', {"id": second},
                              alice))["chat"] == {"id": second}
