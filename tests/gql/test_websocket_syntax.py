"""A document that does not parse, sent over a real WebSocket, is answered with an
``error`` message (INVALID_ARGUMENT) on both subprotocols; the socket stays usable and
nothing is logged as a failure."""

from __future__ import annotations

import asyncio
import logging

import pytest

from chatql.gql.settings import Settings
from tests.gql.test_streams_ws import ALICE, PROTOCOLS, serve
from tests.gql.wsclient import connect

BROKEN = [
    "subscription { chatStream(chatId: ",
    "{ chats { ",
    "not graphql at all",
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_unparsable_documents_get_an_error_message(
        settings: Settings, protocol: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        async with serve(settings) as (server, _app), connect(server, protocol, ALICE) as ws:
            for document in BROKEN:
                op = await ws.start(document)
                message = await asyncio.wait_for(ws._inbox[op].get(), 10)
                assert message["type"] == "error", message
                payload = message["payload"]
                errors = payload if isinstance(payload, list) else [payload]
                assert errors[0]["extensions"]["code"] == "INVALID_ARGUMENT"
                assert errors[0]["message"].startswith("Syntax Error")
                # Nothing else follows for that operation (no complete, no close).
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(ws._inbox[op].get(), 0.2)
            # The same socket still runs well-formed operations.
            data = await ws.execute('mutation { createChat(input: {id: "ok", '
                                    'assistantId: "bot"}) { id } }')
            assert data == {"createChat": {"id": "ok"}}
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not failures, [r.getMessage() for r in failures]
