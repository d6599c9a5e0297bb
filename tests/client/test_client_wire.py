"""The client's public wire calls — ``encode_request``, ``post_once``, ``with_retries`` —
and the stream writer using only them.

The writer needs more than ``execute``: its start decides per attempt (a start whose
answer was lost may have opened the stream, which a heartbeat then finds). It builds on
those three documented calls, never on the client's private attributes.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import chatql_client
import graphql
import httpx
import pytest
from chatql_client import ChatqlClient, ChatqlError, ChatqlTransportError
from chatql_client.errors import NoAnswer

from tests.client.conftest import AGENT

KIT = Path(chatql_client.__file__).resolve().parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _client_private_names() -> set[str]:
    """Every private attribute of a ChatqlClient: its class's and an instance's."""
    names = {name for klass in ChatqlClient.__mro__ for name in vars(klass) if _private(name)}
    instance = ChatqlClient("http://127.0.0.1:1/graphql")
    return names | {name for name in vars(instance) if _private(name)}


def test_no_kit_module_reaches_into_the_clients_private_attributes() -> None:
    private = _client_private_names()
    assert "_http" in private
    reached = []
    for path in sorted(KIT.glob("*.py")):
        if path.name == "client.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                reached.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not reached, "private ChatqlClient attributes used outside client.py:\n" + \
        "\n".join(reached)


def test_the_writer_uses_only_documented_public_client_calls() -> None:
    tree = ast.parse((KIT / "writer.py").read_text())
    used: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        receiver = node.value
        if (isinstance(receiver, ast.Name) and receiver.id == "client") or (
                isinstance(receiver, ast.Attribute) and receiver.attr == "client"
                and isinstance(receiver.value, ast.Name) and receiver.value.id == "self"):
            used.add(node.attr)
    assert {"encode_request", "post_once", "with_retries", "execute"} <= used
    for name in used:
        assert not _private(name), name
        inspect.getattr_static(ChatqlClient, name)  # a member of the class itself
        assert inspect.getdoc(getattr(ChatqlClient, name)), f"{name} has no docstring"


class Script(httpx.AsyncBaseTransport):
    """Answers requests from a list, in order; keeps every body."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.content)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok(data: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json={"data": data})


def refused(code: str) -> httpx.Response:
    return httpx.Response(200, json={"errors": [{"message": "no", "extensions":
                                                 {"code": code}}], "data": None})


def test_encode_request_is_the_same_bytes_for_the_same_request() -> None:
    body = ChatqlClient.encode_request("query($id: ID!) { chat(id: $id) { id } }",
                                       {"id": "é"})
    assert body == ChatqlClient.encode_request("query($id: ID!) { chat(id: $id) { id } }",
                                               {"id": "é"})
    assert json.loads(body) == {"query": "query($id: ID!) { chat(id: $id) { id } }",
                                "variables": {"id": "é"}}
    assert json.loads(ChatqlClient.encode_request("{ x }"))["variables"] == {}


async def test_post_once_makes_one_attempt_and_tells_no_answer_from_a_refusal() -> None:
    script = Script(httpx.Response(503, text="busy"),
                    httpx.ConnectError("refused"), refused("NOT_FOUND"), ok({"x": 1}))
    async with ChatqlClient("http://test/graphql", transport=script) as client:
        body = client.encode_request("{ x }")
        with pytest.raises(NoAnswer, match="HTTP 503"):
            await client.post_once(body)
        with pytest.raises(NoAnswer, match="ConnectError"):
            await client.post_once(body)
        with pytest.raises(ChatqlError) as error:
            await client.post_once(body)
        assert error.value.code == "NOT_FOUND"
        assert await client.post_once(body) == {"x": 1}
        assert client.requests_sent == 4
    assert script.bodies == [body] * 4


async def test_with_retries_retries_no_answer_and_the_listed_codes_only() -> None:
    script = Script(httpx.Response(502), httpx.ReadError("cut"), refused("PERSIST_FAILED"),
                    ok({"x": 2}), refused("PERSIST_FAILED"))
    async with ChatqlClient("http://test/graphql", transport=script,
                            retry_backoff=0.001) as client:
        body = client.encode_request("{ x }")
        assert await client.with_retries(lambda: client.post_once(body),
                                         ("PERSIST_FAILED",)) == {"x": 2}
        assert client.requests_sent == 4
        # Not listed: raised at the first refusal.
        with pytest.raises(ChatqlError) as error:
            await client.with_retries(lambda: client.post_once(body))
        assert error.value.code == "PERSIST_FAILED" and client.requests_sent == 5


async def test_with_retries_gives_up_after_max_retries_and_lets_other_errors_through() -> None:
    script = Script(*[httpx.Response(503)] * 3)
    async with ChatqlClient("http://test/graphql", transport=script, max_retries=2,
                            retry_backoff=0.001) as client:
        body = client.encode_request("{ x }")
        with pytest.raises(ChatqlTransportError, match="no answer after 3 attempts"):
            await client.with_retries(lambda: client.post_once(body))
        assert client.requests_sent == 3
        calls = 0

        async def broken() -> dict[str, Any]:
            nonlocal calls
            calls += 1
            raise ValueError("a bug, not the network")

        with pytest.raises(ValueError):
            await client.with_retries(broken)
        assert calls == 1


class LoseFirstStartAnswer(httpx.AsyncBaseTransport):
    """Forwards every request; drops the answer of the first startStream after the server
    has opened the stream."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.queries: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        operation = graphql.parse(json.loads(request.content)["query"]).definitions[0]
        assert isinstance(operation, graphql.OperationDefinitionNode)
        field = operation.selection_set.selections[0]
        assert isinstance(field, graphql.FieldNode)
        self.queries.append(field.name.value)
        response = await self.inner.handle_async_request(request)
        if self.queries == ["startStream"]:
            await response.aread()
            assert "errors" not in json.loads(response.content)
            raise httpx.ReadError("connection lost before the answer", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_start_whose_answer_was_lost_finds_its_own_stream(
        server_url: str, person: ChatqlClient) -> None:
    """The writer's own attempt over the public calls: the retried start is refused (the
    stream is open), the heartbeat to the writer's stream id succeeds, so the stream is
    the writer's, and the answer is stored once."""
    chat = await person.create_chat("helper", title="kit")
    question = await person.say(chat["id"], "Still there?")
    transport = LoseFirstStartAnswer()
    async with ChatqlClient(server_url, headers=AGENT, transport=transport,
                            retry_backoff=0.01) as kit:
        async with kit.stream(chat["id"], parent_id=question, request_id="r1") as s:
            await s.text("Yes.")
        assert s.status == "COMPLETED"
    assert transport.queries[:3] == ["startStream", "startStream", "pushChunks"]
    answers = [m for m in await person.messages(chat["id"]) if m["role"] == "ASSISTANT"]
    assert [(m["props"], m["requestId"], m["status"]) for m in answers] == [
        ({"content": "Yes."}, "r1", "COMPLETED")]
