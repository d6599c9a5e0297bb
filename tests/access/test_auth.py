"""Authentication: dev headers and JWT bearer tokens, over HTTP and WebSocket."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import websockets
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from chatql.gql.app import create_app
from chatql.gql.auth import ConfigurationError
from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient, running_app

HS_SECRET = "hs256-test-secret-0123456789abcdef-0123456789abcdef-0123456789"
WHO = 'mutation { createChat(input: {assistantId: "a"}) { createdBy teamId tenantId } }'

_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PRIVATE_PEM = _KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption()).decode()
PUBLIC_PEM = _KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def token(claims: dict[str, Any] | None = None, *, key: Any = HS_SECRET,
          algorithm: str = "HS256", drop: tuple[str, ...] = ()) -> str:
    payload: dict[str, Any] = {"sub": "alice", "tenant_id": "acme", "team_id": "red",
                               "roles": ["agent"], "exp": int(time.time()) + 300}
    payload.update(claims or {})
    for name in drop:
        payload.pop(name)
    return jwt.encode(payload, key, algorithm=algorithm)


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


@pytest.fixture
def jwt_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, auth="jwt", jwt_secret=HS_SECRET,
                               jwt_public_key=PUBLIC_PEM)


@pytest.fixture
async def jwt_client(jwt_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(jwt_settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            yield http


async def _post(http: httpx.AsyncClient, query: str,
                headers: dict[str, str] | None = None) -> httpx.Response:
    return await http.post("/graphql", json={"query": query}, headers=headers)


async def test_dev_mode_stays_the_default(client: GraphQLClient) -> None:
    assert Settings().auth == "dev"
    data = await client.data(WHO, headers={"X-User-Id": "bob", "X-Tenant-Id": "t9",
                                           "X-Team-Id": "blue"})
    assert data["createChat"] == {"createdBy": "bob", "teamId": "blue", "tenantId": "t9"}
    data = await client.data(WHO)
    assert data["createChat"] == {"createdBy": "dev", "teamId": None, "tenantId": "default"}


@pytest.mark.parametrize("algorithm", ["HS256", "RS256"])
async def test_valid_token_names_the_caller(jwt_client: httpx.AsyncClient,
                                            algorithm: str) -> None:
    key = HS_SECRET if algorithm == "HS256" else PRIVATE_PEM
    response = await _post(jwt_client, WHO, bearer(token(key=key, algorithm=algorithm)))
    assert response.status_code == 200
    assert response.json() == {"data": {"createChat": {
        "createdBy": "alice", "teamId": "red", "tenantId": "acme"}}}


async def test_optional_claims_may_be_left_out(jwt_client: httpx.AsyncClient) -> None:
    for claims in ({"team_id": ""}, {"team_id": None, "roles": None}):
        response = await _post(jwt_client, WHO, bearer(token(claims)))
        assert response.json()["data"]["createChat"] == {
            "createdBy": "alice", "teamId": None, "tenantId": "acme"}
    response = await _post(jwt_client, WHO, bearer(token(drop=("team_id", "roles"))))
    assert response.json()["data"]["createChat"]["teamId"] is None


@pytest.mark.parametrize("roles", [["admin"], "agent, admin", "admin"])
async def test_roles_claim_as_list_or_comma_string(
    jwt_client: httpx.AsyncClient, roles: Any
) -> None:
    # The owner's private chat is visible to another user only through the admin role.
    owner = bearer(token({"sub": "owner", "roles": []}))
    created = await _post(jwt_client, 'mutation { createChat(input: {id: "r1", '
                          'assistantId: "a"}) { id } }', owner)
    assert created.status_code == 200 and "errors" not in created.json()
    seen = await _post(jwt_client, '{ chat(id: "r1") { id } }',
                       bearer(token({"sub": "other", "roles": roles})))
    assert seen.json() == {"data": {"chat": {"id": "r1"}}}
    hidden = await _post(jwt_client, '{ chat(id: "r1") { id } }',
                         bearer(token({"sub": "other", "roles": []})))
    assert hidden.json() == {"data": {"chat": None}}


def _bad_tokens() -> list[tuple[str, dict[str, str]]]:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return [
        ("missing", {}),
        ("empty", {"Authorization": ""}),
        ("not bearer", {"Authorization": f"Basic {token()}"}),
        ("garbage", bearer("not-a-jwt")),
        ("expired", bearer(token({"exp": int(time.time()) - 10}))),
        ("not yet valid", bearer(token({"nbf": int(time.time()) + 600}))),
        ("wrong HS secret", bearer(token(key="another-secret-of-sufficient-length-123"))),
        ("wrong RSA key", bearer(token(key=other_key, algorithm="RS256"))),
        ("alg none", bearer(jwt.encode({"sub": "a", "tenant_id": "t",
                                        "exp": int(time.time()) + 60}, None,
                                       algorithm="none"))),
        ("HS384 not configured", bearer(token(algorithm="HS384"))),
        ("no exp", bearer(token(drop=("exp",)))),
        ("no sub", bearer(token(drop=("sub",)))),
        ("no tenant", bearer(token(drop=("tenant_id",)))),
        ("sub not a string", bearer(token({"sub": 42}))),
        ("roles not a list", bearer(token({"roles": {"admin": True}}))),
        ("tampered", bearer(token()[:-4] + "AAAA")),
        ("dev headers", {"X-User-Id": "alice", "X-Tenant-Id": "acme"}),
    ]


@pytest.mark.parametrize(("case", "headers"), _bad_tokens(), ids=[c for c, _ in _bad_tokens()])
async def test_bad_credentials_are_unauthenticated_with_401(
    jwt_client: httpx.AsyncClient, db: Database, case: str, headers: dict[str, str]
) -> None:
    before = await store_fingerprint(db)
    response = await _post(jwt_client, WHO, headers)
    assert response.status_code == 401, case
    assert response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED"}
    assert "Traceback" not in response.text
    assert await store_fingerprint(db) == before


async def test_alg_confusion_public_key_as_hmac_secret_is_refused(
    jwt_client: httpx.AsyncClient,
) -> None:
    # Signing HS256 with the public key (which an attacker knows) must not verify.
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = ".".join([
        b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
        b64(json.dumps({"sub": "mallory", "tenant_id": "acme", "roles": ["admin"],
                        "exp": int(time.time()) + 60}).encode()),
    ])
    signature = hmac.new(PUBLIC_PEM.encode(), signing_input.encode(), hashlib.sha256).digest()
    forged_token = f"{signing_input}.{b64(signature)}"
    response = await _post(jwt_client, WHO, bearer(forged_token))
    assert response.status_code == 401


async def test_graphiql_page_needs_no_token(jwt_client: httpx.AsyncClient) -> None:
    page = await jwt_client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    query = await jwt_client.get("/graphql", params={"query": '{ chat(id: "x") { id } }'})
    assert query.status_code == 401


async def test_public_key_can_be_a_file_path(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "key.pem"
    path.write_text(PUBLIC_PEM)
    configured = dataclasses.replace(settings, auth="jwt", jwt_public_key=str(path))
    async with running_app(configured) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            good = await _post(http, WHO, bearer(token(key=PRIVATE_PEM, algorithm="RS256")))
            hs = await _post(http, WHO, bearer(token()))
    assert good.json()["data"]["createChat"]["createdBy"] == "alice"
    assert hs.status_code == 401  # no HS256 secret configured: HS256 tokens are refused


async def test_audience_and_issuer_are_checked_when_configured(settings: Settings) -> None:
    configured = dataclasses.replace(settings, auth="jwt", jwt_secret=HS_SECRET,
                                     jwt_audience="chatql", jwt_issuer="https://idp")
    async with running_app(configured) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            good = await _post(http, WHO, bearer(token({"aud": "chatql",
                                                        "iss": "https://idp"})))
            wrong_aud = await _post(http, WHO, bearer(token({"aud": "other",
                                                             "iss": "https://idp"})))
            no_iss = await _post(http, WHO, bearer(token({"aud": "chatql"})))
    assert good.status_code == 200 and "errors" not in good.json()
    assert (wrong_aud.status_code, no_iss.status_code) == (401, 401)


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"auth": "jwt"}, "needs CHATQL_JWT_SECRET"),
        ({"auth": "jwt", "jwt_secret": "short"}, "at least 32 bytes"),
        ({"auth": "jwt", "jwt_public_key": "-----BEGIN PUBLIC KEY-----\nnope\n"
                                           "-----END PUBLIC KEY-----"}, "not a usable"),
        ({"auth": "jwt", "jwt_public_key": "/no/such/key.pem"}, "PEM text or the path"),
        ({"auth": "oauth"}, "must be one of dev, jwt"),
    ],
)
def test_unusable_auth_settings_fail_at_startup(changes: dict[str, str],
                                                complaint: str) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        create_app(dataclasses.replace(Settings(), **changes))


def test_settings_from_env_reads_jwt_configuration() -> None:
    settings = Settings.from_env({"CHATQL_AUTH": "jwt", "CHATQL_JWT_SECRET": HS_SECRET,
                                  "CHATQL_JWT_AUDIENCE": "chatql"})
    assert (settings.auth, settings.jwt_secret, settings.jwt_audience) == (
        "jwt", HS_SECRET, "chatql")
    create_app(settings)


# --- WebSocket: the connection_init payload carries Authorization --------------------


async def _ws_init(server: str, payload: dict[str, Any]) -> tuple[Any, Any]:
    ws = await websockets.connect(f"ws://{server}/graphql",
                                  subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]
    await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
    try:
        reply = json.loads(await ws.recv())
    except websockets.ConnectionClosed:
        reply = None
    return ws, reply


@pytest.fixture
async def jwt_server(jwt_settings: Settings) -> AsyncIterator[str]:
    import asyncio

    import uvicorn

    from tests.conftest import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        create_app(jwt_settings), host="127.0.0.1", port=port, log_level="warning",
        ws="websockets-sansio", lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.mark.parametrize("payload", [
    {},
    {"Authorization": "Bearer nope"},
    {"Authorization": f"Bearer {token({'exp': 1})}"},
    {"X-User-Id": "alice", "X-Tenant-Id": "acme"},
], ids=["none", "garbage", "expired", "dev-keys"])
async def test_websocket_bad_token_closes_4403(jwt_server: str,
                                               payload: dict[str, Any]) -> None:
    ws, reply = await _ws_init(jwt_server, payload)
    await ws.wait_closed()
    assert reply is None
    assert ws.close_code == 4403


async def test_websocket_valid_token_in_payload(jwt_server: str) -> None:
    ws, reply = await _ws_init(jwt_server, {"Authorization": f"Bearer {token()}"})
    async with ws:
        assert reply == {"type": "connection_ack"}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": WHO}}))
        answer = json.loads(await ws.recv())
        assert answer["payload"] == {"data": {"createChat": {
            "createdBy": "alice", "teamId": "red", "tenantId": "acme"}}}


async def test_legacy_protocol_bad_token_is_refused(jwt_server: str) -> None:
    async with websockets.connect(f"ws://{jwt_server}/graphql",
                                  subprotocols=["graphql-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init",
                                  "payload": {"Authorization": "Bearer nope"}}))
        assert json.loads(await ws.recv())["type"] == "connection_error"
        await ws.wait_closed()
    assert ws.close_code == 1011


async def test_websocket_handshake_header_stands_in_for_an_empty_payload(
    jwt_server: str,
) -> None:
    async with websockets.connect(
        f"ws://{jwt_server}/graphql", subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        additional_headers=bearer(token({"sub": "header-user"})),
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv()) == {"type": "connection_ack"}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": WHO}}))
        answer = json.loads(await ws.recv())
        assert answer["payload"]["data"]["createChat"]["createdBy"] == "header-user"
