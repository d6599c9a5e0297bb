"""Hardening: document limits, body limit, page caps, GraphiQL switch,
CORS, transport errors shaped like GraphQL, and no internals in any error."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from graphql import get_introspection_query

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient, running_app

DEEP = '{ chat(id: "c") { messages { edges { node { id } } } } }'  # depth 4


@asynccontextmanager
async def http_for(settings: Settings, **changes: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(dataclasses.replace(settings, **changes)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield http


def _code(response: httpx.Response) -> str:
    code: str = response.json()["errors"][0]["extensions"]["code"]
    return code


async def _create(client: GraphQLClient, chat_id: str = "c") -> None:
    await client.data('mutation($id: ID!) { createChat(input: {id: $id, assistantId: "a"}) '
                      "{ id } }", {"id": chat_id})


# --- document limits ----------------------------------------------------------------


async def test_depth_limit(settings: Settings) -> None:
    async with http_for(settings, max_query_depth=3) as http:
        over = await http.post("/graphql", json={"query": DEEP})
        at = await http.post("/graphql", json={"query": '{ chat(id: "c") { messages { '
                                                        "pageInfo { hasNextPage } } } }"})
    assert over.status_code == 200 and _code(over) == "QUERY_TOO_COMPLEX"
    assert "4 levels deep" in over.json()["errors"][0]["message"]
    assert at.json() == {"data": {"chat": None}}


async def test_depth_limit_counts_fragments(settings: Settings) -> None:
    query = ('query { chat(id: "c") { ...M } } fragment M on Chat { messages { edges { '
             "node { id } } } }")
    async with http_for(settings, max_query_depth=3) as http:
        response = await http.post("/graphql", json={"query": query})
    assert _code(response) == "QUERY_TOO_COMPLEX"


async def test_empty_selection_sets_are_measured_not_crashed_on(
    client: GraphQLClient,
) -> None:
    # graphql-core 3.3 accepts empty selection sets; Strawberry's depth rule crashed.
    for query in ("{}", "{ ...on Query { } }", "query A { } query B { __typename }"):
        body = await client.execute(query, {} if "B" not in query else None)
        assert "errors" not in body or body["errors"][0]["extensions"]["code"] != "INTERNAL"
    assert await client.data("{ ...on Query { } }") == {}


def _fragment_bomb(levels: int, leaf: str) -> str:
    fragments = [f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)]
    return "{ ...F0 } " + " ".join([*fragments, f"fragment F{levels} on Query {{ {leaf} }}"])


async def test_fragment_bombs_are_measured_in_linear_time(client: GraphQLClient) -> None:
    # 2^60 spreads of one alias: counted (memoised per fragment) and refused at once.
    body = await asyncio.wait_for(
        client.execute(_fragment_bomb(60, "a: __typename")), timeout=10)
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert str(2**60) in body["errors"][0]["message"]
    plain = await asyncio.wait_for(client.execute(_fragment_bomb(60, "__typename")), 10)
    assert plain == {"data": {"__typename": "Query"}}


async def test_long_fragment_chains_cannot_exhaust_the_stack(settings: Settings) -> None:
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(3000))
    query = f"{{ ...F0 }} {chain} fragment F3000 on Query {{ __typename }}"
    async with http_for(settings, max_query_tokens=100_000) as http:
        response = await http.post("/graphql", json={"query": query})
    assert response.status_code == 200
    codes = {error["extensions"]["code"] for error in response.json()["errors"]}
    assert "QUERY_TOO_COMPLEX" in codes and "INTERNAL" not in codes


async def test_token_limit_stops_a_mutation_before_it_runs(
    settings: Settings, db: Database
) -> None:
    padding = " ".join(f"t{i}: __typename" for i in range(40))
    query = ('mutation { createChat(input: {id: "big", assistantId: "a"}) { id } '
             f"{padding} }}")
    before = await store_fingerprint(db)
    async with http_for(settings, max_query_tokens=100, max_query_aliases=1000) as http:
        response = await http.post("/graphql", json={"query": query})
        comments = await http.post("/graphql", json={"query": "#c\n" * 500 + "{ __typename }"})
    assert _code(response) == "QUERY_TOO_COMPLEX"
    assert _code(comments) == "QUERY_TOO_COMPLEX"
    assert await store_fingerprint(db) == before


async def test_alias_limit(client: GraphQLClient, settings: Settings) -> None:
    many = "{ " + " ".join(f"a{i}: chat(id: \"x\") {{ id }}" for i in range(51)) + " }"
    assert await client.error_code(many) == "QUERY_TOO_COMPLEX"
    fifty = "{ " + " ".join(f"a{i}: chat(id: \"x\") {{ id }}" for i in range(50)) + " }"
    assert len(await client.data(fifty)) == 50
    assert settings.max_query_aliases == 50


async def test_deeply_nested_values_are_too_complex(client: GraphQLClient) -> None:
    nested = "[" * 1500 + "]" * 1500  # under the token limit: the parser gives up
    code = await client.error_code(
        f'mutation {{ createChat(input: {{assistantId: "a", metadata: {nested}}}) {{ id }} }}')
    assert code == "QUERY_TOO_COMPLEX"


async def test_graphiql_introspection_fits_the_default_limits(client: GraphQLClient) -> None:
    data = await client.data(get_introspection_query(descriptions=True))
    assert data["__schema"]["queryType"]["name"] == "Query"


def test_limits_are_read_from_the_environment() -> None:
    settings = Settings.from_env({"CHATQL_MAX_QUERY_DEPTH": "5", "CHATQL_MAX_QUERY_TOKENS": "9",
                                  "CHATQL_MAX_QUERY_ALIASES": "2"})
    assert (settings.max_query_depth, settings.max_query_tokens,
            settings.max_query_aliases) == (5, 9, 2)


# --- request body limit ---------------------------------------------------------------


async def test_body_over_the_limit_is_413_and_writes_nothing(
    settings: Settings, db: Database
) -> None:
    before = await store_fingerprint(db)
    query = 'mutation($t: String) { createChat(input: {id: "x", assistantId: "a", title: $t})' \
            " { id } }"
    async with http_for(settings, max_body_bytes=2_000) as http:
        declared = await http.post("/graphql", json={"query": query,
                                                     "variables": {"t": "x" * 5_000}})

        async def chunks() -> AsyncIterator[bytes]:
            # No Content-Length: the limit must hold while the body streams in.
            yield b'{"query": "' + query.replace('"', '\\"').encode() + b'", "variables": {"t": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}}'

        streamed = await http.post("/graphql", content=chunks(),
                                   headers={"content-type": "application/json"})
        small = await http.post("/graphql", json={"query": "{ __typename }"})
    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json()["errors"][0]["extensions"] == {"code": "PAYLOAD_TOO_LARGE"}
    assert "content-length" not in streamed.request.headers
    assert small.json() == {"data": {"__typename": "Query"}}
    assert await store_fingerprint(db) == before


# --- page caps --------------------------------------------------------------------------


async def test_first_and_last_are_capped(client: GraphQLClient) -> None:
    await _create(client)
    batch = [{"role": "USER", "type": "text", "props": {}} for _ in range(250)]
    await client.data("mutation($m: [MessageInput!]!) { appendMessages(chatId: \"c\", "
                      'appendId: "a", messages: $m) { lastSequence } }', {"m": batch})
    for arguments in ("first: 100000", "last: 100000"):
        data = await client.data(f'{{ messages(chatId: "c", {arguments}) {{ edges {{ node '
                                 "{ sequence } } } }")
        assert len(data["messages"]["edges"]) == 200
    for arguments in ("first: 0", "last: -1"):
        assert await client.error_code(
            f'{{ messages(chatId: "c", {arguments}) {{ edges {{ cursor }} }} }}'
        ) == "INVALID_ARGUMENT"


# --- GraphiQL switch and CORS ---------------------------------------------------------------


async def test_playground_can_be_switched_off(settings: Settings) -> None:
    async with http_for(settings, playground=False) as http:
        page = await http.get("/graphql", headers={"Accept": "text/html"})
        query = await http.get("/graphql", params={"query": "{ __typename }"})
    assert page.status_code == 404 and "graphiql" not in page.text.lower()
    assert query.json() == {"data": {"__typename": "Query"}}
    async with http_for(settings, playground=True) as http:
        page = await http.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    assert Settings.from_env({"CHATQL_PLAYGROUND": "false"}).playground is False


async def test_cors_preflight_allows_only_configured_origins(settings: Settings) -> None:
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, authorization"}
    async with http_for(settings, cors_origins=("https://app.example",)) as http:
        allowed = await http.options("/graphql", headers={
            "Origin": "https://app.example", **preflight})
        refused = await http.options("/graphql", headers={
            "Origin": "https://evil.example", **preflight})
        simple = await http.post("/graphql", json={"query": "{ __typename }"},
                                 headers={"Origin": "https://app.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    assert simple.headers["access-control-allow-origin"] == "https://app.example"
    assert Settings.from_env({"CHATQL_CORS_ORIGINS": "https://a, https://b"}).cors_origins == (
        "https://a", "https://b")


async def test_no_cors_headers_by_default(client: GraphQLClient) -> None:
    response = await client.http.post("/graphql", json={"query": "{ __typename }"},
                                      headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in response.headers


# --- transport errors and internals -----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "content_type", "status"),
    [
        (b"{not json", "application/json", 400),
        (b'\xff\xfe{"query": "{ __typename }"}', "application/json", 400),
        (b'{"query": "\xc3\x28"}', "application/json", 400),
        (b'"just a string"', "application/json", 400),
        (b"42", "application/json", 400),
        (b'{"query": 5}', "application/json", 400),
        (b'{"query": "{ __typename }", "variables": [1]}', "application/json", 400),
        (b"query { __typename }", "text/plain", 400),
        (b"", "application/json", 400),
    ],
)
async def test_transport_errors_are_graphql_shaped(
    client: GraphQLClient, content: bytes, content_type: str, status: int
) -> None:
    response = await client.http.post("/graphql", content=content,
                                      headers={"content-type": content_type})
    assert response.status_code == status
    body = response.json()
    assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
    assert "Traceback" not in response.text


async def test_lone_surrogates_become_replacement_characters(client: GraphQLClient) -> None:
    # Valid JSON escapes but not Unicode text: stored as U+FFFD on both backends.
    body = ('{"query": "mutation($t: String) { createChat(input: {id: \\"s\\", '
            'assistantId: \\"a\\", title: $t}) { title } }", '
            '"variables": {"t": "x\\ud800y\\udc00"}}')
    response = await client.http.post("/graphql", content=body.encode(),
                                      headers={"content-type": "application/json"})
    assert response.json() == {"data": {"createChat": {"title": "x\ufffdy\ufffd"}}}
    assert (await client.data('{ chat(id: "s") { title } }'))["chat"]["title"] == "x\ufffdy\ufffd"
    for refused in (b'{"query": "{ __typename }", "variables": {"a": "\\ud800", "n": NaN}}',
                    b'{"query": "{ __typename }", "variables": {"a": "\\ud800", "n": 1e999}}',
                    b'{"query": "\\ud800 \xff"}'):
        response = await client.http.post("/graphql", content=refused,
                                          headers={"content-type": "application/json"})
        assert response.status_code == 400, refused


async def test_wrong_method_is_shaped_too(client: GraphQLClient) -> None:
    response = await client.http.put("/graphql", json={"query": "{ __typename }"})
    assert response.status_code == 405


async def test_nul_characters_are_refused_on_every_backend(
    client: GraphQLClient, db: Database
) -> None:
    await _create(client)
    before = await store_fingerprint(db)
    create = 'mutation($t: String) { createChat(input: {id: "n", assistantId: "a", title: $t})' \
             " { id } }"
    append = ('mutation($p: JSON!) { appendMessages(chatId: "c", appendId: "x", messages: '
              '[{role: USER, type: "text", props: $p}]) { digest } }')
    cases = [
        (create, {"t": "a\x00b"}),
        (append, {"p": {"k\x00": 1}}),
        (append, {"p": {"k": ["deep", {"x": "\x00"}]}}),
        ('mutation { createChat(input: {id: "n", assistantId: "a", title: "a\\u0000"}) '
         "{ id } }", None),
    ]
    for query, variables in cases:
        assert await client.error_code(query, variables) == "INVALID_ARGUMENT"
    assert await store_fingerprint(db) == before


async def test_store_failures_show_no_sql_or_trace(
    client: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    from chatql.store.messages import message as store_messages

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("SELECT secret FROM chats WHERE id = $1", {}, Exception("db"))

    monkeypatch.setattr(store_messages, "list_messages", broken)
    monkeypatch.setattr(store_messages, "list_branch", broken)  # the default branch pages
    response = await client.http.post(
        "/graphql", json={"query": '{ messages(chatId: "c") { edges { cursor } } }'})
    assert response.status_code == 200
    text = response.text
    for leak in ("SELECT", "secret", "Traceback", "OperationalError", "File \""):
        assert leak not in text
    assert response.json()["errors"][0]["extensions"] == {"code": "INTERNAL"}
