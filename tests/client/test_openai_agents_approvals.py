"""The OpenAI Agents SDK's tool approvals through chatql, against a live server on both
databases and both stream backends: a run that stops on a tool needing approval is kept
as an interrupt per call (and its ``RunState`` as a resume record); the person decides;
the worker that claims the resumption rebuilds the ``RunState``, applies the decision and
streams the rest of the run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agents import Agent, RunConfig, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from chatql_client import ChatqlClient, StreamWriter
from chatql_client.openai_agents import run_agent
from chatql_client.types import Message

from tests.client.test_agent_approvals import pending
from tests.client.test_agent_loop import answers_of, ask, wait_for, workers

RUN = RunConfig(tracing_disabled=True)
DECIDE = """mutation($id: ID!, $approved: Boolean, $editedArguments: JSON, $reason: String) {
  resolveInterrupt(id: $id, approved: $approved, editedArguments: $editedArguments,
                   reason: $reason) { state } }"""
SENT: list[str] = []


@function_tool(needs_approval=True)
def send_email(to: str) -> str:
    """Send the report by email."""
    SENT.append(to)
    return f"sent to {to}"


def _agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="mailer", instructions="Be brief.", model=model, tools=[send_email])


def _outputs(model: ScriptedModel) -> list[dict[str, Any]]:
    """The tool outputs the model was sent on its last call."""
    last = model.last_call
    assert last is not None
    return [item for item in last.input if isinstance(item, dict)
            and item.get("type") == "function_call_output"]


async def _run(make_kit: Callable[..., ChatqlClient], person: ChatqlClient,
               decide: dict[str, Any], final: str) -> tuple[str, ScriptedModel, list[Message]]:
    model = ScriptedModel([
        [assistant_message("I will mail it.", item_id="m1"),
         function_call("send_email", {"to": "ceo@acme.test"}, call_id="call_1")],
        [assistant_message(final, item_id="m2")],
    ])
    agent = _agent(model)
    runs: list[Any] = []

    async def handler(context: list[Message], s: StreamWriter) -> None:
        runs.append(await run_agent(agent, context, s, run_config=RUN))

    async with workers(make_kit, handler) as loops:
        chat_id, question = await ask(person, "mail the report to the ceo")

        async def asked() -> bool:
            return bool(await pending(person, chat_id))

        await wait_for(asked)
        [interrupt] = await pending(person, chat_id)
        assert (interrupt["kind"], interrupt["toolName"], interrupt["arguments"]) == (
            "TOOL_APPROVAL", "send_email", {"to": "ceo@acme.test"})
        assert SENT == []  # nothing ran before the person decided
        # The paused run's state is kept with the stream that asked.
        records = [r for r in (await person.execute(
            "query($c: ID!) { resumeRecords(chatId: $c) { requestId input spaceSnapshot } }",
            {"c": chat_id}))["resumeRecords"] if (r["input"] or {}).get("callIds")]
        assert [(r["requestId"], r["input"]["callIds"]) for r in records] == [
            (question, ["call_1"])]
        assert "state" in records[0]["spaceSnapshot"]
        await asyncio.sleep(0.3)
        assert sum(len(loop.answered) for loop in loops) == 1
        await person.execute(DECIDE, {"id": interrupt["id"], **decide})

        async def finished() -> bool:
            return any(m["props"].get("content") == final
                       for m in await answers_of(person, chat_id))

        await wait_for(finished)
        await asyncio.sleep(0.5)  # a second resumption, if any, would have started
        assert sum(len(loop.answered) for loop in loops) == 2
    assert len(runs) == 2 and runs[0].interruptions and not runs[1].interruptions
    model.assert_complete()
    settled = (await person.execute(
        "query($c: ID!) { resumeRecords(chatId: $c) { status input } }", {"c": chat_id}))
    assert [r["status"] for r in settled["resumeRecords"]
            if (r["input"] or {}).get("callIds")] == ["completed"]
    return chat_id, model, await person.messages(chat_id, last=20)


async def test_an_approved_call_runs_and_the_answer_arrives(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    SENT.clear()
    _chat_id, model, every = await _run(make_kit, person, {"approved": True}, "Sent it.")
    assert SENT == ["ceo@acme.test"]
    assert [(m["role"], m["type"]) for m in every] == [
        ("USER", "user_input"), ("ASSISTANT", "text"), ("ASSISTANT", "tool_call"),
        ("TOOL", "tool_result"), ("ASSISTANT", "text")]
    assert every[2]["props"]["needsApproval"] is True
    assert every[3]["props"] == {"content": "sent to ceo@acme.test", "tool_call_id": "call_1"}
    assert [o["output"] for o in _outputs(model)] == ["sent to ceo@acme.test"]


async def test_a_denied_call_is_not_run_and_the_model_reads_why(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    SENT.clear()
    _chat_id, model, every = await _run(
        make_kit, person, {"approved": False, "reason": "not the ceo"}, "I did not send it.")
    assert SENT == []
    [output] = _outputs(model)
    assert output["call_id"] == "call_1"
    assert "denied" in output["output"] and "not the ceo" in output["output"]
    assert [(m["role"], m["type"]) for m in every][-2:] == [
        ("TOOL", "tool_result"), ("ASSISTANT", "text")]
    assert "not the ceo" in every[-2]["props"]["content"]


async def test_edited_arguments_are_what_runs(
        make_kit: Callable[..., ChatqlClient], person: ChatqlClient) -> None:
    SENT.clear()
    _chat_id, model, _every = await _run(
        make_kit, person, {"approved": True, "editedArguments": {"to": "cfo@acme.test"}},
        "Sent it to the cfo.")
    assert SENT == ["cfo@acme.test"]
    assert [o["output"] for o in _outputs(model)] == ["sent to cfo@acme.test"]
