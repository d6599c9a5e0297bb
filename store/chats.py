"""Chats: create, read, update, soft delete, restore and purge (SPEC §4, §7)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, delete, exists, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from store import access
from store.database import Database
from store.errors import Conflict, Forbidden, InvalidArgument
from store.ids import check_chat_id, new_id
from store.records import Chat, Identity
from store.tables import (
    append_receipts,
    chats,
    closed_chats,
    messages,
    resume_records,
    usage_records,
)

__all__ = [
    "CHAT_SHARES",
    "CHAT_STATUSES",
    "DEFAULT_CHANNEL",
    "chat_for",
    "chat_from_row",
    "check_channel",
    "create_chat",
    "delete_chat",
    "get_chat",
    "purge_chat",
    "restore_chat",
    "update_chat",
]

CHAT_STATUSES = ("ACTIVE", "ARCHIVED")
CHAT_SHARES = ("PRIVATE", "TEAM")
_UPDATABLE = ("title", "status", "share", "public", "sort", "metadata")
_MAX_TITLE = 1_000
_MAX_NAME = 200
_MAX_CHANNEL = 64
DEFAULT_CHANNEL = "api"


def now() -> datetime:
    return datetime.now(UTC)


def chat_from_row(row: Row[Any]) -> Chat:
    m = row._mapping
    return Chat(
        id=m["id"],
        title=m["title"],
        assistant_id=m["assistant_id"],
        mode=m["mode"],
        status=m["status"],
        public=bool(m["public"]),
        share=m["share"],
        sort=m["sort"],
        last_message_at=m["last_message_at"],
        metadata=m["metadata"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        created_by=m["created_by"],
        updated_by=m["updated_by"],
        team_id=m["team_id"],
        tenant_id=m["tenant_id"],
        deleted_at=m["deleted_at"],
        activity_at=m["activity_at"],
        channel=m["channel"],
    )


def _check_fields(values: Mapping[str, Any]) -> None:
    title = values.get("title")
    if title is not None and len(title) > _MAX_TITLE:
        raise InvalidArgument(f"title must be at most {_MAX_TITLE} characters")
    if "status" in values and values["status"] not in CHAT_STATUSES:
        raise InvalidArgument(f"status must be one of {', '.join(CHAT_STATUSES)}")
    if "share" in values and values["share"] not in CHAT_SHARES:
        raise InvalidArgument(f"share must be one of {', '.join(CHAT_SHARES)}")
    if values.get("metadata") is not None and not isinstance(values["metadata"], dict):
        raise InvalidArgument("metadata must be a JSON object")
    sort = values.get("sort")
    if sort is not None and not -(2**31) <= sort < 2**31:
        raise InvalidArgument("sort must fit in a 32-bit integer")
    for key in ("public", "sort", "status", "share"):
        if key in values and values[key] is None:
            raise InvalidArgument(f"{key} cannot be null")


async def create_chat(
    db: Database,
    who: Identity,
    *,
    assistant_id: str,
    id: str | None = None,
    title: str | None = None,
    mode: str = "chat",
    share: str = "PRIVATE",
    public: bool = False,
    sort: int = 0,
    metadata: dict[str, Any] | None = None,
    channel: str = DEFAULT_CHANNEL,
) -> Chat:
    """Create a chat owned by ``who``; ``id`` is generated when not given."""
    chat_id = new_id() if id is None else check_chat_id(id)
    if not assistant_id or len(assistant_id) > _MAX_NAME:
        raise InvalidArgument(f"assistantId must be 1-{_MAX_NAME} characters")
    check_channel(channel)
    if not mode or len(mode) > 32:
        raise InvalidArgument("mode must be 1-32 characters")
    fields = {"title": title, "share": share, "public": public, "sort": sort,
              "metadata": metadata}
    _check_fields(fields)
    stamp = now()
    values = {
        "id": chat_id,
        "assistant_id": assistant_id,
        "mode": mode,
        "channel": channel,
        "status": "ACTIVE",
        **fields,
        "activity_at": stamp,
        "created_at": stamp,
        "updated_at": stamp,
        "created_by": who.user_id,
        "updated_by": who.user_id,
        "team_id": who.team_id,
        "tenant_id": who.tenant_id,
    }
    try:
        async with db.write() as conn:
            closed_in = await conn.scalar(
                select(closed_chats.c.tenant_id).where(closed_chats.c.id == chat_id)
            )
            if closed_in == who.tenant_id:
                raise Conflict(f"chat id {chat_id!r} was purged and can never be used again")
            if closed_in is not None:
                # Chat ids are global; another tenant's purge must not show through, so
                # it reads like any other taken id.
                raise Conflict(f"chat id {chat_id!r} is already taken")
            row = (await conn.execute(insert(chats).values(values).returning(chats))).one()
    except IntegrityError:
        raise Conflict(f"chat id {chat_id!r} is already taken") from None
    return chat_from_row(row)


def check_channel(channel: str) -> str:
    if not isinstance(channel, str) or not 1 <= len(channel) <= _MAX_CHANNEL:
        raise InvalidArgument(f"channel must be 1-{_MAX_CHANNEL} characters")
    return channel


async def chat_for(
    db: Database, who: Identity, *, assistant_id: str, channel: str, subject: str | None = None
) -> Chat:
    """THE chat of (tenant, assistant, channel, person), created on first use.

    The person is the caller, or ``subject`` when an ``agent`` or ``admin`` asks on
    someone's behalf (anyone else naming another person is FORBIDDEN). A chat made here
    belongs to that person (``createdBy``; the caller's team when they asked for
    themselves) and is keyed by a unique index, so concurrent first calls insert one
    row and the rest find it. A soft-deleted one is restored; a purged one is gone, so
    the next call makes a new chat.
    """
    if not assistant_id or len(assistant_id) > _MAX_NAME:
        raise InvalidArgument(f"assistantId must be 1-{_MAX_NAME} characters")
    check_channel(channel)
    person = who.user_id if subject is None else subject
    if not person or len(person) > _MAX_NAME:
        raise InvalidArgument(f"subject must be 1-{_MAX_NAME} characters")
    if person != who.user_id and not (who.is_agent or who.is_admin):
        raise Forbidden("only an agent or admin may ask for another person's chat")
    key = (chats.c.tenant_id == who.tenant_id, chats.c.assistant_id == assistant_id,
           chats.c.channel == channel, chats.c.subject == person)
    stamp = now()
    values = {
        "id": new_id(), "assistant_id": assistant_id, "mode": "chat", "channel": channel,
        "subject": person, "status": "ACTIVE", "share": "PRIVATE", "public": False,
        "sort": 0, "activity_at": stamp, "created_at": stamp, "updated_at": stamp,
        "created_by": person, "updated_by": who.user_id,
        "team_id": who.team_id if person == who.user_id else None,
        "tenant_id": who.tenant_id,
    }
    dialect = postgresql if db.is_postgres else sqlite
    async with db.write() as conn:
        # ON CONFLICT DO NOTHING waits for a concurrent insert of the same key and then
        # skips; the SELECT after it (a new statement) sees whichever row won.
        await conn.execute(
            dialect.insert(chats).values(values).on_conflict_do_nothing(
                index_elements=["tenant_id", "assistant_id", "channel", "subject"])
        )
        row = (await conn.execute(select(chats).where(*key))).one()
        if row.deleted_at is not None:
            row = (
                await conn.execute(
                    update(chats).where(chats.c.id == row.id)
                    .values(deleted_at=None, updated_by=who.user_id, updated_at=stamp)
                    .returning(chats)
                )
            ).one()
    return chat_from_row(row)


async def get_chat(db: Database, who: Identity, chat_id: str) -> Chat | None:
    """The chat, or None when it does not exist, is deleted, or may not be read."""
    async with db.read() as conn:
        return await fetch_visible_chat(conn, who, chat_id)


async def fetch_visible_chat(conn: AsyncConnection, who: Identity, chat_id: str) -> Chat | None:
    row = (
        await conn.execute(
            select(chats).where(
                chats.c.id == chat_id, chats.c.deleted_at.is_(None), access.can_read(who)
            )
        )
    ).first()
    return None if row is None else chat_from_row(row)


async def _writable_chat(
    conn: AsyncConnection, who: Identity, chat_id: str, *, include_deleted: bool = False
) -> Chat:
    """The chat ``who`` may change, locked for the transaction.

    Not readable (or deleted) reads as absent; readable but not writable is FORBIDDEN.
    """
    row = await access.require(conn, who, chat_id, "write", columns=(chats,), lock=True,
                               include_deleted=include_deleted)
    return chat_from_row(row)


async def update_chat(
    db: Database, who: Identity, chat_id: str, changes: Mapping[str, Any]
) -> Chat:
    """Change any of title, status, share, public, sort and metadata."""
    unknown = set(changes) - set(_UPDATABLE)
    if unknown:
        raise InvalidArgument(f"cannot update {', '.join(sorted(unknown))}")
    _check_fields(changes)
    async with db.write() as conn:
        await _writable_chat(conn, who, chat_id)
        if not changes:
            row = (await conn.execute(select(chats).where(chats.c.id == chat_id))).one()
            return chat_from_row(row)
        row = (
            await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(**changes, updated_at=now(), updated_by=who.user_id)
                .returning(chats)
            )
        ).one()
    return chat_from_row(row)


async def delete_chat(db: Database, who: Identity, chat_id: str) -> bool:
    """Soft delete: the chat disappears everywhere but its data is kept."""
    async with db.write() as conn:
        chat = await _writable_chat(conn, who, chat_id, include_deleted=True)
        if chat.deleted_at is None:
            await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(deleted_at=now(), updated_by=who.user_id)
            )
    return True


async def restore_chat(db: Database, who: Identity, chat_id: str) -> Chat:
    """Undo a soft delete."""
    async with db.write() as conn:
        await _writable_chat(conn, who, chat_id, include_deleted=True)
        row = (
            await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(deleted_at=None, updated_by=who.user_id)
                .returning(chats)
            )
        ).one()
    return chat_from_row(row)


async def purge_chat(db: Database, who: Identity, chat_id: str) -> bool:
    """Remove the chat and everything in it for good and close its id forever.

    Purging an id that is already closed (in the caller's tenant) succeeds again, and
    so does purging an id that was never used: it is closed in the caller's tenant. An
    id taken by a chat the caller may not see is NOT_FOUND (ids are global: the caller
    could never use it anyway).
    """
    check_chat_id(chat_id)
    try:
        return await _purge(db, who, chat_id)
    except IntegrityError:
        # A concurrent purge or create of a never-used id won the race: decide again.
        return await _purge(db, who, chat_id)


async def _purge(db: Database, who: Identity, chat_id: str) -> bool:
    async with db.write() as conn:
        closed = await conn.scalar(
            select(exists().where(
                closed_chats.c.id == chat_id, closed_chats.c.tenant_id == who.tenant_id
            ))
        )
        if closed:
            return True
        if not await conn.scalar(select(exists().where(chats.c.id == chat_id))) and not (
            await conn.scalar(select(exists().where(closed_chats.c.id == chat_id)))
        ):
            # Never used: close it all the same, so an agent that clears an id before
            # its first write can never find it taken up by someone later.
            await conn.execute(
                insert(closed_chats).values(id=chat_id, tenant_id=who.tenant_id, closed_at=now())
            )
            return True
        chat = await _writable_chat(conn, who, chat_id, include_deleted=True)
        for table in (messages, resume_records, append_receipts, usage_records):
            await conn.execute(delete(table).where(table.c.chat_id == chat_id))
        await conn.execute(delete(chats).where(chats.c.id == chat_id))
        await conn.execute(
            insert(closed_chats).values(id=chat_id, tenant_id=chat.tenant_id, closed_at=now())
        )
    return True
