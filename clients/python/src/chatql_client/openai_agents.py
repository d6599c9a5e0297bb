"""A conversation store for the OpenAI Agents SDK over one chatql chat.

    from agents import Agent, Runner
    from chatql_client.openai_agents import ChatqlSession

    session = ChatqlSession(chat_id, client)
    result = await Runner.run(agent, "Weather in Oslo?", session=session)

:class:`ChatqlSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``, ``session_id``, ``session_settings``)
without importing the SDK. Items are stored as chatql maps OpenAI messages when it imports
them, so people and other agents read the conversation as ordinary messages:

=======================================  ==============================================
Item                                     Message
=======================================  ==============================================
``{"role": "user", ...}``                ``USER`` ``user_input`` ``{content}``
``system`` / ``developer`` message       ``SYSTEM`` ``text`` ``{content}``
``assistant`` message                    ``ASSISTANT`` ``text`` ``{content}`` (its text)
``function_call``                        ``ASSISTANT`` ``tool_call`` ``{id, name,
                                         arguments}``
``function_call_output``                 ``TOOL`` ``tool_result`` ``{content,
                                         tool_call_id}``
``reasoning``                            ``ASSISTANT`` ``thinking`` ``{content}`` (its
                                         summary)
any other item                           ``ASSISTANT`` ``openai_item`` ``{type}``
=======================================  ==============================================

Every message keeps its item, as given, in ``metadata.openai_item``, so ``get_items``
returns exactly what was added. Messages written some other way (a person typing in the web
app, an agent streaming with the writer) are read back by the table above in reverse;
those that are no model input (``thinking`` without its item, events, errors, boundaries)
are left out, and so are ``FAILED`` messages.

The session is the chat's active branch after its newest boundary. ``clear_session``
draws a boundary (``startOver``): the agent starts afresh, while people still see the
whole conversation and nothing of the record is deleted. A boundary with a summary
(``compactChat``) comes back as a first ``system`` item carrying the summary.
``pop_item`` deletes the newest item's message (with anything after it on the branch).

Approvals: :func:`run_agent` runs an agent inside an agent-loop handler and streams its
run into the handler's writer. When the run stops on tools that need approval (its
``result.interruptions``, the SDK's ``ToolApprovalItem``), each call is written as a
``tool_call`` needing approval (chatql keeps one interrupt per call, with its name,
arguments and call id) and the run's serialised ``RunState`` is kept as a resume record
of the stream, which ends ``AWAITING_INPUT``. Once the person has decided, the worker
that claims the resumption calls the handler again; :func:`run_agent` then rebuilds the
``RunState`` from that record, applies each decision (``approve``, or ``reject`` with the
person's reason; an expired call counts as rejected) and continues the run::

    from chatql_client.openai_agents import run_agent

    async def handler(context, s):
        await run_agent(agent, context, s, run_config=RunConfig(...))

    await client.serve("helper", handler)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chatql_client.adapters import _jsonable, paused_step
from chatql_client.documents import (
    SESSION_DELETE_MESSAGES,
    SESSION_PAGE,
    SESSION_START_OVER,
    SETTLE_RUN_STATE,
)
from chatql_client.types import Message

if TYPE_CHECKING:
    from chatql_client.client import ChatqlClient
    from chatql_client.writer import StreamWriter

__all__ = ["ChatqlSession", "item_to_message", "message_to_item", "run_agent"]

ITEM_KEY = "openai_item"
_PAGE = 100
_APPEND_BATCH = 100


def _text_of(content: Any) -> Any:
    """An assistant message's content as text: its output text parts joined."""
    if isinstance(content, list):
        texts = [part.get("text") or part.get("refusal") or "" for part in content
                 if isinstance(part, Mapping)]
        return "".join(texts)
    return content


def item_to_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``MessageInput`` a session item is stored as (the item kept in its metadata)."""
    raw = _jsonable(dict(item))
    kind = raw.get("type")
    metadata = {ITEM_KEY: raw}
    if kind in (None, "message"):
        role = raw.get("role")
        content = raw.get("content")
        if role == "user":
            return {"role": "USER", "type": "user_input", "props": {"content": content},
                    "metadata": metadata}
        if role in ("system", "developer"):
            return {"role": "SYSTEM", "type": "text", "props": {"content": _text_of(content)},
                    "metadata": metadata}
        if role == "assistant":
            return {"role": "ASSISTANT", "type": "text",
                    "props": {"content": _text_of(content)}, "metadata": metadata}
    if kind == "function_call":
        return {"role": "ASSISTANT", "type": "tool_call",
                "props": {"id": raw.get("call_id"), "name": raw.get("name"),
                          "arguments": raw.get("arguments")}, "metadata": metadata}
    if kind == "function_call_output":
        return {"role": "TOOL", "type": "tool_result",
                "props": {"content": raw.get("output"), "tool_call_id": raw.get("call_id")},
                "metadata": metadata}
    if kind == "reasoning":
        summary = raw.get("summary") or []
        text = "\n\n".join(part.get("text", "") for part in summary
                           if isinstance(part, Mapping))
        return {"role": "ASSISTANT", "type": "thinking", "props": {"content": text},
                "metadata": metadata}
    return {"role": "ASSISTANT", "type": "openai_item", "props": {"type": kind},
            "metadata": metadata}


def message_to_item(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The session item a stored message stands for (None: no model input)."""
    metadata = message.get("metadata") or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get(ITEM_KEY), Mapping):
        return dict(metadata[ITEM_KEY])
    role, kind = message.get("role"), message.get("type")
    props = message.get("props") or {}
    if kind == "user_input" or (role == "USER" and kind == "text"):
        return {"role": "user", "content": props.get("content", "")}
    if kind == "text" and role == "SYSTEM":
        return {"role": "system", "content": props.get("content", "")}
    if kind == "text" and role == "ASSISTANT":
        return {"role": "assistant", "content": props.get("content", "")}
    if kind == "tool_call":
        arguments = props.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else _json_text(arguments)
        return {"type": "function_call", "call_id": props.get("id"),
                "name": props.get("name"), "arguments": arguments}
    if kind == "tool_result":
        output = props.get("content")
        return {"type": "function_call_output", "call_id": props.get("tool_call_id"),
                "output": output if isinstance(output, str) else _json_text(output)}
    return None


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _is_boundary(message: Mapping[str, Any]) -> bool:
    return message.get("type") == "boundary" and message.get("role") == "SYSTEM"


class ChatqlSession:
    """The OpenAI Agents SDK's ``Session`` over one chat (``session_id`` is the chat id)."""

    def __init__(self, chat_id: str, client: ChatqlClient, *,
                 session_settings: Any = None) -> None:
        self.session_id = chat_id
        self.chat_id = chat_id
        self.client = client
        self.session_settings = session_settings

    async def _newest_first(self) -> Any:
        """The active branch's messages, newest first, down to the newest boundary."""
        before: str | None = None
        while True:
            data = await self.client.execute(SESSION_PAGE, {"c": self.chat_id, "last": _PAGE,
                                                           "before": before})
            page = data["messages"]
            for edge in reversed(page["edges"]):
                yield edge["node"]
                if _is_boundary(edge["node"]):
                    return
            info = page["pageInfo"]
            if not info["hasPreviousPage"] or not info["startCursor"]:
                return
            before = info["startCursor"]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation since the newest boundary, oldest first (the newest ``limit``)."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        items: list[Any] = []
        async for message in self._newest_first():
            if limit is not None and len(items) >= limit:
                break
            if _is_boundary(message):
                summary = (message.get("props") or {}).get("summary")
                if summary:
                    items.append({"role": "system", "content": summary})
                break
            if message.get("status") == "FAILED":
                continue
            item = message_to_item(message)
            if item is not None:
                items.append(item)
        items.reverse()
        return items

    async def add_items(self, items: Sequence[Any]) -> None:
        """Append the items, in order, at the chat's active leaf."""
        messages = [item_to_message(item if isinstance(item, Mapping) else _jsonable(item))
                    for item in items]
        for start in range(0, len(messages), _APPEND_BATCH):
            await self.client.append(self.chat_id, messages[start:start + _APPEND_BATCH],
                                     append_id=uuid.uuid4().hex)

    async def pop_item(self) -> Any | None:
        """Delete the newest item's message and return the item (None when empty)."""
        async for message in self._newest_first():
            if _is_boundary(message):
                return None
            if message.get("status") == "FAILED":
                continue
            item = message_to_item(message)
            if item is not None:
                await self.client.execute(SESSION_DELETE_MESSAGES,
                                          {"c": self.chat_id, "ids": [message["id"]]})
                return item
        return None

    async def clear_session(self) -> None:
        """Start over: a boundary hides everything before it from the agent, not from people."""
        await self.client.execute(SESSION_START_OVER, {"c": self.chat_id})


# ---- running an agent in a handler, with approvals --------------------------------------

#: What marks the resume record that keeps a paused run's ``RunState``.
RUN_STATE_KIND = "openai_agents.run_state"


def _call_id(raw: Any) -> str | None:
    value = raw.get("call_id") if isinstance(raw, Mapping) else getattr(raw, "call_id", None)
    return value if isinstance(value, str) else None


def _arguments_text(raw: Any) -> str:
    value = raw.get("arguments") if isinstance(raw, Mapping) else getattr(raw, "arguments", None)
    if value is None:
        return ""
    return value if isinstance(value, str) else _json_text(value)


def _rejection(decision: Mapping[str, Any]) -> str:
    """What the model reads for a call the person did not approve."""
    if decision.get("state") == "EXPIRED":
        return "The person did not decide in time; the tool call was not run (expired)."
    made = decision.get("decision") or {}
    reason = made.get("reason")
    return ("The person denied this tool call; it was not run"
            + (f" (reason: {reason})." if reason else "."))


def _approved(decision: Mapping[str, Any]) -> bool:
    made = decision.get("decision") or {}
    return decision.get("state") == "RESOLVED" and made.get("approved") is not False


def _with_arguments(value: Any, call_id: str, arguments: str) -> Any:
    """``value`` (a serialised ``RunState``) with the function call ``call_id`` carrying
    ``arguments`` wherever the state holds it: the call as the model made it, the call
    waiting for approval and the call about to run."""
    if isinstance(value, list):
        return [_with_arguments(entry, call_id, arguments) for entry in value]
    if not isinstance(value, dict):
        return value
    changed = {key: _with_arguments(entry, call_id, arguments) for key, entry in value.items()}
    ledger = changed.get("tool_invocations")
    if isinstance(ledger, dict) and call_id in ledger:
        # The SDK binds a call id to the invocation it saw (a fingerprint of its
        # arguments): the person's edit makes it a new invocation, fingerprinted anew.
        changed["tool_invocations"] = {key: entry for key, entry in ledger.items()
                                       if key != call_id}
    if (changed.get("call_id", changed.get("callId")) == call_id
            and isinstance(changed.get("arguments"), str)):
        changed["arguments"] = arguments
    return changed


async def _paused_state(s: StreamWriter) -> tuple[str, dict[str, Any]] | None:
    """The resume record (id, RunState JSON) of the run this resumption continues."""
    found = await paused_step(s, RUN_STATE_KIND)
    if found is None or not isinstance(found[2].get("state"), Mapping):
        return None
    return found[0], dict(found[2]["state"])


async def _stream_run(result: Any, s: StreamWriter, skip: set[str]) -> None:
    """Write a streamed run's events into ``s`` as they come: text deltas, reasoning,
    tool calls and their results (calls in ``skip`` were written before the pause)."""
    from agents import ItemHelpers

    streamed_text = False
    async for event in result.stream_events():
        if event.type == "raw_response_event":
            data = event.data
            if getattr(data, "type", None) == "response.output_text.delta" and data.delta:
                streamed_text = True
                await s.text(data.delta)
            continue
        if event.type != "run_item_stream_event":
            continue
        item = event.item
        if event.name == "message_output_created":
            if not streamed_text:  # a model that answers whole: the text in one piece
                text = ItemHelpers.text_message_output(item)
                if text:
                    await s.text(text)
            streamed_text = False
        elif event.name == "tool_called":
            call_id = _call_id(item.raw_item)
            name = getattr(item.raw_item, "name", None)
            if call_id is None or call_id in skip or not isinstance(name, str):
                continue
            skip.add(call_id)
            await s.tool_call(call_id, name, _arguments_text(item.raw_item))
        elif event.name == "tool_output":
            call_id = _call_id(item.raw_item)
            if call_id is not None:
                await s.tool_result(call_id, _jsonable(item.output))
        elif event.name == "reasoning_item_created":
            summary = getattr(item.raw_item, "summary", None) or []
            text = "\n\n".join(getattr(part, "text", "") for part in summary)
            if text:
                await s.thinking(text)


async def run_agent(agent: Any, context: Sequence[Message], s: StreamWriter, *,
                    run_config: Any = None, run_context: Any = None,
                    max_turns: int | None = None) -> Any:
    """Run ``agent`` (an ``agents.Agent``) for the chat and stream its run into ``s``.

    A first answer runs on the model's context (``context``, as the agent loop hands it
    to the handler). A resumption (``s.resume`` holds the person's decisions) rebuilds
    the paused ``RunState`` from the chat's resume record, approves or rejects each
    pending call as decided and continues the run. When the run stops on tools needing
    approval, each becomes a ``tool_call`` needing approval and the ``RunState`` is kept
    for the resumption; the stream then ends ``AWAITING_INPUT``. Returns the SDK's run
    result. ``run_context`` is the SDK's run context (a mapping, so that it is kept with
    the state); ``max_turns`` bounds the run as in ``Runner.run``."""
    from agents import Runner, RunState

    written: set[str] = set()
    start: Any
    settled: str | None = None
    if s.resume:
        paused = await _paused_state(s)
        if paused is None:
            raise RuntimeError(f"chat {s.chat_id}: no paused Agents SDK run to resume "
                               f"(no resume record for {s.request_id})")
        settled, state_json = paused
        decisions = {d.get("toolCallId"): d for d in s.resume if d.get("kind") == "TOOL_APPROVAL"}
        for call_id, decision in decisions.items():
            edited = (decision.get("decision") or {}).get("editedArguments")
            if isinstance(call_id, str) and edited is not None and _approved(decision):
                # The person changed the arguments: the call runs (and the model reads
                # it) as approved.
                state_json = _with_arguments(state_json, call_id, _json_text(edited))
        state = await RunState.from_json(agent, state_json)
        for item in state.get_interruptions():
            call_id = _call_id(item.raw_item)
            made = decisions.get(call_id)
            if made is None:
                continue  # not decided in chatql: the SDK asks again
            written.add(call_id or "")
            if _approved(made):
                state.approve(item)
            else:
                state.reject(item, rejection_message=_rejection(made))
        start = state
    else:
        start = [item for item in (message_to_item(m) for m in context) if item is not None]
    options: dict[str, Any] = {"run_config": run_config, "context": run_context}
    if max_turns is not None:
        options["max_turns"] = max_turns
    result = Runner.run_streamed(agent, start, **options)
    await _stream_run(result, s, written)
    if result.interruptions:
        for item in result.interruptions:
            call_id = _call_id(item.raw_item)
            if call_id is None:
                continue
            props = {"id": call_id, "name": item.name or "", "needsApproval": True,
                     "arguments": _arguments_text(item.raw_item)}
            # A call already streamed is re-written in place, now asking for approval.
            await s.message("tool_call", props, message_id=f"call.{call_id}")
        await s.step({"id": "openai-agents-run-state", "type": "llm", "status": "running",
                      "input": {"kind": RUN_STATE_KIND,
                                "callIds": [_call_id(i.raw_item) for i in result.interruptions]},
                      "spaceSnapshot": {"state": result.to_state().to_json()}})
    if settled is not None:
        await s.client.execute(SETTLE_RUN_STATE, {"id": settled, "status": "completed"})
    return result
