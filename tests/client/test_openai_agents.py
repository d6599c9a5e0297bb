"""ChatqlSession under the OpenAI Agents SDK's own Runner, over a fake model (no network),
against a live server on both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.memory import Session
from chatql_client import ChatqlClient
from chatql_client.openai_agents import ChatqlSession
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

RUN = RunConfig(tracing_disabled=True)


def _say(text: str, number: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{number}", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class CannedModel(Model):
    """Answers from a script, one response per model call, and keeps what it was sent."""

    def __init__(self, responses: list[list[Any]]) -> None:
        self.responses = list(responses)
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: str | None, input: Any,
                           *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(list(input) if isinstance(input, list) else [input])
        return ModelResponse(output=self.responses.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(model: CannedModel) -> Agent[Any]:
    return Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])


async def _stored(person: ChatqlClient, chat_id: str) -> list[tuple[str, str]]:
    return [(m["role"], m["type"]) for m in await person.messages(chat_id)]


# The session appends and reads pages; it never streams, so the stream broker is not
# part of what it exercises: the memory broker only (both databases).
pytestmark = pytest.mark.parametrize("settings", ["memory"], indirect=True)


@pytest.fixture
async def chat_id(person: ChatqlClient) -> str:
    chat = await person.create_chat("helper", title="agents sdk")
    return chat["id"]


async def test_two_turns_then_a_new_session_sees_the_history(
        kit: ChatqlClient, person: ChatqlClient, chat_id: str) -> None:
    model = CannedModel([
        [ResponseFunctionToolCall(id="fc_1", call_id="call_1", name="weather",
                                  arguments='{"city":"Oslo"}', type="function_call",
                                  status="completed")],
        [_say("It is sunny in Oslo.", 1)],
        [_say("Also sunny tomorrow.", 2)],
    ])
    session = ChatqlSession(chat_id, kit)
    assert isinstance(session, Session)
    first = await Runner.run(_agent(model), "Weather in Oslo?", session=session, run_config=RUN)
    assert first.final_output == "It is sunny in Oslo."
    second = await Runner.run(_agent(model), "And tomorrow?", session=session, run_config=RUN)
    assert second.final_output == "Also sunny tomorrow."
    # The second turn's model call was sent the whole first turn from the chat.
    sent = model.inputs[2]
    assert [item.get("type", "message") for item in sent] == [
        "message", "function_call", "function_call_output", "message", "message"]
    assert sent[2]["output"] == "sunny in Oslo" and sent[-1]["content"] == "And tomorrow?"

    # Stored as chatql messages anyone can read, as the OpenAI import maps them.
    messages = await person.messages(chat_id)
    assert [(m["role"], m["type"], m["props"]) for m in messages] == [
        ("USER", "user_input", {"content": "Weather in Oslo?"}),
        ("ASSISTANT", "tool_call", {"id": "call_1", "name": "weather",
                                    "arguments": '{"city":"Oslo"}'}),
        ("TOOL", "tool_result", {"content": "sunny in Oslo", "tool_call_id": "call_1"}),
        ("ASSISTANT", "text", {"content": "It is sunny in Oslo."}),
        ("USER", "user_input", {"content": "And tomorrow?"}),
        ("ASSISTANT", "text", {"content": "Also sunny tomorrow."}),
    ]

    # A new session object on the same chat (another process) reads the same items back.
    again = ChatqlSession(chat_id, kit)
    items = await again.get_items()
    assert items == await session.get_items()
    assert len(items) == 6
    assert items[3]["content"][0]["text"] == "It is sunny in Oslo."
    assert items[3]["id"] == "msg_1"  # the item as the SDK gave it, not a reconstruction
    assert await again.get_items(limit=2) == items[-2:]


async def test_pop_item_and_clear_session(kit: ChatqlClient) -> None:
    # Deleting and starting over change the chat: the agent's own chat here (in a person's
    # chat an agent may append, not delete).
    chat_id = (await kit.create_chat("helper", title="agents sdk"))["id"]
    session = ChatqlSession(chat_id, kit)
    await session.add_items([{"role": "user", "content": "Hello"},
                             {"role": "assistant", "content": "Hi there."}])
    assert await session.pop_item() == {"role": "assistant", "content": "Hi there."}
    assert await _stored(kit, chat_id) == [("USER", "user_input")]
    assert await session.get_items() == [{"role": "user", "content": "Hello"}]

    # Start over: the agent's session is empty, the person still sees the conversation.
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    assert await _stored(kit, chat_id) == [("USER", "user_input"), ("SYSTEM", "boundary")]

    model = CannedModel([[_say("Fresh start.", 3)]])
    await Runner.run(_agent(model), "New topic", session=session, run_config=RUN)
    assert [item["content"] for item in model.inputs[0]] == ["New topic"]
    assert [item["role"] for item in await session.get_items()] == ["user", "assistant"]


async def test_messages_written_elsewhere_become_items(kit: ChatqlClient, person: ChatqlClient,
                                                       chat_id: str) -> None:
    """A person typing in the app and an agent streaming with the writer, read as items."""
    question = await person.say(chat_id, "Weather in Oslo?")
    async with kit.stream(chat_id, parent_id=question) as s:
        await s.thinking("Checking.")
        await s.tool_call("call_9", "weather", '{"city":"Oslo"}')
        await s.tool_result("call_9", {"temperature": 21})
        await s.text("21 degrees.")
    items = await ChatqlSession(chat_id, kit).get_items()
    assert items == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "call_9", "name": "weather",
         "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": '{"temperature":21}'},
        {"role": "assistant", "content": "21 degrees."},
    ]


async def test_a_long_chat_pages(kit: ChatqlClient, chat_id: str) -> None:
    session = ChatqlSession(chat_id, kit)
    items = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
             for i in range(230)]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=150) == items[-150:]
