"""The agent loop against a live server, on both databases and both stream backends:
several workers share the questions, each answered once, including those asked while no
worker ran; regenerating asks for a second answer; cancelling leaves no stream open."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from chatql_client import ChatqlClient, StreamWriter
from chatql_client.types import Message

ASSISTANT = "helper"


async def answers_of(person: ChatqlClient, chat_id: str) -> list[Message]:
    every = await person.messages(chat_id, last=100, all_branches=True)
    return [m for m in every if m["role"] == "ASSISTANT"]


async def wait_for(check: Callable[[], Any], timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.1)


def _say_why_it_ended(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logging.getLogger("tests").error("an agent loop ended: %r", task.exception())


@contextlib.asynccontextmanager
async def workers(make_kit: Callable[..., ChatqlClient], handler: Any,
                  count: int = 2) -> AsyncIterator[list[Any]]:
    """``count`` workers serving ASSISTANT, each with its own client; cancelled after."""
    clients = [make_kit() for _ in range(count)]
    loops: list[Any] = []
    tasks = []
    for client in clients:
        from chatql_client import AgentLoop

        loop = AgentLoop(client, ASSISTANT, handler, relist_interval=5.0)
        loops.append(loop)
        task = asyncio.create_task(loop.run())
        # A loop that ends by itself would leave its questions unanswered until a
        # test's deadline: say why at once.
        task.add_done_callback(_say_why_it_ended)
        tasks.append(task)
    try:
        yield loops
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.aclose()


async def ask(person: ChatqlClient, text: str) -> tuple[str, str]:
    chat = await person.create_chat(ASSISTANT, title=text)
    return chat["id"], await person.say(chat["id"], text)


async def test_two_workers_answer_fifty_questions_once_each(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    async def handler(context: list[Message], s: StreamWriter) -> None:
        question = context[-1]["props"]["content"]
        await asyncio.sleep(0.02)
        await s.text(f"Answer to {question}")

    questions: dict[str, str] = {}
    # Asked while no worker runs.
    for i in range(15):
        chat_id, q = await ask(person, f"q{i}")
        questions[chat_id] = q

    async def all_answered() -> bool:
        for chat_id in questions:
            if not await answers_of(person, chat_id):
                return False
        return True

    async with workers(make_kit, handler) as loops:
        for i in range(15, 40):
            chat_id, q = await ask(person, f"q{i}")
            questions[chat_id] = q
        await wait_for(all_answered)
        # A worker counts its answer once it has left the stream, just after the write.
        await wait_for(lambda: _counted(loops, 40))
        await asyncio.sleep(0.5)  # a second answer, if any, would have started by now
        assert sum(len(loop.answered) for loop in loops) == 40
    # Every worker is down: these wait for the next start.
    for i in range(40, 50):
        chat_id, q = await ask(person, f"q{i}")
        questions[chat_id] = q
    async with workers(make_kit, handler) as loops:
        await wait_for(all_answered)
        await wait_for(lambda: _counted(loops, 10))
        await asyncio.sleep(0.5)
        assert sum(len(loop.answered) for loop in loops) == 10

    for chat_id, question in questions.items():
        answers = await answers_of(person, chat_id)
        title = (await person.chat(chat_id) or {}).get("title")
        assert [(m["props"], m["parentId"], m["status"]) for m in answers] == [
            ({"content": f"Answer to {title}"}, question, "COMPLETED")]
        assert answers[0]["requestId"] == question


async def _counted(loops: list[Any], n: int) -> bool:
    return sum(len(loop.answered) for loop in loops) >= n


async def test_regenerate_gets_a_second_answer_beside_the_first(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    count = 0

    async def handler(context: list[Message], s: StreamWriter) -> None:
        nonlocal count
        count += 1
        await s.text(f"Answer {count}")

    chat_id, question = await ask(person, "Tell me a joke")
    async with workers(make_kit, handler):
        await wait_for(lambda: _has_answers(person, chat_id, 1))
        await person.regenerate(question)
        await wait_for(lambda: _has_answers(person, chat_id, 2))
        await asyncio.sleep(0.5)
    answers = await answers_of(person, chat_id)
    assert [(m["props"]["content"], m["parentId"], m["requestId"]) for m in answers] == [
        ("Answer 1", question, question), ("Answer 2", question, f"{question}.1")]
    # The new answer is the active branch.
    assert (await person.messages(chat_id))[-1]["props"]["content"] == "Answer 2"


async def _has_answers(person: ChatqlClient, chat_id: str, n: int) -> bool:
    return len(await answers_of(person, chat_id)) >= n


async def test_an_answer_that_fails_before_writing_is_shown_and_can_be_regenerated(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    """A handler that raises before its first word still answers the question (a FAILED
    note with the error's text), so no worker waits on it forever and Regenerate asks
    again under the next request id."""
    calls = 0

    async def handler(context: list[Message], s: StreamWriter) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the model is down")
        await s.text("Back up")

    chat_id, question = await ask(person, "Are you there?")
    async with workers(make_kit, handler):
        await wait_for(lambda: _has_answers(person, chat_id, 1))
        awaiting = [c async for c in person.chats({"awaitingReply": True,
                                                   "assistantId": ASSISTANT})]
        assert awaiting == []
        await asyncio.sleep(0.5)  # a retry, if any, would have started by now
        assert calls == 1
        await person.regenerate(question)
        await wait_for(lambda: _has_answers(person, chat_id, 2))
    answers = await answers_of(person, chat_id)
    assert [(m["type"], m["status"], m["requestId"]) for m in answers] == [
        ("error", "FAILED", question), ("text", "COMPLETED", f"{question}.1")]
    assert "the model is down" in answers[0]["props"]["content"]
    # The failed note never reaches the model; the new answer is the active branch.
    assert (await person.messages(chat_id))[-1]["props"]["content"] == "Back up"


async def test_cancelling_the_loop_leaves_no_stream_open(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    started = asyncio.Event()

    async def handler(context: list[Message], s: StreamWriter) -> None:
        await s.text("Working on it")
        await s.flush()
        started.set()
        await asyncio.sleep(60)

    chat_id, _ = await ask(person, "A long job")
    async with workers(make_kit, handler, count=1):
        await asyncio.wait_for(started.wait(), 30)
    # Ended INTERRUPTED and stored when the worker stopped: the chat is free.
    answers = await answers_of(person, chat_id)
    assert [(m["props"]["content"], m["status"]) for m in answers] == [
        ("Working on it", "INTERRUPTED")]
    async with make_kit() as other, other.stream(chat_id) as s:
        await s.text("Taken over.")
    assert s.status == "COMPLETED"


async def test_the_demo_agent_answers_with_thinking_a_tool_call_and_markdown(
        server_url: str, person: ChatqlClient) -> None:
    from chatql_client.demo import run_demo

    from tests.client.conftest import AGENT

    chat_id, question = await ask(person, "How tall is the Eiffel tower?")
    demo = asyncio.create_task(run_demo(server_url, ASSISTANT, headers=AGENT, pace=0.0))
    try:
        await wait_for(lambda: _has_answers(person, chat_id, 3))
        await asyncio.sleep(0.3)
    finally:
        demo.cancel()
        await asyncio.gather(demo, return_exceptions=True)
    messages = await person.messages(chat_id)
    kinds = [(m["role"], m["type"]) for m in messages]
    assert kinds == [("USER", "user_input"), ("ASSISTANT", "thinking"),
                     ("ASSISTANT", "tool_call"), ("TOOL", "tool_result"), ("ASSISTANT", "text")]
    call = messages[2]["props"]
    assert call["name"] == "lookup" and call["id"] == "lookup-1"
    assert call["arguments"] == '{"query": "How tall is the Eiffel tower?", "limit": 3}'
    text = messages[4]["props"]["content"]
    assert "**How tall is the Eiffel tower?**" in text
    assert "| Words | 6 |" in text and "```python\n" in text
    assert messages[1]["parentId"] == question


async def test_the_demo_agent_names_a_chat_nobody_named(
        server_url: str, person: ChatqlClient) -> None:
    from chatql_client.demo import demo_title, run_demo

    from tests.client.conftest import AGENT

    chat = await person.create_chat(ASSISTANT)
    await person.say(chat["id"], "how tall is the eiffel tower, in metres?")
    demo = asyncio.create_task(run_demo(server_url, ASSISTANT, headers=AGENT, pace=0.0))
    try:
        await wait_for(lambda: _has_answers(person, chat["id"], 3))
    finally:
        demo.cancel()
        await asyncio.gather(demo, return_exceptions=True)
    named = await person.chat(chat["id"])
    assert named is not None
    assert (named["title"], named["titleSource"]) == ("How tall is the eiffel\u2026", "AGENT")
    assert demo_title("weather in Oslo?") == "Weather in Oslo"
    assert demo_title("  ") is None
