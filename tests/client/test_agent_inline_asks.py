"""The inline form of a person in the loop, against a live server on both databases and
both stream backends: a handler asks (``s.ask_approval``, ``s.ask(wait=True)``) and
waits inside its open stream — heartbeats keep it alive past the idle timeout — until
the decision made through ``resolveInterrupt`` reaches it; an expired ask returns as
expired. The stream then ends as any other: no resumption, one answer.

The wait listens (``chatEvents``) rather than polls: the decision reaches the agent at
once with a read or two of the interrupt however long it waited, a decision made before
the subscription was established is still seen at once (the read right after
subscribing), and a cancelled wait stops listening."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
from chatql_client import ChatqlClient, StreamStopped, StreamWriter, documents, writer
from chatql_client.types import Message

from chatql.gql.settings import Settings
from tests.client.conftest import AGENT
from tests.client.test_agent_approvals import pending
from tests.client.test_agent_loop import ASSISTANT, answers_of, ask, wait_for, workers

DECIDE = """mutation($id: ID!, $approved: Boolean, $editedArguments: JSON, $response: JSON,
  $reason: String) { resolveInterrupt(id: $id, approved: $approved,
  editedArguments: $editedArguments, response: $response, reason: $reason) { state } }"""
STATE = """query($id: ID!) { chat(id: $id) { interrupts { id state } } }"""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A short idle timeout (the waits outlast it: only heartbeats keep the stream open),
    # though long enough that a heartbeat late on a loaded machine is not taken for a
    # producer gone, and a quick sweeper (expiry).
    return replace(settings, stream_idle_timeout=2.5, sweep_interval=0.3)


async def _awaiting(person: ChatqlClient) -> list[Any]:
    return [c async for c in person.chats({"awaitingReply": True, "assistantId": "helper"})]


async def test_an_inline_approval_waits_in_the_stream_for_the_decision(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    decisions: list[dict[str, Any]] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        await s.text("I need to send an email.")
        await s.tool_call("c1", "send_email", '{"to": "ceo@acme.test"}')
        decided = await s.ask_approval("c1", reason="it leaves the company")
        decisions.append(decided)
        made = decided["decision"]
        if decided["state"] == "RESOLVED" and made["approved"]:
            await s.tool_result("c1", f"sent to {made['editedArguments']['to']}")
            await s.text("Sent.")
        else:
            await s.text("Not sent.")

    async with workers(make_kit, handler) as loops:
        chat_id, question = await ask(person, "mail the report")

        async def asked() -> bool:
            return bool(await pending(person, chat_id))

        await wait_for(asked)
        [interrupt] = await pending(person, chat_id)
        assert (interrupt["kind"], interrupt["toolName"], interrupt["arguments"]) == (
            "TOOL_APPROVAL", "send_email", {"to": "ceo@acme.test"})
        # Longer than the idle timeout: the heartbeats keep the stream open.
        await asyncio.sleep(3.0)
        chat = await person.chat(chat_id)
        assert chat is not None
        assert await _awaiting(person) == []  # waiting for a person, not for a worker
        await person.execute(DECIDE, {"id": interrupt["id"], "approved": True,
                                      "editedArguments": {"to": "cfo@acme.test"}})

        async def finished() -> bool:
            return any(m["props"].get("content") == "Sent."
                       for m in await answers_of(person, chat_id))

        await wait_for(finished)
        await asyncio.sleep(0.5)  # a resumption, if any, would have started
        assert sum(len(loop.answered) for loop in loops) == 1
    [decided] = decisions
    assert (decided["id"], decided["state"], decided["decision"]["approved"],
            decided["decision"]["decidedBy"]) == (interrupt["id"], "RESOLVED", True, "alice")
    every = await person.messages(chat_id, last=20)
    assert [(m["role"], m["type"], m["status"]) for m in every] == [
        ("USER", "user_input", "COMPLETED"), ("ASSISTANT", "text", "COMPLETED"),
        ("ASSISTANT", "tool_call", "COMPLETED"), ("TOOL", "tool_result", "COMPLETED"),
        ("ASSISTANT", "text", "COMPLETED")]
    assert {m["requestId"] for m in every[1:]} == {question}
    assert every[2]["id"] == interrupt["id"]
    assert every[3]["props"]["content"] == "sent to cfo@acme.test"
    assert (await person.execute(STATE, {"id": chat_id}))["chat"]["interrupts"] == [
        {"id": interrupt["id"], "state": "RESOLVED"}]
    assert await _awaiting(person) == []
    # The model reads the call as the person approved it.
    window = await person.model_context(chat_id, limit=20)
    [call] = [m for m in window if m["type"] == "tool_call"]
    assert call["props"]["arguments"] == '{"to":"cfo@acme.test"}'


async def test_an_inline_question_gets_its_answer(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    answers: list[Any] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        decided = await s.ask("Which city?", {"type": "string"}, wait=True, timeout=60)
        answers.append(decided)
        await s.text(f"Booking {decided['decision']['response']}.")

    async with workers(make_kit, handler, count=1):
        chat_id, _question = await ask(person, "book a trip")

        async def asked() -> bool:
            return bool(await pending(person, chat_id))

        await wait_for(asked)
        [interrupt] = await pending(person, chat_id)
        assert (interrupt["kind"], interrupt["prompt"]) == ("INPUT", "Which city?")
        await person.execute(DECIDE, {"id": interrupt["id"], "response": "Lisbon"})

        async def finished() -> bool:
            return any(m["props"].get("content") == "Booking Lisbon."
                       for m in await answers_of(person, chat_id))

        await wait_for(finished)
    assert [a["decision"]["response"] for a in answers] == ["Lisbon"]
    window = await person.model_context(chat_id, limit=20)
    assert [(m["role"], m["props"].get("content")) for m in window][-2:] == [
        ("USER", "Lisbon"), ("ASSISTANT", "Booking Lisbon.")]


async def test_an_inline_ask_nobody_answers_in_time_returns_expired(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    outcomes: list[dict[str, Any]] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        decided = await s.ask_approval("c9", "restart", {"service": "db"}, expires_in=1)
        outcomes.append(decided)
        await s.text(f"Not restarted ({decided['state'].lower()}).")

    async with workers(make_kit, handler, count=1):
        chat_id, _question = await ask(person, "restart the db")

        async def done() -> bool:
            return any(m["props"].get("content") == "Not restarted (expired)."
                       for m in await answers_of(person, chat_id))

        await wait_for(done)
    [outcome] = outcomes
    assert (outcome["id"], outcome["state"]) == (
        (await person.execute(STATE, {"id": chat_id}))["chat"]["interrupts"][0]["id"],
        "EXPIRED")
    assert not (outcome["decision"] or {}).get("approved")
    assert (await person.execute(STATE, {"id": chat_id}))["chat"]["interrupts"][0][
        "state"] == "EXPIRED"
    # The model reads the expired call as denied.
    window = await person.model_context(chat_id, limit=20)
    assert {"tool_call_id": "c9", "denied": True, "reason": "expired"} in [
        m["props"] for m in window if m["type"] == "tool_result"]
    assert await _awaiting(person) == []


# ---- the wait listens --------------------------------------------------------------

NAMES = {text: name for name, text in vars(documents).items()
         if name.isupper() and isinstance(text, str)}


class Watching(httpx.AsyncBaseTransport):
    """The kit's HTTP requests, counted by document (``sent``); ``after(name)`` runs once
    the service answered each, before the kit reads the answer."""

    def __init__(self, after: Callable[[str], Awaitable[None]] | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sent: Counter[str] = Counter()
        self.after = after

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            name = NAMES.get(json.loads(request.content).get("query"), "?")
        except ValueError:
            name = "?"
        response = await self.inner.handle_async_request(request)
        self.sent[name] += 1
        if self.after is not None:
            await self.after(name)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _listeners() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks()
            if task.get_name().startswith("decisions ") and not task.done()]


async def test_the_decision_reaches_a_waiting_agent_at_once_without_polling(
        server_url: str, person: ChatqlClient) -> None:
    """A 3 s wait (past the idle timeout: heartbeats keep the stream open) reads the
    interrupt at most twice (polling every 250 ms read it about 8 times), and the
    decision arrives well before the fallback read would have found it."""
    chat_id, question = await ask(person, "mail the report")
    watching = Watching()
    async with ChatqlClient(server_url, headers=AGENT, transport=watching) as kit:
        async with kit.stream(chat_id, request_id=question, parent_id=question,
                              assistant_id=ASSISTANT) as s:
            waiting = asyncio.create_task(s.ask_approval(
                "c1", "send_email", {"to": "ceo@acme.test"}, timeout=60))
            try:
                async def asked() -> bool:
                    return bool(await pending(person, chat_id))

                await wait_for(asked)
                [interrupt] = await pending(person, chat_id)
                await asyncio.sleep(3.0)
                assert not waiting.done()
                loop = asyncio.get_running_loop()
                decided_at = loop.time()
                await person.execute(DECIDE, {"id": interrupt["id"], "approved": True})
                decided = await asyncio.wait_for(waiting, 10)
                took = loop.time() - decided_at
            finally:
                waiting.cancel()
            assert (decided["id"], decided["state"], decided["decision"]["approved"]) == (
                interrupt["id"], "RESOLVED", True)
            # The fallback read comes DECISION_FALLBACK s after subscribing: ~2 s later.
            assert took < 1.5, f"the decision took {took:.2f} s to reach the agent"
            assert watching.sent["INTERRUPT"] <= 2, watching.sent
            assert watching.sent["CHAT_INTERRUPTS"] == 1, watching.sent
            assert watching.sent["PUSH_CHUNKS"] >= 3  # the heartbeats went on
            assert _listeners() == []
            await s.text("Sent.")
        assert s.status == "COMPLETED"
    assert writer.DECISION_FALLBACK >= 5


async def test_a_decision_made_before_the_wait_listens_is_seen_at_once(
        server_url: str, person: ChatqlClient) -> None:
    """The person decides after the agent found its interrupt pending and before its
    subscription was established (the event of it went to no one): the read right
    after subscribing finds the decision, without waiting for the fallback read."""
    chat_id, question = await ask(person, "book a trip")
    decided_early: list[str] = []

    async def decide_then_answer(name: str) -> None:
        if name == "CHAT_INTERRUPTS" and not decided_early:
            [interrupt] = await pending(person, chat_id)
            await person.execute(DECIDE, {"id": interrupt["id"], "response": "Lisbon"})
            decided_early.append(interrupt["id"])
            await asyncio.sleep(0.3)  # the event is delivered (to no one) meanwhile

    watching = Watching(decide_then_answer)
    async with ChatqlClient(server_url, headers=AGENT, transport=watching) as kit, \
            kit.stream(chat_id, request_id=question, parent_id=question,
                       assistant_id=ASSISTANT) as s:
        loop = asyncio.get_running_loop()
        started = loop.time()
        decided = await s.ask("Which city?", {"type": "string"}, wait=True, timeout=60)
        took = loop.time() - started
        await s.text(f"Booking {decided['decision']['response']}.")
    assert decided_early == [decided["id"]]
    assert (decided["state"], decided["decision"]["response"]) == ("RESOLVED", "Lisbon")
    assert took < 3.0, f"the decision took {took:.2f} s to reach the agent"
    assert watching.sent["INTERRUPT"] == 1, watching.sent
    assert s.status == "COMPLETED"


async def test_a_cancelled_wait_stops_listening(server_url: str,
                                                person: ChatqlClient) -> None:
    chat_id, question = await ask(person, "restart the db")
    async with ChatqlClient(server_url, headers=AGENT) as kit:
        async with kit.stream(chat_id, request_id=question, parent_id=question,
                              assistant_id=ASSISTANT) as s:
            waiting = asyncio.create_task(s.ask_approval("c2", "restart", {"db": 1}))

            async def listening() -> bool:
                return bool(_listeners()) and bool(await pending(person, chat_id))

            try:
                await wait_for(listening)
            finally:
                waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert _listeners() == []
            await s.text("Not restarted.")
        # The stream's end cancels the ask nobody answered.
        assert s.status == "COMPLETED"
    assert (await person.execute(STATE, {"id": chat_id}))["chat"]["interrupts"][0][
        "state"] == "CANCELLED"


async def test_stop_ends_a_waiting_ask_and_its_listening(server_url: str,
                                                        person: ChatqlClient) -> None:
    """The person presses Stop while the agent waits: the wait ends (the stream is
    stopped: StreamStopped), heartbeats or not, and nothing is left listening."""
    chat_id, question = await ask(person, "drop the table")
    loop = asyncio.get_running_loop()
    stopped: list[float] = []

    async def stop_once_asked() -> None:
        async def listening() -> bool:
            return bool(_listeners()) and bool(await pending(person, chat_id))

        await wait_for(listening)
        assert await person.stop_stream(chat_id)
        stopped.append(loop.time())

    stopping = asyncio.create_task(stop_once_asked())
    async with ChatqlClient(server_url, headers=AGENT) as kit:
        with pytest.raises(StreamStopped):
            async with kit.stream(chat_id, request_id=question, parent_id=question,
                                  assistant_id=ASSISTANT) as s:
                try:
                    await s.ask_approval("c3", "drop_table", {"name": "users"}, timeout=30)
                finally:
                    ended = loop.time()
    await stopping
    assert s.status == "INTERRUPTED"
    assert _listeners() == []
    assert ended - stopped[0] < 3
