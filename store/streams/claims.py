"""Stream claims in the database: which streams a chat had, and which one is live.

A row is written when a stream starts (:func:`open_claim`) and marked ended in the
transaction that persists the stream (:func:`end_claim`). Its unique key on
(chat id, request id) is what makes a request id name one stream of a chat: of two
starts racing with the same request id exactly one inserts its row, the other is
CONFLICT — two agent workers never answer one question twice. A chat whose claims are
all ended has no live stream, which the "awaiting a reply" filter reads
(:func:`store.lists.chat_lists.awaiting_reply_clause`). A claim whose request id names a
resumption (``<request id>.resume.<N>``) marks the decisions it resumes in the same
transaction.
"""

from __future__ import annotations

from sqlalchemy import delete, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.tables import stream_claims, stream_files
from chatql.store.errors import Conflict
from chatql.store.messages import interrupts

__all__ = ["drop_claim", "end_claim", "end_live_claims", "open_claim"]


async def open_claim(db: Database, *, chat_id: str, stream_id: str,
                     request_id: str | None) -> None:
    """Record that ``stream_id`` starts in ``chat_id``; CONFLICT when the request id
    (or the stream id) was used by a stream before."""
    try:
        async with db.write() as conn:
            await conn.execute(stream_claims.insert().values(
                stream_id=stream_id, chat_id=chat_id, request_id=request_id,
                started_at=now()))
            # A resumption's claim takes the decisions it resumes, in the same
            # transaction: of two workers, the one whose claim inserted has them.
            await interrupts.claim_resumption(conn, chat_id, request_id)
    except IntegrityError:
        async with db.read() as conn:
            same_stream = await conn.scalar(select(exists().where(
                stream_claims.c.stream_id == stream_id)))
        if same_stream or request_id is None:
            raise Conflict(f"stream id {stream_id!r} was already used") from None
        raise Conflict(
            f"request {request_id!r} was already answered by a stream in chat {chat_id!r};"
            " another producer has (or had) it") from None


async def drop_claim(db: Database, stream_id: str) -> None:
    """Undo :func:`open_claim` of a stream that could not start."""
    async with db.write() as conn:
        await conn.execute(delete(stream_claims).where(
            stream_claims.c.stream_id == stream_id, stream_claims.c.ended_at.is_(None)))


async def end_claim(conn: AsyncConnection, stream_id: str) -> None:
    """Within the persist's transaction: the stream is no longer live."""
    await conn.execute(update(stream_claims).where(
        stream_claims.c.stream_id == stream_id, stream_claims.c.ended_at.is_(None),
    ).values(ended_at=now()))


async def end_live_claims(db: Database) -> int:
    """Mark every live claim ended (a single-process service starting: no stream of
    an earlier run can still be live); returns how many."""
    live = stream_claims.c.ended_at.is_(None)
    async with db.write() as conn:
        # The files those streams named were readable through them: no longer.
        await conn.execute(delete(stream_files).where(stream_files.c.stream_id.in_(
            select(stream_claims.c.stream_id).where(live))))
        result = await conn.execute(update(stream_claims).where(live).values(ended_at=now()))
    return int(result.rowcount or 0)
