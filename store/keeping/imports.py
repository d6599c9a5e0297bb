"""Importing chats: from a chatql export, or from an OpenAI-style message list.

Two entry points share one parser and one writer:

- :func:`import_chat` (the ``importChat`` mutation) writes a whole document in one
  transaction: all of it or none of it.
- :class:`ImportRun` (``chatql import FILE``) writes a JSON Lines export of any size in
  batches, one transaction each, recording after every batch how many lines are done;
  run again with the same import id after an interruption, it skips what is done.

Both are idempotent by import id within a tenant, like an append: the same id with
the same content returns the chat it made and writes nothing; with different content
it is APPEND_CONFLICT. Every line is checked before anything is written; a malformed
one is INVALID_ARGUMENT naming the line (1-based) or the message index, and the field.

A chatql document keeps what the export recorded — message ids, sequences, statuses,
props, metadata, timestamps, interrupts with their state and decision, resume records —
so export then import reproduces the chat. The importer becomes its owner
(``createdBy``, team, tenant). Message ids (and so interrupt ids, which are the asking
messages') are unique across the store: importing a chat whose messages still exist is
CONFLICT. Files: a document's ``file`` lines are stored again for the importer (new
ids, the messages' references renamed to them; ``store/files/transfer.py``); a
reference with no file line stays as it is, linked when the importer may read the file.

OpenAI-style documents (``{"messages": [{role, content, tool_calls, tool_call_id,
name}]}``) become: ``user`` → USER ``user_input``; ``system``/``developer`` → SYSTEM
``text``; ``assistant`` → ASSISTANT ``text`` (when it has content) followed by one
``tool_call`` message per tool call with props ``{id, name, arguments}``; ``tool`` →
TOOL ``tool_result`` with props ``{content, tool_call_id}``. ``name`` is kept in props.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import JSON, Boolean, Integer, String, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.access import can_read_file
from chatql.store.chats.chat import (
    CHAT_SHARES,
    CHAT_STATUSES,
    get_chat,
    insert_chat,
    normalised_fields,
)
from chatql.store.chats.titles import TITLE_SOURCES, automatic_title
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.rows import document_rows, write_rows
from chatql.store.db.tables import (
    UTCDateTime,
    chat_imports,
    chats,
    files,
    interrupts,
    message_files,
    messages,
    resume_records,
)
from chatql.store.errors import AppendConflict, Conflict, InvalidArgument, NotFound
from chatql.store.files.links import file_ids_in
from chatql.store.files.service import FileService
from chatql.store.files.transfer import FileLine, import_files, parse_file_line, remap_file_ids
from chatql.store.ids import check_append_id, check_chat_id, check_message_id, new_id
from chatql.store.jsonutil import canonical_digest
from chatql.store.keeping.export import MESSAGE_LINE_FIELDS
from chatql.store.limits import (
    ID_CHARS,
    MODE_CHARS,
    NAME_CHARS,
    TITLE_CHARS,
    TYPE_CHARS,
    check_tokens,
)
from chatql.store.messages import tree
from chatql.store.messages.message import MESSAGE_STATUSES, ROLES
from chatql.store.records import Chat, Identity
from chatql.store.text import message_text

__all__ = [
    "IMPORT_BATCH_LINES",
    "IMPORT_FORMATS",
    "ImportRun",
    "ParsedChat",
    "import_chat",
    "import_file",
    "parse_chat_line",
    "parse_chatql",
    "parse_line",
    "parse_openai",
]

IMPORT_FORMATS = ("CHATQL", "OPENAI")
_OPENAI_ROLES = {"user": "USER", "assistant": "ASSISTANT", "system": "SYSTEM",
                 "developer": "SYSTEM", "tool": "TOOL"}


@dataclass(slots=True)
class ParsedChat:
    """A checked document: the chat row's values; its message, interrupt and resume
    rows; and the files its ``file`` lines carry."""

    chat: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    resume: list[dict[str, Any]] = field(default_factory=list)
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    files: list[FileLine] = field(default_factory=list)


def _bad(where: str, what: str) -> InvalidArgument:
    return InvalidArgument(f"{where}: {what}")


def _text(line: Mapping[str, Any], name: str, where: str, *, required: bool = False,
          limit: int = NAME_CHARS) -> str | None:
    value = line.get(name)
    if value is None:
        if required:
            raise _bad(where, f"field {name!r} is required")
        return None
    if not isinstance(value, str) or (limit and len(value) > limit):
        raise _bad(where, f"field {name!r} must be a string of at most {limit} characters")
    return value


def _object(line: Mapping[str, Any], name: str, where: str, *, required: bool = False
            ) -> dict[str, Any] | None:
    value = line.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise _bad(where, f"field {name!r} must be a JSON object")
    return value


def _int(line: Mapping[str, Any], name: str, where: str, default: int | None = None) -> int:
    value = line.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**62) < value < 2**62:
        raise _bad(where, f"field {name!r} must be an integer")
    return value


def _time(line: Mapping[str, Any], name: str, where: str, default: datetime | None
          ) -> datetime | None:
    value = line.get(name)
    if value is None:
        return default
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise _bad(where, f"field {name!r} must be an ISO 8601 time with an offset")
    return parsed


def _one_of(line: Mapping[str, Any], name: str, where: str, allowed: Sequence[str],
            default: str) -> str:
    value = line.get(name, default)
    if value not in allowed:
        raise _bad(where, f"field {name!r} must be one of {', '.join(allowed)}")
    return str(value)


def parse_chat_line(line: Any, who: Identity, *, chat_id: str | None = None,
                    assistant_id: str | None = None, where: str = "line 1") -> dict[str, Any]:
    """The chat row an export's first line describes, owned by ``who``."""
    if not isinstance(line, dict) or line.get("kind") != "chat":
        raise _bad(where, "the first line must be the chat (kind 'chat')")
    if line.get("format", "chatql") != "chatql":
        raise _bad(where, "field 'format' must be 'chatql'")
    stamp = now()
    try:
        target = check_chat_id(chat_id if chat_id is not None else str(line.get("id") or ""))
    except InvalidArgument as error:
        raise _bad(where, f"field 'id': {error}") from None
    assistant = assistant_id or _text(line, "assistantId", where, required=True)
    created = _time(line, "createdAt", where, stamp)
    last_message = _time(line, "lastMessageAt", where, None)
    values: dict[str, Any] = {
        "title": _text(line, "title", where, limit=TITLE_CHARS),
        "status": _one_of(line, "status", where, CHAT_STATUSES, "ACTIVE"),
        "share": _one_of(line, "share", where, CHAT_SHARES, "PRIVATE"),
        "public": bool(line.get("public", False)),
        "sort": _int(line, "sort", where, 0),
        "metadata": _object(line, "metadata", where),
        "tags": line.get("tags") or [],
        "pinned": bool(line.get("pinned", False)),
        "expires_at": _time(line, "expiresAt", where, None),
    }
    try:
        values = normalised_fields(values)
    except InvalidArgument as error:
        raise _bad(where, str(error)) from None
    mode = _text(line, "mode", where, limit=MODE_CHARS) or "chat"
    return {
        **values,
        "title_source": _title_source(line, values["title"]),
        "id": target,
        "assistant_id": assistant,
        "mode": mode,
        "last_message_at": last_message,
        "activity_at": last_message or created,
        "created_at": created,
        "updated_at": _time(line, "updatedAt", where, created),
        "created_by": who.user_id,
        "updated_by": who.user_id,
        "team_id": who.team_id,
        "tenant_id": who.tenant_id,
    }


def _title_source(line: Mapping[str, Any], title: str | None) -> str | None:
    """Where the document's title came from, as it says (``titleSource``); a title it
    does not say the source of was a person's."""
    if title is None:
        return None
    source = line.get("titleSource")
    return source if source in TITLE_SOURCES else "USER"


# ---- message lines: each field of export.MESSAGE_LINE_FIELDS read back ----------------

#: How a message line's field is read: (the line, the field's name, where, the row
#: so far) -> the column's value, or _LEFT_OUT to leave the column out of the row.
_FieldReader = Callable[[Mapping[str, Any], str, str, dict[str, Any]], Any]
_LEFT_OUT = object()


def _message_id(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> str:
    try:
        return check_message_id(str(line.get(name) or ""))
    except InvalidArgument as error:
        raise _bad(where, f"field {name!r}: {error}") from None


def _sequence(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> int:
    sequence = _int(line, name, where)
    if sequence < 1:
        raise _bad(where, f"field {name!r} must be positive")
    return sequence


def _type(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> str:
    kind = _text(line, name, where, required=True, limit=TYPE_CHARS)
    if not kind or kind == "event":
        raise _bad(where, f"field {name!r} must be 1-{TYPE_CHARS} characters and not 'event'")
    return kind


def _parent(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> Any:
    # An export names each message's parent (null for a root); a document without the
    # field is one chain in sequence order.
    if name not in line:
        return _LEFT_OUT
    parent = line[name]
    if parent is not None and not isinstance(parent, str):
        raise _bad(where, f"field {name!r} must be a message id or null")
    return parent


def _tokens(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> Any:
    try:
        check_tokens(line.get(name))
    except InvalidArgument as error:
        raise _bad(where, f"field {name!r}: {error}") from None
    return line.get(name)


#: The fields read by rules of their own; every other one as its column's type says
#: (:func:`_column_reader`).
_MESSAGE_READERS: dict[str, _FieldReader] = {
    "id": _message_id,
    "sequence": _sequence,
    "role": lambda line, name, where, row: _one_of(line, name, where, ROLES, ""),
    "type": _type,
    "props": lambda line, name, where, row: _object(line, name, where, required=True),
    "status": lambda line, name, where, row: _one_of(line, name, where, MESSAGE_STATUSES,
                                                     "COMPLETED"),
    "metadata": lambda line, name, where, row: _object(line, name, where),
    "created_at": lambda line, name, where, row: _time(line, name, where, now()),
    "updated_at": lambda line, name, where, row: _time(line, name, where,
                                                       row["created_at"]),
    "parent_id": _parent,
    "tokens": _tokens,
}


def _whole_number(line: Mapping[str, Any], name: str, where: str,
                  row: dict[str, Any]) -> int | None:
    return None if line.get(name) is None else _int(line, name, where)


def _flag(line: Mapping[str, Any], name: str, where: str, row: dict[str, Any]) -> Any:
    value = line.get(name)
    if value is not None and not isinstance(value, bool):
        raise _bad(where, f"field {name!r} must be true, false or null")
    return value


def _column_reader(column: str) -> _FieldReader:
    """How a nullable message column without a rule of its own is read from its line
    field, by the column's type: text of at most the column's length, a whole
    number, true/false, a time, any JSON value; all of them null when left out."""
    kind = messages.c[column].type
    if not messages.c[column].nullable:
        raise TypeError(f"message column {column!r} is NOT NULL: give it a reader")
    if isinstance(kind, String):
        limit = kind.length or 0
        return lambda line, name, where, row: _text(line, name, where, limit=limit)
    if isinstance(kind, Integer):
        return _whole_number
    if isinstance(kind, Boolean):
        return _flag
    if isinstance(kind, UTCDateTime):
        return lambda line, name, where, row: _time(line, name, where, None)
    if isinstance(kind, JSON):
        return lambda line, name, where, row: line.get(name)
    raise TypeError(f"no reader for message column {column!r} of type {kind!r}")


#: Each field of a message line, in the line's order: its name, its column and how
#: it is read.
_MESSAGE_LINE = tuple((name, column, _MESSAGE_READERS.get(column) or _column_reader(column))
                      for name, column in MESSAGE_LINE_FIELDS)


def _message_row(line: Mapping[str, Any], where: str) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name, column, read in _MESSAGE_LINE:
        value = read(line, name, where, row)
        if value is not _LEFT_OUT:
            row[column] = value
    return row


def _resume_row(line: Mapping[str, Any], where: str) -> dict[str, Any]:
    stamp = now()
    created = _time(line, "createdAt", where, stamp)
    return {
        "id": _text(line, "id", where, limit=ID_CHARS) or new_id(),
        "request_id": _text(line, "requestId", where),
        "assistant_id": _text(line, "assistantId", where),
        "stack_id": _text(line, "stackId", where),
        "stack_parent_id": _text(line, "stackParentId", where),
        "stack_depth": _int(line, "stackDepth", where, 0),
        "type": _text(line, "type", where, required=True, limit=32),
        "status": _text(line, "status", where, required=True, limit=16),
        "input": line.get("input"),
        "output": line.get("output"),
        "space_snapshot": line.get("spaceSnapshot"),
        "error": _text(line, "error", where, limit=0),
        "sequence": _int(line, "sequence", where, 0),
        "metadata": line.get("metadata"),
        "created_at": created,
        "updated_at": _time(line, "updatedAt", where, created),
    }


_INTERRUPT_KINDS = ("TOOL_APPROVAL", "INPUT")
_INTERRUPT_STATES = ("PENDING", "RESOLVED", "EXPIRED", "CANCELLED")


def _interrupt_row(line: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An ``interrupt`` line as its row (the chat and tenant are the importer's)."""
    try:
        interrupt_id = check_message_id(str(line.get("id") or ""))
        message_id = check_message_id(str(line.get("messageId") or ""))
    except InvalidArgument as error:
        raise _bad(where, f"fields 'id' and 'messageId': {error}") from None
    decision = line.get("decision")
    if decision is not None and not isinstance(decision, dict):
        raise _bad(where, "field 'decision' must be a JSON object or null")
    requested = _time(line, "requestedAt", where, now())
    return {
        "id": interrupt_id, "message_id": message_id,
        "sequence": _int(line, "sequence", where),
        "stream_id": _text(line, "streamId", where, required=True, limit=128),
        "request_id": _text(line, "requestId", where),
        "assistant_id": _text(line, "assistantId", where),
        "kind": _one_of(line, "interruptKind", where, _INTERRUPT_KINDS, ""),
        "state": _one_of(line, "state", where, _INTERRUPT_STATES, ""),
        "tool_call_id": _text(line, "toolCallId", where),
        "tool_name": _text(line, "toolName", where),
        "arguments": line.get("arguments"),
        "prompt": _text(line, "prompt", where, limit=0),
        "response_schema": line.get("responseSchema"),
        "reason": _text(line, "reason", where, limit=0),
        "requested_at": requested,
        "expires_at": _time(line, "expiresAt", where, None),
        "decision": decision,
        "decided_by": _text(line, "decidedBy", where),
        "decided_at": _time(line, "decidedAt", where, None),
        "decision_id": _text(line, "decisionId", where, limit=128),
        "resumed_by": _text(line, "resumedBy", where),
    }


def parse_line(line: Any, number: int, parsed: ParsedChat, last_sequence: int) -> int:
    """Check one message, file, interrupt or resume line and add it to ``parsed``;
    returns the highest message sequence so far (sequences must rise strictly)."""
    where = f"line {number}"
    if not isinstance(line, dict):
        raise _bad(where, "each line must be a JSON object")
    kind = line.get("kind")
    if kind == "message":
        if parsed.resume:
            raise _bad(where, "messages must come before resume records")
        row = _message_row(line, where)
        if row["sequence"] <= last_sequence:
            raise _bad(where, "field 'sequence' must be greater than the previous message's")
        parsed.messages.append(row)
        return int(row["sequence"])
    if kind == "resume":
        parsed.resume.append(_resume_row(line, where))
        return last_sequence
    if kind == "interrupt":
        parsed.interrupts.append(_interrupt_row(line, where))
        return last_sequence
    if kind == "file":
        if parsed.messages or last_sequence:
            raise _bad(where, "file lines must come before the messages")
        parsed.files.append(parse_file_line(line, number))
        return last_sequence
    raise _bad(where, "field 'kind' must be 'message', 'file', 'interrupt' or 'resume' "
               "after the chat line")


def _openai_content(item: Mapping[str, Any], where: str) -> Any:
    content = item.get("content")
    if content is not None and not isinstance(content, str | list):
        raise _bad(where, "field 'content' must be a string, a list of parts or null")
    return content


def parse_openai(document: Any, who: Identity, *, chat_id: str | None,
                 assistant_id: str | None) -> ParsedChat:
    """An OpenAI-style ``{"messages": [...]}`` document as chat, message and no resume rows."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise InvalidArgument("document: field 'messages' must be a list")
    if not assistant_id:
        raise InvalidArgument("assistantId is required to import an OPENAI document")
    header = {"kind": "chat", "id": chat_id or new_id(), "assistantId": assistant_id,
              "title": document.get("title")}
    parsed = ParsedChat(chat=parse_chat_line(header, who, where="document"))
    stamp = now()

    def add(role: str, kind: str, props: dict[str, Any]) -> None:
        parsed.messages.append({
            "id": new_id(), "sequence": len(parsed.messages) + 1, "request_id": None,
            "role": role, "type": kind, "props": props, "block_id": None,
            "thread_id": None, "assistant_id": assistant_id if role == "ASSISTANT" else None,
            "status": "COMPLETED", "metadata": None, "created_at": stamp, "updated_at": stamp,
        })

    for index, item in enumerate(document["messages"]):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise _bad(where, "each message must be a JSON object")
        role = _OPENAI_ROLES.get(item.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise _bad(where, f"field 'role' must be one of {', '.join(_OPENAI_ROLES)}")
        content = _openai_content(item, where)
        name = _text(item, "name", where)
        extra = {} if name is None else {"name": name}
        if role == "TOOL":
            call_id = _text(item, "tool_call_id", where, required=True)
            add(role, "tool_result", {"content": content, "tool_call_id": call_id, **extra})
            continue
        calls = item.get("tool_calls") or []
        if not isinstance(calls, list) or (calls and role != "ASSISTANT"):
            raise _bad(where, "field 'tool_calls' must be a list, on assistant messages only")
        if content not in (None, "", []) or not calls:
            kind = "user_input" if role == "USER" else "text"
            add(role, kind, {"content": "" if content is None else content, **extra})
        for number, call in enumerate(calls):
            call_where = f"{where}.tool_calls[{number}]"
            if not isinstance(call, dict):
                raise _bad(call_where, "each tool call must be a JSON object")
            function = _object(call, "function", call_where, required=True) or {}
            arguments = function.get("arguments")
            if arguments is not None and not isinstance(arguments, str | dict):
                raise _bad(call_where, "field 'function.arguments' must be a string or object")
            add("ASSISTANT", "tool_call", {
                "id": _text(call, "id", call_where, required=True),
                "name": _text(function, "name", call_where, required=True),
                "arguments": arguments,
            })
    if parsed.chat["title"] is None:
        # A conversation nobody named takes its title from its first question.
        question = next((m for m in parsed.messages if m["role"] == "USER"), None)
        title = None if question is None else automatic_title(message_text(question["props"]))
        if title is not None:
            parsed.chat.update(title=title, title_source="AUTO")
    return parsed


def parse_chatql(document: Any, who: Identity, *, chat_id: str | None,
                 assistant_id: str | None) -> ParsedChat:
    """A chatql export given as a list of its lines (objects)."""
    if not isinstance(document, list) or not document:
        raise InvalidArgument("document must be the export's lines, the chat line first")
    parsed = ParsedChat(chat=parse_chat_line(document[0], who, chat_id=chat_id,
                                             assistant_id=assistant_id))
    last = 0
    for number, line in enumerate(document[1:], start=2):
        last = parse_line(line, number, parsed, last)
    return parsed


async def _link_files(conn: AsyncConnection, who: Identity, chat_id: str,
                     rows: list[dict[str, Any]]) -> None:
    """The imported messages' file references the importer may read (the files the
    import stored, or files of its tenant an export without files names), kept as
    links like an append's; others stay unlinked."""
    wanted = [(row["id"], file_id) for row in rows
              for file_id in file_ids_in(row["type"], row["props"], strict=False)]
    if not wanted:
        return
    readable = set((await conn.scalars(select(files.c.id).where(
        files.c.id.in_(sorted({file_id for _, file_id in wanted})),
        can_read_file(who, now())))).all())
    links = [{"message_id": message_id, "file_id": file_id, "chat_id": chat_id}
             for message_id, file_id in wanted if file_id in readable]
    if links:
        await conn.execute(insert(message_files), links)


async def _write_rows(conn: AsyncConnection, chat_id: str, parsed: ParsedChat,
                      who: Identity | None = None) -> None:
    """Within the caller's transaction: the parsed messages (and, given the importer
    ``who``, their file links), interrupts and resume records."""
    if parsed.messages:
        ids = [row["id"] for row in parsed.messages]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("message ids within one import must be distinct")
        taken = (await conn.scalars(
            select(message_chats.c.id).where(message_chats.c.id.in_(ids)))).all()
        if taken:
            raise Conflict(f"message id {taken[0]!r} is already taken")
        leaf = await tree.link_rows(conn, chat_id, parsed.messages)
        await conn.execute(update(chats).where(chats.c.id == chat_id)
                           .values(active_leaf_id=leaf))
        await write_rows(conn, document_rows(chat_id, parsed.messages))
        # Sequences rise strictly through a document, so a batch's last is the highest.
        await conn.execute(update(chats).where(chats.c.id == chat_id)
                           .values(last_sequence=parsed.messages[-1]["sequence"]))
        if who is not None:
            await _link_files(conn, who, chat_id, parsed.messages)
    if parsed.interrupts:
        ids = [row["id"] for row in parsed.interrupts]
        taken = (await conn.scalars(select(interrupts.c.id).where(interrupts.c.id.in_(ids)))
                 ).all()
        if taken or len(set(ids)) != len(ids):
            raise Conflict(f"interrupt id {(taken or ids)[0]!r} is already taken")
        tenant = await conn.scalar(select(chats.c.tenant_id).where(chats.c.id == chat_id))
        await conn.execute(insert(interrupts), [
            {**row, "chat_id": chat_id, "tenant_id": tenant} for row in parsed.interrupts])
    if parsed.resume:
        # Checked here, not only by a key: on hash-partitioned tables the primary key
        # is (chat_id, id), which would let another chat's record keep the same id.
        ids = [row["id"] for row in parsed.resume]
        taken = (await conn.scalars(
            select(resume_records.c.id).where(resume_records.c.id.in_(ids)))).all()
        if taken or len(set(ids)) != len(ids):
            raise Conflict(f"resume record id {(taken or ids)[0]!r} is already taken")
        await conn.execute(insert(resume_records), [{**row, "chat_id": chat_id}
                                                    for row in parsed.resume])


async def _earlier(conn: AsyncConnection, who: Identity, import_id: str) -> Any:
    return (
        await conn.execute(
            select(chat_imports).where(chat_imports.c.tenant_id == who.tenant_id,
                                       chat_imports.c.import_id == import_id)
            .with_for_update()
        )
    ).first()


async def _finished(db: Database, who: Identity, earlier: Any, digest: str) -> Chat:
    if earlier.digest != digest:
        raise AppendConflict(
            f"importId {earlier.import_id!r} was already used for a different document")
    if not earlier.complete:
        raise Conflict(f"import {earlier.import_id!r} is still in progress; run it again "
                       "with the same file to finish it")
    chat = await get_chat(db, who, earlier.chat_id)
    if chat is None:
        raise NotFound(f"chat {earlier.chat_id!r} made by import {earlier.import_id!r} is gone")
    return chat


async def import_chat(
    db: Database,
    who: Identity,
    *,
    format: str,
    document: Any,
    import_id: str,
    chat_id: str | None = None,
    assistant_id: str | None = None,
    files: FileService | None = None,
    blobs: Mapping[str, bytes] | None = None,
) -> Chat:
    """Create a chat from ``document`` in one transaction, once per ``import_id``.

    The document's ``file`` lines are stored first through ``files`` (their bytes
    inline, or in ``blobs`` by SHA-256 from a .tar; see ``store/files/transfer.py``)
    and the messages' references renamed to the stored files."""
    check_append_id(import_id)
    if format not in IMPORT_FORMATS:
        raise InvalidArgument(f"format must be one of {', '.join(IMPORT_FORMATS)}")
    digest = canonical_digest({"format": format, "document": document, "chatId": chat_id,
                               "assistantId": assistant_id})
    parse = parse_chatql if format == "CHATQL" else parse_openai
    parsed = parse(document, who, chat_id=chat_id, assistant_id=assistant_id)
    if parsed.files and await _earlier_read(db, who, import_id) is None:
        if files is None:
            raise InvalidArgument("this service keeps no files: import without file lines")
        mapping = await import_files(files, who, parsed.files, blobs)
        for row in parsed.messages:
            row["props"] = remap_file_ids(row["type"], row["props"], mapping)
    try:
        async with db.write() as conn:
            earlier = await _earlier(conn, who, import_id)
            if earlier is None:
                chat = await insert_chat(conn, parsed.chat)
                await _write_rows(conn, chat.id, parsed, who)
                await conn.execute(insert(chat_imports).values(
                    tenant_id=who.tenant_id, import_id=import_id, digest=digest,
                    chat_id=chat.id, lines_done=1 + len(parsed.messages) + len(parsed.resume)
                + len(parsed.interrupts) + len(parsed.files),
                    complete=True, created_at=now(),
                ))
    except IntegrityError:
        raise Conflict("the chat id, a message id or the import id is already taken") from None
    if earlier is not None:
        return await _finished(db, who, earlier, digest)
    found = await get_chat(db, who, chat.id)
    return found or chat


class ImportRun:
    """A large JSON Lines import, written in batches and resumable by import id.

    ``digest`` identifies the file's content (the CLI hashes it in a first pass);
    :meth:`begin` creates the chat (or finds the earlier run) and says how many lines
    are already written; :meth:`write` commits one batch together with the new count.
    """

    def __init__(self, db: Database, who: Identity, *, import_id: str, digest: str) -> None:
        check_append_id(import_id)
        self.db, self.who, self.import_id, self.digest = db, who, import_id, digest
        self.chat_id = ""
        self.lines_done = 0

    async def begin(self, chat_row: dict[str, Any]) -> bool:
        """Start (or pick up) the import; False when it had already finished."""
        try:
            async with self.db.write() as conn:
                earlier = await _earlier(conn, self.who, self.import_id)
                if earlier is None:
                    chat = await insert_chat(conn, chat_row)
                    await conn.execute(insert(chat_imports).values(
                        tenant_id=self.who.tenant_id, import_id=self.import_id,
                        digest=self.digest, chat_id=chat.id, lines_done=1, complete=False,
                        created_at=now(),
                    ))
                    self.chat_id, self.lines_done = chat.id, 1
                    return True
        except IntegrityError:
            raise Conflict("the chat id or the import id is already taken") from None
        if earlier.digest != self.digest or earlier.complete:
            await _finished(self.db, self.who, earlier, self.digest)
            return False
        self.chat_id, self.lines_done = earlier.chat_id, int(earlier.lines_done)
        return True

    async def write(self, parsed: ParsedChat, lines: int, *, last: bool) -> None:
        """Commit ``parsed``'s rows (``lines`` lines of the file) as one batch."""
        try:
            async with self.db.write() as conn:
                await _write_rows(conn, self.chat_id, parsed, self.who)
                self.lines_done += lines
                await conn.execute(
                    update(chat_imports)
                    .where(chat_imports.c.tenant_id == self.who.tenant_id,
                           chat_imports.c.import_id == self.import_id)
                    .values(lines_done=self.lines_done, complete=last)
                )
        except IntegrityError:
            raise Conflict("a message id in this batch is already taken") from None


#: Lines written per transaction by :func:`import_file`.
IMPORT_BATCH_LINES = 5_000


async def import_file(
    db: Database,
    who: Identity,
    path: str,
    *,
    import_id: str | None = None,
    chat_id: str | None = None,
    assistant_id: str | None = None,
    batch_lines: int = IMPORT_BATCH_LINES,
) -> tuple[Chat, int]:
    """Import a chatql JSON Lines export of any size; returns the chat and the lines
    this call wrote (0 when an earlier run had finished it).

    A first pass hashes the file and checks every line (nothing is written when one is
    malformed); the second writes ``batch_lines`` lines per transaction. The import id
    defaults to one derived from the file's content, so re-running the same command
    after an interruption picks up after the last committed batch.
    """
    digest = hashlib.sha256()
    chat_row: dict[str, Any] | None = None
    checker = ParsedChat(chat={})
    last = 0
    with open(path, "rb") as source:
        for number, raw in enumerate(source, start=1):
            digest.update(raw)
            line = _decode(raw, number)
            if number == 1:
                chat_row = parse_chat_line(line, who, chat_id=chat_id, assistant_id=assistant_id)
                continue
            last = parse_line(line, number, checker, last)
            if checker.files:
                raise InvalidArgument(
                    f"line {number}: this export carries files; import it over HTTP "
                    "(POST /chats/import), which stores them")
            del checker.messages[:]  # keep memory flat; one resume row marks "resume seen"
            del checker.resume[1:]
            del checker.interrupts[:]
    if chat_row is None:
        raise InvalidArgument("line 1: the file is empty; it must start with the chat line")
    content = digest.hexdigest()
    run = ImportRun(db, who, import_id=import_id or f"file:{content[:48]}",
                    digest=canonical_digest([content, chat_id, assistant_id]))
    if not await run.begin(chat_row):
        return await _finished(db, who, await _earlier_read(db, who, run.import_id),
                               run.digest), 0
    start = run.lines_done
    written = 0
    parsed = ParsedChat(chat=chat_row)
    count = 0
    last = 0
    with open(path, "rb") as source:
        for number, raw in enumerate(source, start=1):
            if number == 1:
                continue
            line = _decode(raw, number)
            last = parse_line(line, number, parsed, last)
            if number <= start:  # committed by an earlier run
                del parsed.messages[:]
                del parsed.resume[:]
                del parsed.interrupts[:]
                continue
            count += 1
            if count == batch_lines:
                await run.write(parsed, count, last=False)
                written += count
                parsed, count = ParsedChat(chat=chat_row), 0
    await run.write(parsed, count, last=True)
    written += count
    chat = await get_chat(db, who, run.chat_id)
    if chat is None:  # pragma: no cover - only a concurrent purge could do this
        raise NotFound(f"chat {run.chat_id!r} is gone")
    return chat, written


def _decode(raw: bytes, number: int) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"line {number}: not JSON ({error})") from None


async def _earlier_read(db: Database, who: Identity, import_id: str) -> Any:
    async with db.read() as conn:
        return (await conn.execute(
            select(chat_imports).where(chat_imports.c.tenant_id == who.tenant_id,
                                       chat_imports.c.import_id == import_id)
        )).first()
