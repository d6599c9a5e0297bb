"""Token usage: what each model request cost, per chat and as a report.

A producer reports a request's usage with ``endStream(usage:)``; it is written as one
``usage_records`` row in the same transaction as the stream's messages, keyed by the
stream id, so a retried ``endStream`` (or a retried persist) never counts it twice. A
producer whose stream was stopped (or timed out) before it could end it may still
report usage with a later ``endStream``: that row is written on its own, once.

Decisions:

- A usage row is credited to the stream's ``assistantId``, or to the chat's when the
  stream named none.
- The report covers the chats the caller may read and that are not deleted; a purged
  chat's usage goes with it.
- ``Chat.usage.messageTokens`` sums the ``tokens`` of the chat's stored messages
  (messages without a count add nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages, usage_records
from chatql.store.errors import InvalidArgument
from chatql.store.limits import NAME_CHARS, check_length, check_tokens
from chatql.store.records import Identity, UsageRow, UsageTotals

__all__ = [
    "USAGE_GROUPS",
    "UsageIn",
    "chat_usage",
    "record_usage",
    "usage_report",
]

USAGE_GROUPS = ("DAY", "ASSISTANT", "USER")


@dataclass(frozen=True, slots=True)
class UsageIn:
    """One model request's usage as a producer reports it (``UsageInput``)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None

    def check(self) -> None:
        check_tokens(self.prompt_tokens, "usage.promptTokens")
        check_tokens(self.completion_tokens, "usage.completionTokens")
        if self.model is not None:
            check_length(self.model, "usage.model", NAME_CHARS)


async def record_usage(
    conn: AsyncConnection,
    *,
    chat_id: str,
    stream_id: str,
    request_id: str | None,
    assistant_id: str | None,
    usage: UsageIn,
) -> None:
    """Write the stream's usage row unless it is there already (in the caller's
    transaction)."""
    if assistant_id is None:
        assistant_id = await conn.scalar(
            select(chats.c.assistant_id).where(chats.c.id == chat_id))
    values = {
        "chat_id": chat_id, "stream_id": stream_id, "request_id": request_id,
        "assistant_id": assistant_id, "model": usage.model,
        "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
        "created_at": now(),
    }
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    await conn.execute(
        dialect.insert(usage_records).values(values).on_conflict_do_nothing(
            index_elements=["chat_id", "stream_id"])
    )


async def chat_usage(db: Database, chat_ids: Sequence[str]) -> dict[str, UsageTotals]:
    """Recorded usage and message token sums of chats the caller has already seen."""
    ids = list(dict.fromkeys(chat_ids))
    totals = {chat_id: [0, 0, 0] for chat_id in ids}
    if not ids:
        return {}
    async with db.read() as conn:
        recorded = await conn.execute(
            select(usage_records.c.chat_id, func.sum(usage_records.c.prompt_tokens),
                   func.sum(usage_records.c.completion_tokens))
            .where(usage_records.c.chat_id.in_(ids))
            .group_by(usage_records.c.chat_id)
        )
        for chat_id, prompt, completion in recorded:
            totals[chat_id][0], totals[chat_id][1] = int(prompt or 0), int(completion or 0)
        counted = await conn.execute(
            select(messages.c.chat_id, func.sum(messages.c.tokens))
            .where(messages.c.chat_id.in_(ids), messages.c.tokens.is_not(None))
            .group_by(messages.c.chat_id)
        )
        for chat_id, tokens in counted:
            totals[chat_id][2] = int(tokens or 0)
    return {chat_id: UsageTotals(*values) for chat_id, values in totals.items()}


def _group_key(group_by: str, dialect: str) -> ColumnElement[str]:
    if group_by == "ASSISTANT":
        return usage_records.c.assistant_id
    if group_by == "USER":
        return func.coalesce(chats.c.created_by, literal(""))
    if dialect == "postgresql":
        return func.to_char(func.timezone("UTC", usage_records.c.created_at), "YYYY-MM-DD")
    # SQLite keeps UTC times as text; date() reads their date part.
    return func.date(usage_records.c.created_at)


async def usage_report(
    db: Database,
    who: Identity,
    *,
    start_time: datetime,
    end_time: datetime,
    assistant_id: str | None = None,
    group_by: str = "DAY",
) -> list[UsageRow]:
    """Usage recorded in [start_time, end_time) over the chats ``who`` may read,
    grouped by UTC day, assistant or chat creator; rows ordered by key."""
    if group_by not in USAGE_GROUPS:
        raise InvalidArgument(f"groupBy must be one of {', '.join(USAGE_GROUPS)}")
    for name, value in (("startTime", start_time), ("endTime", end_time)):
        if value.tzinfo is None:
            raise InvalidArgument(f"{name} needs a UTC offset")
    if end_time <= start_time:
        raise InvalidArgument("endTime must be after startTime")
    key = _group_key(group_by, db.dialect).label("key")
    query = (
        select(key, func.sum(usage_records.c.prompt_tokens),
               func.sum(usage_records.c.completion_tokens), func.count())
        .select_from(usage_records.join(chats, chats.c.id == usage_records.c.chat_id))
        .where(
            usage_records.c.created_at >= start_time,
            usage_records.c.created_at < end_time,
            chats.c.deleted_at.is_(None),
            access.can_read(who),
        )
        .group_by(key)
        .order_by(key)
    )
    if assistant_id is not None:
        query = query.where(usage_records.c.assistant_id == assistant_id)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [
        UsageRow(key=str(row[0]), prompt_tokens=int(row[1] or 0),
                 completion_tokens=int(row[2] or 0), requests=int(row[3]))
        for row in rows
    ]
