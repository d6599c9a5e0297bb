"""The inline form of a person in the loop, against a live server on both databases and
both stream backends: a handler asks (``s.ask_approval``, ``s.ask(wait=True)``) and
waits inside its open stream — heartbeats keep it alive past the idle timeout — until
the decision made through ``resolveInterrupt`` reaches it; an expired ask returns as
expired. The stream then ends as any other: no resumption, one answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.types import Message

from chatql.gql.settings import Settings
from tests.client.test_agent_approvals import pending
from tests.client.test_agent_loop import answers_of, ask, wait_for, workers

DECIDE = """mutation($id: ID!, $approved: Boolean, $editedArguments: JSON, $response: JSON,
  $reason: String) { resolveInterrupt(id: $id, approved: $approved,
  editedArguments: $editedArguments, response: $response, reason: $reason) { state } }"""
STATE = """query($id: ID!) { chat(id: $id) { interrupts { id state } } }"""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A short idle timeout (the wait outlasts it: only heartbeats keep the stream open)
    # and a quick sweeper (expiry).
    return replace(settings, stream_idle_timeout=1.5, sweep_interval=0.3)


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
