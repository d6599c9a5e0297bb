"""The AI SDK's chat protocol: ``POST /ai/chat`` and ``GET /ai/chat/{id}/stream``.

A front end built on the AI SDK's ``useChat`` talks to chatql with its default
transport as it stands (``new DefaultChatTransport({api: '<chatql>/ai/chat'})``):

- ``POST /ai/chat`` takes the SDK's request body — ``id`` (the chat id), ``messages``
  (UI messages), ``trigger`` (``submit-message`` or ``regenerate-message``),
  ``messageId`` — and, for ``submit-message``, appends the person's newest message to
  the chat (creating the chat on first use, for the assistant named by the body's
  ``assistantId`` or ``CHATQL_DEFAULT_ASSISTANT``). The UI message's id is the stored
  message's id and ``ui:<id>`` the append's idempotency key (as ``@chatql/client``'s
  transport has it), so a retried request, by either, writes nothing twice.
  ``regenerate-message`` makes the question the chat's active leaf again (the earlier
  answers stay as its siblings). Either way the answer is the agent's reply as a UI
  message stream over SSE (header ``x-vercel-ai-ui-message-stream: v1``), see
  :mod:`chatql.gql.transport.ui_stream`. The reply is whatever stream the agent starts for the
  question (the agent loop claims it); when none starts within
  ``CHATQL_AGENT_REPLY_TIMEOUT`` seconds the stream says so with an ``error`` chunk.
- Tool approvals: a tool call the agent marks ``needsApproval`` reaches the client as
  ``tool-approval-request`` (the approval id is the interrupt's id) and the reply ends.
  The SDK's ``addToolApprovalResponse`` then posts (``submit-message``) the messages
  ending with the assistant's, whose tool parts in state ``approval-responded`` carry
  the person's decisions: each is resolved as ``resolveInterrupt`` would (same rights,
  decided once: the very same decision again changes nothing, another is a 409), an
  approval id this chat never issued is a 404 and nothing is decided, and the answer is
  the resumed reply — denied calls as ``tool-output-denied`` first — continuing the
  assistant message the client shows. While other approvals of the reply are still
  pending the answer only reports the denials and finishes.
- ``GET /ai/chat/{id}/stream`` resumes a live reply after a reload: the reply so far
  (from the stream's merged state) and then live, or 204 when nothing is live.
- An agent's ``file`` message (props ``{fileId, mediaType, filename}``) reaches the
  client as the AI SDK's ``file`` chunk ``{type: "file", url, mediaType}``, ``url`` a
  signed address of the file (as ``File.url`` gives) — when the person may read the
  file, which whoever may read the chat may from the moment the chunk naming it was
  accepted (a producer may only name files it may read); otherwise (a ``fileId`` that
  names no file, a file deleted meanwhile) it stays the ``data-file`` part it was.

The caller is identified exactly as on ``/graphql`` and needs the same rights (append:
write access to the chat). A body that is not what the SDK sends is a 400 with a
message, and nothing is written.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, unquote_to_bytes, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Services
from chatql.gql.errors import code_for
from chatql.gql.schema.file_type import base_url, signed_url
from chatql.gql.transport import replies
from chatql.gql.transport.bodylimit import error_body
from chatql.gql.transport.ui_stream import UIChunk, UIMessageStream
from chatql.store.chats.chat import get_chat
from chatql.store.errors import ChatqlError, InvalidArgument, NotFound
from chatql.store.ids import check_append_id, check_chat_id, check_message_id
from chatql.store.messages.message import NewMessage, get_message
from chatql.store.records import Identity
from chatql.store.streams.queue import SubscriberQueue

__all__ = ["UI_STREAM_HEADERS", "resume_reply", "send_messages"]

#: The headers the AI SDK's UI message stream responses carry.
UI_STREAM_HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
_STATUS = {"UNAUTHENTICATED": 401, "FORBIDDEN": 403, "NOT_FOUND": 404, "CONFLICT": 409,
           "APPEND_CONFLICT": 409, "PAYLOAD_TOO_LARGE": 413, "QUOTA_EXCEEDED": 413,
           "UNSUPPORTED_MEDIA_TYPE": 415}
_TRIGGERS = ("submit-message", "regenerate-message")
#: The path of one of this service's own file addresses.
_OWN_FILE = re.compile(r"^(?:.*)/files/(?P<id>[A-Za-z0-9_-]{1,64})$")
#: How far up the tree a regenerated message is followed to find its question.
_MAX_CLIMB = 1000


def _failure(error: ChatqlError) -> Response:
    code = code_for(error) or "INVALID_ARGUMENT"
    headers = {"WWW-Authenticate": "Bearer"} if code == "UNAUTHENTICATED" else None
    return JSONResponse(error_body(str(error), code), status_code=_STATUS.get(code, 400),
                        headers=headers)


def _sse(chunk: UIChunk) -> bytes:
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


async def send_messages(request: Request) -> Response:
    """``POST /ai/chat``."""
    services: Services = request.app.state.services
    try:
        who = identity_from_credentials(services.settings, dict(request.headers))
        body = await _json_object(request)
        chat_id = check_chat_id(_text(body, "id"))
        trigger = body.get("trigger", "submit-message")
        if trigger not in _TRIGGERS:
            raise InvalidArgument(f"trigger must be one of {', '.join(_TRIGGERS)}")
        approvals = _approval_answers(body) if trigger == "submit-message" else None
        if approvals is not None:
            queue, decided = await replies.decide(services, who, chat_id, approvals,
                                                  kinds=("TOOL_APPROVAL",))
            return StreamingResponse(
                _reply(services, request, who, chat_id, queue,
                       resumed=_resumed(approvals, decided)),
                media_type="text/event-stream", headers=UI_STREAM_HEADERS)
        if trigger == "submit-message":
            question = await _with_files(services, who, _newest_user_message(body))
            assistant = body.get("assistantId", services.settings.default_assistant)
            if not isinstance(assistant, str):
                raise InvalidArgument("assistantId must be a string")
            assert question.id is not None
            queue = await replies.open_chat(services, who, chat_id, assistant, question,
                                            f"ui:{question.id}")
            question_id = question.id
        else:
            question_id = await _question_of(services, who, chat_id, _regenerated(body))
            queue = await replies.ask_again(services, who, chat_id, question_id)
    except ChatqlError as error:
        return _failure(error)
    return StreamingResponse(
        _reply(services, request, who, chat_id, queue, question_id=question_id),
        media_type="text/event-stream", headers=UI_STREAM_HEADERS)


async def resume_reply(request: Request) -> Response:
    """``GET /ai/chat/{id}/stream``: the live reply so far and then live, or 204."""
    services: Services = request.app.state.services
    streams = services.streams
    assert streams is not None
    try:
        who = identity_from_credentials(services.settings, dict(request.headers))
        chat_id = check_chat_id(request.path_params["chat_id"])
        if await get_chat(services.db, who, chat_id) is None:
            raise NotFound(f"chat {chat_id!r} not found")
    except ChatqlError as error:
        return _failure(error)
    live = await streams.active_stream(chat_id)
    if live is None:
        return Response(status_code=204)
    queue = await streams.subscribe(chat_id)
    return StreamingResponse(_reply(services, request, who, chat_id, queue, live=live),
                             media_type="text/event-stream", headers=UI_STREAM_HEADERS)


# ---- the request -----------------------------------------------------------------------


async def _json_object(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except ValueError:
        raise InvalidArgument("the body must be JSON (the AI SDK's chat request)") from None
    if not isinstance(body, dict):
        raise InvalidArgument("the body must be a JSON object (the AI SDK's chat request)")
    return body


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"field {name!r} must be a non-empty string")
    return value


def _newest_user_message(body: dict[str, Any]) -> NewMessage:
    """The person's newest UI message as the message to store."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidArgument("field 'messages' must be a non-empty list of UI messages")
    message = messages[-1]
    if not isinstance(message, dict) or message.get("role") != "user":
        raise InvalidArgument("the last of 'messages' must be the person's (role 'user')")
    message_id = message.get("id")
    if not isinstance(message_id, str):
        raise InvalidArgument("the last message needs an 'id' (a string)")
    check_append_id(message_id)
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise InvalidArgument("the last message's 'parts' must be a list")
    content: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise InvalidArgument(f"parts[{index}] must be an object")
        if part.get("type") == "text":
            if not isinstance(part.get("text"), str):
                raise InvalidArgument(f"parts[{index}].text must be a string")
            content.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "file":
            content.append({key: part[key] for key in ("type", "mediaType", "url", "filename")
                            if isinstance(part.get(key), str)})
        # Other parts (step markers, a client's own data) are not the person's words.
    if not content:
        raise InvalidArgument("the last message has no text or file parts")
    text_only = all(part["type"] == "text" for part in content)
    props: dict[str, Any] = {
        "content": "".join(part["text"] for part in content) if text_only else content}
    metadata = message.get("metadata")
    return NewMessage(role="USER", type="user_input", props=props, id=message_id,
                      metadata=metadata if isinstance(metadata, dict) else None)


@dataclass(frozen=True, slots=True)
class _Resumed:
    """What a reply resuming after decisions starts from."""

    shown_calls: list[str]
    denied_calls: list[str]
    #: Whether approvals of the reply still wait (then nothing resumes yet).
    pending: bool


def _approval_answers(body: dict[str, Any]) -> list[replies.Answer] | None:
    """The approvals the client's last message answers (tool parts in state
    ``approval-responded``); None when that message is not the assistant's."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    message = messages[-1]
    if message.get("role") != "assistant":
        return None
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise InvalidArgument("the last message's 'parts' must be a list")
    answers: list[replies.Answer] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval")
        if (not isinstance(approval, dict) or not isinstance(approval.get("id"), str)
                or not isinstance(approval.get("approved"), bool)):
            raise InvalidArgument(f"parts[{index}].approval needs 'id' (a string) and "
                                  "'approved' (a boolean)")
        reason = approval.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InvalidArgument(f"parts[{index}].approval.reason must be a string")
        answers.append(replies.Answer(approval["id"], approved=approval["approved"],
                                      reason=reason))
    if not answers:
        raise InvalidArgument("the last of 'messages' must be the person's (role 'user') or "
                              "the assistant's answering tool approvals")
    return answers


def _resumed(answers: list[replies.Answer], decided: replies.Decided) -> _Resumed:
    calls = [interrupt.tool_call_id or interrupt.id for interrupt in decided.answered]
    return _Resumed(shown_calls=calls,
                    denied_calls=[call for call, answer in zip(calls, answers, strict=True)
                                  if not answer.approved],
                    pending=bool(decided.pending))


async def _with_files(services: Services, who: Identity, question: NewMessage) -> NewMessage:
    """The question with its data-URL file parts stored as files: the record keeps
    ``{type: "file", fileId, mediaType, filename}``, never the bytes. A part naming one of
    this service's own file addresses (``/files/{id}…``) keeps that file's id; any other
    URL is kept as sent."""
    content = question.props.get("content") if isinstance(question.props, dict) else None
    if not isinstance(content, list) or not any(
            isinstance(part.get("url"), str) for part in content if part.get("type") == "file"):
        return question
    stored: list[dict[str, Any]] = []
    for index, part in enumerate(content):
        url = part.get("url") if part.get("type") == "file" else None
        if not isinstance(url, str):
            stored.append(part)
        elif url.startswith("data:"):
            stored.append(await _stored_data_url(services, who, index, part, url))
        elif (own := _OWN_FILE.match(urlsplit(url).path)) is not None:
            if services.files is None or await services.files.readable(
                    who, own["id"]) is None:
                raise NotFound(f"file {own['id']!r} not found")
            stored.append({"type": "file", "fileId": own["id"],
                           **{k: part[k] for k in ("mediaType", "filename") if k in part}})
        else:
            stored.append(part)
    return replace(question, props={**question.props, "content": stored})


async def _stored_data_url(services: Services, who: Identity, index: int,
                           part: dict[str, Any], url: str) -> dict[str, Any]:
    if services.files is None:
        raise InvalidArgument("this service stores no files")
    header, comma, payload = url.removeprefix("data:").partition(",")
    declared = header.split(";")[0] or "text/plain"
    try:
        if not comma:
            raise ValueError("no comma")
        if header.endswith(";base64"):
            data = base64.b64decode(unquote(payload), validate=True)
        else:
            data = unquote_to_bytes(payload)
    except (ValueError, binascii.Error):
        raise InvalidArgument(f"parts[{index}].url is not a valid data URL") from None
    media_type = part.get("mediaType") or declared

    async def chunks() -> AsyncIterator[bytes]:
        yield data

    file = await services.files.ingest(who, filename=part.get("filename"),
                                       media_type=media_type, chunks=chunks())
    return {"type": "file", "fileId": file.id, "mediaType": file.media_type,
            "filename": file.filename}


def _regenerated(body: dict[str, Any]) -> str:
    """The UI message a ``regenerate-message`` names: ``messageId``, else the last of
    ``messages`` (the SDK sends them up to the question being answered again)."""
    message_id = body.get("messageId")
    if isinstance(message_id, str) and message_id:
        return message_id
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        last = messages[-1].get("id")
        if isinstance(last, str) and last:
            return last
    raise InvalidArgument("regenerate-message needs 'messageId' or a last message with an id")


async def _question_of(services: Services, who: Identity, chat_id: str,
                       message_id: str) -> str:
    """The person's question ``message_id`` answers (itself when it is the question):
    the nearest USER message at or above it."""
    check_message_id(message_id)
    current: str | None = message_id
    for _ in range(_MAX_CLIMB):
        if current is None:
            break
        message = await get_message(services.db, who, current)
        if message is None or message.chat_id != chat_id:
            raise NotFound(f"message {current!r} not found in chat {chat_id!r}")
        if message.role == "USER":
            return message.id
        current = message.parent_id
    raise InvalidArgument(f"message {message_id!r} answers no question of the person's")


# ---- the reply -------------------------------------------------------------------------


async def _reply(services: Services, request: Request, who: Identity, chat_id: str,
                 queue: SubscriberQueue, *, question_id: str | None = None,
                 live: str | None = None, resumed: _Resumed | None = None,
                 ) -> AsyncIterator[bytes]:
    """The UI message stream of one reply: the stream ``live`` (a resumed reply), the
    first stream that starts answering ``question_id``, or (``resumed``) the stream
    that resumes the chat after the person's decisions."""
    translator = UIMessageStream(stream_id=live, file_parts=services.files is not None)
    if resumed is not None:
        for chunk in translator.resuming(resumed.shown_calls, resumed.denied_calls):
            yield _sse(chunk)
        if resumed.pending:
            for chunk in translator.end("awaiting_input"):
                yield _sse(chunk)
    async for frame in replies.follow(services, chat_id, queue, translator, _encode,
                                      question_id=question_id):
        if frame.startswith(_UNSIGNED):
            unsigned = json.loads(frame[len(_UNSIGNED):])
            frame = _sse(await _file_chunk(services, request, who, unsigned))
        yield frame
    yield b"data: [DONE]\n\n"


#: Marks a translator's file chunk on its way out, until its address is signed (never
#: sent: no SSE frame starts with a NUL).
_UNSIGNED = b"\x00file:"


def _encode(chunk: UIChunk) -> bytes:
    if chunk.get("type") == "file" and "fileId" in chunk:
        return _UNSIGNED + json.dumps(chunk).encode()
    return _sse(chunk)


async def _file_chunk(services: Services, request: Request, who: Identity,
                      unsigned: UIChunk) -> UIChunk:
    """A ``file`` message's chunk: the AI SDK's ``file`` with a signed address when the
    reader may read the file (a live reply's chunk made it readable through the chat);
    else its data part."""
    files = services.files
    file = None if files is None else await files.readable(who, unsigned["fileId"])
    if files is None or file is None:
        return {"type": "data-file", "id": unsigned["id"], "data": unsigned["data"]}
    url = signed_url(files, base_url(request), file.id)
    return {"type": "file", "url": url, "mediaType": file.media_type}
