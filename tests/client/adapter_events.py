"""Event sequences built from each SDK's own types, as its stream would deliver them.

Every sequence holds two model turns where the protocol has turns: reasoning, a tool call
whose arguments arrive in pieces, the tool's result, then the answer text; usage; and one
event the adapter does not know. ``EXPECTED`` is what each sequence must store.
"""

from __future__ import annotations

from typing import Any

ARGUMENT_PIECES = ['{"ci', 'ty": "Os', 'lo"}']
ARGUMENTS = "".join(ARGUMENT_PIECES)
THINKING = ["Let me ", "check the weather."]
ANSWER = ["It is ", "**sunny** in Oslo."]
RESULT = "sunny, 21 C"


def openai_chat() -> list[Any]:
    from openai.types.chat.chat_completion_chunk import (
        ChatCompletionChunk,
        Choice,
        ChoiceDelta,
        ChoiceDeltaToolCall,
        ChoiceDeltaToolCallFunction,
    )
    from openai.types.completion_usage import CompletionUsage

    def chunk(completion: str, delta: ChoiceDelta | None = None,
              usage: CompletionUsage | None = None) -> ChatCompletionChunk:
        choices = [] if delta is None else [Choice(index=0, delta=delta)]
        return ChatCompletionChunk(id=completion, choices=choices, created=0, model="gpt-test",
                                   object="chat.completion.chunk", usage=usage)

    def call_piece(arguments: str, first: bool = False) -> ChoiceDelta:
        return ChoiceDelta(tool_calls=[ChoiceDeltaToolCall(
            index=0, id="call_weather" if first else None, type="function" if first else None,
            function=ChoiceDeltaToolCallFunction(name="weather" if first else None,
                                                 arguments=arguments))])

    return [
        chunk("chatcmpl-1", ChoiceDelta(role="assistant", content="")),
        # OpenAI-compatible servers (vLLM, Ollama, DeepSeek) stream reasoning_content.
        chunk("chatcmpl-1", ChoiceDelta.model_validate({"reasoning_content": THINKING[0]})),
        chunk("chatcmpl-1", ChoiceDelta.model_validate({"reasoning_content": THINKING[1]})),
        chunk("chatcmpl-1", call_piece("", first=True)),
        *[chunk("chatcmpl-1", call_piece(piece)) for piece in ARGUMENT_PIECES],
        chunk("chatcmpl-1", usage=CompletionUsage(prompt_tokens=20, completion_tokens=7,
                                                  total_tokens=27)),
        {"object": "something.new", "id": "x"},  # not a chunk: skipped
        {"role": "tool", "tool_call_id": "call_weather", "content": RESULT},
        *[chunk("chatcmpl-2", ChoiceDelta(content=piece)) for piece in ANSWER],
        chunk("chatcmpl-2", usage=CompletionUsage(prompt_tokens=30, completion_tokens=5,
                                                  total_tokens=35)),
    ]


def openai_responses() -> list[Any]:
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseOutputItemAddedEvent,
        ResponseReasoningItem,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )

    sequence = iter(range(1, 1000))

    def created(response_id: str) -> ResponseCreatedEvent:
        return ResponseCreatedEvent(type="response.created", sequence_number=next(sequence),
                                    response=Response.model_construct(id=response_id,
                                                                      model="gpt-test"))

    def completed(response_id: str, prompt: int, completion: int) -> ResponseCompletedEvent:
        usage = ResponseUsage.model_construct(input_tokens=prompt, output_tokens=completion,
                                              total_tokens=prompt + completion)
        return ResponseCompletedEvent(
            type="response.completed", sequence_number=next(sequence),
            response=Response.model_construct(id=response_id, model="gpt-test", usage=usage))

    return [
        created("resp_1"),
        ResponseOutputItemAddedEvent(
            type="response.output_item.added", output_index=0, sequence_number=next(sequence),
            item=ResponseReasoningItem(id="rs_1", type="reasoning", summary=[])),
        *[ResponseReasoningSummaryTextDeltaEvent(
            type="response.reasoning_summary_text.delta", delta=piece, item_id="rs_1",
            output_index=0, summary_index=0, sequence_number=next(sequence))
          for piece in THINKING],
        ResponseOutputItemAddedEvent(
            type="response.output_item.added", output_index=1, sequence_number=next(sequence),
            item=ResponseFunctionToolCall(id="fc_1", call_id="call_weather", name="weather",
                                          arguments="", type="function_call")),
        *[ResponseFunctionCallArgumentsDeltaEvent(
            type="response.function_call_arguments.delta", delta=piece, item_id="fc_1",
            output_index=1, sequence_number=next(sequence)) for piece in ARGUMENT_PIECES],
        completed("resp_1", 20, 7),
        {"type": "response.something_new", "sequence_number": 99},  # skipped
        {"type": "function_call_output", "call_id": "call_weather", "output": RESULT},
        created("resp_2"),
        *[ResponseTextDeltaEvent(type="response.output_text.delta", delta=piece,
                                 item_id="msg_2", output_index=0, content_index=0,
                                 logprobs=[], sequence_number=next(sequence))
          for piece in ANSWER],
        completed("resp_2", 30, 5),
    ]


def anthropic() -> list[Any]:
    from anthropic.types import (
        InputJSONDelta,
        Message,
        MessageDeltaUsage,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
        TextBlock,
        TextDelta,
        ThinkingBlock,
        ThinkingDelta,
        ToolUseBlock,
        Usage,
    )
    from anthropic.types.raw_message_delta_event import Delta

    def start(message_id: str, prompt: int) -> RawMessageStartEvent:
        return RawMessageStartEvent(type="message_start", message=Message.model_construct(
            id=message_id, type="message", role="assistant", content=[], model="claude-test",
            usage=Usage(input_tokens=prompt, output_tokens=1)))

    def end(output: int) -> list[Any]:
        return [RawMessageDeltaEvent(type="message_delta", delta=Delta(stop_reason="end_turn"),
                                     usage=MessageDeltaUsage(output_tokens=output)),
                RawMessageStopEvent(type="message_stop")]

    return [
        start("msg_1", 20),
        RawContentBlockStartEvent(type="content_block_start", index=0,
                                  content_block=ThinkingBlock(type="thinking", thinking="",
                                                              signature="")),
        *[RawContentBlockDeltaEvent(type="content_block_delta", index=0,
                                    delta=ThinkingDelta(type="thinking_delta", thinking=piece))
          for piece in THINKING],
        RawContentBlockStopEvent(type="content_block_stop", index=0),
        RawContentBlockStartEvent(type="content_block_start", index=1,
                                  content_block=ToolUseBlock(type="tool_use", id="toolu_1",
                                                             name="weather", input={})),
        *[RawContentBlockDeltaEvent(type="content_block_delta", index=1,
                                    delta=InputJSONDelta(type="input_json_delta",
                                                         partial_json=piece))
          for piece in ARGUMENT_PIECES],
        RawContentBlockStopEvent(type="content_block_stop", index=1),
        *end(7),
        {"type": "ping"},  # nothing to store
        {"type": "brand_new_event", "index": 0},  # unknown: skipped
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT},
        start("msg_2", 30),
        RawContentBlockStartEvent(type="content_block_start", index=0,
                                  content_block=TextBlock(type="text", text="")),
        *[RawContentBlockDeltaEvent(type="content_block_delta", index=0,
                                    delta=TextDelta(type="text_delta", text=piece))
          for piece in ANSWER],
        RawContentBlockStopEvent(type="content_block_stop", index=0),
        *end(5),
    ]


def pydantic_ai() -> list[Any]:
    from pydantic_ai.messages import (
        FinalResultEvent,
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        PartDeltaEvent,
        PartEndEvent,
        PartStartEvent,
        TextPart,
        TextPartDelta,
        ThinkingPart,
        ThinkingPartDelta,
        ToolCallPart,
        ToolCallPartDelta,
        ToolReturnPart,
    )

    call = ToolCallPart(tool_name="weather", args=ARGUMENTS, tool_call_id="call_weather")
    return [
        PartStartEvent(index=0, part=ThinkingPart(content=THINKING[0])),
        PartDeltaEvent(index=0, delta=ThinkingPartDelta(content_delta=THINKING[1])),
        PartEndEvent(index=0, part=ThinkingPart(content="".join(THINKING))),
        PartStartEvent(index=1, part=ToolCallPart(tool_name="weather", args=ARGUMENT_PIECES[0],
                                                  tool_call_id="call_weather")),
        *[PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta=piece,
                                                          tool_call_id="call_weather"))
          for piece in ARGUMENT_PIECES[1:]],
        PartEndEvent(index=1, part=call),
        FunctionToolCallEvent(part=call),
        {"event_kind": "brand_new_event"},  # unknown: skipped
        FunctionToolResultEvent(part=ToolReturnPart(tool_name="weather", content=RESULT,
                                                    tool_call_id="call_weather")),
        PartStartEvent(index=0, part=TextPart(content=ANSWER[0])),
        FinalResultEvent(tool_name=None, tool_call_id=None),
        PartDeltaEvent(index=0, delta=TextPartDelta(content_delta=ANSWER[1])),
        PartEndEvent(index=0, part=TextPart(content="".join(ANSWER))),
    ]


async def pydantic_ai_result() -> Any:
    """The run-result event of a real PydanticAI run over its own test model (no network)."""
    from pydantic_ai import Agent
    from pydantic_ai.run import AgentRunResultEvent

    agent = Agent("test", output_type=str)
    result = await agent.run("Weather in Oslo?")
    return AgentRunResultEvent(result=result)


def ag_ui() -> list[Any]:
    from ag_ui.core import (
        CustomEvent,
        ReasoningEndEvent,
        ReasoningMessageContentEvent,
        ReasoningMessageEndEvent,
        ReasoningMessageStartEvent,
        ReasoningStartEvent,
        RunFinishedEvent,
        RunStartedEvent,
        StepFinishedEvent,
        StepStartedEvent,
        SubagentFinishedEvent,
        SubagentStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        TokenUsage,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
    )

    return [
        RunStartedEvent(thread_id="t1", run_id="run_1"),
        StepStartedEvent(step_name="plan"),
        ReasoningStartEvent(message_id="r1"),
        ReasoningMessageStartEvent(message_id="r1"),
        *[ReasoningMessageContentEvent(message_id="r1", delta=piece) for piece in THINKING],
        ReasoningMessageEndEvent(message_id="r1"),
        ReasoningEndEvent(message_id="r1"),
        ToolCallStartEvent(tool_call_id="call_weather", tool_call_name="weather",
                           parent_message_id="r1"),
        *[ToolCallArgsEvent(tool_call_id="call_weather", delta=piece)
          for piece in ARGUMENT_PIECES],
        ToolCallEndEvent(tool_call_id="call_weather"),
        # The tool is a sub-agent: its own text goes to its own thread.
        SubagentStartedEvent(subagent_run_id="sub_1", name="forecaster",
                             parent_tool_call_id="call_weather"),
        TextMessageStartEvent(message_id="sub_text", role="assistant",
                              subagent_run_id="sub_1"),
        TextMessageContentEvent(message_id="sub_text", delta="Forecast: sunny",
                                subagent_run_id="sub_1"),
        TextMessageEndEvent(message_id="sub_text", subagent_run_id="sub_1"),
        SubagentFinishedEvent(subagent_run_id="sub_1"),
        ToolCallResultEvent(message_id="result_1", tool_call_id="call_weather",
                            content=RESULT),
        StepFinishedEvent(step_name="plan"),
        {"type": "BRAND_NEW_EVENT", "value": 1},  # unknown: skipped
        TextMessageStartEvent(message_id="answer", role="assistant"),
        *[TextMessageContentEvent(message_id="answer", delta=piece) for piece in ANSWER],
        TextMessageEndEvent(message_id="answer"),
        CustomEvent(name="citation", value={"url": "https://example.org/oslo"}),
        RunFinishedEvent(thread_id="t1", run_id="run_1",
                         usage=[TokenUsage(model="gpt-test", input_tokens=20, output_tokens=7),
                                TokenUsage(input_tokens=30, output_tokens=5)]),
    ]


SEQUENCES = {
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "pydantic_ai": pydantic_ai,
    "ag_ui": ag_ui,
}
