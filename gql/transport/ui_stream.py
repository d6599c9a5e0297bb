"""chatql's live chunks as the AI SDK's UI message stream.

The AI SDK's chat front ends (``useChat`` and its ``DefaultChatTransport``) read an
agent's reply as a stream of *UI message chunks* over SSE: ``start``, then parts —
``text-start``/``text-delta``/``text-end``, ``reasoning-*``, ``tool-input-start``/
``tool-input-delta``/``tool-input-available``, ``tool-output-available``, ``data-*`` —
then ``finish`` (or ``abort`` when stopped, ``error`` when the agent failed).

:class:`UIMessageStream` turns one stream's chunks into those. It keeps the reducer's
view of every message (the same merge a chatql subscriber applies) and, after each
chunk, sends what changed in the message it touched, so a late joiner's snapshot, a
delta and a whole replacement all give the same parts:

- ``text`` messages are text parts, ``thinking``/``reasoning`` messages reasoning
  parts; the part's id is the message id and each delta is what the text grew by. A
  text replaced by one that does not extend it ends the part and starts a new one
  (``<message id>:<n>``) with the whole new text.
- ``tool_call`` messages (props ``{id, name, arguments}``) are tool parts: the input
  grows as ``tool-input-delta`` and becomes ``tool-input-available`` (the arguments
  parsed as JSON, or the raw text when they are not JSON) when the call's result
  arrives, its block ends or the reply ends. They are marked ``providerExecuted``: the
  agent ran the tool, so the browser's ``onToolCall`` is not asked to. ``TOOL``
  messages (props ``{tool_call_id, content}``; the call may also be named by
  ``toolCallId``, ``callId`` or ``id``) are the call's ``tool-output-available``, with
  ``content`` (the whole props when there is none) as the output; one that names no
  call is a data part.
- A ``tool_call`` that asks for approval (props ``needsApproval: true``) is followed,
  once its input is available, by ``tool-approval-request`` whose ``approvalId`` is the
  interrupt's id (the tool call message's id): the reply then ends (the stream waits
  for the person) and ``addToolApprovalResponse`` answers it in the next request.
- A reply that resumes after decisions (:meth:`UIMessageStream.resuming`) continues
  the assistant message the client already shows: its ``start`` names no message id,
  denied calls come first as ``tool-output-denied``, and the results of calls the
  client already shows are ``tool-output-available`` for those parts.
- A ``file`` message (an agent's answer with a file: props ``{fileId, mediaType,
  filename}``) is, when the stream is made with ``file_parts``, one ``file`` chunk. The
  translator knows no addresses: it sends ``{type: "file", fileId, mediaType, filename,
  id, data}`` (``id`` the message id, ``data`` its props), and its caller replaces it
  with the AI SDK's ``{type: "file", url, mediaType}`` (a signed address) or, when the
  file may not be shown, with the ``data-file`` part it would otherwise be. Without
  ``file_parts`` it is a ``data-file`` part like any other type.
- Any other assistant message type ``T`` is a ``data-T`` part with the message id and
  its props as data, sent again (same id) whenever they change.
- The person's own messages (role ``USER``) and producer events are not part of the
  reply and send nothing.

The UI message's id is the id of the reply's first stored message, so the history a
client loads later (see the TypeScript client's ``toUIMessages``) names the reply the
same way. One ``start-step``/``finish-step`` pair frames each block (a model turn).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chatql.store.streams.reducer import ChunkEvent, MessageState, apply_event

__all__ = ["UIChunk", "UIMessageStream"]

#: One UI message chunk, as JSON.
UIChunk = dict[str, Any]

_TEXT_TYPES = {"text": "text", "thinking": "reasoning", "reasoning": "reasoning"}
_FINISH = {"completed": "finish", "awaiting_input": "finish", "interrupted": "abort"}
#: Where a tool result names the call it answers, in order of preference.
_RESULT_CALL_KEYS = ("tool_call_id", "toolCallId", "callId", "id")


@dataclass
class _Part:
    """What has been sent of one message."""

    kind: str
    part_id: str
    sent: str = ""
    open: bool = True
    generation: int = 0
    tool_name: str = ""
    data: Any = None
    #: The interrupt asking for approval of this tool call (its message id), if any.
    approval: str | None = None


@dataclass
class UIMessageStream:
    """The UI message chunks of one chatql stream (see the module docstring)."""

    #: The chatql stream whose chunks are translated (others are ignored).
    stream_id: str | None = None
    #: Whether ``file`` messages are file chunks for the caller to sign (see above).
    file_parts: bool = False
    view: dict[str, MessageState] = field(default_factory=dict)
    parts: dict[str, _Part] = field(default_factory=dict)
    started: bool = False
    finished: bool = False
    _block: str | None = None
    #: tool call id -> the message id of its tool_call message
    _calls: dict[str, str] = field(default_factory=dict)
    #: Tool calls the client shows from before this reply (a resumption's).
    _shown: set[str] = field(default_factory=set)
    _resuming: bool = False

    def resuming(self, shown_calls: list[str], denied_calls: list[str]) -> list[UIChunk]:
        """Start a reply that resumes after decisions: it continues the client's
        assistant message, which shows ``shown_calls`` already; the calls in
        ``denied_calls`` were denied (sent now as ``tool-output-denied``)."""
        self._resuming = True
        self._shown.update(shown_calls)
        self.started = True
        self._block = None
        out: list[UIChunk] = [{"type": "start"}, {"type": "start-step"}]
        out += [{"type": "tool-output-denied", "toolCallId": call} for call in denied_calls]
        return out

    def feed(self, event: ChunkEvent) -> list[UIChunk]:
        """The UI chunks one chatql chunk gives (often none, never after the end)."""
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
        out: list[UIChunk] = []
        if not self.started:
            self.started = True
            self._block = message.block_id
            out += [{"type": "start", "messageId": message_id}, {"type": "start-step"}]
        elif self._resuming and self._block is None:
            self._block = message.block_id  # the first block of the resumed stream
        elif message.block_id != self._block:
            # A new model turn: the turn's parts are complete (the AI SDK forgets open
            # text parts at a step's end; one that grows later goes on in a new part).
            self._block = message.block_id
            for part in self.parts.values():
                out.extend(self._close(part))
            out += [{"type": "finish-step"}, {"type": "start-step"}]
        out.extend(self._changed(message))
        return out

    def end(self, status: str, error: Any = None) -> list[UIChunk]:
        """Close every open part and finish: ``finish`` when the reply completed,
        ``abort`` when it was stopped, ``error`` then ``finish`` when it failed."""
        if self.finished:
            return []
        self.finished = True
        out: list[UIChunk] = []
        if not self.started:
            out.append({"type": "start"})
        for part in self.parts.values():
            out.extend(self._close(part))
        if self.started:
            out.append({"type": "finish-step"})
        kind = _FINISH.get(status.lower())
        if kind is None:
            out.append({"type": "error", "errorText": str(error or f"the agent's reply {status}")})
            kind = "finish"
        out.append({"type": kind})
        return out

    # ---- one message -------------------------------------------------------------------

    def _changed(self, message: MessageState) -> list[UIChunk]:
        props = message.props
        if message.role == "TOOL" or message.type == "tool_result":
            return self._tool_output(message)
        kind = _TEXT_TYPES.get(message.type)
        if kind is not None:
            content = props.get("content")
            return self._text(message.id, kind, content if isinstance(content, str) else "")
        if message.type == "tool_call":
            return self._tool_input(message.id, props)
        if self.file_parts and message.type == "file" and isinstance(props.get("fileId"), str):
            return self._file(message.id, props)
        return self._data(message.id, message.type, props)

    def _file(self, message_id: str, props: dict[str, Any]) -> list[UIChunk]:
        """A file chunk, once per message (the AI SDK appends a part for each)."""
        if message_id in self.parts:
            return []
        data = json.loads(json.dumps(props))
        self.parts[message_id] = _Part("file", message_id, open=False, data=data)
        media_type = props.get("mediaType")
        filename = props.get("filename")
        return [{"type": "file", "fileId": props["fileId"],
                 "mediaType": media_type if isinstance(media_type, str) else "",
                 "filename": filename if isinstance(filename, str) else None,
                 "id": message_id, "data": data}]

    def _text(self, message_id: str, kind: str, text: str) -> list[UIChunk]:
        out: list[UIChunk] = []
        part = self.parts.get(message_id)
        if part is None:
            part = self.parts[message_id] = _Part(kind, message_id)
            out.append({"type": f"{kind}-start", "id": message_id})
        elif not text.startswith(part.sent) or (not part.open and len(text) > len(part.sent)):
            # Replaced by a text that does not extend what was sent (the new part
            # shows it whole), or grown after its part was closed (the rest goes on).
            out.extend(self._close(part))
            sent = part.sent if text.startswith(part.sent) else ""
            part = _Part(kind, f"{message_id}:{part.generation + 1}", sent=sent,
                         generation=part.generation + 1)
            self.parts[message_id] = part
            out.append({"type": f"{kind}-start", "id": part.part_id})
        if len(text) > len(part.sent):
            out.append({"type": f"{kind}-delta", "id": part.part_id,
                        "delta": text[len(part.sent):]})
            part.sent = text
        return out

    def _tool_input(self, message_id: str, props: dict[str, Any]) -> list[UIChunk]:
        out: list[UIChunk] = []
        call_id = str(props.get("id") or message_id)
        arguments = props.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else json.dumps(arguments)
        part = self.parts.get(message_id)
        if part is None:
            name = str(props.get("name") or "tool")
            part = self.parts[message_id] = _Part("tool", call_id, tool_name=name)
            self._calls[call_id] = message_id
            out.append({"type": "tool-input-start", "toolCallId": call_id, "toolName": name,
                        "providerExecuted": True})
        if props.get("needsApproval") is True:
            part.approval = message_id
        if part.open and arguments.startswith(part.sent) and len(arguments) > len(part.sent):
            out.append({"type": "tool-input-delta", "toolCallId": call_id,
                        "inputTextDelta": arguments[len(part.sent):]})
        part.sent = arguments
        return out

    def _tool_output(self, message: MessageState) -> list[UIChunk]:
        props = message.props
        call_id = next((props[key] for key in _RESULT_CALL_KEYS if key in props), None)
        if not isinstance(call_id, str):
            return self._data(message.id, message.type, props)
        out: list[UIChunk] = []
        message_id = self._calls.get(call_id)
        part = None if message_id is None else self.parts.get(message_id)
        if part is None and call_id in self._shown:
            # A call the client shows from before the decisions: its part takes the
            # result as it is.
            part = self.parts[f"call:{call_id}"] = _Part("tool", call_id, open=False)
            self._calls[call_id] = f"call:{call_id}"
        if part is None:
            # A result whose call this reply never showed: show the call first.
            name = str(props.get("name") or "tool")
            message_id = f"call:{call_id}"
            part = self.parts[message_id] = _Part("tool", call_id, tool_name=name)
            self._calls[call_id] = message_id
            out.append({"type": "tool-input-start", "toolCallId": call_id, "toolName": name,
                        "providerExecuted": True})
        out.extend(self._close(part))
        output = props.get("content", props)
        if part.data != output:
            part.data = output
            out.append({"type": "tool-output-available", "toolCallId": call_id,
                        "output": output})
        return out

    def _data(self, message_id: str, type: str, props: dict[str, Any]) -> list[UIChunk]:
        part = self.parts.get(message_id)
        if part is None:
            part = self.parts[message_id] = _Part("data", message_id, open=False)
        elif part.data == props:
            return []
        part.data = json.loads(json.dumps(props))
        return [{"type": f"data-{type}", "id": message_id, "data": part.data}]

    def _close(self, part: _Part) -> list[UIChunk]:
        if not part.open:
            return []
        part.open = False
        if part.kind == "tool":
            out: list[UIChunk] = [{"type": "tool-input-available", "toolCallId": part.part_id,
                                   "toolName": part.tool_name, "input": _parsed(part.sent),
                                   "providerExecuted": True}]
            if part.approval is not None:
                out.append({"type": "tool-approval-request", "approvalId": part.approval,
                            "toolCallId": part.part_id})
            return out
        return [{"type": f"{part.kind}-end", "id": part.part_id}]


def _parsed(arguments: str) -> Any:
    """Tool arguments as the JSON they spell, the raw text when they are not JSON."""
    if not arguments:
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
