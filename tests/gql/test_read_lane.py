"""The reads lane: compiled message pages and chat lists, sent as plain POSTs, are
answered before the view with the view's own bytes; a read the lane declines is
answered by the executor, planned and counted once.

Every case compares the lane's answer (status, headers, body) with the view's for the
same request, on both databases.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from chatql.gql.app import GraphQLEndpoint
from chatql.gql.plans.compiled_reads import CompiledReads
from tests.conftest import GraphQLClient
from tests.gql.test_append_lane import ALICE, Answer, body, new_chat, post_raw

APPEND = ('mutation($chat: ID!, $aid: String!) { appendMessages(chatId: $chat, appendId: $aid,'
          ' messages: [{role: USER, type: "text", props: {content: "hi"}}]) { lastSequence } }')
PAGE = ("query($chat: ID!, $last: Int, $before: String) { messages(chatId: $chat, last: $last,"
        " before: $before) { edges { cursor node { id sequence role type props createdAt } }"
        " pageInfo { hasPreviousPage hasNextPage startCursor endCursor } } }")
CHATS = ("{ chats(first: 3) { edges { cursor node { id title lastMessageAt } }"
         " pageInfo { hasNextPage endCursor } } }")
CHAT = "query($id: ID!) { chat(id: $id) { id title assistantId } }"


class Views:
    """How often the view ran, and how often a compiled read was tried."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.views = self.reads = 0
        run, read = GraphQLEndpoint.run, CompiledReads.run

        async def counted_run(endpoint: GraphQLEndpoint, *args: Any, **kwargs: Any) -> Any:
            self.views += 1
            return await run(endpoint, *args, **kwargs)

        async def counted_read(reads: CompiledReads, *args: Any) -> Any:
            self.reads += 1
            return await read(reads, *args)

        monkeypatch.setattr(GraphQLEndpoint, "run", counted_run)
        monkeypatch.setattr(CompiledReads, "run", counted_read)

    def take(self) -> tuple[int, int]:
        seen = (self.views, self.reads)
        self.views = self.reads = 0
        return seen


async def _no_lane(*args: Any) -> bool:
    return False


async def _both(client: GraphQLClient, monkeypatch: pytest.MonkeyPatch,
                content: bytes) -> tuple[Answer, Answer]:
    lane = await post_raw(client, content)
    with monkeypatch.context() as patch:
        patch.setattr(GraphQLEndpoint, "_lane", _no_lane)
        view = await post_raw(client, content)
    return lane, view


async def test_compiled_reads_take_the_lane_with_the_views_bytes(
        client: GraphQLClient, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = [await new_chat(client, title=f"t{n}") for n in range(4)]
    for n in range(6):
        await client.data(APPEND, {"chat": chats[0], "aid": f"a{n}"}, ALICE)
    views = Views(monkeypatch)
    newest = body(PAGE, {"chat": chats[0], "last": 3})
    lane, view = await _both(client, monkeypatch, newest)
    assert views.take() == (1, 2)  # the lane's read, then the view's planned read
    assert lane == view and lane[0] == 200 and b'"errors"' not in lane[2]
    assert lane[1] == {"content-type": "application/json", "content-length": str(len(lane[2]))}
    before = client_cursor(lane)
    requests = [
        body(PAGE, {"chat": chats[0], "last": 2, "before": before}),
        body(CHATS, {}),
        # No variables at all, and variables null: both plain reads.
        orjson.dumps({"query": CHATS}),
        orjson.dumps({"query": CHATS, "variables": None}),
        body(CHAT, {"id": chats[1]}),
    ]
    for content in requests:
        lane, view = await _both(client, monkeypatch, content)
        assert lane == view, content
        assert lane[0] == 200 and b'"errors"' not in lane[2], lane
        assert views.take() == (1, 2), content


def client_cursor(answer: Answer) -> str:
    cursor: str = orjson.loads(answer[2])["data"]["messages"]["pageInfo"]["startCursor"]
    return cursor


async def test_a_read_the_lane_declines_is_planned_once_and_answered_by_the_executor(
        client: GraphQLClient, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = await new_chat(client)
    views = Views(monkeypatch)
    for content in (body(PAGE, {"chat": empty, "last": 3}),  # an empty page
                    body(CHAT, {"id": "nobody-has-this"}),  # a null chat
                    body(PAGE, {"chat": empty, "before": "forged.cursor"})):  # an error
        lane, view = await _both(client, monkeypatch, content)
        assert lane == view, content
        assert views.take() == (2, 2), content
