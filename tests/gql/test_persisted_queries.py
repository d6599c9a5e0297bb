"""Persisted queries over real HTTP and WebSocket: Apollo's automatic protocol and the
manifest safelist, with the fast plans serving persisted documents."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatql.gql.app import create_app
from chatql.gql.auth import ConfigurationError
from chatql.gql.settings import Settings
from tests.conftest import uvicorn_serving
from tests.gql.test_streams_ws import ALICE, CREATE, PUSH, START
from tests.gql.wsclient import connect

CHATS = "query Chats { chats { totalCount } }"
NOT_FOUND = {"errors": [{"message": "PersistedQueryNotFound",
                         "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def apq(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha(document)}}


async def test_automatic_persisted_queries_over_http(settings: Settings) -> None:
    async with uvicorn_serving(create_app(settings)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        first = await http.post("/graphql", json={"extensions": apq(CHATS)}, headers=ALICE)
        assert (first.status_code, first.json()) == (200, NOT_FOUND)
        wrong = await http.post("/graphql", headers=ALICE, json={
            "query": CHATS, "extensions": apq("query { other }")})
        assert wrong.status_code == 400
        assert wrong.json()["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT"
        registered = await http.post("/graphql", headers=ALICE,
                                     json={"query": CHATS, "extensions": apq(CHATS)})
        assert registered.json() == {"data": {"chats": {"totalCount": 0}}}
        by_hash = await http.post("/graphql", json={"extensions": apq(CHATS)}, headers=ALICE)
        assert by_hash.json() == {"data": {"chats": {"totalCount": 0}}}
        # GET, as Apollo Client sends persisted queries with useGETForHashedQueries.
        got = await http.get("/graphql", headers=ALICE, params={
            "operationName": "Chats", "extensions": json.dumps(apq(CHATS))})
        assert got.json() == {"data": {"chats": {"totalCount": 0}}}
        # The push plan's fast lane serves a persisted pushChunks.
        await http.post("/graphql", json={"query": CREATE, "variables": {"id": "pq"}},
                        headers=ALICE)
        sid = (await http.post("/graphql", headers=ALICE, json={
            "query": START, "variables": {"input": {"chatId": "pq"}}})).json()[
                "data"]["startStream"]["id"]
        variables = {"id": sid, "chunks": [{"type": "text", "props": {"content": "x"}}]}
        await http.post("/graphql", headers=ALICE, json={
            "query": PUSH, "variables": variables, "extensions": apq(PUSH)})
        app_served = await http.post("/graphql", headers=ALICE, json={
            "variables": variables | {"chunks": [{"type": "text", "props": {}}]},
            "extensions": apq(PUSH)})
        assert app_served.json()["data"]["pushChunks"]["accepted"] == 1


async def test_automatic_persisted_queries_over_websocket(settings: Settings) -> None:
    async with uvicorn_serving(create_app(settings)) as port:
        for protocol in ("graphql-transport-ws", "graphql-ws"):
            async with connect(f"127.0.0.1:{port}", protocol, ALICE) as ws:
                kind = "subscribe" if protocol == "graphql-transport-ws" else "start"
                ws._inbox["h1"] = asyncio.Queue()
                await ws.ws.send(json.dumps({"id": "h1", "type": kind, "payload": {
                    "extensions": apq(CHATS + " ")}}))
                message = await ws._inbox["h1"].get()
                assert message["type"] == "error"
                errors = message["payload"]
                error = errors[0] if isinstance(errors, list) else errors
                assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        # Registered over HTTP, then sent by hash over the socket.
        async with httpx.AsyncClient(timeout=30) as http:
            await http.post(f"http://127.0.0.1:{port}/graphql", headers=ALICE,
                            json={"query": CHATS, "extensions": apq(CHATS)})
        async with connect(f"127.0.0.1:{port}", "graphql-transport-ws", ALICE) as ws:
            ws._inbox["h2"] = asyncio.Queue()
            await ws.ws.send(json.dumps({"id": "h2", "type": "subscribe", "payload": {
                "extensions": apq(CHATS)}}))
            message = await ws._inbox["h2"].get()
            assert message == {"id": "h2", "type": "next",
                               "payload": {"data": {"chats": {"totalCount": 0}}}}


def manifest(tmp_path: Path, *bodies: str) -> str:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({
        "format": "apollo-persisted-query-manifest", "version": 1,
        "operations": [{"id": sha(body), "name": "op", "type": "query", "body": body}
                       for body in bodies]}))
    return str(path)


async def test_persisted_only_accepts_the_manifest_alone(settings: Settings,
                                                         tmp_path: Path) -> None:
    safelisted = dataclasses.replace(settings, persisted_only=True,
                                     persisted_queries=manifest(tmp_path, CHATS))
    async with uvicorn_serving(create_app(safelisted)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        by_hash = await http.post("/graphql", json={"extensions": apq(CHATS)}, headers=ALICE)
        assert by_hash.json() == {"data": {"chats": {"totalCount": 0}}}
        in_full = await http.post("/graphql", json={"query": CHATS}, headers=ALICE)
        assert in_full.json() == {"data": {"chats": {"totalCount": 0}}}
        for body in ({"query": CREATE, "variables": {"id": "x"}},
                     {"query": "query { chats { totalCount } }"},
                     {"query": CREATE, "extensions": apq(CREATE), "variables": {"id": "x"}}):
            refused = await http.post("/graphql", json=body, headers=ALICE)
            assert refused.status_code == 400
            assert refused.json()["errors"][0]["extensions"]["code"] == (
                "PERSISTED_QUERY_NOT_IN_LIST")
        async with connect(f"127.0.0.1:{port}", "graphql-transport-ws", ALICE) as ws:
            ws._inbox["s"] = asyncio.Queue()
            await ws.ws.send(json.dumps({"id": "s", "type": "subscribe", "payload": {
                "query": CREATE, "variables": {"id": "y"}}}))
            message = await ws._inbox["s"].get()
            assert message["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_IN_LIST"
            assert await ws.execute(CHATS) == {"chats": {"totalCount": 0}}
        # Nothing the safelist refused was written.
        assert (await http.post("/graphql", json={"query": CHATS}, headers=ALICE)).json() == {
            "data": {"chats": {"totalCount": 0}}}


def test_a_safelist_without_a_manifest_or_with_a_bad_one_stops_the_server(
        settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="CHATQL_PERSISTED_QUERIES"):
        create_app(dataclasses.replace(settings, persisted_only=True))
    bad = tmp_path / "bad.json"
    bad.write_text('{"operations": []}')
    with pytest.raises(ConfigurationError, match="manifest"):
        create_app(dataclasses.replace(settings, persisted_queries=str(bad)))
