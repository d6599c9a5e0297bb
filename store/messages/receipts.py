"""The receipted write: a write done at most once per (chat, append id).

Appends, edits and the persist of an ended stream all go through
:func:`receipted_write` inside their own transaction (the chat locked by the caller):
it looks for an earlier receipt under the same append id — a retry after a lost
answer, a restart or an outage — and answers from it without writing; otherwise it
runs the write and records the receipt (the message ids and sequences written) in
the same transaction, so the write and its receipt commit or vanish together.

A receipt lists the ids it wrote, or — for a write made with ``listed=False``, the
persist of a long stream — holds JSON ``null`` there: its messages are the chat's
sequences ``first_sequence`` to ``last_sequence``, which one write under the chat lock
fills without gaps and nothing renumbers. Storing ten thousand ids would cost more
than the rest of the receipt; a retry reads them back instead (:func:`receipt_ids`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, and_, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.clock import now
from chatql.store.db.tables import append_receipts, chats, messages
from chatql.store.errors import AppendConflict
from chatql.store.records import AppendReceipt, Message

__all__ = ["NOT_READ", "Earlier", "earlier_receipt", "earlier_receipt_joined", "receipt_ids",
           "receipted_write"]

#: ``receipted_write(earlier=…)`` left out: the receipt is looked up there.
NOT_READ: Any = object()


class Earlier(NamedTuple):
    """An earlier receipt as :func:`receipted_write` reads it."""

    digest: str
    message_ids: list[str] | None
    first_sequence: int
    last_sequence: int


_EARLIER_COLUMNS = (
    append_receipts.c.digest.label("r_digest"),
    append_receipts.c.message_ids.label("r_message_ids"),
    append_receipts.c.first_sequence.label("r_first_sequence"),
    append_receipts.c.last_sequence.label("r_last_sequence"),
)


def earlier_receipt_joined(query: Select[Any]) -> Select[Any]:
    """``query`` over ``chats`` with the chat's receipt under the append id bound to
    ``b_receipt_append_id`` outer-joined (read back with :func:`earlier_receipt`)."""
    return query.add_columns(*_EARLIER_COLUMNS).outerjoin(
        append_receipts, and_(append_receipts.c.chat_id == chats.c.id,
                              append_receipts.c.append_id == bindparam(
                                  "b_receipt_append_id", type_=append_receipts.c.append_id.type)))


def earlier_receipt(row: Any) -> Earlier | None:
    """The receipt :func:`earlier_receipt_joined` found, or None."""
    if row.r_digest is None:
        return None
    return Earlier(row.r_digest, row.r_message_ids, int(row.r_first_sequence),
                   int(row.r_last_sequence))


# Built once: every append runs them.
_RECORD = insert(append_receipts)
_EARLIER = (
    select(append_receipts.c.digest, append_receipts.c.message_ids,
           append_receipts.c.first_sequence, append_receipts.c.last_sequence)
    .where(append_receipts.c.chat_id == bindparam("chat"),
           append_receipts.c.append_id == bindparam("append"))
)
_BETWEEN = (
    select(messages.c.id)
    .where(messages.c.chat_id == bindparam("chat"),
           messages.c.sequence.between(bindparam("first"), bindparam("last")))
    .order_by(messages.c.sequence)
)


async def receipt_ids(conn: AsyncConnection, chat_id: str, message_ids: list[str] | None,
                      first_sequence: int, last_sequence: int) -> list[str]:
    """The ids a receipt names: its list, or for a receipt that holds none the ids of
    the chat's messages in its sequence range (those still stored), in sequence order."""
    if message_ids is not None:
        return list(message_ids)
    return list((await conn.scalars(_BETWEEN, {
        "chat": chat_id, "first": first_sequence, "last": last_sequence})).all())


async def receipted_write(
    conn: AsyncConnection,
    *,
    chat_id: str,
    append_id: str,
    digest: str,
    last_sequence: int,
    write: Callable[[], Awaitable[Sequence[Message]]],
    conflict: str | None,
    listed: bool = True,
    earlier: Any = NOT_READ,
) -> tuple[AppendReceipt, Sequence[Message] | None]:
    """Run ``write`` once per ``append_id`` and receipt it; returns the receipt and
    what ``write`` wrote, or the earlier receipt and None when one exists.

    ``conflict`` names what an append id stands for ("batch", "write"): an earlier
    receipt with another digest is then APPEND_CONFLICT. None accepts any earlier
    receipt (a stream id names one stream, whose content only its owner decides).
    ``last_sequence`` is the chat's last sequence, what an empty write's receipt holds.
    ``listed=False`` stores the sequence range instead of the ids (an empty write still
    stores its empty list, whose range would name the message before it).
    ``earlier``: the receipt under ``append_id`` (its ``digest``, ``message_ids``,
    ``first_sequence`` and ``last_sequence``) or None, when the caller read it already
    in this transaction with the chat locked (see :func:`earlier_receipt_joined`).
    """
    if earlier is NOT_READ:
        earlier = (
            await conn.execute(_EARLIER, {"chat": chat_id, "append": append_id})
        ).first()
    if earlier is not None:
        if conflict is not None and earlier.digest != digest:
            raise AppendConflict(
                f"appendId {append_id!r} was already used for a different {conflict}")
        return AppendReceipt(
            chat_id=chat_id, append_id=append_id, digest=earlier.digest,
            message_ids=await receipt_ids(conn, chat_id, earlier.message_ids,
                                          earlier.first_sequence, earlier.last_sequence),
            first_sequence=earlier.first_sequence,
            last_sequence=earlier.last_sequence,
        ), None
    written = await write()
    receipt = AppendReceipt(
        chat_id=chat_id, append_id=append_id, digest=digest,
        message_ids=[m.id for m in written],
        first_sequence=written[0].sequence if written else last_sequence,
        last_sequence=written[-1].sequence if written else last_sequence,
    )
    # None is stored as JSON null (the column's type keeps SQL NULL out).
    stored: list[str] | None = receipt.message_ids if listed or not written else None
    values: dict[str, Any] = {
        "chat_id": receipt.chat_id, "append_id": receipt.append_id, "digest": receipt.digest,
        "message_ids": stored, "first_sequence": receipt.first_sequence,
        "last_sequence": receipt.last_sequence, "created_at": now(),
    }
    await conn.execute(_RECORD, values)
    return receipt, written
