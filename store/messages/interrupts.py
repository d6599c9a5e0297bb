"""Interrupts: a person in the loop, kept as part of the record.

A producer asks through its stream. A ``tool_call`` message whose props carry
``needsApproval: true`` (with an optional ``reason`` and ``expiresIn`` seconds) asks
for approval of the call (``TOOL_APPROVAL``); a ``question`` message (props ``prompt``
and an optional ``responseSchema``, a JSON Schema, and ``expiresIn``) asks for an
answer (``INPUT``). When the stream is persisted, each such message gets an interrupt
row in the same transaction, with the message's id as its own, and the stream ends
``AWAITING_INPUT``.

Rules kept here:

- **Who decides**: whoever may change the chat (its creator, its team for a team chat,
  an admin of the tenant), or an identity with the ``approver`` role that may read it.
  The agent role alone does not: the producer's service identity cannot approve its
  own call.
- **Once**: a decision is written once. The same ``decisionId`` (or the very same
  decision) sent again answers the interrupt as it is; a different decision on a
  resolved interrupt is CONFLICT, on a cancelled one CONFLICT too; after
  ``expiresAt`` the decision is EXPIRED and nothing changes (the sweeper marks it).
- **Valid answers**: an approval needs ``approved``; an answer needs ``response``
  (unless ``approved: false`` declines the question), validated against the question's
  ``responseSchema`` with a maintained JSON Schema validator. A ``responseSchema``
  that is not itself a valid JSON Schema is kept as sent but not applied: any answer
  is accepted (the question is still answerable).
- **Resumption**: once none of a stream's interrupts is pending and at least one was
  resolved or expired, the chat awaits a resumption (it reads as awaiting a reply
  again) until a worker claims it by starting a stream with the request id
  :func:`resume_request_id` gives; that claim marks the decisions resumed in its own
  transaction, so exactly one worker resumes.
- **Cancelled**: stopping a chat's stream, or stopping a chat that waits for decisions,
  cancels its pending interrupts; purging a chat deletes them with it.
- **Inline**: an asking message whose props also carry ``inline: true`` is asked by a
  producer that waits for the decision inside its open stream. Its interrupt is
  recorded when the chunk is pushed (:func:`record_inline`), never awaits a resumption
  and does not make the stream end ``AWAITING_INPUT``; when the stream is persisted it
  takes the message's sequence, and one still pending is cancelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

import jsonschema
from sqlalchemy import ColumnElement, Select, and_, exists, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access, jsonutil
from chatql.store.access import present
from chatql.store.clock import now
from chatql.store.cursors import MomentPosition, moment_position_from
from chatql.store.db.database import Database
from chatql.store.db.prepared import (
    MARK_AFTER_ID,
    MARK_AFTER_VALUE,
    MARK_NOW,
    Attribute,
    PreparedStatement,
    attribute,
    compile_prepared,
    fixed,
    marked_identity,
)
from chatql.store.db.tables import chats, interrupts
from chatql.store.errors import (
    Conflict,
    Expired,
    Forbidden,
    InvalidArgument,
    NotFound,
)
from chatql.store.limits import NAME_CHARS, check_length
from chatql.store.records import Decision, Identity, Interrupt, Message

__all__ = [
    "INTERRUPT_COLUMNS",
    "INTERRUPT_KINDS",
    "INTERRUPT_STATES",
    "STORED_ATTRIBUTES",
    "InboxPageShape",
    "InterruptFilter",
    "InterruptPage",
    "as_decided",
    "asks",
    "asks_later",
    "awaiting_decision_clause",
    "awaiting_resumption_clause",
    "can_decide",
    "cancel_pending",
    "chat_interrupts",
    "claim_resumption",
    "cursor_scope",
    "decided_for",
    "expire_due",
    "get_interrupt",
    "in_model_window",
    "inbox",
    "inbox_page_statement",
    "inbox_select",
    "inbox_size",
    "interrupt_attribute",
    "position_from",
    "position_of",
    "record_inline",
    "record_requested",
    "resolve",
    "resume_request_id",
    "settle_inline",
    "to_resume",
    "waits_inline",
]

INTERRUPT_KINDS = ("TOOL_APPROVAL", "INPUT")
INTERRUPT_STATES = ("PENDING", "RESOLVED", "EXPIRED", "CANCELLED")
QUESTION_TYPE = "question"
TOOL_CALL_TYPE = "tool_call"
#: The longest time to decide a producer may give (``expiresIn``): 30 days.
MAX_EXPIRES_IN = 30 * 24 * 3600
MAX_REASON_CHARS = 2_000
DEFAULT_INBOX_SIZE = 20
MAX_INBOX_SIZE = 100
_DECIDED = ("RESOLVED", "EXPIRED")
_RESUME = re.compile(r"^(?P<base>.*)\.resume\.(?P<n>[1-9][0-9]{0,8})$")


def asks(type: str, props: Any) -> str | None:
    """The kind of interrupt a message of ``type`` with ``props`` asks for, or None."""
    if type == QUESTION_TYPE:
        return "INPUT"
    if type == TOOL_CALL_TYPE and isinstance(props, dict) and props.get("needsApproval") is True:
        return "TOOL_APPROVAL"
    return None


def waits_inline(props: Any) -> bool:
    """Whether an asking message's producer waits for the decision in its open stream."""
    return isinstance(props, dict) and props.get("inline") is True


def asks_later(type: str, props: Any) -> str | None:
    """The kind of interrupt a message asks for that waits for a resumption (not an
    inline one), or None."""
    kind = asks(type, props)
    return None if kind is None or waits_inline(props) else kind


def _expires_at(props: dict[str, Any], at: datetime) -> datetime | None:
    seconds = props.get("expiresIn")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        return None
    return at + timedelta(seconds=min(float(seconds), MAX_EXPIRES_IN))


def _arguments(value: Any) -> Any:
    """A tool call's arguments as JSON when its text is JSON (deltas build a string)."""
    if isinstance(value, str):
        try:
            return jsonutil.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any, limit: int = MAX_REASON_CHARS) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _schema(value: Any) -> Any:
    return value if isinstance(value, dict | bool) else None


#: ``resumed_by`` of an inline interrupt: its producer waits for it in its stream.
INLINE_MARK = "inline"


def _row(message_id: str, type: str, props: Any, *, sequence: int, chat_id: str,
         tenant_id: str, stream_id: str, request_id: str | None, assistant_id: str | None,
         at: datetime) -> dict[str, Any] | None:
    kind = asks(type, props)
    if kind is None:
        return None
    props = props if isinstance(props, dict) else {}
    return {
        # One interrupt per message, named like it: a front end that saw the
        # message live knows the interrupt's id before the stream is written.
        "id": message_id, "chat_id": chat_id, "tenant_id": tenant_id,
        "message_id": message_id, "sequence": sequence, "stream_id": stream_id,
        "request_id": request_id,
        "assistant_id": assistant_id, "kind": kind, "state": "PENDING",
        "tool_call_id": _text(props.get("id") or props.get("toolCallId"), 200),
        "tool_name": _text(props.get("name") or props.get("toolName"), 200),
        "arguments": _arguments(props.get("arguments")) if kind == "TOOL_APPROVAL" else None,
        "prompt": _text(props.get("prompt"), 10_000) if kind == "INPUT" else None,
        "response_schema": _schema(props.get("responseSchema")) if kind == "INPUT" else None,
        "reason": _text(props.get("reason")),
        "requested_at": at, "expires_at": _expires_at(props, at),
        # An inline interrupt is answered inside its stream: never a resumption's.
        "resumed_by": INLINE_MARK if waits_inline(props) else None,
    }


async def record_requested(conn: AsyncConnection, *, chat_id: str, tenant_id: str,
                           stream_id: str, request_id: str | None,
                           assistant_id: str | None, written: Iterable[Message]) -> int:
    """Within a stream's persist: an interrupt for every message of it that asks (and
    waits for a resumption). Returns how many."""
    at = now()
    rows: list[dict[str, Any]] = []
    for message in written:
        if asks_later(message.type, message.props) is None:
            continue
        row = _row(message.id, message.type, message.props, sequence=message.sequence,
                   chat_id=chat_id, tenant_id=tenant_id, stream_id=stream_id,
                   request_id=request_id, assistant_id=assistant_id, at=at)
        if row is not None:
            rows.append(row)
    if rows:
        await conn.execute(interrupts.insert(), rows)
    return len(rows)


async def record_inline(db: Database, *, message_id: str, type: str, props: Any,
                        chat_id: str, tenant_id: str, stream_id: str,
                        request_id: str | None, assistant_id: str | None) -> bool:
    """While a stream is open: the interrupt of an inline asking message, once (a push
    retried after a lost answer finds it recorded). Its sequence, until the stream is
    written, is one past the chat's last message. Returns whether it was recorded now."""
    async with db.write() as conn:
        if await conn.scalar(select(interrupts.c.id).where(interrupts.c.id == message_id)):
            return False
        last = await conn.scalar(select(chats.c.last_sequence).where(chats.c.id == chat_id))
        row = _row(message_id, type, props, sequence=int(last or 0) + 1, chat_id=chat_id,
                   tenant_id=tenant_id, stream_id=stream_id, request_id=request_id,
                   assistant_id=assistant_id, at=now())
        if row is None:
            return False
        await conn.execute(interrupts.insert(), [row])
    return True


async def settle_inline(conn: AsyncConnection, stream_id: str,
                        written: Iterable[Message]) -> None:
    """Within a stream's persist: its inline interrupts take their messages' sequences;
    those still pending are cancelled (nobody waits for them any more)."""
    asked = {message.id: message.sequence for message in written
             if waits_inline(message.props) and asks(message.type, message.props)}
    for message_id, sequence in asked.items():
        await conn.execute(update(interrupts).where(
            interrupts.c.id == message_id, interrupts.c.stream_id == stream_id,
        ).values(sequence=sequence))
    if asked:
        await conn.execute(update(interrupts).where(
            interrupts.c.stream_id == stream_id, interrupts.c.state == "PENDING",
            interrupts.c.resumed_by == INLINE_MARK,
        ).values(state="CANCELLED", decided_at=now(), decided_by=None))


#: The attributes of an :class:`Interrupt` that are its row's columns as stored (the
#: one left out, its decision, is built from several).
STORED_ATTRIBUTES: tuple[str, ...] = tuple(
    field.name for field in fields(Interrupt) if field.name != "decision")


def interrupt_from_row(row: Any) -> Interrupt:
    decision = None
    if row.decided_at is not None:
        made = row.decision or {}
        decision = Decision(approved=made.get("approved"),
                            edited_arguments=made.get("editedArguments"),
                            response=made.get("response"), reason=made.get("reason"),
                            decided_by=row.decided_by or "", decided_at=row.decided_at)
    return Interrupt(**{name: getattr(row, name) for name in STORED_ATTRIBUTES},
                     decision=decision)


# ---- who decides -----------------------------------------------------------------------


def can_decide(who: Identity) -> ColumnElement[bool]:
    """Rows of ``chats`` on which the caller may decide interrupts (within those it
    may read): whoever may change the chat, or an ``approver``."""
    if "approver" in who.roles:
        return and_(access.can_read(who), true())
    return and_(access.can_read(who), access.can_write(who))


def _check_state(state: str | None) -> None:
    if state is not None and state not in INTERRUPT_STATES:
        raise InvalidArgument(f"state must be one of {', '.join(INTERRUPT_STATES)}")


# ---- reads ------------------------------------------------------------------------------


async def chat_interrupts(db: Database, who: Identity, chat_id: str,
                          state: str | None = None) -> list[Interrupt]:
    """The interrupts of a chat the caller may read, oldest first."""
    _check_state(state)
    query = (select(interrupts).join(chats, chats.c.id == interrupts.c.chat_id)
             .where(interrupts.c.chat_id == chat_id, access.can_read(who), present()))
    if state is not None:
        query = query.where(interrupts.c.state == state)
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(interrupts.c.sequence))).all()
    return [interrupt_from_row(row) for row in rows]


async def get_interrupt(db: Database, who: Identity, interrupt_id: str) -> Interrupt:
    """One interrupt of a chat the caller may read; NOT_FOUND otherwise."""
    async with db.read() as conn:
        row = (await conn.execute(
            select(interrupts).join(chats, chats.c.id == interrupts.c.chat_id)
            .where(interrupts.c.id == interrupt_id, access.can_read(who), present()))).first()
    if row is None:
        raise NotFound(f"interrupt {interrupt_id!r} not found")
    return interrupt_from_row(row)


@dataclass(frozen=True, slots=True)
class InterruptFilter:
    """Narrows the inbox; every field given must match."""

    state: str | None = "PENDING"
    kind: str | None = None
    assistant_id: str | None = None
    chat_id: str | None = None

    def check(self) -> None:
        _check_state(self.state)
        if self.kind is not None and self.kind not in INTERRUPT_KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(INTERRUPT_KINDS)}")
        if self.assistant_id is not None:
            check_length(self.assistant_id, "filter.assistantId", NAME_CHARS)


@dataclass(frozen=True, slots=True)
class InterruptPage:
    interrupts: list[Interrupt]
    has_next: bool


#: An inbox position: (requested at, id); the inbox runs newest first.
Position = MomentPosition


def cursor_scope(who: Identity, interrupt_filter: InterruptFilter) -> str:
    """What an inbox cursor is bound to: the caller and the filter."""
    return jsonutil.dumps(["interrupts", who.tenant_id, who.user_id, interrupt_filter.state,
                           interrupt_filter.kind, interrupt_filter.assistant_id,
                           interrupt_filter.chat_id])


def position_of(interrupt: Interrupt) -> list[str]:
    return [interrupt.requested_at.isoformat(), interrupt.id]


def position_from(value: Any) -> Position:
    """The position a signed cursor carried; INVALID_CURSOR when it is not one."""
    return moment_position_from(value)


def inbox_size(first: int | None) -> int:
    """The size of an inbox page asked with ``first``; INVALID_ARGUMENT out of range."""
    size = DEFAULT_INBOX_SIZE if first is None else first
    if not 1 <= size <= MAX_INBOX_SIZE:
        raise InvalidArgument(f"first must be between 1 and {MAX_INBOX_SIZE}")
    return size


def inbox_select(who: Identity, interrupt_filter: InterruptFilter, *, size: int,
                 after: Position | None = None, at: datetime | None = None,
                 columns: tuple[str, ...] | None = None) -> Select[Any]:
    """The query of an inbox page of ``size`` (a checked filter and size): the
    interrupts the caller may decide, newest first, after ``after``, one row past the
    page (it tells more follow). ``at``: the moment chats' expiry is judged at (now);
    ``columns``: the interrupt columns each row reads (all of them)."""

    chosen = list(interrupts.c) if columns is None else [interrupts.c[name] for name in columns]
    query = (select(*chosen).join(chats, chats.c.id == interrupts.c.chat_id)
             .where(interrupts.c.tenant_id == who.tenant_id, can_decide(who),
                    present(at=at)))
    if interrupt_filter.state is not None:
        query = query.where(interrupts.c.state == interrupt_filter.state)
    if interrupt_filter.kind is not None:
        query = query.where(interrupts.c.kind == interrupt_filter.kind)
    if interrupt_filter.assistant_id is not None:
        query = query.where(interrupts.c.assistant_id == interrupt_filter.assistant_id)
    if interrupt_filter.chat_id is not None:
        query = query.where(interrupts.c.chat_id == interrupt_filter.chat_id)
    if after is not None:
        moment, interrupt_id = after
        query = query.where(or_(interrupts.c.requested_at < moment,
                                and_(interrupts.c.requested_at == moment,
                                     interrupts.c.id < interrupt_id)))
    # The page size is written into the text: Postgres plans a prepared page knowing it.
    return query.order_by(interrupts.c.requested_at.desc(), interrupts.c.id.desc()).limit(
        fixed(size + 1))


async def inbox(db: Database, who: Identity, interrupt_filter: InterruptFilter, *,
                first: int | None = None, after: Position | None = None) -> InterruptPage:
    """The interrupts the caller may decide, across its chats, newest first."""
    interrupt_filter.check()
    size = inbox_size(first)
    query = inbox_select(who, interrupt_filter, size=size, after=after)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return InterruptPage([interrupt_from_row(row) for row in rows[:size]],
                         has_next=len(rows) > size)


# ---- deciding ---------------------------------------------------------------------------


def _validated(interrupt: Any, approved: bool | None, edited_arguments: Any,
               response: Any, reason: str | None) -> dict[str, Any]:
    """The decision as stored; INVALID_ARGUMENT when it does not fit the interrupt."""
    if reason is not None:
        check_length(reason, "reason", MAX_REASON_CHARS)
    if interrupt.kind == "TOOL_APPROVAL":
        if approved is None:
            raise InvalidArgument("a tool approval needs approved: true or false")
        if response is not None:
            raise InvalidArgument("a tool approval takes approved (and editedArguments), "
                                  "not response")
        if edited_arguments is not None and not approved:
            raise InvalidArgument("editedArguments only go with approved: true")
    else:
        if edited_arguments is not None:
            raise InvalidArgument("a question takes response, not editedArguments")
        if response is None and approved is not False:
            raise InvalidArgument("a question needs a response (or approved: false to "
                                  "decline it)")
        if response is not None and interrupt.response_schema is not None:
            _check_response(interrupt.response_schema, response)
    return {"approved": approved, "editedArguments": edited_arguments,
            "response": response, "reason": reason}


def _check_response(schema: Any, response: Any) -> None:
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return  # not a schema: any answer is accepted (see the module's rules)
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(response))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        raise InvalidArgument(
            f"response does not match the question's responseSchema"
            f"{' at ' + where if where else ''}: {error.message}")


@dataclass(frozen=True, slots=True)
class Resolved:
    interrupt: Interrupt
    #: False: the same decision again; nothing was written.
    changed: bool
    tenant_id: str


async def resolve(db: Database, who: Identity, interrupt_id: str, *,
                  approved: bool | None = None, edited_arguments: Any = None,
                  response: Any = None, reason: str | None = None,
                  decision_id: str | None = None) -> Resolved:
    """Decide an interrupt once (see the module's rules)."""
    if decision_id is not None:
        check_length(decision_id, "decisionId", 128)
    async with db.write() as conn:
        row = (await conn.execute(
            select(interrupts, can_decide(who).label("allowed"), chats.c.tenant_id.label(
                "chat_tenant"))
            .join(chats, chats.c.id == interrupts.c.chat_id)
            .where(interrupts.c.id == interrupt_id, access.can_read(who), present())
            .with_for_update(of=interrupts))).first()
        if row is None:
            raise NotFound(f"interrupt {interrupt_id!r} not found")
        if not row.allowed:
            raise Forbidden("you may read this chat but not decide its interrupts "
                            "(the approver role may)")
        decision = _validated(row, approved, edited_arguments, response, reason)
        if row.state == "RESOLVED":
            same = (decision_id is not None and decision_id == row.decision_id) or (
                jsonutil.canonical_digest(decision)
                == jsonutil.canonical_digest(row.decision or {}))
            if same:
                return Resolved(interrupt_from_row(row), changed=False,
                                tenant_id=row.chat_tenant)
            raise Conflict(f"interrupt {interrupt_id!r} was already decided differently")
        if row.state == "CANCELLED":
            raise Conflict(f"interrupt {interrupt_id!r} was cancelled: the stream was stopped")
        at = now()
        if row.state == "EXPIRED" or (row.expires_at is not None and row.expires_at <= at):
            raise Expired(f"interrupt {interrupt_id!r} expired at "
                          f"{row.expires_at.isoformat() if row.expires_at else 'its deadline'}")
        await conn.execute(update(interrupts).where(interrupts.c.id == interrupt_id).values(
            state="RESOLVED", decision=decision, decided_by=who.user_id, decided_at=at,
            decision_id=decision_id))
        stored = (await conn.execute(
            select(interrupts).where(interrupts.c.id == interrupt_id))).one()
    return Resolved(interrupt_from_row(stored), changed=True, tenant_id=row.chat_tenant)


async def cancel_pending(conn: AsyncConnection, chat_id: str) -> int:
    """Within a stop's transaction: cancel the chat's pending interrupts."""
    result = await conn.execute(update(interrupts).where(
        interrupts.c.chat_id == chat_id, interrupts.c.state == "PENDING",
    ).values(state="CANCELLED", decided_at=now(), decided_by=None))
    return int(result.rowcount or 0)


async def expire_due(db: Database, at: datetime | None = None) -> list[tuple[str, str, str]]:
    """Mark every pending interrupt past its ``expiresAt`` EXPIRED; returns the
    (interrupt, chat, tenant) of each, for the chat events."""
    moment = now() if at is None else at
    async with db.write() as conn:
        due = (await conn.execute(
            select(interrupts.c.id, interrupts.c.chat_id, interrupts.c.tenant_id).where(
                interrupts.c.state == "PENDING", interrupts.c.expires_at.is_not(None),
                interrupts.c.expires_at <= moment))).all()
        if due:
            await conn.execute(update(interrupts).where(
                interrupts.c.id.in_([row.id for row in due]),
                interrupts.c.state == "PENDING",
            ).values(state="EXPIRED", decided_at=moment))
    return [(row.id, row.chat_id, row.tenant_id) for row in due]


# ---- in the model's window --------------------------------------------------------------


async def decided_for(conn: AsyncConnection, message_ids: list[str]) -> dict[str, Interrupt]:
    """The decided (resolved or expired) interrupts the messages ``message_ids`` asked,
    by message id."""
    if not message_ids:
        return {}
    rows = (await conn.execute(select(interrupts).where(
        interrupts.c.id.in_(message_ids), interrupts.c.state.in_(_DECIDED)))).all()
    return {row.message_id: interrupt_from_row(row) for row in rows}


def _denial_reason(interrupt: Interrupt) -> str:
    if interrupt.state == "EXPIRED":
        return "expired"
    reason = interrupt.decision.reason if interrupt.decision is not None else None
    return reason or "denied"


def _approved(interrupt: Interrupt) -> bool:
    return (interrupt.state == "RESOLVED" and interrupt.decision is not None
            and interrupt.decision.approved is not False)


def in_model_window(message: Message, interrupt: Interrupt,
                    answered: set[str | None]) -> list[Message]:
    """What a decision adds after the message that asked, for the model: a denied or
    expired tool call's ``tool_result`` (unless ``answered`` holds the call: the agent
    wrote a result), an answered question's ``USER`` message."""
    at = interrupt.decision.decided_at if interrupt.decision is not None else message.updated_at
    props: dict[str, Any]
    if interrupt.kind == "TOOL_APPROVAL":
        if _approved(interrupt) or interrupt.tool_call_id in answered:
            return []
        role, type = "TOOL", "tool_result"
        props = {"tool_call_id": interrupt.tool_call_id, "denied": True,
                 "reason": _denial_reason(interrupt)}
    else:
        role, type = "USER", "text"
        response = interrupt.decision.response if interrupt.decision is not None else None
        if _approved(interrupt) and response is not None:
            props = {"content": response if isinstance(response, str)
                     else jsonutil.dumps(response)}
        else:
            props = {"declined": True, "reason": _denial_reason(interrupt)}
    return [Message(id=f"{message.id}.decision", chat_id=message.chat_id,
                    sequence=message.sequence, request_id=message.request_id, role=role,
                    type=type, props=props, block_id=message.block_id,
                    thread_id=message.thread_id, assistant_id=message.assistant_id,
                    status="COMPLETED", metadata=None, created_at=at, updated_at=at)]


def as_decided(message: Message, interrupt: Interrupt) -> Message:
    """The message that asked, as the model sees it: an approved call with the
    arguments the person approved."""
    edited = interrupt.decision.edited_arguments if interrupt.decision is not None else None
    if interrupt.kind != "TOOL_APPROVAL" or not _approved(interrupt) or edited is None:
        return message
    original = message.props.get("arguments")
    arguments = jsonutil.dumps(edited) if isinstance(original, str) else edited
    return replace(message, props={**message.props, "arguments": arguments}, tokens=None,
                   tokens_estimated=False)


# ---- resuming ---------------------------------------------------------------------------


def resume_request_id(request_id: str | None) -> str:
    """The request id a worker claims to resume after the interrupts of a stream whose
    request id was ``request_id``: ``<question's request id>.resume.<N>``, N counting
    the resumptions of that question from 1."""
    base = request_id or ""
    match = _RESUME.match(base)
    if match is None:
        return f"{base}.resume.1"
    return f"{match['base']}.resume.{int(match['n']) + 1}"


def _asked_by(resume_id: str) -> str | None:
    """The request id of the stream whose decisions ``resume_id`` resumes, or None
    when it is not a resumption's."""
    match = _RESUME.match(resume_id)
    if match is None:
        return None
    n = int(match["n"])
    return match["base"] if n == 1 else f"{match['base']}.resume.{n - 1}"


def _unresumed() -> ColumnElement[bool]:
    """Decided interrupts no worker resumed yet, of a stream with none pending."""
    other = interrupts.alias("other")
    return and_(
        interrupts.c.state.in_(_DECIDED), interrupts.c.resumed_by.is_(None),
        ~exists().where(other.c.stream_id == interrupts.c.stream_id,
                        other.c.state == "PENDING"),
    )


def awaiting_decision_clause() -> ColumnElement[bool]:
    """Chats with an interrupt waiting for a person's decision."""
    return exists().where(interrupts.c.chat_id == chats.c.id, interrupts.c.state == "PENDING")


def awaiting_resumption_clause() -> ColumnElement[bool]:
    """Chats whose decisions await a worker (see the module's rules)."""
    return exists().where(interrupts.c.chat_id == chats.c.id, _unresumed())


async def to_resume(db: Database, who: Identity, chat_id: str) -> list[Interrupt]:
    """The decisions of the chat that a worker has yet to resume, oldest first."""
    async with db.read() as conn:
        rows = (await conn.execute(
            select(interrupts).join(chats, chats.c.id == interrupts.c.chat_id)
            .where(interrupts.c.chat_id == chat_id, access.can_read(who), present(),
                   _unresumed())
            .order_by(interrupts.c.sequence))).all()
    return [interrupt_from_row(row) for row in rows]


async def claim_resumption(conn: AsyncConnection, chat_id: str, request_id: str | None) -> int:
    """Within a stream claim's transaction: a stream whose request id names a
    resumption marks the decisions it resumes. Returns how many."""
    if request_id is None:
        return 0
    asked_by = _asked_by(request_id)
    if asked_by is None:
        return 0
    result = await conn.execute(update(interrupts).where(
        interrupts.c.chat_id == chat_id, interrupts.c.request_id == asked_by,
        interrupts.c.state.in_(_DECIDED), interrupts.c.resumed_by.is_(None),
    ).values(resumed_by=request_id))
    return int(result.rowcount or 0)


@dataclass(frozen=True, slots=True)
class InboxPageShape:
    """What decides the text of an inbox-page statement (not the values bound to it)."""

    dialect: str
    #: The caller's roles: who may decide depends on them (:func:`can_decide`).
    roles: frozenset[str]
    team: bool
    after: bool
    #: A checked filter; its values are written into the statement.
    interrupt_filter: InterruptFilter
    #: The interrupt columns each row returns (:data:`INTERRUPT_COLUMNS` order).
    columns: tuple[str, ...]
    #: The page's size (its statement reads one row more).
    size: int

    @classmethod
    def of(cls, db: Database, who: Identity, *,
           interrupt_filter: InterruptFilter, after: bool,
           columns: tuple[str, ...], size: int) -> InboxPageShape:
        return cls(db.dialect, who.roles, bool(who.team_id), after, interrupt_filter,
                   columns, size)


#: The interrupt columns a prepared inbox page may return, in this order.
INTERRUPT_COLUMNS = STORED_ATTRIBUTES


def inbox_page_statement(db: Database, shape: InboxPageShape) -> PreparedStatement:
    """The statement :func:`store.messages.interrupts.inbox` runs (its own query,
    :func:`~store.messages.interrupts.inbox_select`, compiled for the driver).

    Named slots: ``user``, ``tenant``, ``team``, ``now``, and after a cursor
    ``after_value`` and ``after_id`` (see :func:`chat_after`). Rows: the shape's columns,
    newest first, at most one more than the page.
    """
    statement = db.statements.get(("inbox_page_statement", shape))
    if statement is None:
        who = marked_identity(False, shape.team, shape.roles)
        query = inbox_select(
            who, shape.interrupt_filter, size=shape.size,
            after=(MARK_AFTER_VALUE, MARK_AFTER_ID) if shape.after else None, at=MARK_NOW,
            columns=shape.columns)
        statement = db.statements[("inbox_page_statement", shape)] = compile_prepared(
            query, shape.dialect)
    return statement


def interrupt_attribute(name: str) -> Attribute | None:
    """How a prepared inbox row gives the :class:`store.records.Interrupt` attribute
    ``name`` (as :func:`store.messages.interrupts.interrupt_from_row` would); None
    when it is not one stored as a column."""
    return attribute(name) if name in INTERRUPT_COLUMNS else None
