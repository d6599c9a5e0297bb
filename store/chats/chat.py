"""Chats: create, read, update, soft delete, restore and purge.

A chat also carries organising fields — ``tags`` (at most 20, each 1-64 characters,
kept sorted with repeats dropped, mirrored one per row in ``chat_tags`` for filtering)
and ``pinned`` — and ``expires_at``: once that moment has passed the chat reads as
absent everywhere, even before the retention sweeper purges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, delete, exists, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access, clock
from chatql.store.access import present
from chatql.store.db.database import Database
from chatql.store.db.tables import (
    append_receipts,
    chat_tags,
    chats,
    closed_chats,
    feedback,
    interrupts,
    messages,
    resume_records,
    stream_claims,
    usage_records,
)
from chatql.store.errors import Conflict, Forbidden, InvalidArgument
from chatql.store.files.links import release_chat_files
from chatql.store.ids import check_chat_id, new_id
from chatql.store.limits import (
    CHANNEL_CHARS,
    MAX_TAGS,
    MODE_CHARS,
    NAME_CHARS,
    TAG_CHARS,
    TITLE_CHARS,
    check_length,
    check_optional_name,
)
from chatql.store.records import Chat, Identity

__all__ = [
    "CHAT_SHARES",
    "CHAT_STATUSES",
    "DEFAULT_CHANNEL",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "chat_for",
    "chat_from_row",
    "check_channel",
    "check_tags",
    "create_chat",
    "delete_chat",
    "find_chat_for",
    "get_chat",
    "insert_chat",
    "normalised_fields",
    "present",
    "purge_chat",
    "purge_rows",
    "restore_chat",
    "update_chat",
]

CHAT_STATUSES = ("ACTIVE", "ARCHIVED")
CHAT_SHARES = ("PRIVATE", "TEAM")
_UPDATABLE = (
    "title", "status", "share", "public", "sort", "metadata", "tags", "pinned", "expires_at",
)
DEFAULT_CHANNEL = "api"
MAX_TAG_LENGTH = TAG_CHARS


def check_tags(tags: Any) -> list[str]:
    """The tags as stored: distinct and sorted; INVALID_ARGUMENT for a bad list."""
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise InvalidArgument("tags must be a list of strings")
    for tag in tags:
        if not 1 <= len(tag) <= MAX_TAG_LENGTH:
            raise InvalidArgument(f"each tag must be 1-{MAX_TAG_LENGTH} characters, got {tag!r}")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in tag):
            raise InvalidArgument(f"tag {tag!r} contains a control character")
    distinct = sorted(set(tags))
    if len(distinct) > MAX_TAGS:
        raise InvalidArgument(f"a chat has at most {MAX_TAGS} tags, got {len(distinct)}")
    return distinct


async def _write_tags(conn: AsyncConnection, chat_id: str, tenant_id: str,
                      tags: list[str]) -> None:
    await conn.execute(delete(chat_tags).where(chat_tags.c.chat_id == chat_id))
    if tags:
        await conn.execute(
            insert(chat_tags),
            [{"chat_id": chat_id, "tag": tag, "tenant_id": tenant_id} for tag in tags],
        )


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
        tags=list(m["tags"] or []),
        pinned=bool(m["pinned"]),
        expires_at=m["expires_at"],
        archived_at=m["archived_at"],
        active_leaf_id=m.get("active_leaf_id"),
        title_source=m.get("title_source"),
    )


def _check_fields(values: Mapping[str, Any]) -> None:
    title = values.get("title")
    check_optional_name(title, "title", TITLE_CHARS)
    if "status" in values and values["status"] not in CHAT_STATUSES:
        raise InvalidArgument(f"status must be one of {', '.join(CHAT_STATUSES)}")
    if "share" in values and values["share"] not in CHAT_SHARES:
        raise InvalidArgument(f"share must be one of {', '.join(CHAT_SHARES)}")
    if values.get("metadata") is not None and not isinstance(values["metadata"], dict):
        raise InvalidArgument("metadata must be a JSON object")
    sort = values.get("sort")
    if sort is not None and not -(2**31) <= sort < 2**31:
        raise InvalidArgument("sort must fit in a 32-bit integer")
    for key in ("public", "sort", "status", "share", "tags", "pinned"):
        if key in values and values[key] is None:
            raise InvalidArgument(f"{key} cannot be null")
    expires_at = values.get("expires_at")
    if expires_at is not None:
        if expires_at.tzinfo is None:
            raise InvalidArgument("expiresAt needs a UTC offset")
        if expires_at <= clock.now():
            raise InvalidArgument("expiresAt must be in the future")


def normalised_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    _check_fields(values)
    fields = dict(values)
    if "tags" in fields:
        fields["tags"] = check_tags(fields["tags"])
    return fields


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
    tags: list[str] | None = None,
    pinned: bool = False,
    expires_at: datetime | None = None,
) -> Chat:
    """Create a chat owned by ``who``; ``id`` is generated when not given."""
    chat_id = new_id() if id is None else check_chat_id(id)
    check_length(assistant_id, "assistantId", NAME_CHARS)
    check_channel(channel)
    check_length(mode, "mode", MODE_CHARS)
    fields = normalised_fields({
        "title": title, "share": share, "public": public, "sort": sort,
        "metadata": metadata, "tags": [] if tags is None else tags, "pinned": pinned,
        "expires_at": expires_at,
    })
    stamp = clock.now()
    values = {
        "id": chat_id,
        "assistant_id": assistant_id,
        "mode": mode,
        "channel": channel,
        "status": "ACTIVE",
        **fields,
        # A title given at creation is a person's.
        "title_source": None if fields["title"] is None else "USER",
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
            return await insert_chat(conn, values)
    except IntegrityError:
        raise Conflict(f"chat id {chat_id!r} is already taken") from None


async def insert_chat(conn: AsyncConnection, values: Mapping[str, Any]) -> Chat:
    """Within the caller's transaction: write a new chat row (checked values) and its
    tags; CONFLICT for an id that is taken or was closed by a purge."""
    chat_id, tenant_id = values["id"], values["tenant_id"]
    closed_in = await conn.scalar(
        select(closed_chats.c.tenant_id).where(closed_chats.c.id == chat_id)
    )
    if closed_in == tenant_id:
        raise Conflict(f"chat id {chat_id!r} was purged and can never be used again")
    if closed_in is not None or await conn.scalar(select(exists().where(chats.c.id == chat_id))):
        # Chat ids are global; another tenant's purge must not show through, so it
        # reads like any other taken id.
        raise Conflict(f"chat id {chat_id!r} is already taken")
    row = (await conn.execute(insert(chats).values(values).returning(chats))).one()
    await _write_tags(conn, chat_id, tenant_id, list(values.get("tags") or []))
    return chat_from_row(row)


def check_channel(channel: str) -> str:
    return check_length(channel, "channel", CHANNEL_CHARS)


async def chat_for(
    db: Database, who: Identity, *, assistant_id: str, channel: str, subject: str | None = None
) -> Chat:
    """THE chat of (tenant, assistant, channel, person): :func:`find_chat_for`'s chat."""
    chat, _outcome = await find_chat_for(db, who, assistant_id=assistant_id, channel=channel,
                                         subject=subject)
    return chat


async def find_chat_for(
    db: Database, who: Identity, *, assistant_id: str, channel: str, subject: str | None = None
) -> tuple[Chat, Literal["CREATED", "RESTORED"] | None]:
    """THE chat of (tenant, assistant, channel, person), created on first use, and what
    this call did to it: ``CREATED``, ``RESTORED`` (it was in the trash) or None.

    The person is the caller, or ``subject`` when an ``agent`` or ``admin`` asks on
    someone's behalf (anyone else naming another person is FORBIDDEN). A chat made here
    belongs to that person (``createdBy``; the caller's team when they asked for
    themselves) and is keyed by a unique index, so concurrent first calls insert one
    row and the rest find it. A soft-deleted one is restored; a purged one is gone, so
    the next call makes a new chat.
    """
    check_length(assistant_id, "assistantId", NAME_CHARS)
    check_channel(channel)
    person = check_length(who.user_id if subject is None else subject, "subject", NAME_CHARS)
    if person != who.user_id and not (who.is_agent or who.is_admin):
        raise Forbidden("only an agent or admin may ask for another person's chat")
    key = (chats.c.tenant_id == who.tenant_id, chats.c.assistant_id == assistant_id,
           chats.c.channel == channel, chats.c.subject == person)
    stamp = clock.now()
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
        outcome: Literal["CREATED", "RESTORED"] | None = (
            "CREATED" if row.id == values["id"] else None)
        if row.deleted_at is not None:
            row = (
                await conn.execute(
                    update(chats).where(chats.c.id == row.id)
                    .values(deleted_at=None, updated_by=who.user_id, updated_at=stamp)
                    .returning(chats)
                )
            ).one()
            outcome = "RESTORED"
    return chat_from_row(row), outcome


async def get_chat(db: Database, who: Identity, chat_id: str) -> Chat | None:
    """The chat, or None when it does not exist, is deleted, or may not be read."""
    async with db.read() as conn:
        return await fetch_visible_chat(conn, who, chat_id)


async def fetch_visible_chat(conn: AsyncConnection, who: Identity, chat_id: str) -> Chat | None:
    row = (
        await conn.execute(
            select(chats).where(chats.c.id == chat_id, present(), access.can_read(who))
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
    """Change any of title, status, share, public, sort, metadata, tags, pinned and
    expires_at (None clears the expiry)."""
    unknown = set(changes) - set(_UPDATABLE)
    if unknown:
        raise InvalidArgument(f"cannot update {', '.join(sorted(unknown))}")
    changes = normalised_fields(changes)
    if "title" in changes:
        # A person's title (or none, when cleared): no agent's or automatic one replaces it.
        changes["title_source"] = None if changes["title"] is None else "USER"
    async with db.write() as conn:
        chat = await _writable_chat(conn, who, chat_id)
        if "tags" in changes:
            await _write_tags(conn, chat_id, chat.tenant_id, changes["tags"])
        if not changes:
            row = (await conn.execute(select(chats).where(chats.c.id == chat_id))).one()
            return chat_from_row(row)
        row = (
            await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(**changes, updated_at=clock.now(), updated_by=who.user_id)
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
                .values(deleted_at=clock.now(), updated_by=who.user_id)
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
                insert(closed_chats).values(id=chat_id, tenant_id=who.tenant_id,
                                            closed_at=clock.now())
            )
            return True
        chat = await _writable_chat(conn, who, chat_id, include_deleted=True)
        await purge_rows(conn, chat_id, chat.tenant_id)
    return True


async def purge_rows(conn: AsyncConnection, chat_id: str, tenant_id: str) -> None:
    """Within the caller's transaction: remove everything of the chat, close its id.

    The files only this chat referenced are released (unreadable at once; the sweeper
    removes their objects); a file another chat references stays."""
    await release_chat_files(conn, chat_id)
    for table in (messages, resume_records, append_receipts, chat_tags, usage_records,
                  stream_claims, interrupts, feedback):
        await conn.execute(delete(table).where(table.c.chat_id == chat_id))
    await conn.execute(delete(chats).where(chats.c.id == chat_id))
    await conn.execute(
        insert(closed_chats).values(id=chat_id, tenant_id=tenant_id, closed_at=clock.now())
    )
