"""The length rules of ``store.limits`` hold on every write that takes the value, over
HTTP: a value of exactly the limit is accepted, one character more is
INVALID_ARGUMENT and leaves the store unchanged."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatql.store import limits
from chatql.store.db.database import Database
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

CREATE = "mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"
APPEND = ("mutation($chat: ID!, $append: String!, $messages: [MessageInput!]!) {"
          " appendMessages(chatId: $chat, appendId: $append, messages: $messages)"
          " { firstSequence } }")
START = "mutation($input: StartStreamInput!) { startStream(input: $input) { id } }"
#: The producer mutations need the agent role.
AGENT = {"X-User-Id": "dev", "X-Tenant-Id": "default", "X-Roles": "agent"}
PUSH = ("mutation($stream: ID!, $chunks: [ChunkInput!]!) {"
        " pushChunks(streamId: $stream, chunks: $chunks) { accepted } }")

#: Makes what the write needs (a chat, a stream) and returns its id.
Prepare = Callable[[GraphQLClient], Awaitable[str]]
#: The write under test: (client, prepared id, value) -> the response body.
Write = Callable[[GraphQLClient, str, str], Awaitable[dict[str, Any]]]


def unique(size: int) -> str:
    """``size`` characters, different on every call (ids must not repeat)."""
    return (uuid.uuid4().hex * (size // 32 + 1))[:size]


async def chat(client: GraphQLClient) -> str:
    chat_id = f"len-{uuid.uuid4().hex[:10]}"
    await client.data(CREATE, {"input": {"id": chat_id, "assistantId": "bot"}})
    return chat_id


async def stream(client: GraphQLClient) -> str:
    started = await client.data(START, {"input": {"chatId": await chat(client)}}, AGENT)
    stream_id: str = started["startStream"]["id"]
    return stream_id


async def nothing(client: GraphQLClient) -> str:
    return ""


def create(field: str, as_list: bool = False) -> tuple[Prepare, Write]:
    async def write(client: GraphQLClient, _: str, value: str) -> dict[str, Any]:
        fields: dict[str, Any] = {"id": f"len-{uuid.uuid4().hex[:10]}", "assistantId": "bot"}
        fields[field] = [value] if as_list else value
        return await client.execute(CREATE, {"input": fields})
    return nothing, write


def append(field: str | None) -> tuple[Prepare, Write]:
    async def write(client: GraphQLClient, chat_id: str, value: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "USER", "type": "text", "props": {}}
        append_id = uuid.uuid4().hex
        if field is None:
            append_id = value
        else:
            message[field] = value
        return await client.execute(APPEND, {"chat": chat_id, "append": append_id,
                                             "messages": [message]})
    return chat, write


def start(field: str) -> tuple[Prepare, Write]:
    async def write(client: GraphQLClient, chat_id: str, value: str) -> dict[str, Any]:
        return await client.execute(START, {"input": {"chatId": chat_id, field: value}},
                                    AGENT)
    return chat, write


def push(field: str) -> tuple[Prepare, Write]:
    async def write(client: GraphQLClient, stream_id: str, value: str) -> dict[str, Any]:
        return await client.execute(PUSH, {"stream": stream_id, "chunks": [
            {"type": "text", "messageId": "m", "props": {"content": "x"}, field: value}]},
            AGENT)
    return stream, write


CASES: dict[str, tuple[tuple[Prepare, Write], int]] = {
    "chat id": (create("id"), limits.ID_CHARS),
    "assistantId": (create("assistantId"), limits.NAME_CHARS),
    "mode": (create("mode"), limits.MODE_CHARS),
    "channel": (create("channel"), limits.CHANNEL_CHARS),
    "tag": (create("tags", as_list=True), limits.TAG_CHARS),
    "title": (create("title"), limits.TITLE_CHARS),
    "appendId": (append(None), limits.KEY_CHARS),
    "message id": (append("id"), limits.ID_CHARS),
    "message type": (append("type"), limits.TYPE_CHARS),
    "message requestId": (append("requestId"), limits.NAME_CHARS),
    "message threadId": (append("threadId"), limits.NAME_CHARS),
    "streamId": (start("streamId"), limits.KEY_CHARS),
    "stream requestId": (start("requestId"), limits.NAME_CHARS),
    "stream assistantId": (start("assistantId"), limits.NAME_CHARS),
    "chunk blockId": (push("blockId"), limits.NAME_CHARS),
    "chunk messageId": (push("messageId"), limits.NAME_CHARS),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_value_at_the_limit_is_taken_and_one_more_character_refused(
        client: GraphQLClient, db: Database, case: str) -> None:
    (prepare, write), limit = CASES[case]
    at_limit = await write(client, await prepare(client), unique(limit))
    assert "errors" not in at_limit, at_limit["errors"]
    target = await prepare(client)
    before = await store_fingerprint(db)
    over = await write(client, target, unique(limit + 1))
    assert [e["extensions"]["code"] for e in over["errors"]] == ["INVALID_ARGUMENT"]
    assert str(limit) in over["errors"][0]["message"]
    assert await store_fingerprint(db) == before
