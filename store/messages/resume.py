"""Resume records: the execution steps of a stream that ended interrupted or failed.

They are written by the stream persist (one transaction with the stream's messages,
see :mod:`store.streams.service`); ``update_resume`` changes one record's status or
output afterwards (a runtime that resumed the run marks the step done). They are read
back here so an agent can pick up where it stopped: ``resume_records`` (a chat's
steps, oldest first), ``last_resume`` (the newest), ``resume_by_stack`` (one stack's
steps) and ``stack_path`` (the stack ids
from the root of an A2A delegation down to a nested stack). Every query applies the
chat read rule; records of a chat the caller may not read do not exist for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.access import present
from chatql.store.chats.chat import fetch_visible_chat
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.db.tables import resume_records as resume_table
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import check_chat_id, new_id
from chatql.store.limits import NAME_CHARS, check_length, check_optional_name
from chatql.store.records import Identity, ResumeRecord

__all__ = [
    "STEP_STATUSES",
    "STEP_TYPES",
    "StepIn",
    "delete_resume",
    "insert_resume",
    "last_resume",
    "resume_by_stack",
    "resume_from_row",
    "resume_records",
    "stack_path",
    "update_resume",
]

STEP_TYPES = ("input", "hook_create", "llm", "tool", "hook_next", "delegate")
STEP_STATUSES = ("running", "completed", "interrupted", "failed")
# A delegation chain deeper than this is a cycle or a bug, not a real call stack.
_MAX_STACK_DEPTH = 256


@dataclass(frozen=True, slots=True)
class StepIn:
    """An execution step as the producer records it (``StepInput``)."""

    id: str
    type: str
    status: str = "running"
    assistant_id: str | None = None
    stack_id: str | None = None
    stack_parent_id: str | None = None
    stack_depth: int = 0
    input: Any = None
    output: Any = None
    space_snapshot: Any = None
    error: str | None = None

    def check(self) -> None:
        check_length(self.id, "step id", NAME_CHARS)
        if self.type not in STEP_TYPES:
            raise InvalidArgument(f"step type must be one of {', '.join(STEP_TYPES)}")
        if self.status not in STEP_STATUSES:
            raise InvalidArgument(f"step status must be one of {', '.join(STEP_STATUSES)}")
        if not 0 <= self.stack_depth < 2**31:
            raise InvalidArgument("stackDepth must be a non-negative number")
        for name in ("assistant_id", "stack_id", "stack_parent_id"):
            check_optional_name(getattr(self, name), name)
        if self.space_snapshot is not None and not isinstance(self.space_snapshot, dict):
            raise InvalidArgument("spaceSnapshot must be a JSON object")


def resume_from_row(row: Row[Any]) -> ResumeRecord:
    m = row._mapping
    return ResumeRecord(**{name: m[name] for name in ResumeRecord.__dataclass_fields__})


async def insert_resume(
    conn: AsyncConnection,
    chat_id: str,
    steps: Sequence[StepIn],
    *,
    request_id: str | None,
    assistant_id: str | None,
) -> list[ResumeRecord]:
    """Write ``steps`` as resume records (inside the caller's transaction)."""
    if not steps:
        return []
    stamp = now()
    rows = [
        {
            "id": new_id(),
            "chat_id": chat_id,
            "request_id": request_id,
            "assistant_id": step.assistant_id or assistant_id,
            "stack_id": step.stack_id,
            "stack_parent_id": step.stack_parent_id,
            "stack_depth": step.stack_depth,
            "type": step.type,
            "status": step.status,
            "input": step.input,
            "output": step.output,
            "space_snapshot": step.space_snapshot,
            "error": step.error,
            "sequence": sequence,
            "metadata": None,
            "created_at": stamp,
            "updated_at": stamp,
        }
        for sequence, step in enumerate(steps, start=1)
    ]
    await conn.execute(insert(resume_table), rows)
    return [ResumeRecord(**row) for row in rows]


def _visible() -> Any:
    return select(resume_table).join(chats, chats.c.id == resume_table.c.chat_id)


_ORDER = (resume_table.c.created_at, resume_table.c.sequence, resume_table.c.id)


async def _require_chat(conn: AsyncConnection, who: Identity, chat_id: str) -> None:
    check_chat_id(chat_id)
    if await fetch_visible_chat(conn, who, chat_id) is None:
        raise NotFound(f"chat {chat_id!r} not found")


async def resume_records(db: Database, who: Identity, chat_id: str) -> list[ResumeRecord]:
    """A chat's resume records, oldest first (by write, then step order)."""
    async with db.read() as conn:
        await _require_chat(conn, who, chat_id)
        rows = (
            await conn.execute(
                _visible().where(resume_table.c.chat_id == chat_id).order_by(*_ORDER)
            )
        ).all()
    return [resume_from_row(row) for row in rows]


async def last_resume(db: Database, who: Identity, chat_id: str) -> ResumeRecord | None:
    """The chat's newest resume record: the step to resume from."""
    async with db.read() as conn:
        await _require_chat(conn, who, chat_id)
        row = (
            await conn.execute(
                _visible()
                .where(resume_table.c.chat_id == chat_id)
                .order_by(*(column.desc() for column in _ORDER))
                .limit(1)
            )
        ).first()
    return None if row is None else resume_from_row(row)


def _readable_stack(who: Identity, stack_id: str) -> Any:
    return _visible().where(
        resume_table.c.stack_id == stack_id,
        present(),
        access.can_read(who),
    )


async def resume_by_stack(db: Database, who: Identity, stack_id: str) -> list[ResumeRecord]:
    """The records of one stack (one agent's run within a delegation), oldest first."""
    async with db.read() as conn:
        rows = (await conn.execute(_readable_stack(who, stack_id).order_by(*_ORDER))).all()
    return [resume_from_row(row) for row in rows]


async def stack_path(db: Database, who: Identity, stack_id: str) -> list[str]:
    """Stack ids from the root of the delegation down to ``stack_id``.

    Empty when no visible record has that stack id. Parents are followed through the
    records' ``stackParentId``; a parent with no records of its own still appears.
    """
    path: list[str] = []
    current: str | None = stack_id
    async with db.read() as conn:
        while current is not None and current not in path and len(path) < _MAX_STACK_DEPTH:
            row = (
                await conn.execute(
                    _readable_stack(who, current)
                    .with_only_columns(resume_table.c.stack_parent_id)
                    .order_by(resume_table.c.stack_parent_id.is_(None), *_ORDER)
                    .limit(1)
                )
            ).first()
            if row is None:
                if not path:
                    return []
                path.append(current)
                break
            path.append(current)
            current = row.stack_parent_id
    path.reverse()
    return path


async def delete_resume(db: Database, who: Identity, chat_id: str) -> int:
    """Remove a chat's resume records (after a successful resume); returns how many."""
    check_chat_id(chat_id)
    async with db.write() as conn:
        await access.require(conn, who, chat_id, "append")
        result = await conn.execute(
            delete(resume_table).where(resume_table.c.chat_id == chat_id)
        )
    return int(result.rowcount or 0)


async def update_resume(db: Database, who: Identity, record_id: str, *,
                        status: str | None = None, output: Any = None) -> ResumeRecord:
    """Set a record's ``status`` and/or ``output`` (None: left as it is); its
    ``updated_at`` moves to now.

    Needs the right to append to the record's chat (what writing the record took); a
    record of a chat the caller may not read is NOT_FOUND, as if it did not exist.
    """
    check_length(record_id, "id", NAME_CHARS)
    if status is None and output is None:
        raise InvalidArgument("give at least one of status or output")
    if status is not None and status not in STEP_STATUSES:
        raise InvalidArgument(f"status must be one of {', '.join(STEP_STATUSES)}")
    changes: dict[str, Any] = {"updated_at": now()}
    if status is not None:
        changes["status"] = status
    if output is not None:
        changes["output"] = output
    async with db.write() as conn:
        chat_id = await conn.scalar(
            select(resume_table.c.chat_id).where(resume_table.c.id == record_id))
        if chat_id is None:
            raise NotFound(f"resume record {record_id!r} not found")
        try:
            await access.require(conn, who, chat_id, "append")
        except NotFound:
            raise NotFound(f"resume record {record_id!r} not found") from None
        row = (await conn.execute(
            update(resume_table).where(resume_table.c.id == record_id,
                                       resume_table.c.chat_id == chat_id)
            .values(**changes).returning(resume_table)
        )).one()
    return resume_from_row(row)
