"""What keeps a long conversation usable for the model: boundaries and its context (SPEC §7).

A *boundary* is an ordinary message (``role: SYSTEM``, ``type: boundary``) in the chat:
people keep seeing everything before it, the model is handed nothing before it.
``start_over`` draws one; ``compact_chat`` draws one that carries a summary standing
in for what came before (``props.summary``).

``model_context`` is what an agent sends its model, built with these decisions:

- ``limit`` counts messages (the store knows no tokenizer; a caller with a token
  budget asks for a message count it can afford and trims further itself). The
  summary, when there is one, counts toward it.
- The summary comes first as a ``SYSTEM`` message of type ``text`` whose
  ``props.content`` is the summary; it keeps the boundary's id, sequence and times so
  it can be traced back.
- A turn is a ``USER`` message and everything after it up to the next ``USER``
  message. Messages after the boundary but before its first ``USER`` message (an
  assistant's greeting, say) form one more, oldest, unit, kept whole or not at all.
- ``loading``, ``action`` and ``error`` messages and every ``FAILED`` message are left
  out before turns are counted: they neither reach the model nor use up the limit.
- The newest turn that does not fit on its own is ``WINDOW_TOO_SMALL``; older turns
  that do not fit are simply left out.

The chat is read backwards from its end in keyset pages and reading stops as soon as
the limit is reached, so a million-message chat costs what its last turns cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from store.chats import fetch_visible_chat
from store.database import Database
from store.errors import InvalidArgument, NotFound, WindowTooSmall
from store.ids import check_chat_id
from store.memory import memory_message
from store.messages import (
    NewMessage,
    insert_messages,
    lock_chat_for_append,
    message_from_row,
)
from store.records import Identity, Message
from store.tables import messages

__all__ = [
    "BOUNDARY_TYPE",
    "MAX_SUMMARY_CHARS",
    "MODEL_HIDDEN_TYPES",
    "compact_chat",
    "model_context",
    "start_over",
]

BOUNDARY_TYPE = "boundary"
#: UI-only message types that never reach the model.
MODEL_HIDDEN_TYPES = ("loading", "action", "error")
MAX_SUMMARY_CHARS = 1_000_000
#: Rows read per backward step; at least the limit, so most contexts take one step.
_MIN_PAGE = 64
_MAX_PAGE = 1_000


async def start_over(db: Database, who: Identity, chat_id: str) -> Message:
    """Append a boundary, or return the newest message when it already is one.

    The check and the append happen under the chat's append lock, so two presses
    racing each other still leave one boundary.
    """
    check_chat_id(chat_id)
    async with db.write() as conn:
        last_sequence = await lock_chat_for_append(conn, who, chat_id)
        newest = (
            await conn.execute(
                select(messages)
                .where(messages.c.chat_id == chat_id)
                .order_by(messages.c.sequence.desc())
                .limit(1)
            )
        ).first()
        if newest is not None and newest.type == BOUNDARY_TYPE:
            return message_from_row(newest)
        return await _append_boundary(conn, chat_id, last_sequence, {})


async def compact_chat(db: Database, who: Identity, chat_id: str, summary: str) -> Message:
    """Append a boundary carrying ``summary``, which stands in for everything before it."""
    check_chat_id(chat_id)
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidArgument("summary must not be empty")
    if len(summary) > MAX_SUMMARY_CHARS:
        raise InvalidArgument(f"summary must be at most {MAX_SUMMARY_CHARS} characters")
    async with db.write() as conn:
        last_sequence = await lock_chat_for_append(conn, who, chat_id)
        return await _append_boundary(conn, chat_id, last_sequence, {"summary": summary})


async def _append_boundary(
    conn: AsyncConnection, chat_id: str, last_sequence: int, props: dict[str, Any]
) -> Message:
    [boundary] = await insert_messages(
        conn,
        chat_id,
        [NewMessage(role="SYSTEM", type=BOUNDARY_TYPE, props=props)],
        last_sequence=last_sequence,
    )
    return boundary


async def model_context(
    db: Database, who: Identity, chat_id: str, limit: int,
    memory_scopes: Sequence[str] | None = None,
) -> list[Message]:
    """The messages an agent should send its model, oldest first (see module doc).

    With ``memory_scopes`` the context opens with the chat creator's recent memory
    (``store.memory.memory_message``), which counts as one message toward ``limit``.
    """
    check_chat_id(chat_id)
    if limit <= 0:
        raise InvalidArgument("limit must be a positive number of messages")
    async with db.read() as conn:
        chat = await fetch_visible_chat(conn, who, chat_id)
        if chat is None:
            raise NotFound(f"chat {chat_id!r} not found")
        memory = None if memory_scopes is None else await memory_message(
            conn, who, chat, memory_scopes)
        # The (chat_id, type, sequence) index finds the newest boundary directly.
        row = (
            await conn.execute(
                select(messages)
                .where(messages.c.chat_id == chat_id, messages.c.type == BOUNDARY_TYPE)
                .order_by(messages.c.sequence.desc())
                .limit(1)
            )
        ).first()
        boundary = None if row is None else message_from_row(row)
        summary = _summary_message(boundary)
        budget = limit - (1 if summary is not None else 0) - (1 if memory is not None else 0)
        if budget < 0:
            raise WindowTooSmall("the memory message and the summary need a limit of 2")
        turns = await _newest_turns(
            conn, chat_id, after=0 if boundary is None else boundary.sequence, budget=budget
        )
    context = [message for turn in reversed(turns) for message in turn]
    opening = [message for message in (memory, summary) if message is not None]
    return [*opening, *context]


def _summary_message(boundary: Message | None) -> Message | None:
    if boundary is None:
        return None
    summary = boundary.props.get("summary")
    if not isinstance(summary, str) or not summary:
        return None
    return replace(boundary, role="SYSTEM", type="text", props={"content": summary})


async def _newest_turns(
    conn: AsyncConnection, chat_id: str, *, after: int, budget: int
) -> list[list[Message]]:
    """Whole turns after sequence ``after``, newest turn first, within ``budget``."""
    turns: list[list[Message]] = []
    used = 0
    pending: list[Message] = []  # the turn being gathered, newest message first
    page = min(max(budget + 1, _MIN_PAGE), _MAX_PAGE)
    before: int | None = None
    while True:
        query = (
            select(messages)
            .where(
                messages.c.chat_id == chat_id,
                messages.c.sequence > after,
                # A boundary drawn since the one found above is not for the model either.
                messages.c.type.not_in((*MODEL_HIDDEN_TYPES, BOUNDARY_TYPE)),
                messages.c.status != "FAILED",
            )
            .order_by(messages.c.sequence.desc())
            .limit(page)
        )
        if before is not None:
            query = query.where(messages.c.sequence < before)
        rows = (await conn.execute(query)).all()
        for row in rows:
            message = message_from_row(row)
            pending.append(message)
            if message.role != "USER":
                if used + len(pending) > budget:
                    # Even if this turn ends further back, it can no longer fit.
                    return _finish(turns)
                continue
            if used + len(pending) > budget:
                return _finish(turns)
            turns.append(list(reversed(pending)))
            used += len(pending)
            pending = []
        if len(rows) < page:
            break
        before = rows[-1].sequence
    if pending:
        # Messages after the boundary that no USER message leads: one oldest unit.
        if used + len(pending) > budget:
            return _finish(turns)
        turns.append(list(reversed(pending)))
    return turns


def _finish(turns: list[list[Message]]) -> list[list[Message]]:
    if not turns:
        raise WindowTooSmall(
            "the newest turn alone has more messages than the limit; raise the limit"
        )
    return turns
