"""A stream writer that records the calls an adapter makes, and what they add up to.

It keeps the kit writer's rules that matter to an adapter: a tool call starts once and
its arguments grow only after it started; a tool result lands in its call's block and
thread; usage calls add up.
"""

from __future__ import annotations

from typing import Any


class RecordingWriter:
    """The calls, in order, and the messages they build (by producer message id)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.messages: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.model: str | None = None
        self._calls: dict[str, tuple[str | None, str | None]] = {}

    def _grow(self, kind: str, delta: str, message_id: str | None, block_id: str | None,
              thread_id: str | None) -> None:
        assert isinstance(delta, str) and message_id
        message = self.messages.setdefault(message_id, {
            "type": kind, "role": "ASSISTANT", "props": {"content": ""},
            "blockId": block_id, "threadId": thread_id})
        assert message["type"] == kind, f"{message_id} is a {message['type']}, not {kind}"
        message["props"]["content"] += delta

    async def text(self, delta: str, message_id: str | None = None,
                   block_id: str | None = None, thread_id: str | None = None) -> None:
        self.calls.append(("text", delta, message_id, block_id, thread_id))
        self._grow("text", delta, message_id, block_id, thread_id)

    async def thinking(self, delta: str, message_id: str | None = None,
                       block_id: str | None = None, thread_id: str | None = None) -> None:
        self.calls.append(("thinking", delta, message_id, block_id, thread_id))
        self._grow("thinking", delta, message_id, block_id, thread_id)

    async def tool_call(self, call_id: str, name: str, arguments_delta: str = "",
                        block_id: str | None = None, thread_id: str | None = None) -> None:
        self.calls.append(("tool_call", call_id, name, arguments_delta, block_id, thread_id))
        assert call_id not in self._calls, f"tool call {call_id} started twice"
        self._calls[call_id] = (block_id, thread_id)
        self.messages[f"call.{call_id}"] = {
            "type": "tool_call", "role": "ASSISTANT", "blockId": block_id,
            "threadId": thread_id, "props": {"id": call_id, "name": name,
                                             "arguments": arguments_delta}}

    async def tool_arguments(self, call_id: str, delta: str) -> None:
        self.calls.append(("tool_arguments", call_id, delta))
        assert call_id in self._calls, f"arguments for {call_id} before its call"
        self.messages[f"call.{call_id}"]["props"]["arguments"] += delta

    async def tool_result(self, call_id: str, content: Any) -> None:
        self.calls.append(("tool_result", call_id, content))
        block_id, thread_id = self._calls.get(call_id, (None, None))
        self.messages[f"result.{call_id}"] = {
            "type": "tool_result", "role": "TOOL", "blockId": block_id, "threadId": thread_id,
            "props": {"content": content, "tool_call_id": call_id}}

    async def event(self, name: str, props: dict[str, Any] | None = None) -> None:
        self.calls.append(("event", name, props))
        self.events.append((name, dict(props or {})))

    def usage(self, prompt_tokens: int = 0, completion_tokens: int = 0,
              model: str | None = None) -> None:
        self.calls.append(("usage", prompt_tokens, completion_tokens, model))
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        if model is not None:
            self.model = model

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [message for message in self.messages.values() if message["type"] == kind]
