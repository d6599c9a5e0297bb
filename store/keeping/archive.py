"""Cold archive: a chat's messages moved to object storage, the chat row kept.

``archive_chat`` writes the chat's export (``store/export.py``) to the archive as one
JSON Lines object, reads it back and checks its SHA-256 and line count, and only then,
in one transaction that finds the chat unchanged since the export began, deletes the
message rows and resume records and records ``archived_at`` and the object's key. A
failed or unverifiable write deletes nothing (the partial object is removed). Each
attempt writes its own object key, so two instances archiving the same chat at once
can never overwrite each other's copy; the loser deletes its own object.

``restore_archive`` brings the rows back in one transaction (the chat row locked, so
concurrent restores do it once) and then deletes the object. Append receipts stay in
the database throughout, so retried appends still answer from them.

Archived messages are not in the search index (their rows are gone) until restored.

Backends by URL, through ``obstore``: ``file:///path`` (a local folder, created when
missing) and ``s3://bucket/prefix`` (credentials and endpoint from the standard
``AWS_*`` variables obstore reads, or ``options``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import obstore
import orjson
from obstore.store import LocalStore, from_url
from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access, clock
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.rows import document_rows, write_rows
from chatql.store.db.tables import chats, messages, resume_records
from chatql.store.errors import Conflict, InvalidArgument, NotFound, PersistFailed
from chatql.store.ids import check_chat_id, new_id
from chatql.store.keeping.export import export_chat
from chatql.store.keeping.imports import ParsedChat, parse_line
from chatql.store.messages import tree
from chatql.store.records import Chat, Identity

__all__ = ["ChatArchive", "archive_chat", "archive_idle", "is_archived", "restore_archive"]

#: Rows inserted per statement while restoring.
_RESTORE_BATCH = 1_000


class ChatArchive:
    """The object store archived chats are written to (one object per archive)."""

    def __init__(self, url: str, **options: Any) -> None:
        if not url.startswith(("file://", "s3://")):
            raise InvalidArgument("the archive URL must start with file:// or s3://")
        if url == "file://":
            raise InvalidArgument("a file:// archive URL needs a path")
        self.url = url
        self._options = options
        self._made: Any = None

    def _store(self) -> Any:
        # Made on first use, so an instance that never archives creates no folder.
        if self._made is None:
            if self.url.startswith("file://"):
                path = os.path.abspath(self.url.removeprefix("file://"))
                self._made = LocalStore(prefix=path, mkdir=True)
            else:
                # An unreachable store fails an archive within seconds (nothing is
                # deleted then); the sweeper or the caller tries again later.
                options = {"retry_config": {"max_retries": 2,
                                            "retry_timeout": timedelta(seconds=10)},
                           **self._options}
                self._made = from_url(self.url, **options)
        return self._made

    async def write(self, key: str, lines: AsyncIterator[bytes]) -> tuple[str, int]:
        """Store ``lines`` (chunks of whole lines) under ``key``; their SHA-256 and the
        number of lines, as written."""
        digest = hashlib.sha256()
        count = 0

        async def counted() -> AsyncIterator[bytes]:
            nonlocal count
            async for chunk in lines:  # whole lines, newlines included
                digest.update(chunk)
                count += chunk.count(b"\n")
                yield chunk

        try:
            await obstore.put_async(self._store(), key, counted())
        except Exception as error:
            raise PersistFailed(f"the archive copy could not be written: {error}") from None
        return digest.hexdigest(), count

    async def read(self, key: str) -> AsyncIterator[bytes]:
        """The object's bytes, chunk by chunk."""
        try:
            response = await obstore.get_async(self._store(), key)
            async for chunk in response.stream():
                yield bytes(chunk)
        except Exception as error:
            raise PersistFailed(f"the archive copy could not be read: {error}") from None

    async def lines(self, key: str) -> AsyncIterator[bytes]:
        rest = b""
        async for chunk in self.read(key):
            rest += chunk
            *whole, rest = rest.split(b"\n")
            for line in whole:
                yield line + b"\n"
        if rest:
            yield rest

    async def verify(self, key: str, digest: str, count: int) -> bool:
        found, lines = hashlib.sha256(), 0
        async for line in self.lines(key):
            found.update(line)
            lines += 1
        return found.hexdigest() == digest and lines == count

    async def delete(self, key: str) -> None:
        # Best effort: an orphaned object wastes space, nothing else.
        with contextlib.suppress(Exception):
            await obstore.delete_async(self._store(), key)


async def _fingerprint(conn: AsyncConnection, chat_id: str) -> tuple[Any, ...]:
    """What must not change between the export and the delete."""
    row = (await conn.execute(
        select(func.count(), func.max(messages.c.updated_at)).where(messages.c.chat_id == chat_id)
    )).one()
    sequence = await conn.scalar(select(chats.c.last_sequence).where(chats.c.id == chat_id))
    records = await conn.scalar(
        select(func.count()).select_from(resume_records)
        .where(resume_records.c.chat_id == chat_id))
    return (row[0], row[1], sequence, records)


async def _archive(db: Database, archive: ChatArchive, chat: Chat) -> bool:
    """Move ``chat``'s rows to the archive; False when another archiver was first."""
    async with db.read() as conn:
        before = await _fingerprint(conn, chat.id)
    key = f"{chat.tenant_id}/{chat.id}/{new_id()}.jsonl"
    # Interrupts and file links stay in their tables while the messages are away (and
    # keep the files they reference from the orphan sweep): only messages and resume
    # records move.
    digest, count = await archive.write(key, export_chat(db, chat, with_interrupts=False))
    if not await archive.verify(key, digest, count):
        await archive.delete(key)
        raise PersistFailed("the archive copy did not read back as written; nothing deleted")
    async with db.write() as conn:
        current = (await conn.execute(
            select(chats.c.archived_at).where(chats.c.id == chat.id).with_for_update()
        )).first()
        if current is None or current.archived_at is not None:
            changed = False
        else:
            changed = await _fingerprint(conn, chat.id) != before
            if not changed:
                await conn.execute(delete(messages).where(messages.c.chat_id == chat.id))
                await conn.execute(
                    delete(resume_records).where(resume_records.c.chat_id == chat.id))
                await conn.execute(update(chats).where(chats.c.id == chat.id).values(
                    archived_at=clock.now(), archive_key=key))
                return True
    await archive.delete(key)
    if changed:
        raise Conflict(f"chat {chat.id!r} changed while it was being archived; try again")
    return False


async def archive_chat(db: Database, archive: ChatArchive, who: Identity,
                       chat_id: str) -> Chat:
    """Archive a chat ``who`` may change (archiving an archived chat changes nothing)."""
    check_chat_id(chat_id)
    async with db.read() as conn:
        row = await access.require(conn, who, chat_id, "write", columns=(chats,))
    chat = store_chats.chat_from_row(row)
    if chat.archived_at is None:
        await _archive(db, archive, chat)
    found = await store_chats.get_chat(db, who, chat_id)
    if found is None:  # pragma: no cover - deleted meanwhile
        raise NotFound(f"chat {chat_id!r} not found")
    return found


async def is_archived(db: Database, chat_id: str) -> bool:
    """One primary-key probe: whether the chat's messages are in the archive."""
    async with db.read() as conn:
        return await conn.scalar(
            select(chats.c.archived_at.is_not(None)).where(chats.c.id == chat_id)) is True


async def restore_archive(db: Database, archive: ChatArchive, who: Identity,
                          chat_id: str) -> Chat:
    """Bring an archived chat's messages back (anyone who may read it may do so)."""
    check_chat_id(chat_id)
    key: str | None = None
    async with db.write() as conn:
        row = await access.require(conn, who, chat_id, columns=(chats.c.archive_key,),
                                   lock=True)
        if row.archive_key is not None:
            key = row.archive_key
            await _restore_rows(conn, archive, chat_id, key)
            await conn.execute(update(chats).where(chats.c.id == chat_id).values(
                archived_at=None, archive_key=None))
    if key is not None:
        await archive.delete(key)
    found = await store_chats.get_chat(db, who, chat_id)
    if found is None:  # pragma: no cover - deleted meanwhile
        raise NotFound(f"chat {chat_id!r} not found")
    return found


async def _restore_rows(conn: AsyncConnection, archive: ChatArchive, chat_id: str,
                        key: str) -> None:
    parsed = ParsedChat(chat={})
    last = 0
    number = 0

    async def flush() -> None:
        if parsed.messages:
            # The chat row kept its active leaf; the rows come back with their tree.
            await tree.link_rows(conn, chat_id, parsed.messages)
            await write_rows(conn, document_rows(chat_id, parsed.messages))
        if parsed.resume:
            await conn.execute(insert(resume_records),
                               [{**r, "chat_id": chat_id} for r in parsed.resume])
        del parsed.messages[:]
        del parsed.resume[:]

    # The archive holds what the export wrote, in order: the chat line, then lines
    # the import parser checks and turns into rows.
    async for raw in archive.lines(key):
        number += 1
        if number == 1:
            continue
        last = parse_line(orjson.loads(raw), number, parsed, last)
        if len(parsed.messages) + len(parsed.resume) >= _RESTORE_BATCH:
            await flush()
    await flush()


async def archive_idle(db: Database, archive: ChatArchive, *, now: datetime,
                       after_days: float, limit: int = 20) -> list[str]:
    """Archive up to ``limit`` chats with messages and no activity for ``after_days``."""
    idle_since = now - timedelta(days=after_days)
    async with db.read() as conn:
        rows = (await conn.execute(
            select(chats).where(and_(
                chats.c.archived_at.is_(None), chats.c.activity_at < idle_since,
                chats.c.deleted_at.is_(None), chats.c.last_sequence > 0,
            )).order_by(chats.c.activity_at).limit(limit)
        )).all()
    done = []
    for row in rows:
        chat = store_chats.chat_from_row(row)
        try:
            if await _archive(db, archive, chat):
                done.append(chat.id)
        except Conflict:
            continue  # written to meanwhile: not idle after all
    return done
