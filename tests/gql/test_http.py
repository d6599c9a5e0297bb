"""The GraphQL API over HTTP: chats, appends, messages, error codes, health."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import GraphQLClient

CREATE = """
mutation($input: CreateChatInput!) {
  createChat(input: $input) { id title assistantId mode status public share sort
    createdBy updatedBy teamId tenantId createdAt updatedAt lastMessageAt metadata }
}"""
APPEND = """
mutation($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages) {
    chatId appendId digest messageIds firstSequence lastSequence }
}"""
MESSAGES = """
query($chatId: ID!, $first: Int, $after: String, $last: Int, $before: String,
      $filter: MessageFilter) {
  messages(chatId: $chatId, first: $first, after: $after, last: $last, before: $before,
           filter: $filter) {
    edges { cursor node { id sequence role type props status } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"""
STATE = """
query($id: ID!) { chat(id: $id) { id lastMessageAt messages(last: 200) {
  edges { node { id sequence props } } } } }"""


def user_input(content: str) -> dict[str, Any]:
    return {"role": "USER", "type": "user_input", "props": {"content": content}}


async def create(client: GraphQLClient, **input: Any) -> dict[str, Any]:
    data = await client.data(CREATE, {"input": {"assistantId": "helper", **input}})
    chat: dict[str, Any] = data["createChat"]
    return chat


async def test_create_and_read_chat_records_caller(
    client: GraphQLClient, make_headers: Callable[..., dict[str, str]]
) -> None:
    headers = make_headers(user="alice", tenant="acme", team="red")
    data = await client.data(
        CREATE, {"input": {"assistantId": "helper", "title": "Plans", "metadata": {"a": 1}}},
        headers,
    )
    chat = data["createChat"]
    assert (chat["createdBy"], chat["teamId"], chat["tenantId"]) == ("alice", "red", "acme")
    assert (chat["status"], chat["share"], chat["mode"], chat["public"]) == (
        "ACTIVE", "PRIVATE", "chat", False)
    assert chat["createdAt"].endswith("+00:00")
    read = await client.data("query($id: ID!) { chat(id: $id) { id title metadata } }",
                             {"id": chat["id"]}, headers)
    assert read["chat"] == {"id": chat["id"], "title": "Plans", "metadata": {"a": 1}}
    other = await client.data("query($id: ID!) { chat(id: $id) { id } }", {"id": chat["id"]},
                              make_headers(user="eve", tenant="other"))
    assert other["chat"] is None


async def test_dev_identity_defaults(client: GraphQLClient) -> None:
    chat = await create(client)
    assert (chat["createdBy"], chat["tenantId"]) == ("dev", "default")


async def test_chat_id_rules(client: GraphQLClient) -> None:
    await create(client, id="chat-1")
    assert await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "chat-1"}}) == (
        "CONFLICT")
    assert await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "bad id"}}) == (
        "INVALID_ARGUMENT")
    assert await client.error_code(
        "query { chat(id: \"no/slash\") { id } }") == "INVALID_ARGUMENT"


async def test_update_delete_restore_purge(client: GraphQLClient) -> None:
    await create(client, id="c1")
    update = """mutation($input: UpdateChatInput!) { updateChat(id: "c1", input: $input) {
      title status share public sort metadata } }"""
    data = await client.data(update, {"input": {"title": "T", "status": "ARCHIVED", "sort": 3,
                                                "share": "TEAM", "public": True}})
    assert data["updateChat"] == {"title": "T", "status": "ARCHIVED", "share": "TEAM",
                                  "public": True, "sort": 3, "metadata": None}
    assert (await client.data('mutation { deleteChat(id: "c1") }'))["deleteChat"] is True
    assert (await client.data('query { chat(id: "c1") { id } }'))["chat"] is None
    restored = await client.data('mutation { restoreChat(id: "c1") { id title } }')
    assert restored["restoreChat"] == {"id": "c1", "title": "T"}
    assert (await client.data('mutation { purgeChat(id: "c1") }'))["purgeChat"] is True
    assert (await client.data('mutation { purgeChat(id: "c1") }'))["purgeChat"] is True
    assert await client.error_code(CREATE, {"input": {"assistantId": "a", "id": "c1"}}) == (
        "CONFLICT")
    assert await client.error_code('mutation { restoreChat(id: "nope") { id } }') == (
        "NOT_FOUND")


async def test_append_is_idempotent_over_http(client: GraphQLClient) -> None:
    await create(client, id="c1")
    batch = [user_input("hello"), {"role": "ASSISTANT", "type": "text",
                                   "props": {"content": "hi!"}, "requestId": "r1"}]
    variables = {"chatId": "c1", "appendId": "req-1", "messages": batch}
    first = (await client.data(APPEND, variables))["appendMessages"]
    assert (first["firstSequence"], first["lastSequence"]) == (1, 2)
    assert len(first["digest"]) == 64 and len(first["messageIds"]) == 2
    again = (await client.data(APPEND, variables))["appendMessages"]
    assert again == first
    variables["messages"] = [user_input("changed")]
    assert await client.error_code(APPEND, variables) == "APPEND_CONFLICT"
    state = (await client.data(STATE, {"id": "c1"}))["chat"]
    assert [e["node"]["sequence"] for e in state["messages"]["edges"]] == [1, 2]
    assert state["lastMessageAt"] is not None


@pytest.mark.parametrize(
    ("variables", "code"),
    [
        ({"chatId": "c1", "appendId": "a", "messages": []}, "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": "x" * 129, "messages": [user_input("x")]},
         "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": "a", "messages": [
            {"role": "USER", "type": "text", "props": "not an object"}]}, "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": "a", "messages": [
            {"role": "USER", "type": "text", "props": [1, 2]}]}, "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": "a", "messages": [
            {"role": "NOBODY", "type": "text", "props": {}}]}, "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": "a", "messages": [
            user_input("ok"), {"role": "USER", "type": "text", "props": {}, "metadata": 5}]},
         "INVALID_ARGUMENT"),
        ({"chatId": "missing", "appendId": "a", "messages": [user_input("x")]}, "NOT_FOUND"),
        ({"chatId": "bad id", "appendId": "a", "messages": [user_input("x")]},
         "INVALID_ARGUMENT"),
        ({"chatId": "c1", "appendId": 5, "messages": [user_input("x")]}, "INVALID_ARGUMENT"),
    ],
)
async def test_bad_appends_leave_store_unchanged(
    client: GraphQLClient, variables: dict[str, Any], code: str
) -> None:
    await create(client, id="c1")
    await client.data(APPEND, {"chatId": "c1", "appendId": "seed", "messages": [user_input("0")]})
    before = await client.data(STATE, {"id": "c1"})
    assert await client.error_code(APPEND, variables) == code
    assert await client.data(STATE, {"id": "c1"}) == before


async def test_purged_chat_append_retry_is_chat_closed(client: GraphQLClient) -> None:
    await create(client, id="c1")
    variables = {"chatId": "c1", "appendId": "a1", "messages": [user_input("x")]}
    await client.data(APPEND, variables)
    await client.data('mutation { purgeChat(id: "c1") }')
    assert await client.error_code(APPEND, variables) == "CHAT_CLOSED"


async def test_concurrent_appends_over_http(client: GraphQLClient) -> None:
    await create(client, id="c1")
    results = await asyncio.gather(*(
        client.data(APPEND, {"chatId": "c1", "appendId": f"a{i}",
                             "messages": [user_input(str(i))]})
        for i in range(20)
    ))
    sequences = sorted(r["appendMessages"]["firstSequence"] for r in results)
    assert sequences == list(range(1, 21))
    retries = await asyncio.gather(*(
        client.data(APPEND, {"chatId": "c1", "appendId": "again",
                             "messages": [user_input("once")]})
        for _ in range(20)
    ))
    assert len({r["appendMessages"]["firstSequence"] for r in retries}) == 1
    state = (await client.data(STATE, {"id": "c1"}))["chat"]
    assert [e["node"]["sequence"] for e in state["messages"]["edges"]] == list(range(1, 22))


async def test_update_and_delete_messages(client: GraphQLClient) -> None:
    await create(client, id="c1")
    ids = (await client.data(APPEND, {"chatId": "c1", "appendId": "a", "messages": [
        user_input("a"), user_input("b")]}))["appendMessages"]["messageIds"]
    updated = await client.data(
        """mutation($id: ID!) { updateMessage(id: $id, input: {props: {content: "A"},
           status: INTERRUPTED}) { id props status sequence } }""", {"id": ids[0]})
    assert updated["updateMessage"] == {"id": ids[0], "props": {"content": "A"},
                                        "status": "INTERRUPTED", "sequence": 1}
    assert await client.error_code(
        'mutation { updateMessage(id: "nope", input: {props: {}}) { id } }') == "NOT_FOUND"
    deleted = await client.data(
        'mutation($ids: [ID!]!) { deleteMessages(chatId: "c1", ids: $ids) }',
        {"ids": [ids[1], "unknown"]})
    assert deleted["deleteMessages"] == 1


async def test_message_pages_and_cursors(client: GraphQLClient) -> None:
    await create(client, id="c1")
    await create(client, id="c2")
    await client.data(APPEND, {"chatId": "c1", "appendId": "a", "messages": [
        user_input(str(i)) for i in range(60)]})
    default = (await client.data(MESSAGES, {"chatId": "c1"}))["messages"]
    assert [e["node"]["sequence"] for e in default["edges"]] == list(range(11, 61))
    assert default["pageInfo"]["hasPreviousPage"] and not default["pageInfo"]["hasNextPage"]
    older = (await client.data(MESSAGES, {"chatId": "c1", "last": 50,
                                          "before": default["pageInfo"]["startCursor"]}))
    assert [e["node"]["sequence"] for e in older["messages"]["edges"]] == list(range(1, 11))
    assert not older["messages"]["pageInfo"]["hasPreviousPage"]
    cursor = default["pageInfo"]["startCursor"]
    assert await client.error_code(MESSAGES, {"chatId": "c2", "after": cursor}) == (
        "INVALID_CURSOR")
    assert await client.error_code(MESSAGES, {"chatId": "c1", "after": cursor,
                                              "filter": {"role": "USER"}}) == "INVALID_CURSOR"
    assert await client.error_code(MESSAGES, {"chatId": "c1", "after": cursor[:-2] + "xx"}) == (
        "INVALID_CURSOR")
    assert await client.error_code(MESSAGES, {"chatId": "c1", "after": "garbage"}) == (
        "INVALID_CURSOR")
    assert await client.error_code(MESSAGES, {"chatId": "c1", "first": 0}) == "INVALID_ARGUMENT"


async def test_graphql_input_errors_are_invalid_argument(client: GraphQLClient) -> None:
    for document in ("query { chat(id: true) { id } }", "query { nosuchfield }", "query {"):
        body = await client.execute(document)
        assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT", document


async def test_unexpected_errors_are_masked(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatql.store.chats import chat as store_chats

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError('relation "chats" does not exist: SELECT * FROM chats')

    monkeypatch.setattr(store_chats, "get_chat", broken)
    body = await client.execute('query { chat(id: "c1") { id } }')
    error = body["errors"][0]
    assert error == {"message": "Internal server error", "locations": error["locations"],
                     "path": ["chat"], "extensions": {"code": "INTERNAL"}}


async def test_healthz_and_graphiql(client: GraphQLClient) -> None:
    assert (await client.http.get("/healthz")).json() == {"status": "ok"}
    page = await client.http.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    get = await client.http.get("/graphql", params={"query": "{ chat(id: \"x\") { id } }"})
    assert get.json() == {"data": {"chat": None}}


async def test_healthz_stays_alive_when_the_database_is_unreachable(tmp_path: Any) -> None:
    from chatql.gql.settings import Settings
    from tests.conftest import running_app

    settings = Settings(database_url="postgresql+asyncpg://nobody@127.0.0.1:1/none",
                        secret="x" * 32, migrate_on_start=False)
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            alive = await http.get("/healthz")
            ready = await http.get("/readyz")
    # Liveness only: a database outage must not make an orchestrator restart the process.
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    assert ready.status_code == 503
    assert ready.json() == {"status": "not ready", "failed": ["database"]}
