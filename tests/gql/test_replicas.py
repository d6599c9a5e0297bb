"""Read replicas over HTTP, against a real Postgres primary and streaming replica.

What a replica answered is told apart from what the primary answered by the data
itself: while the replica's replay is paused it holds the chat as it was, so a read
that shows the old state came from the replica. The database's counters
(``Replica.served``, ``ReplicaSet.primary_served``) back that up.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from bench.postgres_pair import ReplicaPair, postgres_binaries, start_pair
from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from chatql.store.db.database import Database, execute_on_server
from chatql.store.db.migrate import migrate
from chatql.store.db.replicas import ReplicaSet
from tests.conftest import TEST_SECRET, GraphQLClient, uvicorn_serving
from tests.gql.test_chat_events import listening
from tests.gql.test_streams_ws import PROTOCOLS, serve
from tests.gql.wsclient import connect

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

MAX_LAG = 3.0
CREATE = """mutation($id: ID!) { createChat(input: {id: $id, assistantId: "helper",
  public: true}) { id } }"""
APPEND = """mutation($chat: ID!, $append: String!, $text: String!) {
  appendMessages(chatId: $chat, appendId: $append,
                 messages: [{role: USER, type: "text", props: {text: $text}, requestId: "r"}]) {
    messageIds } }"""
TEXTS = """query($chat: ID!) { messages(chatId: $chat, last: 200) {
  edges { node { props } } } }"""
EVENTS = """subscription { chatEvents { type chat { title } } }"""
BY_REQUEST = """{ messagesByRequest(requestId: "r", first: 200) {
  edges { node { props } } } }"""
TITLE = """query($chat: ID!) { chat(id: $chat) { title } }"""
RENAME = """mutation($chat: ID!, $title: String!) {
  updateChat(id: $chat, input: {title: $title}) { title } }"""


@pytest.fixture(scope="session")
def replica_pair() -> Iterator[ReplicaPair]:
    """A primary and a streaming replica for the whole session (slow to start)."""
    binaries = postgres_binaries()
    if binaries is None:
        if os.environ.get("CHATQL_REQUIRE_POSTGRES", "") in ("1", "true", "yes"):
            pytest.fail("CHATQL_REQUIRE_POSTGRES=1 but the Postgres server binaries"
                        " (initdb, pg_ctl, pg_basebackup) are not installed")
        pytest.skip("the Postgres server binaries (initdb, pg_ctl, pg_basebackup) are not"
                    " installed: install the postgresql server package")
    pair = start_pair(binaries)
    try:
        yield pair
    finally:
        pair.stop()


@pytest.fixture
async def replicated(replica_pair: ReplicaPair, tmp_path: Path) -> AsyncIterator[Settings]:
    """A fresh migrated database on the pair (replica running and replaying)."""
    if not replica_pair.replica_running():
        replica_pair.start_replica()
    replica_pair.resume_replay()
    name = f"t_{uuid.uuid4().hex[:10]}"
    admin = replica_pair.url(replica_pair.primary_port, "postgres")
    await execute_on_server(admin, f'CREATE DATABASE "{name}"')
    db = Database(replica_pair.url(replica_pair.primary_port, name))
    try:
        await migrate(db)
    finally:
        await db.dispose()
    try:
        yield Settings(database_url=replica_pair.url(replica_pair.primary_port, name),
                       database_replica_urls=(replica_pair.url(replica_pair.replica_port,
                                                               name),),
                       replica_max_lag=MAX_LAG, secret=TEST_SECRET, migrate_on_start=False,
                       archive_url=f"file://{tmp_path / 'archive'}")
    finally:
        await execute_on_server(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def served(replicated: Settings) -> AsyncIterator[tuple[GraphQLClient, ReplicaSet]]:
    # Served by uvicorn: each request runs in a task of its own, as in production.
    app = create_app(replicated)
    async with uvicorn_serving(app) as port:
        db: Database = app.state.services.db
        assert db.replicas is not None
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            yield GraphQLClient(http), db.replicas


def as_user(user: str) -> dict[str, str]:
    return {"X-User-Id": user, "X-Tenant-Id": "acme"}


ALICE, BOB = as_user("alice"), as_user("bob")


async def readings(client: GraphQLClient, headers: dict[str, str],
                   chat: str) -> list[list[str]]:
    """The chat's texts, read one after the other by the prepared page (the compiled
    read) and by the general executor's read in a transaction (messagesByRequest)."""
    data = await client.data(TEXTS, {"chat": chat}, headers)
    paged = [edge["node"]["props"]["text"] for edge in data["messages"]["edges"]]
    data = await client.data(BY_REQUEST, {}, headers)
    found = [edge["node"]["props"]["text"] for edge in data["messagesByRequest"]["edges"]]
    return [paged, found]


async def texts(client: GraphQLClient, headers: dict[str, str], chat: str) -> list[str]:
    """The chat's texts, the same by both reads."""
    paged, found = await readings(client, headers, chat)
    assert found == paged
    return paged


async def caught_up(replicas: ReplicaSet) -> None:
    """Until a health check finds the replica well and past every write so far."""
    for _ in range(200):
        await replicas.wait_checked()
        replica = replicas.replicas[0]
        if replica.healthy and replica.replay_lsn >= replicas.needed_by_anyone():
            return
    raise AssertionError(f"the replica did not catch up: {replicas.replicas[0]}")


async def test_reads_are_served_by_the_replica(
        served: tuple[GraphQLClient, ReplicaSet]) -> None:
    client, replicas = served
    await client.data(CREATE, {"id": "c"}, ALICE)
    await client.data(APPEND, {"chat": "c", "append": "a1", "text": "one"}, ALICE)
    await caught_up(replicas)
    replica = replicas.replicas[0]
    before_replica, before_primary = replica.served, replicas.primary_served
    for headers in (ALICE, BOB) * 5:
        assert await texts(client, headers, "c") == ["one"]
    assert replica.served >= before_replica + 20
    assert replicas.primary_served == before_primary


async def test_read_your_writes_while_replay_is_paused_and_others_fall_back_in_max_lag(
        served: tuple[GraphQLClient, ReplicaSet], replica_pair: ReplicaPair) -> None:
    client, replicas = served
    await client.data(CREATE, {"id": "c"}, ALICE)
    await client.data(APPEND, {"chat": "c", "append": "a0", "text": "zero"}, ALICE)
    await caught_up(replicas)
    replica_pair.pause_replay()
    written = ["zero"]
    loop = asyncio.get_running_loop()
    first_write = fell_back = None
    for n in range(1, 16):
        await client.data(APPEND, {"chat": "c", "append": f"a{n}", "text": f"m{n}"}, ALICE)
        first_write = first_write or loop.time()
        written.append(f"m{n}")
        # The writer always sees its own write, at once.
        assert await texts(client, ALICE, "c") == written
        await client.data(RENAME, {"chat": "c", "title": f"t{n}"}, ALICE)
        assert (await client.data(TITLE, {"chat": "c"}, ALICE))["chat"]["title"] == f"t{n}"
        # Another caller reads the replica's older state (the proof the replica
        # answers) until the replica has lagged more than the allowed lag; from then on
        # the primary's.
        for seen in await readings(client, BOB, "c"):
            if n == 1:
                assert seen == ["zero"]
            if seen == written:
                fell_back = fell_back or loop.time()
            else:
                assert fell_back is None and seen == ["zero"]
    assert first_write is not None
    while fell_back is None:
        assert loop.time() - first_write < MAX_LAG + 5, "the lagging replica kept answering"
        # Two reads one after the other may straddle the moment the replica is dropped:
        # each is the replica's older state or the primary's, never anything else.
        for seen in await readings(client, BOB, "c"):
            if seen == written:
                fell_back = fell_back or loop.time()
            else:
                assert fell_back is None and seen == ["zero"]
        await asyncio.sleep(0.05)
    assert MAX_LAG <= fell_back - first_write <= MAX_LAG + 1.5
    assert not replicas.replicas[0].healthy
    assert replicas.replicas[0].lag > MAX_LAG
    # Resumed: it catches up and is taken back.
    replica_pair.resume_replay()
    await caught_up(replicas)
    before = replicas.replicas[0].served
    assert await texts(client, BOB, "c") == written
    assert replicas.replicas[0].served > before


async def test_a_stopped_replica_costs_no_error_and_is_taken_back(
        served: tuple[GraphQLClient, ReplicaSet], replica_pair: ReplicaPair) -> None:
    client, replicas = served
    await client.data(CREATE, {"id": "c"}, ALICE)
    await client.data(APPEND, {"chat": "c", "append": "a0", "text": "zero"}, ALICE)
    await caught_up(replicas)
    assert await texts(client, BOB, "c") == ["zero"]  # warms the replica's pools
    replica_pair.stop_replica()
    # At once, before any health check has noticed: every read still answers.
    for n in range(1, 6):
        await client.data(APPEND, {"chat": "c", "append": f"a{n}", "text": f"m{n}"}, ALICE)
        for headers in (ALICE, BOB):
            assert (await texts(client, headers, "c"))[-1] == f"m{n}"
            # Named by its first question (written before the replica stopped).
            assert (await client.data(TITLE, {"chat": "c"}, headers))["chat"] == {
                "title": "zero"}
    await replicas.wait_checked()
    assert not replicas.replicas[0].healthy
    replica_pair.start_replica()
    await caught_up(replicas)
    before = replicas.replicas[0].served
    assert (await texts(client, BOB, "c"))[-1] == "m5"
    assert replicas.replicas[0].served > before


def test_replica_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env({
        "CHATQL_DATABASE_REPLICA_URLS": "postgresql://r1/db, postgresql://r2/db",
        "CHATQL_REPLICA_MAX_LAG": "2.5"})
    assert settings.database_replica_urls == ("postgresql://r1/db", "postgresql://r2/db")
    assert settings.replica_max_lag == 2.5
    with pytest.raises(ValueError, match="Postgres primary"):
        Database("sqlite+aiosqlite:///x.db", replica_urls=("postgresql://r1/db",))


async def test_a_live_lists_delivery_read_sees_the_write_it_announces(
        replicated: Settings, replica_pair: ReplicaPair) -> None:
    """A chatEvents subscriber's event is read at delivery: it shows the write it
    announces even while the replica (healthy, within its allowed lag) has not
    replayed it, though an ordinary read by the same subscriber still gets the
    replica's older state."""
    settings = dataclasses.replace(replicated, replica_max_lag=60)
    async with serve(settings) as (server, app), connect(server, PROTOCOLS[0], BOB) as ws:
        db: Database = app.state.services.db
        assert db.replicas is not None
        http = GraphQLClient(httpx.AsyncClient(base_url=f"http://{server}"))
        try:
            await http.data(CREATE, {"id": "c"}, ALICE)
            await caught_up(db.replicas)
            sidebar = await ws.start(EVENTS, {})
            await listening(app)
            replica_pair.pause_replay()
            await http.data(RENAME, {"chat": "c", "title": "fresh"}, ALICE)
            payload = await ws.receive(sidebar)
            assert payload is not None
            event = payload["data"]["chatEvents"]
            assert (event["type"], event["chat"]["title"]) == ("UPDATED", "fresh")
            # The replica still answers bob's own reads, with the state before the write.
            assert (await http.data(TITLE, {"chat": "c"}, BOB))["chat"]["title"] is None
            assert db.replicas.replicas[0].healthy
        finally:
            await http.http.aclose()
            replica_pair.resume_replay()


async def test_reads_inside_a_write_stay_on_the_primary(replicated: Settings) -> None:
    db = Database(replicated.database_url, replica_urls=replicated.database_replica_urls,
                  replica_max_lag=MAX_LAG)
    assert db.replicas is not None

    async def in_recovery() -> bool:
        async with db.read() as conn:
            return bool(await conn.scalar(text("SELECT pg_is_in_recovery()")))

    try:
        await caught_up(db.replicas)
        # A task of its own: no write of this test's context to wait for.
        assert await asyncio.create_task(in_recovery(), context=contextvars.Context())
        async with db.write() as conn:
            await conn.execute(text("SELECT 1"))
            assert not await in_recovery()
    finally:
        await db.dispose()
