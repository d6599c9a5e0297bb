"""A compiled inbox page answers what the general executor answers.

Two apps share one database and one secret: one with compiled reads (the default), one
with the ``reads`` plan switched off. Interrupts in chats of several owners and kinds
of sharing (private, public, a team's, deleted), with ties in time, every state and
JSON arguments of every shape, are paged through both by callers who may decide
different sets of them (the owner, a team mate, an approver, an agent, an admin, a
stranger from another tenant): on SQLite and Postgres, status and body must be the
same bytes, page after page, and the documents the plan is made for must be answered
by it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import interrupts
from chatql.store.records import Identity
from tests.conftest import running_app

ALICE = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme", "X-Team-Id": "red"}
APPROVER = {"X-User-Id": "supervisor", "X-Tenant-Id": "acme", "X-Roles": "agent,approver"}
AGENT = {"X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent"}
ADMIN = {"X-User-Id": "root", "X-Tenant-Id": "acme", "X-Roles": "admin"}
STRANGER = {"X-User-Id": "alice", "X-Tenant-Id": "other"}
CALLERS = [ALICE, CAROL, APPROVER, AGENT, ADMIN, STRANGER]

ALL_FIELDS = ("__typename id chatId messageId streamId requestId assistantId kind state"
              " toolCallId toolName arguments prompt responseSchema reason requestedAt"
              " expiresAt")
#: Documents the plan answers (given a page size in range and a cursor that verifies).
COMPILED = [
    ("query { interrupts(first: 20) { edges { cursor node { id chatId kind toolName"
     " arguments prompt requestedAt } } pageInfo { hasNextPage endCursor } } }"),
    (f"{{ interrupts {{ __typename edges {{ __typename cursor node {{ {ALL_FIELDS} }} }}"
     " pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } }"),
    "{ __typename x: interrupts(first: 1) { edges { node { id } } } }",
    "{ interrupts(first: 100) { pageInfo { hasNextPage hasPreviousPage startCursor } } }",
]
#: A page by variables, read to its end through both apps.
PAGED = ("query($first: Int, $after: String) { interrupts(first: $first, after: $after) {"
         " ...C } } fragment C on InterruptConnection { edges { c: cursor node {"
         " ... on Interrupt { id k: kind } ...N } } pageInfo { hasNextPage"
         " hasPreviousPage endCursor } } fragment N on Interrupt { requestedAt state"
         " arguments }")
#: Documents the executor answers (a field or argument the plan does not take).
EXECUTED = [
    "{ interrupts { edges { node { id decision { approved } } } } }",
    "{ interrupts { edges { node { id chat { id } } } } }",
    "{ interrupts(filter: {state: RESOLVED}) { edges { cursor node { id } } } }",
    "{ interrupts(filter: null) { edges { node { id } } } }",
    "{ interrupts(first: 2) { edges @include(if: true) { node { id } } } }",
]
#: Requests the plan declines at run time (the executor reports the error).
DECLINED: list[tuple[str, dict[str, Any]]] = [
    (PAGED, {"first": 0}),
    (PAGED, {"first": 101}),
    (PAGED, {"first": 2, "after": "forged.cursor"}),
    (PAGED, {"first": 2, "after": 7}),
]


async def _seed(url: str) -> None:
    alice = Identity(user_id="alice", tenant_id="acme")
    bob = Identity(user_id="bob", tenant_id="acme", team_id="red")
    db = Database(url)
    try:
        await store_chats.create_chat(db, alice, id="mine1", assistant_id="helper")
        await store_chats.create_chat(db, alice, id="mine2", assistant_id="helper")
        await store_chats.create_chat(db, alice, id="gone", assistant_id="helper")
        await store_chats.create_chat(db, bob, id="public", assistant_id="helper",
                                      public=True)
        await store_chats.create_chat(db, bob, id="teamchat", assistant_id="helper",
                                      share="TEAM")
        chat_ids = ["mine1", "mine2", "public", "teamchat", "gone"]
        arguments: list[Any] = [{"to": "x", "n": 1}, "not json", None, [1, "two"], {}]
        base = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
        rows = []
        for n in range(48):
            kind = "INPUT" if n % 3 == 0 else "TOOL_APPROVAL"
            state = ("RESOLVED" if n % 7 == 0 else "CANCELLED" if n % 11 == 0
                     else "PENDING")
            rows.append({
                "id": f"i{n:02d}", "chat_id": chat_ids[n % 5], "tenant_id": "acme",
                "message_id": f"m{n:02d}", "sequence": n + 1, "stream_id": f"s{n % 4}",
                "request_id": f"r{n}" if n % 2 else None,
                "assistant_id": "helper" if n % 4 else None, "kind": kind, "state": state,
                "tool_call_id": None if kind == "INPUT" else f"call{n}",
                "tool_name": None if kind == "INPUT" else "send_mail",
                "arguments": None if kind == "INPUT" else arguments[n % 5],
                "prompt": f"Which one, {n}?" if kind == "INPUT" else None,
                "response_schema": {"type": "string"} if kind == "INPUT" and n % 2 else None,
                "reason": "because" if n % 5 == 1 else None,
                # Three at each moment: ties are ordered by id.
                "requested_at": base + timedelta(seconds=n // 3),
                "expires_at": base + timedelta(days=1) if n % 6 == 0 else None,
                "decision": {"approved": True} if state == "RESOLVED" else None,
                "decided_by": "alice" if state == "RESOLVED" else None,
                "decided_at": base + timedelta(hours=1) if state == "RESOLVED" else None,
            })
        async with db.write() as conn:
            await conn.execute(interrupts.insert(), rows)
        await store_chats.delete_chat(db, alice, "gone")
    finally:
        await db.dispose()


@pytest.fixture
async def apps(settings: Settings) -> AsyncIterator[tuple[Any, httpx.AsyncClient,
                                                           httpx.AsyncClient]]:
    await _seed(settings.database_url)
    reference = replace(settings, disabled_plans=("reads",))
    async with (
        running_app(settings) as fast,
        running_app(reference) as slow,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=fast),
                          base_url="http://chatql") as a,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=slow),
                          base_url="http://chatql") as b,
    ):
        yield fast, a, b


async def _same(apps: tuple[Any, httpx.AsyncClient, httpx.AsyncClient], query: str,
                variables: dict[str, Any], who: dict[str, str], *, compiled: bool) -> Any:
    """Post to both apps: the same status and bytes; whether the plan answered."""
    app, fast, slow = apps
    served = app.state.planner.served["reads"]
    body = {"query": query, "variables": variables}
    got = await fast.post("/graphql", json=body, headers=who)
    want = await slow.post("/graphql", json=body, headers=who)
    assert (got.status_code, got.content) == (want.status_code, want.content), (query, who)
    assert (app.state.planner.served["reads"] > served) == compiled, (query, who)
    return want.json()


async def test_inbox_pages_answer_as_the_executor_does(apps: Any) -> None:
    seen: dict[str, int] = {}
    for who in CALLERS:
        for query in COMPILED:
            await _same(apps, query, {}, who, compiled=True)
        for query in EXECUTED:
            await _same(apps, query, {}, who, compiled=False)
        for query, variables in DECLINED:
            answer = await _same(apps, query, variables, who, compiled=False)
            assert answer["errors"], answer
        # Page by page to the end: every cursor the compiled page gives leads on.
        after = None
        ids: list[str] = []
        while True:
            answer = await _same(apps, PAGED, {"first": 4, "after": after}, who,
                                 compiled=True)
            page = answer["data"]["interrupts"]
            ids.extend(edge["node"]["id"] for edge in page["edges"])
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        seen[who["X-User-Id"] + "@" + who["X-Tenant-Id"]] = len(ids)
        if after is not None and who is not ALICE:
            # One caller's cursor is not another's: the executor refuses it.
            await _same(apps, PAGED, {"first": 4, "after": after}, ALICE, compiled=False)
    # The callers see different inboxes: their own, a team's, the tenant's, none.
    assert seen["alice@acme"] > 0 and seen["alice@other"] == 0 and seen["worker@acme"] == 0
    assert seen["root@acme"] > seen["alice@acme"]
    assert seen["supervisor@acme"] == seen["root@acme"]
    assert 0 < seen["carol@acme"] < seen["root@acme"]
