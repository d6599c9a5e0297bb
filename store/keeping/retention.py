"""Retention: purge chats past their expiry, and trash older than the trash period
(and, when configured, move idle chats to the cold archive: ``store/archive.py``).

Every instance runs a :class:`RetentionSweeper`. Instances never purge the same chat
twice: each batch is claimed inside one write transaction with ``SELECT … FOR UPDATE
SKIP LOCKED`` on Postgres (two sweepers take disjoint rows; a row already purged is
simply gone), and on SQLite the write transaction itself is exclusive (``BEGIN
IMMEDIATE``), so the second sweeper finds only what is still there. A purge is the
same as ``purgeChat``: messages, resume records and receipts go, the id is closed.

Expired chats read as absent from the moment they expire (see
:func:`store.access.present`); the sweeper only reclaims their rows. Each sweep also
marks interrupts whose time to decide has passed EXPIRED (deciding one after its
``expiresAt`` is refused at once, sweep or not), releases uploads no message
references after ``CHATQL_FILE_ORPHAN_TTL``, and deletes the objects of released files
(a purged chat's files no other chat references are released by the purge itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select

from chatql.store import clock
from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.files.service import FileService
from chatql.store.keeping.archive import ChatArchive, archive_idle
from chatql.store.lists.events import ChatEvents
from chatql.store.messages import interrupts

__all__ = ["RetentionSweeper", "expire_interrupts", "sweep_files", "sweep_retention"]

logger = logging.getLogger("chatql.retention")

#: Chats purged per transaction: bounds how long one sweep holds its locks.
SWEEP_BATCH = 50


async def sweep_retention(
    db: Database, *, now: datetime, trash_days: float, batch: int = SWEEP_BATCH,
    events: ChatEvents | None = None,
) -> list[str]:
    """Purge every chat expired at ``now`` or deleted ``trash_days`` before it.

    Returns the ids this call purged (never one another sweeper purged); live chat
    lists (``events``) are told of each purge once its batch committed.
    """
    trash_before = now - timedelta(days=trash_days)
    due = or_(
        and_(chats.c.expires_at.is_not(None), chats.c.expires_at <= now),
        and_(chats.c.deleted_at.is_not(None), chats.c.deleted_at <= trash_before),
    )
    purged: list[str] = []
    while True:
        async with db.write() as conn:
            rows = (
                await conn.execute(
                    select(chats)
                    .where(due)
                    .order_by(chats.c.id)
                    .limit(batch)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            for row in rows:
                await store_chats.purge_rows(conn, row.id, row.tenant_id)
        purged.extend(row.id for row in rows)
        if events is not None:
            for row in rows:
                await events.publish("PURGED", row.id, row.tenant_id,
                                     before=store_chats.chat_from_row(row))
        if len(rows) < batch:
            return purged


async def sweep_files(files: FileService, *, now: datetime) -> int:
    """Release the uploads no message references after the orphan time, then delete the
    objects and rows of every released file (a purge's, a retention's, an orphan's);
    how many files went."""
    await files.expire_orphans(now)
    gone = 0
    while removed := await files.collect():
        gone += removed
    return gone


async def expire_interrupts(db: Database, events: ChatEvents | None = None) -> int:
    """Mark the pending interrupts past their ``expiresAt`` EXPIRED (an expired one
    counts as denied when the run resumes); live chat lists hear of each chat once."""
    expired = await interrupts.expire_due(db)
    if events is not None:
        for chat_id, tenant_id in sorted({(chat, tenant) for _, chat, tenant in expired}):
            await events.publish("INTERRUPT_RESOLVED", chat_id, tenant_id)
    return len(expired)


class RetentionSweeper:
    """Sweeps every ``interval`` seconds until closed; a failed sweep is retried next time.

    The first sweep comes one interval after start. Closing waits for a sweep in
    progress to finish (its transactions are short) rather than cancelling it midway.
    """

    def __init__(self, db: Database, *, interval: float, trash_days: float,
                 archive: ChatArchive | None = None, archive_after_days: float = 0,
                 events: ChatEvents | None = None, files: FileService | None = None) -> None:
        self._db = db
        self._files = files
        self._events = events
        self._archive = archive
        self._archive_after_days = archive_after_days
        self._interval = interval
        self._trash_days = trash_days
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Sweeps finished and sweeps that failed, for metrics (read by differences).
        self.runs = 0
        self.failures = 0

    def start(self) -> None:
        if self._interval > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(), name="chatql-retention")

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _stopped_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop.wait()
        return self._stop.is_set()

    async def _run(self) -> None:
        while not await self._stopped_within(self._interval):
            try:
                purged = await sweep_retention(
                    self._db, now=clock.now(), trash_days=self._trash_days,
                    events=self._events)
                if purged:
                    logger.info("retention purged %d chat(s)", len(purged))
                await expire_interrupts(self._db, self._events)
                if self._files is not None:
                    await sweep_files(self._files, now=clock.now())
                if self._archive is not None and self._archive_after_days > 0:
                    archived = await archive_idle(
                        self._db, self._archive, now=clock.now(),
                        after_days=self._archive_after_days)
                    if archived:
                        logger.info("archived %d idle chat(s)", len(archived))
                self.runs += 1
            except Exception as error:  # the database may be briefly away; try again
                self.failures += 1
                logger.warning("retention sweep failed: %s", error)
