"""The adapters, fed each SDK's own event objects (and their dicts), into a recording writer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from chatql_client import ChatqlClient, adapters

from tests.client import adapter_events as ev
from tests.client.recording import RecordingWriter

FEEDS: dict[str, Callable[..., Any]] = {
    "openai_chat": adapters.feed_openai_chat,
    "openai_responses": adapters.feed_openai_responses,
    "anthropic": adapters.feed_anthropic,
    "pydantic_ai": adapters.feed_pydantic_ai,
    "ag_ui": adapters.feed_ag_ui,
}
CALL_IDS = {"anthropic": "toolu_1"}
# PydanticAI reports usage once, with the run's result (tested on its own below).
USAGE = {name: (50, 12) for name in FEEDS if name != "pydantic_ai"}


def _dump(event: Any) -> Any:
    if isinstance(event, dict):
        return event
    if type(event).__module__.startswith("ag_ui"):
        return event.model_dump(mode="json", by_alias=True, exclude_none=True)
    if hasattr(event, "model_dump"):
        return event.model_dump(mode="json", exclude_none=True)
    from pydantic import TypeAdapter
    from pydantic_ai.messages import AgentStreamEvent

    return TypeAdapter(AgentStreamEvent).dump_python(event, mode="json")


async def _aiter(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


def _check_turns(name: str, s: RecordingWriter) -> None:
    call_id = CALL_IDS.get(name, "call_weather")
    [thinking] = s.of_type("thinking")
    [call] = s.of_type("tool_call")
    [result] = s.of_type("tool_result")
    texts = [message for message in s.of_type("text") if message["threadId"] is None]
    [answer] = texts
    assert thinking["props"]["content"] == "".join(ev.THINKING)
    assert call["props"] == {"id": call_id, "name": "weather", "arguments": ev.ARGUMENTS}
    # The arguments arrived in pieces: the call started, then grew.
    growth = [c[2] for c in s.calls if c[0] == "tool_arguments"]
    assert len(growth) >= 2 and ev.ARGUMENTS.endswith("".join(growth))
    assert result["props"] == {"content": ev.RESULT, "tool_call_id": call_id}
    assert result["role"] == "TOOL"
    assert answer["props"]["content"] == "".join(ev.ANSWER)
    # One block per model turn: reasoning and the call are one turn, the answer the next.
    assert thinking["blockId"] and thinking["blockId"] == call["blockId"]
    assert answer["blockId"] and answer["blockId"] != call["blockId"]
    assert result["blockId"] == call["blockId"]
    if name in USAGE:
        assert (s.prompt_tokens, s.completion_tokens) == USAGE[name]
        assert s.model == "gpt-test" or s.model == "claude-test"


@pytest.mark.parametrize("name", list(FEEDS))
async def test_sdk_objects(name: str, caplog: pytest.LogCaptureFixture) -> None:
    s = RecordingWriter()
    with caplog.at_level(logging.DEBUG, logger="chatql_client.adapters"):
        await FEEDS[name](s, ev.SEQUENCES[name]())
    _check_turns(name, s)
    skipped = [r.getMessage() for r in caplog.records if "unknown event" in r.getMessage()]
    assert skipped, "the unknown event is logged at debug level"
    assert all(r.levelno == logging.DEBUG for r in caplog.records)


@pytest.mark.parametrize("name", list(FEEDS))
async def test_dicts_from_an_async_iterable(name: str) -> None:
    s = RecordingWriter()
    await FEEDS[name](s, _aiter([_dump(event) for event in ev.SEQUENCES[name]()]))
    _check_turns(name, s)


@pytest.mark.parametrize("name", list(FEEDS))
async def test_thread_for_a_sub_agent(name: str) -> None:
    s = RecordingWriter()
    await FEEDS[name](s, ev.SEQUENCES[name](), thread_id="researcher")
    # (AG-UI's own sub-agent keeps the thread it names.)
    content = [m for m in s.messages.values() if m["threadId"] != "sub_1"]
    assert len(content) == 4 and all(m["threadId"] == "researcher" for m in content)


async def test_ag_ui_sub_agent_has_its_own_thread() -> None:
    s = RecordingWriter()
    await adapters.feed_ag_ui(s, ev.ag_ui())
    [sub] = [m for m in s.of_type("text") if m["threadId"] == "sub_1"]
    assert sub["props"]["content"] == "Forecast: sunny"
    assert sub["blockId"] != s.messages["answer"]["blockId"]
    names = [name for name, _ in s.events]
    assert names == ["step_started", "subagent_started", "subagent_finished", "step_finished",
                     "citation"]
    assert s.events[-1][1]["value"] == {"url": "https://example.org/oslo"}


async def test_ag_ui_nested_run_is_a_thread() -> None:
    from ag_ui.core import (
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TokenUsage,
    )

    s = RecordingWriter()
    await adapters.feed_ag_ui(s, [
        RunStartedEvent(thread_id="t", run_id="outer"),
        TextMessageContentEvent(message_id="a", delta="Asking a colleague."),
        RunStartedEvent(thread_id="t", run_id="inner", parent_run_id="outer"),
        TextMessageContentEvent(message_id="b", delta="Colleague here."),
        RunFinishedEvent(thread_id="t", run_id="inner",
                         usage=[TokenUsage(input_tokens=99, output_tokens=99)]),
        TextMessageContentEvent(message_id="c", delta="Done."),
        RunFinishedEvent(thread_id="t", run_id="outer",
                         usage=[TokenUsage(input_tokens=3, output_tokens=4)]),
    ])
    assert [s.messages[m]["threadId"] for m in "abc"] == [None, "inner", None]
    assert (s.prompt_tokens, s.completion_tokens) == (3, 4)  # the top run's usage only


async def test_pydantic_ai_usage_from_the_run_result() -> None:
    s = RecordingWriter()
    event = await ev.pydantic_ai_result()
    usage = event.result.usage
    await adapters.feed_pydantic_ai(s, [event])
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert (s.prompt_tokens, s.completion_tokens) == (usage.input_tokens, usage.output_tokens)
    assert s.model == "test"


async def test_pydantic_ai_real_run_events() -> None:
    """A real PydanticAI run (its test model calls the tool, then answers) fed as it streams."""
    from pydantic_ai import Agent

    agent = Agent("test")

    @agent.tool_plain
    def weather(city: str) -> str:
        return ev.RESULT

    s = RecordingWriter()
    async with agent.run_stream_events("Weather in Oslo?") as events:
        await adapters.feed_pydantic_ai(s, events)
    [call] = s.of_type("tool_call")
    [result] = s.of_type("tool_result")
    assert call["props"]["name"] == "weather"
    assert result["props"]["content"] == ev.RESULT
    assert result["props"]["tool_call_id"] == call["props"]["id"]
    [answer] = s.of_type("text")
    assert answer["props"]["content"] and answer["blockId"] != call["blockId"]
    assert s.prompt_tokens > 0 and s.completion_tokens > 0


@pytest.mark.parametrize(("name", "failure", "text"), [
    ("openai_responses", {"type": "error", "message": "rate limited", "sequence_number": 1},
     "rate limited"),
    ("anthropic", {"type": "error", "error": {"type": "overloaded_error",
                                              "message": "Overloaded"}}, "Overloaded"),
    ("ag_ui", {"type": "RUN_ERROR", "message": "tool crashed"}, "tool crashed"),
])
async def test_a_failed_run_raises(name: str, failure: dict[str, Any], text: str) -> None:
    s = RecordingWriter()
    with pytest.raises(adapters.RunFailedError, match=text):
        await FEEDS[name](s, [failure])


async def test_unknown_events_only_leave_the_stream_untouched(
        caplog: pytest.LogCaptureFixture) -> None:
    for feed in FEEDS.values():
        s = RecordingWriter()
        with caplog.at_level(logging.DEBUG, logger="chatql_client.adapters"):
            await feed(s, [{"type": "nope", "event_kind": "nope", "object": "nope"}, 42,
                           "text", None])
        assert s.calls == []
    assert sum("skipped" in record.getMessage() for record in caplog.records) == 4 * len(FEEDS)


async def test_openai_agents_stream_events() -> None:
    """The Agents SDK's run events: raw Responses events inside, tool output as a run item."""
    from agents import Agent
    from agents.items import ToolCallOutputItem
    from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent

    agent = Agent(name="helper")
    events = ev.openai_responses()
    output = events.index(next(e for e in events if isinstance(e, dict)
                               and e.get("type") == "function_call_output"))
    events[output] = RunItemStreamEvent(name="tool_output", item=ToolCallOutputItem(
        agent=agent, output=ev.RESULT,
        raw_item={"type": "function_call_output", "call_id": "call_weather",
                  "output": ev.RESULT}))
    wrapped = [RawResponsesStreamEvent(data=e) if not isinstance(e, RunItemStreamEvent | dict)
               else e for e in events]
    s = RecordingWriter()
    await adapters.feed_openai_responses(s, wrapped)
    _check_turns("openai_responses", s)


# -- over a live server (both databases, both stream backends) --------------------------------


@pytest.mark.parametrize("name", list(FEEDS))
async def test_stored_over_a_live_server(name: str, kit: ChatqlClient,
                                         person: ChatqlClient) -> None:
    chat = await person.create_chat("helper", title=name)
    question = await person.say(chat["id"], "Weather in Oslo?")
    async with kit.stream(chat["id"], parent_id=question) as s:
        await FEEDS[name](s, ev.SEQUENCES[name]())
    assert s.status == "COMPLETED"
    call_id = CALL_IDS.get(name, "call_weather")
    stored = await person.messages(chat["id"])
    main = [m for m in stored if m["threadId"] is None]
    assert [(m["role"], m["type"]) for m in main] == [
        ("USER", "user_input"), ("ASSISTANT", "thinking"), ("ASSISTANT", "tool_call"),
        ("TOOL", "tool_result"), ("ASSISTANT", "text")]
    _, thinking, call, result, answer = main
    assert thinking["props"] == {"content": "".join(ev.THINKING)}
    assert call["props"] == {"id": call_id, "name": "weather", "arguments": ev.ARGUMENTS}
    assert result["props"] == {"content": ev.RESULT, "tool_call_id": call_id,
                               "name": "weather"}
    assert answer["props"] == {"content": "".join(ev.ANSWER)}
    assert thinking["blockId"] == call["blockId"] == result["blockId"] != answer["blockId"]
    assert all(m["status"] == "COMPLETED" for m in stored)
    if name == "ag_ui":
        [sub] = [m for m in stored if m["threadId"] is not None]
        assert (sub["threadId"], sub["props"]) == ("sub_1", {"content": "Forecast: sunny"})
    else:
        assert len(stored) == len(main)
    usage = await person.execute("query($c: ID!) { chat(id: $c) { usage { promptTokens "
                                 "completionTokens } } }", {"c": chat["id"]})
    expected = USAGE.get(name, (0, 0))
    assert usage["chat"]["usage"] == {"promptTokens": expected[0],
                                      "completionTokens": expected[1]}
