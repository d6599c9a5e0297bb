"""``/mcp`` over a real uvicorn server, with the MCP SDK's own clients, on both databases.

The streamable HTTP client lists the tools and calls each one, and every answer is
compared with what ``/graphql`` answers for the same data; the resource reads back as
Markdown. Access is the caller's: another user of the tenant and a user of another
tenant see nothing of a private chat, and its NOT_FOUND is word for word the one of a
chat that never existed. In JWT mode a request without a valid token is a 401 that the
SDK's client reports with its reason. ``chatql mcp --url`` serves the same tools over
stdio to the SDK's stdio client, and the example client of the docs runs as written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from chatql.gql.transport import mcp_stdio
from chatql.gql.transport.mcp import MCP_PATH
from chatql.gql.transport.mcp_tools import TOOL_NAMES
from chatql.store.text import message_text
from tests.conftest import uvicorn_serving

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "clients" / "examples" / "mcp" / "client.py"
GUIDE = ROOT / "docs" / "guides" / "mcp.md"

BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
# The same user id in another tenant.
MALLORY = {"X-User-Id": "bob", "X-Tenant-Id": "other"}
HS_SECRET = "hs256-test-secret-0123456789abcdef-0123456789abcdef-0123456789"

CREATE = """mutation($id: ID!, $title: String) {
  createChat(input: {assistantId: "bot", id: $id, title: $title}) { id } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { messageIds } }"""
REMEMBER = """mutation($content: String!) {
  writeMemory(input: {scope: "_global", content: $content}) { id } }"""
CHATS = """query { chats(first: 20) { edges { node {
  id title assistantId channel createdAt lastMessageAt } } } }"""
MESSAGES = """query($chat: ID!, $last: Int) { messages(chatId: $chat, last: $last) {
  edges { node { id role type props createdAt } } } }"""
SEARCH = """query($q: String!) { searchMessages(query: $q, first: 10, window: 1) {
  score chat { id title } message { id role type props createdAt }
  window { id role type props createdAt } } }"""
SEARCH_MEMORY = """query($q: String!) { searchMemory(query: $q, scopes: ["_global"], first: 10) {
  score entry { id scope content pinned subject createdAt updatedAt } } }"""


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(settings)) as port:
        yield f"http://127.0.0.1:{port}"


async def graphql(server: str, query: str, variables: dict[str, Any] | None = None,
                  who: dict[str, str] = BOB) -> Any:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"{server}/graphql", headers=who,
                                   json={"query": query, "variables": variables or {}})
    body = response.json()
    assert not body.get("errors"), body
    return body["data"]


@asynccontextmanager
async def mcp_client(server: str, headers: dict[str, str], **options: Any
                     ) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``headers`` with every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(f"{server}/mcp", http_client=http),
                   **options) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    # The text content is the same result as JSON, for clients that read only text.
    structured: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == structured  # type: ignore[union-attr]
    return structured


def failure(result: CallToolResult) -> str:
    assert result.is_error, result
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content["error"]["code"] == text.split(":")[0]
    return text


def viewed(message: dict[str, Any]) -> dict[str, Any]:
    """A GraphQL message as the tools show it."""
    return {"id": message["id"], "role": message["role"], "type": message["type"],
            "text": message_text(message["props"]), "created_at": message["createdAt"]}


def summary(chat: dict[str, Any]) -> dict[str, Any]:
    return {"id": chat["id"], "title": chat["title"], "assistant_id": chat["assistantId"],
            "channel": chat["channel"], "created_at": chat["createdAt"],
            "last_message_at": chat["lastMessageAt"]}


async def seed(server: str) -> None:
    """Bob's private chat with text, a tool call and an answer; Carol's own chat."""
    await graphql(server, CREATE, {"id": "trip", "title": "Trip to Lyon"})
    await graphql(server, APPEND, {"chat": "trip", "aid": "a1", "messages": [
        {"role": "USER", "type": "user_input", "props": {"content": "Trains to Lyon tonight?"}},
        {"role": "ASSISTANT", "type": "tool_call",
         "props": {"name": "timetable", "arguments": "{}"}},
        {"role": "ASSISTANT", "type": "text",
         "props": {"content": [{"type": "text", "text": "Two trains to Lyon: 19:04 "},
                               {"type": "text", "text": "and 21:30."}]}},
        {"role": "USER", "type": "user_input", "props": {"content": "Book the 19:04."}},
    ]})
    await graphql(server, CREATE, {"id": "other", "title": "Groceries"})
    await graphql(server, REMEMBER, {"content": "Bob travels by train, never by plane."})
    await graphql(server, CREATE, {"id": "carols", "title": "Lyon too"}, CAROL)


async def test_the_tools_are_listed_with_schemas_a_model_can_use(server: str) -> None:
    async with mcp_client(server, BOB) as client:
        listed = await client.list_tools()
        assert "search_memory" in (client.instructions or "")
    tools = {tool.name: tool for tool in listed.tools}
    assert tuple(tools) == TOOL_NAMES
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80, tool.name
        schema = tool.input_schema
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name not in ("remember",
                                                                      "append_message"))
    assert tools["read_chat"].input_schema["required"] == ["chat_id"]
    assert tools["append_message"].input_schema["required"] == ["chat_id", "role", "text"]
    assert tools["append_message"].input_schema["properties"]["role"]["enum"] == [
        "USER", "ASSISTANT"]
    assert tools["search_messages"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["remember"].input_schema["properties"]["content"]["maxLength"] == 4_000


async def test_each_tool_answers_what_graphql_answers(server: str) -> None:
    await seed(server)
    async with mcp_client(server, BOB) as client:
        listed = await call(client, "list_chats")
        graphql_chats = (await graphql(server, CHATS))["chats"]["edges"]
        assert listed == {"chats": [summary(edge["node"]) for edge in graphql_chats],
                          "next_cursor": None}
        assert [chat["id"] for chat in listed["chats"]] == ["other", "trip"]
        assert [c["id"] for c in (await call(client, "list_chats", query="lyon"))["chats"]] == [
            "trip"]
        first = await call(client, "list_chats", limit=1)
        second = await call(client, "list_chats", limit=1, cursor=first["next_cursor"])
        assert [first["chats"][0]["id"], second["chats"][0]["id"]] == ["other", "trip"]
        assert second["next_cursor"] is None

        # read_chat: the newest messages first, then the older page by its cursor.
        all_four = (await graphql(server, MESSAGES, {"chat": "trip", "last": 10}))
        expected = [viewed(edge["node"]) for edge in all_four["messages"]["edges"]]
        newest = await call(client, "read_chat", chat_id="trip", limit=3)
        assert newest["chat"] == summary((await graphql(server, CHATS))["chats"]["edges"][1][
            "node"])
        assert newest["messages"] == expected[1:]
        assert newest["messages"][0]["text"] is None  # the tool call has no words
        assert newest["messages"][1]["text"] == "Two trains to Lyon: 19:04 and 21:30."
        older = await call(client, "read_chat", chat_id="trip", limit=3,
                           cursor=newest["next_cursor"])
        assert older["messages"] == expected[:1] and older["next_cursor"] is None

        hits = (await call(client, "search_messages", query="lyon"))["hits"]
        graphql_hits = (await graphql(server, SEARCH, {"q": "lyon"}))["searchMessages"]
        assert hits == [{"score": hit["score"], "chat": hit["chat"],
                         "message": viewed(hit["message"]),
                         "window": [viewed(m) for m in hit["window"]]}
                        for hit in graphql_hits]
        assert {hit["message"]["id"] for hit in hits} == {expected[0]["id"], expected[2]["id"]}

        memory = (await call(client, "search_memory", query="train"))["hits"]
        graphql_memory = (await graphql(server, SEARCH_MEMORY, {"q": "train"}))["searchMemory"]
        assert [hit["entry"]["content"] for hit in memory] == [
            "Bob travels by train, never by plane."]
        assert memory == [{"score": hit["score"], "entry": {
            "id": hit["entry"]["id"], "scope": "_global", "content": hit["entry"]["content"],
            "pinned": False, "subject": "bob", "created_at": hit["entry"]["createdAt"],
            "updated_at": hit["entry"]["updatedAt"]}} for hit in graphql_memory]

        note = (await call(client, "remember", content="Bob likes window seats.",
                           write_id="seat"))["entry"]
        again = (await call(client, "remember", content="Bob likes window seats.",
                            write_id="seat"))["entry"]
        assert note == again and note["subject"] == "bob" and note["scope"] == "_global"
        seats = (await graphql(server, SEARCH_MEMORY, {"q": "window seats"}))["searchMemory"]
        assert [hit["entry"]["id"] for hit in seats] == [note["id"]]

        appended = await call(client, "append_message", chat_id="trip", role="ASSISTANT",
                              text="Booked: the 19:04 to Lyon.", append_id="book-1")
        retried = await call(client, "append_message", chat_id="trip", role="ASSISTANT",
                             text="Booked: the 19:04 to Lyon.", append_id="book-1")
        assert appended == retried and appended["sequence"] == 5
        after = (await graphql(server, MESSAGES, {"chat": "trip", "last": 10}))
        nodes = [edge["node"] for edge in after["messages"]["edges"]]
        assert len(nodes) == 5 and nodes[-1]["id"] == appended["message_id"]
        assert (nodes[-1]["role"], nodes[-1]["type"], nodes[-1]["props"]) == (
            "ASSISTANT", "text", {"content": "Booked: the 19:04 to Lyon."})
        person = await call(client, "append_message", chat_id="trip", role="USER", text="Merci")
        assert person["sequence"] == 6 and person["append_id"].startswith("mcp:")

        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["chatql://chats/{id}"]
        resources = await client.list_resources()
        assert [r.uri for r in resources.resources] == ["chatql://chats/trip",
                                                        "chatql://chats/other"]
        read = await client.read_resource("chatql://chats/trip")
        (content,) = read.contents
        assert content.mime_type == "text/markdown"
        text = content.text  # type: ignore[union-attr]
        assert text.startswith("# Trip to Lyon\n")
        for line in ("Trains to Lyon tonight?", "Two trains to Lyon: 19:04 and 21:30.",
                     "## ASSISTANT · " + nodes[1]["createdAt"] + " · tool_call",
                     "Booked: the 19:04 to Lyon.", "Merci"):
            assert line in text, text


async def test_arguments_are_checked_against_the_schemas(server: str) -> None:
    await seed(server)
    async with mcp_client(server, BOB) as client:
        assert failure(await client.call_tool("read_chat", {})) == (
            "INVALID_ARGUMENT: 'chat_id' is a required property")
        assert failure(await client.call_tool("read_chat", {"chat_id": "trip", "limit": 500})
                       ) == "INVALID_ARGUMENT: limit: 500 is greater than the maximum of 200"
        assert failure(await client.call_tool("append_message", {
            "chat_id": "trip", "role": "SYSTEM", "text": "x"})).startswith(
            "INVALID_ARGUMENT: role: 'SYSTEM' is not one of")
        assert failure(await client.call_tool("list_chats", {"chat": "x"})).startswith(
            "INVALID_ARGUMENT: Additional properties are not allowed")
        # What only the service knows is its error, with its code.
        assert failure(await client.call_tool("list_chats", {"cursor": "forged"})).startswith(
            "INVALID_CURSOR: ")
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("delete_everything", {})
        assert unknown.value.code == INVALID_PARAMS
        with pytest.raises(MCPError) as elsewhere:
            await client.read_resource("file:///etc/passwd")
        assert elsewhere.value.code == INVALID_PARAMS
    # Stateless: no stream opened by GET, no session to DELETE.
    async with httpx.AsyncClient(timeout=30) as http:
        for method in ("GET", "DELETE"):
            refused = await http.request(method, f"{server}/mcp", headers=BOB)
            assert refused.status_code == 405 and refused.headers["allow"] == "POST"
    # The handshake era of the protocol (initialize, then calls) is served as well.
    async with mcp_client(server, BOB, mode="legacy") as legacy:
        assert legacy.protocol_version != "2026-07-28"
        assert [c["id"] for c in (await call(legacy, "list_chats"))["chats"]] == [
            "other", "trip"]


async def test_another_user_or_tenant_sees_nothing_of_a_private_chat(server: str) -> None:
    await seed(server)
    for who in (CAROL, MALLORY):
        async with mcp_client(server, who) as client:
            listed = await call(client, "list_chats")
            assert not {"trip", "other"} & {chat["id"] for chat in listed["chats"]}
            hits = (await call(client, "search_messages", query="lyon"))["hits"]
            assert {hit["chat"]["id"] for hit in hits} <= {"carols"}
            assert (await call(client, "search_messages", query="19:04"))["hits"] == []
            assert (await call(client, "search_memory", query="train"))["hits"] == []
            # Bob's memory, named: empty for a reader without the agent role (Mallory's
            # "bob" is a person of another tenant: himself).
            assert (await call(client, "search_memory", query="train", subject="bob"))[
                "hits"] == []
            if who is CAROL:
                assert failure(await client.call_tool("remember", {
                    "content": "Bob flies now.", "subject": "bob"})).startswith("FORBIDDEN: ")

            # A private chat answers exactly as a chat that never existed.
            for tool, arguments in (
                    ("read_chat", {"chat_id": "{id}"}),
                    ("search_messages", {"query": "lyon", "chat_id": "{id}"}),
                    ("append_message", {"chat_id": "{id}", "role": "USER", "text": "hi"})):
                texts = []
                for chat_id in ("trip", "never-made"):
                    filled = {key: value.replace("{id}", chat_id)
                              for key, value in arguments.items()}
                    texts.append(failure(await client.call_tool(tool, filled)).replace(
                        chat_id, "ID"))
                assert texts[0] == texts[1] == "NOT_FOUND: chat 'ID' not found", (tool, texts)
            refusals = []
            for chat_id in ("trip", "never-made"):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(f"chatql://chats/{chat_id}")
                refusals.append((refused.value.code,
                                 refused.value.message.replace(chat_id, "ID")))
            assert refusals[0] == refusals[1] == (INVALID_PARAMS,
                                                  "NOT_FOUND: chat 'ID' not found")
            assert "chatql://chats/trip" not in {
                r.uri for r in (await client.list_resources()).resources}
    # Nothing was written to Bob's chat.
    messages = await graphql(server, MESSAGES, {"chat": "trip", "last": 10})
    assert len(messages["messages"]["edges"]) == 4


async def test_calls_count_against_the_callers_rate_limits(settings: Settings) -> None:
    limited = dataclasses.replace(settings, rate_limits="reads=3/minute")
    async with uvicorn_serving(create_app(limited)) as port, \
            mcp_client(f"http://127.0.0.1:{port}", BOB) as client:
        for _ in range(3):
            await call(client, "list_chats")
        refused = await client.call_tool("list_chats", {})
        assert failure(refused).startswith("RATE_LIMITED: rate limit for reads exceeded")
        assert refused.structured_content["error"]["retryAfter"] > 0
        # Counted per identity: someone else still may.
        async with mcp_client(f"http://127.0.0.1:{port}", CAROL) as other:
            await call(other, "list_chats")


def token(claims: dict[str, Any] | None = None) -> str:
    payload = {"sub": "alice", "tenant_id": "acme", "exp": int(time.time()) + 300,
               **(claims or {})}
    return jwt.encode(payload, HS_SECRET, algorithm="HS256")


async def test_jwt_mode_refuses_a_missing_or_bad_token(settings: Settings) -> None:
    secured = dataclasses.replace(settings, auth="jwt", jwt_secret=HS_SECRET)
    async with uvicorn_serving(create_app(secured)) as port:
        server = f"http://127.0.0.1:{port}"
        expired = token({"exp": int(time.time()) - 10})
        wrong_key = jwt.encode({"sub": "alice", "tenant_id": "acme",
                                "exp": int(time.time()) + 300}, "x" * 40, algorithm="HS256")
        refusals = {
            None: "missing Authorization: Bearer <token>",
            "Bearer not-a-jwt": "the bearer token is not a JWT",
            f"Bearer {expired}": "the bearer token has expired",
            f"Bearer {wrong_key}": "the bearer token is invalid",
        }
        async with httpx.AsyncClient(timeout=30) as http:
            for header, reason in refusals.items():
                response = await http.post(
                    f"{server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream",
                             **({"Authorization": header} if header else {})})
                assert response.status_code == 401, response.text
                assert response.headers["www-authenticate"] == "Bearer"
                assert response.json()["error"]["message"] == f"UNAUTHENTICATED: {reason}"
                assert response.json()["error"]["data"] == {"code": "UNAUTHENTICATED"}
        # The SDK's own client reports the refusal with its reason.
        with pytest.raises((MCPError, ExceptionGroup)) as refused:
            async with mcp_client(server, {"Authorization": f"Bearer {wrong_key}"}):
                pass
        assert "UNAUTHENTICATED: the bearer token is invalid" in repr(refused.value)

        alice = {"Authorization": f"Bearer {token()}"}
        await graphql(server, CREATE, {"id": "alices", "title": "Hers"}, alice)
        async with mcp_client(server, alice) as client:
            assert [c["id"] for c in (await call(client, "list_chats"))["chats"]] == ["alices"]
        async with mcp_client(server, {"Authorization": f"Bearer {token({'sub': 'eve'})}"}
                              ) as client:
            assert (await call(client, "list_chats"))["chats"] == []
            assert failure(await client.call_tool("read_chat", {"chat_id": "alices"})) == (
                "NOT_FOUND: chat 'alices' not found")


def test_the_stdio_command_finds_the_servers_endpoint() -> None:
    assert mcp_stdio.MCP_PATH == MCP_PATH
    assert mcp_stdio.mcp_endpoint("http://127.0.0.1:8000") == "http://127.0.0.1:8000/mcp"
    assert mcp_stdio.mcp_endpoint("https://h/") == "https://h/mcp"
    assert mcp_stdio.mcp_endpoint("https://h/chatql/mcp") == "https://h/chatql/mcp"
    with pytest.raises(ValueError, match="http"):
        mcp_stdio.mcp_endpoint("127.0.0.1:8000")


def chatql_mcp(*arguments: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "chatql.gql.cli", "mcp", *arguments])


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_chatql_mcp_serves_the_same_tools_over_stdio(settings: Settings) -> None:
    async with uvicorn_serving(create_app(settings)) as port:
        server = f"http://127.0.0.1:{port}"
        await seed(server)
        async with Client(chatql_mcp("--url", server, "--header", "X-User-Id: bob",
                                     "--header", "X-Tenant-Id: acme")) as stdio, \
                mcp_client(server, BOB) as http:
            assert (await stdio.list_tools()).tools == (await http.list_tools()).tools
            assert stdio.instructions == http.instructions
            for tool, arguments in (("list_chats", {}), ("read_chat", {"chat_id": "trip"}),
                                    ("search_messages", {"query": "lyon"}),
                                    ("search_memory", {"query": "train"})):
                assert await call(stdio, tool, **arguments) == await call(http, tool,
                                                                           **arguments)
            appended = await call(stdio, "append_message", chat_id="trip", role="USER",
                                  text="Thanks", append_id="thanks")
            assert appended["sequence"] == 5
            assert failure(await stdio.call_tool("read_chat", {"chat_id": "carols"})) == (
                "NOT_FOUND: chat 'carols' not found")
            read = await stdio.read_resource("chatql://chats/trip")
            assert "Thanks" in read.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError) as unknown:
                await stdio.call_tool("nope", {})
            assert unknown.value.code == INVALID_PARAMS

        # A server that is not there, or a bad argument: one line on stderr, no serving.
        for arguments, status, said in (
                (["--url", "http://127.0.0.1:9/"], 1, "chatql mcp: http://127.0.0.1:9/mcp: "),
                (["--url", server, "--header", "no colon"], 2, "--header must be"),
                (["--url", "ftp://x"], 2, "--url must be an http(s) address")):
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "chatql.gql.cli", "mcp", *arguments],
                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            assert done.returncode == status, done.stderr
            assert said in done.stderr and done.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_example_client_runs_as_the_guide_shows_it(settings: Settings) -> None:
    script = EXAMPLE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert script in blocks, "docs/guides/mcp.md shows clients/examples/mcp/client.py"
    async with uvicorn_serving(create_app(settings)) as port:
        for _ in range(2):  # idempotent: a second run writes nothing twice
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, str(EXAMPLE), f"http://127.0.0.1:{port}"],
                capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            lines = done.stdout.splitlines()
            assert lines[0] == "tools: " + ", ".join(TOOL_NAMES)
            assert lines[1] == "memory: Ada prefers answers in French."
            assert "USER: Bonjour! Which trains go to Lyon tonight?" in lines
            assert "ASSISTANT: Two: the 19:04 and the 21:30 from Paris." in lines
            assert "error: NOT_FOUND: chat 'no-such-chat' not found" in lines
            assert sum(line.startswith("found: ") for line in lines) == 1
