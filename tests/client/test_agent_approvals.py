"""A person in the loop through the kit, against a live server on both databases and both
stream backends: an agent asks for approval (or asks a question) and its stream waits;
the person decides; exactly one of two workers resumes, with the decisions."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from chatql_client import ChatqlClient, StreamWriter
from chatql_client.demo import OfflineModel
from chatql_client.types import Message

from tests.client.test_agent_loop import answers_of, ask, wait_for, workers

PENDING = """query($id: ID!) { chat(id: $id) { interrupts(state: PENDING) {
  id kind toolName arguments prompt } } }"""
RESOLVE = """mutation($id: ID!, $approved: Boolean, $response: JSON, $reason: String) {
  resolveInterrupt(id: $id, approved: $approved, response: $response, reason: $reason) {
    state } }"""


async def pending(person: ChatqlClient, chat_id: str) -> list[dict[str, Any]]:
    data = await person.execute(PENDING, {"id": chat_id})
    return list(data["chat"]["interrupts"])


async def test_an_approval_waits_for_the_person_and_one_worker_resumes(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    resumed: list[list[dict[str, Any]]] = []

    async def handler(context: list[Message], s: StreamWriter,
                      resume: list[dict[str, Any]] | None = None) -> None:
        if resume is None:
            await s.text("I need to send an email.")
            await s.tool_call("c1", "send_email", '{"to": "ceo@acme.test"}',
                              needs_approval=True, reason="it leaves the company")
            return
        resumed.append(resume)
        [decided] = resume
        assert s.resume == resume
        if decided["decision"]["approved"]:
            await s.tool_result("c1", "sent")
            await s.text("Sent.")
        else:
            await s.text(f"Not sent: {decided['decision']['reason']}.")

    async with workers(make_kit, handler) as loops:
        chat_id, question = await ask(person, "mail the report")

        async def asked() -> bool:
            return bool(await pending(person, chat_id))

        await wait_for(asked)
        [interrupt] = await pending(person, chat_id)
        assert (interrupt["kind"], interrupt["toolName"], interrupt["arguments"]) == (
            "TOOL_APPROVAL", "send_email", {"to": "ceo@acme.test"})
        await asyncio.sleep(0.5)  # nobody answers while the decision waits
        assert sum(len(loop.answered) for loop in loops) == 1
        await person.execute(RESOLVE, {"id": interrupt["id"], "approved": True})

        async def finished() -> bool:
            return any(m["props"].get("content") == "Sent."
                       for m in await answers_of(person, chat_id))

        await wait_for(finished)
        await asyncio.sleep(0.5)  # a second resumption, if any, would have started
    assert len(resumed) == 1
    assert resumed[0][0]["id"] == interrupt["id"]
    every = await person.messages(chat_id, last=20)
    assert [(m["role"], m["type"]) for m in every] == [
        ("USER", "user_input"), ("ASSISTANT", "text"), ("ASSISTANT", "tool_call"),
        ("TOOL", "tool_result"), ("ASSISTANT", "text")]
    assert {m["requestId"] for m in every[3:]} == {f"{question}.resume.1"}


async def test_the_demo_agent_asks_first_when_approvals_are_on_and_hears_a_refusal(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    model = OfflineModel(pace=0, approvals=True)
    async with workers(make_kit, model.answer, count=1):
        chat_id, _question = await ask(person, "how long is this")

        async def asked() -> bool:
            return bool(await pending(person, chat_id))

        await wait_for(asked)
        [interrupt] = await pending(person, chat_id)
        assert interrupt["toolName"] == "lookup"
        await person.execute(RESOLVE, {"id": interrupt["id"], "approved": False,
                                       "reason": "not now"})

        async def refused() -> bool:
            return any("declined" in str(m["props"].get("content", ""))
                       for m in await answers_of(person, chat_id))

        await wait_for(refused)
    texts = [m["props"].get("content") for m in await answers_of(person, chat_id)
             if m["type"] == "text"]
    assert texts[-1].startswith("You declined the lookup (not now)")
    # The model saw the refusal: the loop's context holds the denied call's result.
    window = await person.model_context(chat_id, limit=20)
    assert {"tool_call_id": "lookup-1", "denied": True, "reason": "not now"} in [
        m["props"] for m in window if m["type"] == "tool_result"]
