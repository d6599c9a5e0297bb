"""A reply cut off by a worker that vanished is answered again by another worker, with no
action from the person, exactly once; a reply a person stopped is not; retries are
bounded. Against a live server on both databases and both stream backends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.agent_loop import AgentLoop, _retry_number
from chatql_client.types import Message

from chatql.gql.settings import Settings
from tests.client.test_agent_loop import ASSISTANT, answers_of, ask, wait_for, workers

#: Where a vanished worker's requests go: nothing listens there.
NOWHERE = "http://127.0.0.1:9/graphql"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A worker that goes silent is noticed quickly.
    return replace(settings, stream_idle_timeout=1.0)


def _vanish(s: StreamWriter) -> None:
    """The worker's process is gone: its heartbeats and its stream's end never arrive."""
    s.client.url = NOWHERE


async def test_a_reply_cut_off_by_a_vanished_worker_is_answered_again_once(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    calls: list[list[Message]] = []
    vanished = asyncio.Event()

    async def handler(context: list[Message], s: StreamWriter) -> None:
        calls.append(context)
        if len(calls) == 1:
            await s.text("Half an ans")
            await s.flush()
            _vanish(s)
            vanished.set()
            await asyncio.sleep(3600)  # the dead worker never finishes
        await s.text("The whole answer.")

    async with workers(make_kit, handler) as loops:
        chat_id, question = await ask(person, "explain it")
        await asyncio.wait_for(vanished.wait(), 60)
        # The stream of the dead worker stays open until the service notices.

        async def answered() -> bool:
            return any(m["props"].get("content") == "The whole answer."
                       for m in await answers_of(person, chat_id))

        await wait_for(answered)
        await asyncio.sleep(1.5)  # a second retry, if any, would have started
        assert sum(len(loop.answered) for loop in loops) == 1
    assert len(calls) == 2
    # The retry's model context ends with the question, not with the cut-off reply.
    assert calls[1][-1]["id"] == question
    answers = await answers_of(person, chat_id)
    assert [(m["props"]["content"], m["status"], m["parentId"], m["requestId"])
            for m in answers] == [
        ("Half an ans", "INTERRUPTED", question, question),
        ("The whole answer.", "COMPLETED", question, f"{question}.retry.1")]
    # The new answer is the active branch.
    assert (await person.messages(chat_id))[-1]["props"]["content"] == "The whole answer."


async def test_a_stopped_reply_is_not_retried_and_retries_are_bounded(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    calls = 0
    started = asyncio.Event()

    async def stopped(context: list[Message], s: StreamWriter) -> None:
        await s.text("Going on and on")
        await s.flush()
        started.set()
        await asyncio.sleep(3600)

    async with workers(make_kit, stopped, count=1):
        chat_id, _question = await ask(person, "talk")
        await started.wait()
        await person.execute("mutation($c: ID!) { stopStream(chatId: $c) }", {"c": chat_id})

        async def ended() -> bool:
            return [m["status"] for m in await answers_of(person, chat_id)] == ["INTERRUPTED"]

        await wait_for(ended)
        await asyncio.sleep(2.0)
    assert len(await answers_of(person, chat_id)) == 1  # left for Regenerate

    # A worker that dies every time: one retry (retries=1), then the failure stays.
    async def dies(context: list[Message], s: StreamWriter) -> None:
        nonlocal calls
        calls += 1
        await s.text(f"Attempt {calls}")
        await s.flush()
        _vanish(s)
        await asyncio.sleep(3600)

    clients = [make_kit() for _ in range(3)]
    # Listing often: the spent cut-off reply is listed (awaitingRetry) again and again.
    loops = [AgentLoop(client, ASSISTANT, dies, relist_interval=0.5, retries=1,
                       shutdown_timeout=0.5) for client in clients]
    looked: list[str] = []
    for loop in loops:
        loop._claim_and_run = _counting(loop._claim_and_run, looked)  # type: ignore[method-assign]
    tasks = [asyncio.create_task(loop.run()) for loop in loops]
    try:
        chat_id, question = await ask(person, "again and again")

        async def twice() -> bool:
            return [m["status"] for m in await answers_of(person, chat_id)] == [
                "INTERRUPTED", "INTERRUPTED"]

        await wait_for(twice)
        await asyncio.sleep(2.5)  # a third attempt, if any, would have started
        # Each loop looked at the spent reply once at most since, and not again.
        settled = looked.count(chat_id)
        await asyncio.sleep(2.0)
        assert looked.count(chat_id) == settled
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.aclose()
    assert calls == 2
    assert [m["requestId"] for m in await answers_of(person, chat_id)] == [
        question, f"{question}.retry.1"]


async def test_a_worker_started_after_the_cut_off_answers_it_again(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    """No worker runs when the service ends the vanished worker's stream: the next one to
    start finds the cut-off reply by listing (``awaitingRetry``) and answers it again."""
    vanished = asyncio.Event()

    async def dies(context: list[Message], s: StreamWriter) -> None:
        await s.text("Half an ans")
        await s.flush()
        _vanish(s)
        vanished.set()
        await asyncio.sleep(3600)

    cut_off_filter = {"assistantId": ASSISTANT, "awaitingRetry": True}
    client = make_kit()
    task = asyncio.create_task(
        AgentLoop(client, ASSISTANT, dies, shutdown_timeout=0.5).run())
    try:
        chat_id, question = await ask(person, "explain it")
        await asyncio.wait_for(vanished.wait(), 60)
    finally:
        # The only worker is gone; its stream's end never reaches the service.
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()

    async def cut_off() -> bool:
        return [m["status"] for m in await answers_of(person, chat_id)] == ["INTERRUPTED"]

    await wait_for(cut_off)
    listed = [chat["id"] async for chat in person.chats(cut_off_filter)]
    assert listed == [chat_id]
    assert [chat["id"] async for chat in person.chats(
        {"assistantId": ASSISTANT, "awaitingReply": True})] == []

    calls: list[list[Message]] = []

    async def answers(context: list[Message], s: StreamWriter) -> None:
        calls.append(context)
        await s.text("The whole answer.")

    async with workers(make_kit, answers, count=1):
        async def answered() -> bool:
            return any(m["props"].get("content") == "The whole answer."
                       for m in await answers_of(person, chat_id))

        await wait_for(answered)
    assert len(calls) == 1 and calls[0][-1]["id"] == question
    assert [(m["status"], m["requestId"]) for m in await answers_of(person, chat_id)] == [
        ("INTERRUPTED", question), ("COMPLETED", f"{question}.retry.1")]
    assert [chat["id"] async for chat in person.chats(cut_off_filter)] == []


def _counting(claim: Callable[[str], Any], looked: list[str]) -> Callable[[str], Any]:
    async def counted(chat_id: str) -> None:
        looked.append(chat_id)
        await claim(chat_id)

    return counted


def test_retry_numbers() -> None:
    assert _retry_number("q", "q") == 1
    assert _retry_number("q", "q.2") == 1
    assert _retry_number("q", "q.retry.1") == 2
    assert _retry_number("q", "q.resume.1") is None
    assert _retry_number("q", "other") is None
    assert _retry_number("q", None) is None


def test_the_retries_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handler(context: list[Message], s: StreamWriter) -> Any:
        return None

    client: Any = object()
    assert AgentLoop(client, ASSISTANT, handler).retries == 2
    monkeypatch.setenv("CHATQL_AGENT_RETRIES", "0")
    assert AgentLoop(client, ASSISTANT, handler).retries == 0
    monkeypatch.setenv("CHATQL_AGENT_RETRIES", "many")
    with pytest.raises(ValueError, match="CHATQL_AGENT_RETRIES"):
        AgentLoop(client, ASSISTANT, handler)
