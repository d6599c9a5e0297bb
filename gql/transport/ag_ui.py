"""The AG-UI protocol: ``POST /ag-ui``, so CopilotKit and any AG-UI client talk to an
agent running on chatql's agent loop with no glue.

The body is a ``RunAgentInput`` (read with the protocol's own models). Its
``threadId`` is the chat's id (the chat is made on first use, for the assistant named by
``forwardedProps.assistantId`` or ``CHATQL_DEFAULT_ASSISTANT``); the answer is an SSE
stream of AG-UI events:

- ``RUN_STARTED``; then the agent's reply as it streams: ``TEXT_MESSAGE_START`` /
  ``_CONTENT`` / ``_END`` for text, ``REASONING_START``, ``REASONING_MESSAGE_*`` and
  ``REASONING_END`` for thinking, ``TOOL_CALL_START`` / ``_ARGS`` / ``_END`` for tool
  calls and ``TOOL_CALL_RESULT`` for their results, ``CUSTOM`` (name
  ``chatql.<type>``) for any other message type. Event message ids are chatql's.
- ``RUN_FINISHED`` when the reply completes; with the ``interrupt`` outcome when the
  agent asked the person (a tool call needing approval: ``reason`` ``tool_approval``
  and its ``toolCallId``; a question: ``reason`` ``input``, its prompt as ``message``
  and its ``responseSchema``) — the interrupt ids are chatql's; with the
  ``cancelled`` outcome when the reply was stopped; ``RUN_ERROR`` when it failed or
  no agent answered within ``CHATQL_AGENT_REPLY_TIMEOUT`` seconds.

What the run does:

- **A new message**: the newest ``user`` message of ``messages`` is appended (its
  AG-UI id is the stored message's id; the append is idempotent, so a retried post
  writes nothing twice) and the agent's answer to it streams.
- **A reconnect**: when that message is already stored, the run starts with
  ``MESSAGES_SNAPSHOT`` (the chat's active branch) and then follows the reply that is
  live, if any; otherwise it finishes, with the interrupt outcome while interrupts of
  the chat still wait for the person.
- **A resumption**: ``resume`` entries answer the interrupts a previous run ended
  with, as ``resolveInterrupt`` would (same rights, decided once). For an approval the
  payload is ``true``/``false`` or ``{approved, reason, editedArguments}``; for a
  question it is the answer; ``status: "cancelled"`` denies or declines. An id the
  chat never issued is a 404 and nothing is decided. The run then streams the reply
  that resumes (or, while other interrupts still wait, finishes with them).

The caller is identified exactly as on ``/graphql``. A body that is not a
``RunAgentInput`` is a 400 with a message, and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import (
    Interrupt as AgUiInterrupt,
)
from ag_ui.core.events import (
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
)
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Services
from chatql.gql.errors import code_for
from chatql.gql.transport import replies
from chatql.gql.transport.bodylimit import error_body
from chatql.store.errors import ChatqlError, InvalidArgument
from chatql.store.ids import check_append_id, check_chat_id
from chatql.store.messages import interrupts as store_interrupts
from chatql.store.messages.message import NewMessage, get_message, list_branch
from chatql.store.records import Identity, Interrupt, Message
from chatql.store.streams.queue import SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent, MessageState, apply_event

__all__ = ["AgUiRun", "run_agent"]

_STATUS = {"UNAUTHENTICATED": 401, "FORBIDDEN": 403, "NOT_FOUND": 404, "CONFLICT": 409,
           "APPEND_CONFLICT": 409, "EXPIRED": 409, "PAYLOAD_TOO_LARGE": 413}
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
#: Where a tool result names the call it answers, in order of preference.
_RESULT_CALL_KEYS = ("tool_call_id", "toolCallId", "callId", "id")
#: How many messages of the active branch a reconnect's snapshot holds.
_SNAPSHOT_SIZE = 200


def _failure(error: ChatqlError) -> Response:
    code = code_for(error) or "INVALID_ARGUMENT"
    headers = {"WWW-Authenticate": "Bearer"} if code == "UNAUTHENTICATED" else None
    return JSONResponse(error_body(str(error), code), status_code=_STATUS.get(code, 400),
                        headers=headers)


def _sse(event: BaseEvent) -> bytes:
    body = event.model_dump_json(by_alias=True, exclude_none=True)
    return b"data: " + body.encode() + b"\n\n"


async def run_agent(request: Request) -> Response:
    """``POST /ag-ui``."""
    services: Services = request.app.state.services
    try:
        who = identity_from_credentials(services.settings, dict(request.headers))
        run = await _input(request)
        chat_id = check_chat_id(run.thread_id)
        translator = AgUiRun(thread_id=run.thread_id, run_id=run.run_id)
        if run.resume:
            answers = [_answer(entry) for entry in run.resume]
            queue, decided = await replies.decide(services, who, chat_id, answers)
            preamble = [translator.started()]
            if decided.pending:
                preamble += translator.waiting_on(decided.pending)
            return _streaming(services, chat_id, queue, translator, preamble)
        question = _newest_user_message(run)
        assert question.id is not None
        stored = await get_message(services.db, who, question.id)
        if stored is not None and stored.chat_id == chat_id:
            return await _reconnect(services, who, chat_id, translator)
        forwarded = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
        assistant = forwarded.get("assistantId", services.settings.default_assistant)
        if not isinstance(assistant, str):
            raise InvalidArgument("forwardedProps.assistantId must be a string")
        queue = await replies.open_chat(services, who, chat_id, assistant, question,
                                        f"agui:{question.id}")
    except ChatqlError as error:
        return _failure(error)
    return _streaming(services, chat_id, queue, translator, [translator.started()],
                      question_id=question.id)


def _streaming(services: Services, chat_id: str, queue: SubscriberQueue,
               translator: AgUiRun, preamble: list[BaseEvent],
               question_id: str | None = None) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        for event in preamble:
            yield _sse(event)
        async for frame in replies.follow(services, chat_id, queue, translator, _sse,
                                          question_id=question_id):
            yield frame

    return StreamingResponse(frames(), media_type="text/event-stream", headers=_HEADERS)


async def _reconnect(services: Services, who: Identity, chat_id: str,
                     translator: AgUiRun) -> Response:
    """The chat as it is (``MESSAGES_SNAPSHOT``), then the live reply if any."""
    page = await list_branch(services.db, who, chat_id, last=_SNAPSHOT_SIZE)
    preamble: list[BaseEvent] = [translator.started(),
                                 MessagesSnapshotEvent(messages=_snapshot(page.items))]
    streams = services.streams
    assert streams is not None
    live = await streams.active_stream(chat_id)
    if live is None:
        # Nothing streams: the run ends as the chat stands, with what still waits for
        # the person (the interrupt outcome) or done.
        pending = await store_interrupts.chat_interrupts(services.db, who, chat_id,
                                                         state="PENDING")
        preamble += translator.waiting_on(pending) if pending else translator.end("completed")
        queue = await streams.subscribe(chat_id)
        return _streaming(services, chat_id, queue, translator, preamble)
    translator.stream_id = live
    queue = await streams.subscribe(chat_id)
    return _streaming(services, chat_id, queue, translator, preamble)


# ---- the request -----------------------------------------------------------------------


async def _input(request: Request) -> RunAgentInput:
    try:
        body = json.loads(await request.body())
    except ValueError:
        raise InvalidArgument("the body must be JSON (an AG-UI RunAgentInput)") from None
    try:
        return RunAgentInput.model_validate(body)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc']) or 'body'}: {issue['msg']}"
            for issue in error.errors()[:5])
        raise InvalidArgument(f"the body is not an AG-UI RunAgentInput: {problems}") from None


def _newest_user_message(run: RunAgentInput) -> NewMessage:
    if not run.messages or not isinstance(run.messages[-1], UserMessage):
        raise InvalidArgument("the last of 'messages' must be the person's (role 'user'), "
                              "or the run must carry 'resume' entries")
    message = run.messages[-1]
    check_append_id(message.id)
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = "".join(getattr(part, "text", "") or "" for part in content
                       if getattr(part, "type", None) == "text")
    if not text:
        raise InvalidArgument("the last message has no text")
    return NewMessage(role="USER", type="user_input", props={"content": text}, id=message.id)


def _answer(entry: ResumeEntry) -> replies.Answer:
    """A resume entry as a decision (the interrupt's kind settles which fields count:
    an approval reads ``approved``, a question ``response``)."""
    payload = entry.payload
    if entry.status == "cancelled":
        return replies.Answer(entry.interrupt_id, approved=False,
                              reason="cancelled by the client")
    if isinstance(payload, bool):
        return replies.Answer(entry.interrupt_id, approved=payload)
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        reason = payload.get("reason")
        return replies.Answer(entry.interrupt_id, approved=payload["approved"],
                              reason=reason if isinstance(reason, str) else None,
                              edited_arguments=payload.get("editedArguments"))
    return replies.Answer(entry.interrupt_id, response=payload)


# ---- the reply -------------------------------------------------------------------------


@dataclass
class _Open:
    """What has been sent of one message."""

    kind: str  # text | reasoning | tool | result | custom
    event_id: str
    sent: str = ""
    open: bool = True
    generation: int = 0
    data: Any = None


@dataclass
class AgUiRun:
    """One chatql stream as one AG-UI run's events (see the module docstring)."""

    thread_id: str
    run_id: str
    stream_id: str | None = None
    finished: bool = False
    view: dict[str, MessageState] = field(default_factory=dict)
    parts: dict[str, _Open] = field(default_factory=dict)
    #: tool call id -> the message id of its tool_call message
    _calls: dict[str, str] = field(default_factory=dict)
    #: The interrupts this reply asked (message id -> the AG-UI interrupt).
    _asked: dict[str, AgUiInterrupt] = field(default_factory=dict)
    _block: str | None = None

    def started(self) -> BaseEvent:
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)

    def waiting_on(self, pending: list[Interrupt]) -> list[BaseEvent]:
        """Finish at once: the interrupts still pending must be answered first."""
        for interrupt in pending:
            self._asked[interrupt.id] = _as_ag_ui(interrupt)
        return self.end("awaiting_input")

    def feed(self, event: ChunkEvent) -> list[BaseEvent]:
        if self.finished or (self.stream_id is not None and event["streamId"] != self.stream_id):
            return []
        if event["type"] == "event":
            props = event["props"] if isinstance(event["props"], dict) else {}
            if props.get("event") == "stream_end":
                return self.end(str(props.get("status") or "completed"), props.get("error"))
            return []
        message_id = event["messageId"]
        if message_id is None:
            return []
        apply_event(self.view, event)
        message = self.view[message_id]
        if message.role == "USER":
            return []
        out: list[BaseEvent] = []
        if message.block_id != self._block:
            # A new model turn: what the last one said is complete.
            self._block = message.block_id
            for part in self.parts.values():
                out.extend(self._close(part))
        return out + self._changed(message)

    def end(self, status: str, error: Any = None) -> list[BaseEvent]:
        if self.finished:
            return []
        self.finished = True
        out: list[BaseEvent] = []
        for part in self.parts.values():
            out.extend(self._close(part))
        status = status.lower()
        if status == "completed":
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                        outcome=RunFinishedSuccessOutcome()))
        elif status == "awaiting_input" and self._asked:
            out.append(RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=list(self._asked.values()))))
        elif status == "awaiting_input":
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id))
        elif status == "interrupted":
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                        outcome=RunFinishedCancelledOutcome()))
        else:
            out.append(RunErrorEvent(message=str(error or f"the agent's reply {status}"),
                                     code=status.upper()))
        return out

    # ---- one message -------------------------------------------------------------------

    def _changed(self, message: MessageState) -> list[BaseEvent]:
        props = message.props if isinstance(message.props, dict) else {}
        if message.role == "TOOL" or message.type == "tool_result":
            return self._result(message.id, props)
        if message.type == "text":
            return self._text(message.id, "text", _content(props))
        if message.type in ("thinking", "reasoning"):
            return self._text(message.id, "reasoning", _content(props))
        if message.type == "tool_call":
            return self._tool_call(message.id, props)
        if message.type == "question" and isinstance(props.get("prompt"), str):
            self._asked[message.id] = AgUiInterrupt(
                id=message.id, reason="input", message=props["prompt"],
                response_schema=props.get("responseSchema")
                if isinstance(props.get("responseSchema"), dict) else None)
        return self._custom(message.id, message.type, props)

    def _text(self, message_id: str, kind: str, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        part = self.parts.get(message_id)
        if part is not None and part.open and not text.startswith(part.sent):
            # Replaced by a text that does not extend what was sent: a new message.
            out.extend(self._close(part))
            part = self.parts[message_id] = _Open(kind, f"{message_id}:{part.generation + 1}",
                                                  generation=part.generation + 1)
            out.extend(self._open(part))
        elif part is None:
            part = self.parts[message_id] = _Open(kind, message_id)
            out.extend(self._open(part))
        if part.open and len(text) > len(part.sent):
            delta = text[len(part.sent):]
            part.sent = text
            if kind == "text":
                out.append(TextMessageContentEvent(message_id=part.event_id, delta=delta))
            else:
                out.append(ReasoningMessageContentEvent(message_id=part.event_id, delta=delta))
        return out

    def _open(self, part: _Open) -> list[BaseEvent]:
        if part.kind == "text":
            return [TextMessageStartEvent(message_id=part.event_id, role="assistant")]
        return [ReasoningStartEvent(message_id=part.event_id),
                ReasoningMessageStartEvent(message_id=part.event_id)]

    def _tool_call(self, message_id: str, props: dict[str, Any]) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        call_id = str(props.get("id") or message_id)
        arguments = props.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else json.dumps(arguments)
        part = self.parts.get(message_id)
        if part is None:
            part = self.parts[message_id] = _Open("tool", call_id)
            self._calls[call_id] = message_id
            out.append(ToolCallStartEvent(tool_call_id=call_id,
                                          tool_call_name=str(props.get("name") or "tool")))
        if props.get("needsApproval") is True:
            reason = props.get("reason")
            self._asked[message_id] = AgUiInterrupt(
                id=message_id, reason="tool_approval", tool_call_id=call_id,
                message=reason if isinstance(reason, str) else None)
        if part.open and arguments.startswith(part.sent) and len(arguments) > len(part.sent):
            out.append(ToolCallArgsEvent(tool_call_id=call_id,
                                         delta=arguments[len(part.sent):]))
            part.sent = arguments
        return out

    def _result(self, message_id: str, props: dict[str, Any]) -> list[BaseEvent]:
        call_id = next((props[key] for key in _RESULT_CALL_KEYS if key in props), None)
        if not isinstance(call_id, str):
            return self._custom(message_id, "tool_result", props)
        out: list[BaseEvent] = []
        call = self._calls.get(call_id)
        if call is not None and call in self.parts:
            out.extend(self._close(self.parts[call]))
        part = self.parts.get(message_id)
        content = props.get("content", props)
        text = content if isinstance(content, str) else json.dumps(content)
        if part is None:
            self.parts[message_id] = _Open("result", message_id, open=False, data=text)
            out.append(ToolCallResultEvent(message_id=message_id, tool_call_id=call_id,
                                           content=text, role="tool"))
        return out

    def _custom(self, message_id: str, type: str, props: dict[str, Any]) -> list[BaseEvent]:
        part = self.parts.get(message_id)
        if part is not None and part.data == props:
            return []
        data = json.loads(json.dumps(props))
        self.parts[message_id] = _Open("custom", message_id, open=False, data=data)
        return [CustomEvent(name=f"chatql.{type}", value={"id": message_id, "props": data})]

    def _close(self, part: _Open) -> list[BaseEvent]:
        if not part.open:
            return []
        part.open = False
        if part.kind == "text":
            return [TextMessageEndEvent(message_id=part.event_id)]
        if part.kind == "reasoning":
            return [ReasoningMessageEndEvent(message_id=part.event_id),
                    ReasoningEndEvent(message_id=part.event_id)]
        if part.kind == "tool":
            return [ToolCallEndEvent(tool_call_id=part.event_id)]
        return []


def _content(props: dict[str, Any]) -> str:
    content = props.get("content")
    return content if isinstance(content, str) else ""


def _as_ag_ui(interrupt: Interrupt) -> AgUiInterrupt:
    if interrupt.kind == "TOOL_APPROVAL":
        return AgUiInterrupt(id=interrupt.id, reason="tool_approval",
                             tool_call_id=interrupt.tool_call_id, message=interrupt.reason)
    schema = interrupt.response_schema if isinstance(interrupt.response_schema, dict) else None
    return AgUiInterrupt(id=interrupt.id, reason="input", message=interrupt.prompt,
                         response_schema=schema)


def _snapshot(items: list[Message]) -> list[Any]:
    """Stored messages of a branch as AG-UI messages: the person's as ``user``, an
    agent's text as ``assistant`` (with the tool calls that follow it), tool results as
    ``tool``; thinking and other types are not part of AG-UI's history."""
    out: list[Any] = []
    current: AssistantMessage | None = None
    for message in items:
        props = message.props if isinstance(message.props, dict) else {}
        if message.role == "USER":
            current = None
            out.append(UserMessage(id=message.id, content=_content(props) or json.dumps(
                props.get("content", ""))))
        elif message.role == "TOOL" or message.type == "tool_result":
            call = next((props[key] for key in _RESULT_CALL_KEYS if key in props), None)
            if isinstance(call, str):
                content = props.get("content", props)
                out.append(ToolMessage(id=message.id, tool_call_id=call, content=(
                    content if isinstance(content, str) else json.dumps(content))))
            current = None
        elif message.type == "text":
            current = AssistantMessage(id=message.id, content=_content(props))
            out.append(current)
        elif message.type == "tool_call":
            arguments = props.get("arguments")
            call = ToolCall(id=str(props.get("id") or message.id), type="function",
                            function=FunctionCall(name=str(props.get("name") or "tool"),
                                                  arguments=arguments if isinstance(
                                                      arguments, str) else json.dumps(
                                                      arguments or {})))
            if current is None:
                current = AssistantMessage(id=message.id, tool_calls=[])
                out.append(current)
            current.tool_calls = [*(current.tool_calls or []), call]
    return out
