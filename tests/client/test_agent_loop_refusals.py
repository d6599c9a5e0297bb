"""An agent loop outlives the service's refusals: refused by a rate limit while it lists
the chats awaiting a reply, it waits as told and answers; refused its identity, it ends
with the error rather than trying for ever. Against a live server on both databases and
both stream backends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import pytest
from chatql_client import AgentLoop, ChatqlClient, ChatqlError, StreamWriter
from chatql_client.types import Message

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from tests.client.test_agent_loop import ASSISTANT, answers_of, ask
from tests.conftest import uvicorn_serving

#: Reads per identity in one window: the person polling four times a second stays
#: under it, the worker spends it at once.
READS = 40


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, rate_limits=f"reads={READS} per 4 seconds")


async def test_a_loop_refused_by_a_rate_limit_waits_and_answers(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    async def handler(context: list[Message], s: StreamWriter) -> None:
        await s.text("Here I am.")

    chat_id, _question = await ask(person, "are you there")
    worker = make_kit()
    # The worker's identity spends its reads: the loop's first listing is refused.
    with pytest.raises(ChatqlError) as refused:
        for _ in range(READS * 5):
            await worker.chats_page({"assistantId": ASSISTANT}, first=1)
    assert refused.value.code == "RATE_LIMITED"
    assert refused.value.extensions["retryAfter"] >= 1

    loop = AgentLoop(worker, ASSISTANT, handler, relist_interval=2.0)
    task = asyncio.create_task(loop.run())
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while not [m for m in await answers_of(person, chat_id)
                   if m["props"].get("content") == "Here I am."]:
            assert not task.done(), task  # the loop must not have ended
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            await asyncio.sleep(0.25)
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await worker.aclose()


async def test_a_loop_whose_identity_is_refused_ends_with_the_error(settings: Settings) -> None:
    async def handler(context: list[Message], s: StreamWriter) -> None:
        raise AssertionError("never called")

    # A token the service does not accept: the loop ends rather than trying for ever.
    signed = replace(settings, auth="jwt", jwt_secret="k" * 32)
    async with uvicorn_serving(create_app(signed)) as port, \
            ChatqlClient(f"http://127.0.0.1:{port}/graphql", token="forged") as stranger:
        loop = AgentLoop(stranger, ASSISTANT, handler, reconnect_delay=0.01)
        with pytest.raises(ChatqlError) as refused:
            await asyncio.wait_for(loop.run(), 30)
    assert refused.value.code == "FORBIDDEN"  # how graphql-transport-ws refuses an init
