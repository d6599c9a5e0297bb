"""An AG-UI agent that pauses for a person, through the kit's ``feed_ag_ui``, against a
live server on both databases and both stream backends: the run's interrupt outcome
becomes chatql's interrupts (an approval on the tool call it names, a question for the
rest); the person decides through GraphQL; the worker that resumes reads the decisions
back as AG-UI ``resume`` entries in the agent's own interrupt ids."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from ag_ui.core import (
    Interrupt,
    ResumeEntry,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.adapters import ag_ui_resume, feed_ag_ui
from chatql_client.types import Message

from chatql.gql.settings import Settings
from tests.client.test_agent_approvals import RESOLVE
from tests.client.test_agent_loop import answers_of, ask, wait_for, workers


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # The sweeper that expires a question past its ``expiresAt`` runs every 0.3 s, not
    # every 30 s: the expired question is noticed at once rather than half a minute later.
    return replace(settings, sweep_interval=0.3)


PENDING = """query($id: ID!) { chat(id: $id) { interrupts(state: PENDING) {
  id kind toolCallId toolName arguments prompt } } }"""


async def pending(person: ChatqlClient, chat_id: str) -> list[dict[str, Any]]:
    return list((await person.execute(PENDING, {"id": chat_id}))["chat"]["interrupts"])


def _paused_run() -> list[Any]:
    """What an AG-UI agent streams when it stops to ask: a tool call that needs
    approval and a question with a schema."""
    return [
        RunStartedEvent(thread_id="t", run_id="r1"),
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="I will clean up."),
        TextMessageEndEvent(message_id="m1"),
        ToolCallStartEvent(tool_call_id="call_1", tool_call_name="delete_files",
                           parent_message_id="m1"),
        ToolCallArgsEvent(tool_call_id="call_1", delta='{"glob": "*.tmp"}'),
        ToolCallEndEvent(tool_call_id="call_1"),
        RunFinishedEvent(thread_id="t", run_id="r1", outcome=RunFinishedInterruptOutcome(
            interrupts=[
                Interrupt(id="agent-approval-7", reason="tool_approval",
                          tool_call_id="call_1", message="Deleting cannot be undone."),
                Interrupt(id="agent-question-8", reason="input", message="Which folder?",
                          response_schema={"type": "string"}),
            ])),
    ]


def _resumed_run(entries: list[ResumeEntry]) -> list[Any]:
    folder = next(e.payload for e in entries if e.interrupt_id == "agent-question-8")
    return [
        RunStartedEvent(thread_id="t", run_id="r2"),
        TextMessageStartEvent(message_id="m2", role="assistant"),
        TextMessageContentEvent(message_id="m2", delta=f"Cleaned {folder}."),
        TextMessageEndEvent(message_id="m2"),
        RunFinishedEvent(thread_id="t", run_id="r2"),
    ]


async def test_an_ag_ui_run_pauses_for_a_person_and_resumes_in_its_own_ids(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    resumed: list[list[ResumeEntry]] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        if not s.resume:
            await feed_ag_ui(s, _paused_run())
            return
        # What the agent is run again with: its own ids, validated by the protocol.
        entries = [ResumeEntry.model_validate(entry) for entry in await ag_ui_resume(s)]
        resumed.append(entries)
        await feed_ag_ui(s, _resumed_run(entries))

    async with workers(make_kit, handler):
        chat_id, _ = await ask(person, "clean up the temp files")

        async def asked() -> bool:
            return len(await pending(person, chat_id)) == 2

        await wait_for(asked)
        by_kind = {i["kind"]: i for i in await pending(person, chat_id)}
        approval, question = by_kind["TOOL_APPROVAL"], by_kind["INPUT"]
        assert (approval["toolCallId"], approval["toolName"], approval["arguments"]) == (
            "call_1", "delete_files", {"glob": "*.tmp"})
        assert question["prompt"] == "Which folder?"
        await person.execute(RESOLVE, {"id": approval["id"], "approved": True,
                                       "reason": "fine"})
        await person.execute(RESOLVE, {"id": question["id"], "response": "/tmp/build"})

        async def answered() -> bool:
            texts = [m["props"].get("content") for m in await answers_of(person, chat_id)]
            return "Cleaned /tmp/build." in texts

        await wait_for(answered)
        await asyncio.sleep(0.3)
    assert len(resumed) == 1  # one worker resumed
    assert sorted((e.interrupt_id, e.status, e.payload) for e in resumed[0]) == [
        ("agent-approval-7", "resolved",
         {"approved": True, "reason": "fine", "editedArguments": None}),
        ("agent-question-8", "resolved", "/tmp/build"),
    ]


async def test_a_question_left_to_expire_resumes_as_cancelled(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    resumed: list[list[dict[str, Any]]] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        if not s.resume:
            await feed_ag_ui(s, [
                RunStartedEvent(thread_id="t", run_id="r1"),
                RunFinishedEvent(thread_id="t", run_id="r1", outcome=RunFinishedInterruptOutcome(
                    interrupts=[Interrupt(id="q-1", reason="input", message="Still there?",
                                          expires_at="2000-01-01T00:00:00Z")])),
            ])
            return
        resumed.append(await ag_ui_resume(s))
        await s.text("Moving on.")

    async with workers(make_kit, handler):
        await ask(person, "wait for me")

        async def done() -> bool:
            return bool(resumed)

        await wait_for(done)
    assert resumed == [[{"interruptId": "q-1", "status": "cancelled"}]]
