"""Feed a stream writer from the event objects an agent framework already emits.

Each adapter is one coroutine, ``await feed_x(s, events)``: ``s`` is the writer of
``client.stream(...)``, ``events`` an iterable or async iterable of the SDK's own stream
events — the SDK's objects, or the same events as dicts (``model_dump()``, JSON). No SDK
is imported: an event is read by attribute or key, so any version whose field names
match works, and the kit keeps its two runtime dependencies.

==========================  ==========================================================
Adapter                     Events
==========================  ==========================================================
``feed_openai_chat``        Chat Completions ``ChatCompletionChunk`` (also from any
                            OpenAI-compatible server: ``reasoning_content`` and
                            ``reasoning`` deltas are thinking)
``feed_openai_responses``   Responses ``ResponseStreamEvent`` and the OpenAI Agents SDK's
                            ``Runner.run_streamed(...).stream_events()``
``feed_anthropic``          Anthropic Messages ``RawMessageStreamEvent``
``feed_pydantic_ai``        PydanticAI ``AgentStreamEvent`` (``run_stream_events``,
                            ``event_stream_handler``) and ``AgentRunResultEvent``
``feed_ag_ui``              AG-UI events (``ag_ui.core``; LangGraph, CrewAI, Mastra …)
==========================  ==========================================================

What every adapter does the same way:

- Text becomes a ``text`` message, reasoning a ``thinking`` message, a tool call a
  ``tool_call`` message ``{id, name, arguments}`` whose ``arguments`` grows piece by piece,
  a tool result a ``TOOL`` message keeping the call's id (in the call's block and thread),
  usage the stream's usage (each model call's counts, added up by the writer).
- One block per model turn: the block id is the provider's response id where the protocol
  has one (a completion's, response's or message's id), else the id of the first message
  of the turn.
- ``thread_id=`` puts everything fed into that thread: feed a sub-agent's events with its
  own thread. AG-UI names its sub-agents itself (below).
- The tool result an agent loop sends back to the model may ride in the same iterable, in
  that API's own shape: a Chat Completions ``{"role": "tool", "tool_call_id", "content"}``
  message, a Responses ``{"type": "function_call_output", "call_id", "output"}`` item, an
  Anthropic ``{"type": "tool_result", "tool_use_id", "content"}`` block.
- An event the adapter does not know (or that carries nothing to store) is skipped and
  logged at debug level on the ``chatql_client.adapters`` logger; it never reaches the
  stream.
- A failure the stream itself reports (Responses ``error``/``response.failed``, an
  Anthropic ``error`` event, AG-UI ``RUN_ERROR`` of the top run) raises
  :class:`RunFailedError`, so leaving the writer's block ends the stream ``FAILED`` with
  that text.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from chatql_client.documents import RUN_STATES

__all__ = [
    "RunFailedError",
    "Writer",
    "ag_ui_resume",
    "feed_ag_ui",
    "feed_anthropic",
    "feed_openai_chat",
    "feed_openai_responses",
    "feed_pydantic_ai",
    "paused_step",
]

logger = logging.getLogger("chatql_client.adapters")

Events = Iterable[Any] | AsyncIterable[Any]


class Writer(Protocol):
    """The part of the kit's stream writer the adapters call."""

    async def text(self, delta: str, message_id: str | None = None,
                   block_id: str | None = None, thread_id: str | None = None) -> None: ...

    async def thinking(self, delta: str, message_id: str | None = None,
                       block_id: str | None = None, thread_id: str | None = None) -> None: ...

    async def tool_call(self, call_id: str, name: str, arguments_delta: str = "",
                        block_id: str | None = None, thread_id: str | None = None) -> None: ...

    async def tool_arguments(self, call_id: str, delta: str) -> None: ...

    async def tool_result(self, call_id: str, content: Any) -> None: ...

    async def event(self, name: str, props: dict[str, Any] | None = None) -> None: ...

    def usage(self, prompt_tokens: int = 0, completion_tokens: int = 0,
              model: str | None = None) -> None: ...


class RunFailedError(Exception):
    """The framework's own stream reported that the run failed (its message is the text)."""


# -- reading events ---------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """A field of an SDK object or of its dict form (snake_case, or camelCase as in JSON)."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        if name in obj:
            return obj[name]
        return obj.get(_camel(name), default)
    return getattr(obj, name, default)


def _kind(obj: Any, name: str = "type") -> str | None:
    value = _get(obj, name)
    if isinstance(value, enum.Enum):
        value = value.value
    return value if isinstance(value, str) else None


def _jsonable(value: Any) -> Any:
    """A value the service can store as JSON: SDK models and dataclasses become plain data."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return _jsonable(dump(mode="json"))
        except TypeError:
            return _jsonable(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _jsonable(getattr(value, field.name))
                for field in dataclasses.fields(value) if not field.name.startswith("_")}
    return str(value)


def _arguments_text(value: Any) -> str:
    """Tool arguments as the JSON text the ``arguments`` prop grows by."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), separators=(",", ":"))


async def _each(events: Events) -> AsyncIterator[Any]:
    if isinstance(events, AsyncIterable):
        async for event in events:
            yield event
    else:
        for event in events:
            yield event


def _skip(adapter: str, event: Any, why: str = "unknown event") -> None:
    kind = event if isinstance(event, str) else (
        _kind(event) or _kind(event, "event_kind") or type(event).__name__)
    logger.debug("%s: skipped %s (%s)", adapter, kind, why)


class _Feed:
    """What every adapter shares: the writer, the thread, usage totals, skip logging."""

    def __init__(self, adapter: str, writer: Writer, thread_id: str | None) -> None:
        self.adapter = adapter
        self.s = writer
        self.thread_id = thread_id
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.model: str | None = None
        self.calls: set[str] = set()
        self._prefix = uuid.uuid4().hex[:12]
        self._count = 0

    def new_id(self, kind: str) -> str:
        """An id unique to this feed, for protocols that do not name a turn or message."""
        self._count += 1
        return f"{kind}-{self._prefix}-{self._count}"

    def skip(self, event: Any, why: str = "unknown event") -> None:
        _skip(self.adapter, event, why)

    async def text(self, delta: Any, message_id: str, block_id: str | None,
                   thread_id: str | None = None) -> None:
        if isinstance(delta, str) and delta:
            await self.s.text(delta, message_id=message_id, block_id=block_id,
                              thread_id=thread_id or self.thread_id)

    async def thinking(self, delta: Any, message_id: str, block_id: str | None,
                       thread_id: str | None = None) -> None:
        if isinstance(delta, str) and delta:
            await self.s.thinking(delta, message_id=message_id, block_id=block_id,
                                  thread_id=thread_id or self.thread_id)

    async def tool_call(self, call_id: str, name: str, arguments: Any, block_id: str | None,
                        thread_id: str | None = None) -> None:
        self.calls.add(call_id)
        await self.s.tool_call(call_id, name or "", _arguments_text(arguments),
                               block_id=block_id, thread_id=thread_id or self.thread_id)

    async def tool_arguments(self, call_id: str, delta: Any) -> None:
        text = _arguments_text(delta)
        if text:
            await self.s.tool_arguments(call_id, text)

    async def tool_result(self, call_id: Any, content: Any) -> None:
        if not isinstance(call_id, str) or not call_id:
            self.skip("tool result", "no call id")
            return
        # The writer files a result in its call's block and thread.
        await self.s.tool_result(call_id, _jsonable(content))

    def add_usage(self, prompt: Any, completion: Any, model: Any = None) -> None:
        """Report usage to the writer, whose calls add up."""
        prompt = prompt if isinstance(prompt, int) else 0
        completion = completion if isinstance(completion, int) else 0
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.s.usage(prompt_tokens=prompt, completion_tokens=completion,
                     model=model if isinstance(model, str) and model else None)


# -- OpenAI Chat Completions ------------------------------------------------------------------


async def feed_openai_chat(s: Writer, events: Events, *,
                           thread_id: str | None = None) -> None:
    """Feed Chat Completions stream chunks (``ChatCompletionChunk``) into the writer.

    One block per completion (its ``id``); the first choice only (``n > 1`` alternatives are
    skipped). ``delta.content`` and ``delta.refusal`` are text, ``reasoning_content`` /
    ``reasoning`` (OpenAI-compatible servers: vLLM, Ollama, DeepSeek …) thinking;
    ``tool_calls`` pieces are joined by their ``index``. Usage comes from the last chunk
    (``stream_options={"include_usage": True}``).
    """
    feed = _Feed("feed_openai_chat", s, thread_id)
    block: str | None = None
    calls: dict[tuple[str, int], str] = {}
    async for event in _each(events):
        if _get(event, "role") == "tool" and _get(event, "tool_call_id") is not None:
            await feed.tool_result(_get(event, "tool_call_id"), _get(event, "content"))
            continue
        choices = _get(event, "choices")
        if not isinstance(choices, list) or _kind(event, "object") not in (
                None, "chat.completion.chunk"):
            feed.skip(event)
            continue
        block = str(_get(event, "id") or block or feed.new_id("completion"))
        usage = _get(event, "usage")
        if usage is not None:
            feed.add_usage(_get(usage, "prompt_tokens"), _get(usage, "completion_tokens"),
                           _get(event, "model"))
        for choice in choices:
            if (_get(choice, "index") or 0) != 0:
                feed.skip("choice", "only the first choice is fed")
                continue
            delta = _get(choice, "delta")
            if delta is None:
                continue
            reasoning = _get(delta, "reasoning_content")
            if reasoning is None:
                reasoning = _get(delta, "reasoning")
            await feed.thinking(reasoning, f"{block}.thinking", block)
            await feed.text(_get(delta, "content"), f"{block}.text", block)
            await feed.text(_get(delta, "refusal"), f"{block}.text", block)
            legacy = _get(delta, "function_call")
            pieces = list(_get(delta, "tool_calls") or [])
            if legacy is not None:
                pieces.append({"index": -1, "id": None, "function": legacy})
            for piece in pieces:
                index = int(_get(piece, "index") or 0)
                function = _get(piece, "function")
                name, arguments = _get(function, "name"), _get(function, "arguments")
                call_id = calls.get((block, index))
                if call_id is None:
                    call_id = str(_get(piece, "id") or f"{block}.call{index}")
                    calls[(block, index)] = call_id
                    await feed.tool_call(call_id, name or "", arguments, block)
                else:
                    await feed.tool_arguments(call_id, arguments)


# -- OpenAI Responses (and the Agents SDK's run events) ----------------------------------------

_HOSTED_CALLS = {"web_search_call", "file_search_call", "code_interpreter_call", "mcp_call"}


async def feed_openai_responses(s: Writer, events: Events, *,
                                thread_id: str | None = None) -> None:
    """Feed Responses stream events (``ResponseStreamEvent``) into the writer.

    One block per response (``response.created``'s id). Output text and refusals are
    text (one message per output item), reasoning summaries and reasoning text thinking.
    A ``function_call`` or ``custom_tool_call`` item is a tool call (``call_id``) whose
    arguments grow by ``response.function_call_arguments.delta`` /
    ``response.custom_tool_call_input.delta``; a hosted tool (web search, file search,
    code interpreter, MCP) is a tool call named by its item type whose result is the
    finished item. Usage comes from ``response.completed`` / ``response.incomplete``.

    The OpenAI Agents SDK's ``RunResultStreaming.stream_events()`` is accepted as it is:
    its ``raw_response_event`` carries these events, a ``tool_output`` run item is the
    tool's result, and a handoff is a live ``agent_updated`` event.
    """
    feed = _Feed("feed_openai_responses", s, thread_id)
    block: str | None = None
    items: dict[str, str] = {}  # output item id -> call id
    summary_parts: set[tuple[str, int]] = set()
    async for wrapped in _each(events):
        kind = _kind(wrapped)
        event = wrapped
        if kind == "raw_response_event":
            event = _get(wrapped, "data")
            kind = _kind(event)
        elif kind == "run_item_stream_event":
            item = _get(wrapped, "item")
            if _get(wrapped, "name") == "tool_output":
                raw = _get(item, "raw_item")
                await feed.tool_result(_get(raw, "call_id"), _get(item, "output",
                                                                  _get(raw, "output")))
            else:
                feed.skip(f"run item {_get(wrapped, 'name')}", "carried by the raw events")
            continue
        elif kind == "agent_updated_stream_event":
            agent = _get(wrapped, "new_agent")
            await s.event("agent_updated", {"agent": _get(agent, "name")})
            continue
        if kind == "function_call_output":
            await feed.tool_result(_get(event, "call_id"), _get(event, "output"))
        elif kind in ("response.created", "response.in_progress"):
            block = str(_get(_get(event, "response"), "id") or block or feed.new_id("response"))
        elif kind == "response.output_item.added":
            item = _get(event, "item")
            item_kind, item_id = _kind(item), str(_get(item, "id") or "")
            if item_kind in ("function_call", "custom_tool_call"):
                call_id = str(_get(item, "call_id") or item_id)
                items[item_id] = call_id
                await feed.tool_call(call_id, _get(item, "name") or "",
                                     _get(item, "arguments", _get(item, "input")), block)
            elif item_kind in _HOSTED_CALLS:
                items[item_id] = item_id
                name = _get(item, "name") if item_kind == "mcp_call" else item_kind
                await feed.tool_call(item_id, name or item_kind, _get(item, "arguments"), block)
            else:
                feed.skip(event, f"nothing to store for a {item_kind} item yet")
        elif kind == "response.output_item.done":
            item = _get(event, "item")
            item_kind, item_id = _kind(item), str(_get(item, "id") or "")
            if item_kind in _HOSTED_CALLS:
                result = _jsonable(item)
                if isinstance(result, dict):
                    result = _get(result, "output") if item_kind == "mcp_call" else {
                        key: value for key, value in result.items() if key not in ("id",
                                                                                   "type")}
                await feed.tool_result(item_id, result)
            else:
                feed.skip(event, "its deltas were fed")
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            await feed.text(_get(event, "delta"), str(_get(event, "item_id")), block)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            await feed.thinking(_get(event, "delta"), str(_get(event, "item_id")), block)
        elif kind == "response.reasoning_summary_part.added":
            key = (str(_get(event, "item_id")), int(_get(event, "summary_index") or 0))
            if key[1] > 0 and key not in summary_parts:
                await feed.thinking("\n\n", key[0], block)
            summary_parts.add(key)
        elif kind in ("response.function_call_arguments.delta",
                      "response.custom_tool_call_input.delta",
                      "response.mcp_call_arguments.delta"):
            target = items.get(str(_get(event, "item_id")))
            if target is None:
                feed.skip(event, "arguments of a call that never started")
            else:
                await feed.tool_arguments(target, _get(event, "delta"))
        elif kind in ("response.completed", "response.incomplete"):
            response = _get(event, "response")
            usage = _get(response, "usage")
            if usage is not None:
                feed.add_usage(_get(usage, "input_tokens"), _get(usage, "output_tokens"),
                               _get(response, "model"))
        elif kind in ("response.failed", "error"):
            error = _get(_get(event, "response"), "error") if kind == "response.failed" else event
            raise RunFailedError(str(_get(error, "message") or "the response failed"))
        else:
            feed.skip(event)


# -- Anthropic Messages -----------------------------------------------------------------------


async def feed_anthropic(s: Writer, events: Events, *,
                         thread_id: str | None = None) -> None:
    """Feed Anthropic Messages stream events (``RawMessageStreamEvent``) into the writer.

    One block per message (``message_start``'s id); each content block is one message:
    ``text`` (``text_delta``), ``thinking`` (``thinking_delta``), ``tool_use`` and
    ``server_tool_use`` a tool call whose arguments grow by ``input_json_delta``; a server
    tool's result block (``web_search_tool_result`` …) is that call's result. Usage: input
    tokens (cache reads and writes included) from ``message_start``, output tokens from the
    last ``message_delta``, summed over the messages fed.
    """
    feed = _Feed("feed_anthropic", s, thread_id)
    block: str | None = None
    kinds: dict[int, tuple[str, str]] = {}  # content block index -> (kind, message/call id)
    turn_output = 0
    async for event in _each(events):
        kind = _kind(event)
        if kind == "message_start":
            message = _get(event, "message")
            block = str(_get(message, "id") or feed.new_id("message"))
            kinds.clear()
            usage = _get(message, "usage")
            turn_input = sum(_get(usage, name) or 0 for name in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            turn_output = _get(usage, "output_tokens") or 0
            feed.add_usage(turn_input, turn_output, _get(message, "model"))
        elif kind == "message_delta":
            usage = _get(event, "usage")
            output = _get(usage, "output_tokens")
            if isinstance(output, int) and output >= turn_output:
                feed.add_usage(0, output - turn_output)
                turn_output = output
        elif kind == "content_block_start":
            index = int(_get(event, "index") or 0)
            part = _get(event, "content_block")
            part_kind = _kind(part)
            block = block or feed.new_id("message")
            if part_kind == "text":
                kinds[index] = ("text", f"{block}.{index}")
                await feed.text(_get(part, "text"), f"{block}.{index}", block)
            elif part_kind == "thinking":
                kinds[index] = ("thinking", f"{block}.{index}")
                await feed.thinking(_get(part, "thinking"), f"{block}.{index}", block)
            elif part_kind in ("tool_use", "server_tool_use"):
                call_id = str(_get(part, "id") or f"{block}.{index}")
                kinds[index] = ("tool", call_id)
                # A streamed call starts with ``input: {}`` and grows by input_json_delta.
                arguments = _get(part, "input") or None
                await feed.tool_call(call_id, _get(part, "name") or "", arguments, block)
            elif isinstance(part_kind, str) and part_kind.endswith("_tool_result"):
                await feed.tool_result(_get(part, "tool_use_id"), _get(part, "content"))
            else:
                feed.skip(event, f"a {part_kind} block")
        elif kind == "content_block_delta":
            target = kinds.get(int(_get(event, "index") or 0))
            delta = _get(event, "delta")
            delta_kind = _kind(delta)
            if target is None:
                feed.skip(event, "a delta of a block that never started")
            elif delta_kind == "text_delta" and target[0] == "text":
                await feed.text(_get(delta, "text"), target[1], block)
            elif delta_kind == "thinking_delta" and target[0] == "thinking":
                await feed.thinking(_get(delta, "thinking"), target[1], block)
            elif delta_kind == "input_json_delta" and target[0] == "tool":
                await feed.tool_arguments(target[1], _get(delta, "partial_json"))
            else:
                feed.skip(event, f"a {delta_kind}")
        elif kind == "tool_result":
            await feed.tool_result(_get(event, "tool_use_id"), _get(event, "content"))
        elif kind == "error":
            raise RunFailedError(str(_get(_get(event, "error"), "message") or "stream error"))
        else:
            feed.skip(event)


# -- PydanticAI -------------------------------------------------------------------------------


def _pydantic_ai_result_text(part: Any) -> Any:
    if _kind(part, "part_kind") in ("retry-prompt", "retry-feedback"):
        response = getattr(part, "model_response", None)
        return response() if callable(response) else _get(part, "content")
    return _get(part, "content")


async def feed_pydantic_ai(s: Writer, events: Events, *,
                           thread_id: str | None = None) -> None:
    """Feed PydanticAI agent stream events into the writer.

    Takes what ``async with agent.run_stream_events(...) as events`` yields or an
    ``event_stream_handler`` receives:
    ``PartStartEvent`` / ``PartDeltaEvent`` (``TextPart``/``TextPartDelta`` text,
    ``ThinkingPart``/``ThinkingPartDelta`` thinking, ``ToolCallPart``/``ToolCallPartDelta``
    a tool call whose arguments grow), ``FunctionToolCallEvent`` (a call not streamed
    before), ``FunctionToolResultEvent`` (its result, by ``tool_call_id``), ``CustomEvent``
    (a live producer event) and ``AgentRunResultEvent`` (the run's usage and model).

    A model turn is one model response: a new block starts when a response's first part
    starts (index 0) or after tool results. PydanticAI's events do not say which agent
    produced them; a tool that delegates to another agent feeds that agent's events with
    ``thread_id=`` of its own.
    """
    feed = _Feed("feed_pydantic_ai", s, thread_id)
    block: str | None = None
    last_index = -1
    new_turn = True
    parts: dict[int, tuple[str, str]] = {}  # part index -> (kind, message/call id)
    async for event in _each(events):
        kind = _kind(event, "event_kind")
        if kind == "part_start":
            index = int(_get(event, "index") or 0)
            if new_turn or index <= last_index:
                block, new_turn = feed.new_id("turn"), False
                parts.clear()
            last_index = index
            part = _get(event, "part")
            part_kind = _kind(part, "part_kind")
            message_id = str(_get(part, "id") or f"{block}.{index}")
            if part_kind == "text":
                parts[index] = ("text", message_id)
                await feed.text(_get(part, "content"), message_id, block)
            elif part_kind == "thinking":
                parts[index] = ("thinking", message_id)
                await feed.thinking(_get(part, "content"), message_id, block)
            elif part_kind in ("tool-call", "builtin-tool-call"):
                call_id = str(_get(part, "tool_call_id") or message_id)
                parts[index] = ("tool", call_id)
                await feed.tool_call(call_id, _get(part, "tool_name") or "", _get(part, "args"),
                                     block)
            elif part_kind == "builtin-tool-return":
                await feed.tool_result(_get(part, "tool_call_id"), _get(part, "content"))
            else:
                feed.skip(event, f"a {part_kind} part")
        elif kind == "part_delta":
            target = parts.get(int(_get(event, "index") or 0))
            delta = _get(event, "delta")
            delta_kind = _kind(delta, "part_delta_kind")
            if target is None:
                feed.skip(event, "a delta of a part that never started")
            elif delta_kind == "text" and target[0] == "text":
                await feed.text(_get(delta, "content_delta"), target[1], block)
            elif delta_kind == "thinking" and target[0] == "thinking":
                await feed.thinking(_get(delta, "content_delta"), target[1], block)
            elif delta_kind == "tool_call" and target[0] == "tool":
                await feed.tool_arguments(target[1], _get(delta, "args_delta"))
            else:
                feed.skip(event, f"a {delta_kind} delta")
        elif kind in ("function_tool_call", "output_tool_call"):
            part = _get(event, "part")
            call_id = str(_get(part, "tool_call_id") or "")
            if call_id and call_id not in feed.calls:
                await feed.tool_call(call_id, _get(part, "tool_name") or "",
                                     _get(part, "args"), block)
            new_turn = True
        elif kind in ("function_tool_result", "output_tool_result"):
            part = _get(event, "part", _get(event, "result"))
            await feed.tool_result(_get(part, "tool_call_id"), _pydantic_ai_result_text(part))
            new_turn = True
        elif kind == "custom":
            props = _jsonable(event)
            if isinstance(props, dict):
                props.pop("event_kind", None)
            name = _get(event, "name") or "custom"
            await s.event(str(name), props if isinstance(props, dict) else {"value": props})
        elif kind == "agent_run_result":
            result = _get(event, "result")
            # A method in older PydanticAI, a property (its value still callable) in newer.
            usage = _get(result, "usage")
            if callable(usage) and _get(usage, "input_tokens") is None:
                usage = usage()
            response = _get(result, "response")
            if callable(response) and _get(response, "model_name") is None:
                try:
                    response = response()
                except Exception:  # a run without a response has no model to name
                    response = None
            model = _get(response, "model_name")
            feed.add_usage(_get(usage, "input_tokens"), _get(usage, "output_tokens"), model)
        elif kind in ("part_end", "final_result"):
            continue  # the parts were fed as they grew
        else:
            feed.skip(event)


# -- AG-UI ------------------------------------------------------------------------------------


class _AgUiThread:
    """One agent's turn state in an AG-UI stream (the root run or one sub-agent)."""

    def __init__(self) -> None:
        self.block: str | None = None
        self.new_turn = True
        self.text_id: str | None = None
        self.reasoning_id: str | None = None
        self.call_id: str | None = None

    def turn(self, opening_id: str) -> str:
        """The current block, or a new one named by the message that opens the turn."""
        if self.new_turn or self.block is None:
            self.block, self.new_turn = opening_id, False
        return self.block


async def feed_ag_ui(s: Writer, events: Events, *, thread_id: str | None = None) -> None:
    """Feed AG-UI events (``ag_ui.core``) into the writer.

    ``TEXT_MESSAGE_*`` are text (by ``messageId``), ``REASONING_MESSAGE_*`` and the older
    ``THINKING_TEXT_MESSAGE_*`` thinking, ``TOOL_CALL_START``/``ARGS``/``CHUNK`` a tool
    call whose arguments grow, ``TOOL_CALL_RESULT`` its result. ``STEP_*``, ``CUSTOM``,
    ``STATE_*``, ``ACTIVITY_*`` and ``SUBAGENT_*`` are live producer events (``CUSTOM``
    under its own name). ``RUN_FINISHED`` of the top run gives the usage (its ``usage``
    entries summed); ``RUN_ERROR`` of the top run raises :class:`RunFailedError`.

    Threads: an event naming a ``subagentRunId`` goes to the thread of that id; the events
    of a run started inside another (``RUN_STARTED`` with ``parentRunId``, or before the
    outer run finished) go to the thread of the inner ``runId``. A model turn is what an
    agent says until its tool results come back: its block is named by the turn's first
    message (a tool call's ``parentMessageId`` when it has one).
    """
    feed = _Feed("feed_ag_ui", s, thread_id)
    runs: list[str] = []
    threads: dict[str | None, _AgUiThread] = {}

    def place(event: Any) -> tuple[str | None, _AgUiThread]:
        subagent = _get(event, "subagent_run_id")
        name = str(subagent) if subagent else (runs[-1] if len(runs) > 1 else thread_id)
        return name, threads.setdefault(name, _AgUiThread())

    async for event in _each(events):
        kind = _kind(event)
        where, state = place(event)
        if kind == "RUN_STARTED":
            run_id = str(_get(event, "run_id") or feed.new_id("run"))
            if _get(event, "parent_run_id") and not runs:
                runs.append(str(_get(event, "parent_run_id")))
            runs.append(run_id)
            place(event)[1].new_turn = True
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            nested = len(runs) > 1
            if runs:
                runs.pop()
            if kind == "RUN_ERROR" and not nested:
                raise RunFailedError(str(_get(event, "message") or "the run failed"))
            if kind == "RUN_ERROR":
                await s.event("run_error", {"threadId": where,
                                            "message": _get(event, "message")})
            elif not nested:
                outcome = _get(event, "outcome")
                if _get(outcome, "type") == "interrupt":
                    await _ag_ui_interrupts(s, feed, _get(outcome, "interrupts") or [])
                usage = _get(event, "usage") or []
                entries = usage if isinstance(usage, list) else [usage]
                model = next((_get(item, "model") for item in entries if _get(item, "model")),
                             None)
                if entries:
                    feed.add_usage(sum(_get(item, "input_tokens") or 0 for item in entries),
                                   sum(_get(item, "output_tokens") or 0 for item in entries),
                                   model)
        elif kind in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK"):
            message_id = _get(event, "message_id") or state.text_id or feed.new_id("text")
            state.text_id = str(message_id)
            block = state.turn(state.text_id)
            await feed.text(_get(event, "delta"), state.text_id, block, where)
        elif kind in ("REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
                      "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_START",
                      "THINKING_TEXT_MESSAGE_CONTENT"):
            message_id = _get(event, "message_id") or state.reasoning_id or feed.new_id(
                "thinking")
            state.reasoning_id = str(message_id)
            block = state.turn(state.reasoning_id)
            await feed.thinking(_get(event, "delta"), state.reasoning_id, block, where)
        elif kind in ("THINKING_TEXT_MESSAGE_END", "THINKING_END"):
            state.reasoning_id = None
        elif kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            call_id = _get(event, "tool_call_id") or state.call_id
            if call_id is None:
                feed.skip(event, "a tool call chunk without a call")
                continue
            state.call_id = str(call_id)
            if state.call_id not in feed.calls:
                block = state.turn(str(_get(event, "parent_message_id") or state.call_id))
                await feed.tool_call(state.call_id, _get(event, "tool_call_name") or "",
                                     _get(event, "delta"), block, where)
            else:
                await feed.tool_arguments(state.call_id, _get(event, "delta"))
        elif kind == "TOOL_CALL_ARGS":
            call_id = _get(event, "tool_call_id")
            if call_id not in feed.calls:
                feed.skip(event, "arguments of a call that never started")
            else:
                await feed.tool_arguments(str(call_id), _get(event, "delta"))
        elif kind == "TOOL_CALL_RESULT":
            await feed.tool_result(_get(event, "tool_call_id"), _get(event, "content"))
            state.new_turn = True
        elif kind == "CUSTOM":
            await s.event(str(_get(event, "name") or "custom"),
                          {"value": _jsonable(_get(event, "value")), "threadId": where})
        elif kind in ("STEP_STARTED", "STEP_FINISHED"):
            await s.event(kind.lower(), {"stepName": _get(event, "step_name"),
                                         "threadId": where})
        elif kind in ("STATE_SNAPSHOT", "STATE_DELTA", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
            props = _jsonable(event)
            props = {key: value for key, value in props.items()
                     if key not in ("type", "rawEvent", "raw_event", "timestamp")}
            await s.event(kind.lower(), {**props, "threadId": where})
        elif kind in ("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            props = {key: value for key, value in _jsonable(event).items()
                     if key not in ("type", "rawEvent", "raw_event", "timestamp")}
            await s.event(kind.lower(), {**props, "threadId": where})
        elif kind in ("TEXT_MESSAGE_END", "TOOL_CALL_END", "REASONING_START",
                      "REASONING_MESSAGE_END", "REASONING_END", "THINKING_START"):
            if kind == "REASONING_MESSAGE_END":
                state.reasoning_id = None
            continue
        else:
            feed.skip(event)


# ---- a person in the loop: AG-UI interrupts, and what a resumption reads -------------

#: The kind of the step that keeps which AG-UI interrupt each chatql one stands for.
AG_UI_INTERRUPTS_KIND = "ag_ui.interrupts"
_RESUME = re.compile(r"^(?P<base>.*)\.resume\.(?P<n>[1-9][0-9]*)$")


def _asked_by(request_id: str | None) -> str | None:
    """The request id of the stream a resumption's request id continues."""
    match = _RESUME.match(request_id or "")
    if match is None:
        return None
    n = int(match["n"])
    return match["base"] if n == 1 else f"{match['base']}.resume.{n - 1}"


async def paused_step(s: Any, kind: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """The step of ``kind`` (its ``input.kind``) that the paused stream this resumption
    continues recorded: (resume record id, input, spaceSnapshot); None when there is
    none. For adapters that keep a framework's paused state beside the chat."""
    data = await s.client.execute(RUN_STATES, {"c": s.chat_id})
    asked_by = _asked_by(s.request_id)
    found: tuple[str, dict[str, Any], dict[str, Any]] | None = None
    for record in data["resumeRecords"]:
        marker = record.get("input") or {}
        if not isinstance(marker, Mapping) or marker.get("kind") != kind:
            continue
        if asked_by is not None and record.get("requestId") != asked_by:
            continue
        snapshot = record.get("spaceSnapshot")
        # The newest such (records come oldest first).
        found = (record["id"], dict(marker), dict(snapshot) if isinstance(snapshot, Mapping)
                 else {})
    return found


def _expires_in(expires_at: Any) -> float | None:
    if not isinstance(expires_at, str):
        return None
    try:
        moment = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    left = moment.timestamp() - time.time()
    return max(left, 1.0)


async def _ag_ui_interrupts(s: Writer, feed: _Feed, interrupts: list[Any]) -> None:
    """The run paused for a person: each AG-UI interrupt becomes chatql's — on its tool
    call when it names one the run started (an approval), else a question — and a step
    keeps which AG-UI interrupt each stands for, so :func:`ag_ui_resume` can answer the
    agent in its own ids."""
    writer: Any = s
    ids: dict[str, str] = {}
    for interrupt in interrupts:
        interrupt_id = str(_get(interrupt, "id"))
        message = _get(interrupt, "message")
        expires_in = _expires_in(_get(interrupt, "expires_at"))
        call_id = _get(interrupt, "tool_call_id")
        if isinstance(call_id, str) and call_id in feed.calls:
            await writer.request_approval(call_id, reason=message, expires_in=expires_in)
            ids[call_id] = interrupt_id
            continue
        props: dict[str, Any] = {"id": interrupt_id,
                                 "prompt": message or str(_get(interrupt, "reason") or "")}
        schema = _get(interrupt, "response_schema")
        if isinstance(schema, Mapping):
            props["responseSchema"] = dict(schema)
        if expires_in is not None:
            props["expiresIn"] = expires_in
        await writer.message("question", props, message_id=f"question.{interrupt_id}")
        ids[interrupt_id] = interrupt_id
    if ids:
        await writer.step({"id": "ag-ui-interrupts", "type": "llm", "status": "running",
                           "input": {"kind": AG_UI_INTERRUPTS_KIND, "ids": ids}})


async def ag_ui_resume(s: Any) -> list[dict[str, Any]]:
    """The decisions of this resumption (``s.resume``) as the AG-UI ``resume`` entries
    to run the agent again with, in the agent's own interrupt ids: an approval's
    payload is ``{approved, reason, editedArguments}``, a question's the person's
    answer; an expired or cancelled interrupt is ``cancelled``. Empty when nothing
    resumes an AG-UI run."""
    if not s.resume:
        return []
    found = await paused_step(s, AG_UI_INTERRUPTS_KIND)
    ids: dict[str, str] = dict(found[1].get("ids") or {}) if found is not None else {}
    entries: list[dict[str, Any]] = []
    for decided in s.resume:
        interrupt_id = ids.get(str(decided.get("toolCallId")))
        if interrupt_id is None:
            continue
        decision = decided.get("decision") or {}
        if decided.get("state") != "RESOLVED":
            entries.append({"interruptId": interrupt_id, "status": "cancelled"})
        elif decided.get("kind") == "TOOL_APPROVAL":
            entries.append({"interruptId": interrupt_id, "status": "resolved", "payload": {
                "approved": bool(decision.get("approved")), "reason": decision.get("reason"),
                "editedArguments": decision.get("editedArguments")}})
        else:
            entries.append({"interruptId": interrupt_id, "status": "resolved",
                            "payload": decision.get("response")})
    return entries
