"""The access matrix for ``chatEvents``: who hears about which chat, generated from the
oracle.

For every owner in ``OWNERS`` and every visibility (PRIVATE/TEAM x public false/true)
one target chat is made; every caller in ``CALLERS`` then holds one subscription on
each WebSocket protocol while every target is touched once. Each subscription must see
exactly one ``UPDATED`` carrying the chat for each target ``read_outcome`` allows it,
and nothing for the others — their ids appear in none of its frames. A public marker
chat per tenant is the sentinel: a subscription is live once a marker touch reaches
it, and a marker touch after the targets' closes the batch (events arrive in commit
order), so "nothing arrives" is shown without waiting out a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx
import pytest
import websockets

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from tests.access.oracle import (
    CALLERS,
    OWNERS,
    VISIBILITIES,
    Caller,
    ChatSpec,
    Outcome,
    read_outcome,
)
from tests.access.snapshot import store_fingerprint
from tests.conftest import BACKENDS, GraphQLClient, on_backend

EVENTS = "subscription { chatEvents(filter: {}) { type chatId chat { id } } }"
CREATE = "mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"
APPEND = """mutation($chat: ID!) { appendMessages(chatId: $chat, appendId: "setup",
  messages: [{role: USER, type: "text", props: {content: "hello"}}]) { lastSequence } }"""
# An empty update changes nothing stored but announces UPDATED.
TOUCH = "mutation($chat: ID!) { updateChat(id: $chat, input: {}) { id } }"
PROTOCOLS = ("graphql-transport-ws", "graphql-ws")
TIMEOUT = 20.0
_serial = itertools.count(1)


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


def _admin(tenant: str) -> dict[str, str]:
    return Caller(tenant, None, "root", ("admin",)).headers()


class Subscription:
    """One caller's chatEvents on one protocol; every frame kept as sent."""

    def __init__(self, caller: Caller, protocol: str, ws: Any) -> None:
        self.caller, self.protocol, self.ws = caller, protocol, ws
        self.frames: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.markers = 0
        self.changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, server: str, caller: Caller, protocol: str) -> Subscription:
        ws = await websockets.connect(f"ws://{server}/graphql",
                                      subprotocols=[protocol],  # type: ignore[list-item]
                                      compression=None)
        await ws.send(json.dumps({"type": "connection_init", "payload": caller.headers()}))
        while json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["type"] != "connection_ack":
            pass
        kind = "subscribe" if protocol == "graphql-transport-ws" else "start"
        await ws.send(json.dumps({"id": "1", "type": kind,
                                  "payload": {"query": EVENTS, "variables": {}}}))
        return cls(caller, protocol, ws)

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                if message["type"] in ("ping", "pong", "ka"):
                    continue
                if message["type"] not in ("next", "data") or message["payload"].get("errors"):
                    raise AssertionError(message)
                event = message["payload"]["data"]["chatEvents"]
                if event["chatId"] == marker_of(self.caller.tenant):
                    self.markers += 1
                else:
                    self.frames.append(raw)
                    self.events.append(event)
                self.changed.set()
        except websockets.ConnectionClosed:
            pass

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


_markers: dict[str, str] = {}


def marker_of(tenant: str) -> str:
    return _markers[tenant]


async def _until(subscriptions: list[Subscription], markers: int, touch: Any) -> None:
    """Touch the markers until every subscription has seen ``markers`` of them."""
    async def wait() -> None:
        while True:
            behind = [s for s in subscriptions if s.markers < markers]
            if not behind:
                return
            for subscription in behind:
                subscription.changed.clear()
            await touch()
            waits = [asyncio.ensure_future(s.changed.wait()) for s in behind]
            _done, pending = await asyncio.wait(waits, timeout=0.5)
            for waiting in pending:
                waiting.cancel()

    await asyncio.wait_for(wait(), TIMEOUT)


async def test_chat_events_reach_exactly_the_callers_who_may_read(
        live_server: str, db: Database) -> None:
    failures: list[str] = []
    async with httpx.AsyncClient(base_url=f"http://{live_server}", timeout=30) as http:
        client = GraphQLClient(http)
        tenants = sorted({caller.tenant for caller in CALLERS})
        for tenant in tenants:
            _markers[tenant] = f"mk-{tenant}-{next(_serial)}"
            await client.data(CREATE, {"input": {"id": _markers[tenant], "assistantId": "a",
                                                 "public": True}}, _admin(tenant))
        targets: dict[str, ChatSpec] = {}
        for owner in OWNERS:
            for share, public in VISIBILITIES:
                chat_id = f"ev{next(_serial)}"
                await client.data(CREATE, {"input": {
                    "id": chat_id, "title": f"[{chat_id}]", "assistantId": "a",
                    "share": share, "public": public}}, owner.headers())
                await client.data(APPEND, {"chat": chat_id}, owner.headers())
                targets[chat_id] = ChatSpec(owner, share, public)
        before = await store_fingerprint(db)

        subscriptions = await asyncio.gather(*(
            Subscription.open(live_server, caller, protocol)
            for caller in CALLERS for protocol in PROTOCOLS))

        async def touch_markers() -> None:
            for tenant in tenants:
                await client.data(TOUCH, {"chat": _markers[tenant]}, _admin(tenant))

        try:
            await _until(subscriptions, 1, touch_markers)  # every one is live
            for subscription in subscriptions:
                subscription.frames.clear()
                subscription.events.clear()
                subscription.markers = 0
            (owners_tenant,) = {owner.tenant for owner in OWNERS}
            for chat_id in targets:
                await client.data(TOUCH, {"chat": chat_id}, _admin(owners_tenant))
            await _until(subscriptions, 1, touch_markers)  # the batch is complete
        finally:
            for subscription in subscriptions:
                await subscription.close()
        if await store_fingerprint(db) != before:
            failures.append("subscribing or an empty update changed the store")

    calls = 0
    for subscription in subscriptions:
        caller = subscription.caller
        for chat_id, spec in targets.items():
            calls += 1
            where = f"chatEvents ({subscription.protocol}) by {caller.label()} on {spec.label()}"
            seen = [(e["type"], e["chat"]) for e in subscription.events
                    if e["chatId"] == chat_id]
            expected = read_outcome(caller, spec)
            if expected is Outcome.OK:
                if seen != [("UPDATED", {"id": chat_id})]:
                    failures.append(f"{where}: expected one UPDATED, got {seen}")
            elif seen or any(chat_id in frame for frame in subscription.frames):
                failures.append(f"{where}: expected {expected}, but the chat reached it")
        strays = {e["chatId"] for e in subscription.events} - set(targets)
        if strays:
            failures.append(f"{caller.label()} heard of other chats: {strays}")
    assert calls == len(OWNERS) * len(VISIBILITIES) * len(CALLERS) * len(PROTOCOLS)
    # The matrix reaches both outcomes of the rule.
    outcomes = {read_outcome(c, s) for c in CALLERS for s in targets.values()}
    assert outcomes == {Outcome.OK, Outcome.HIDDEN}
    assert not failures, f"{len(failures)} of {calls} wrong:\n" + "\n".join(failures[:30])
