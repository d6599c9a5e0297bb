"""Which messages reference which files (the ``message_files`` rows).

A message references a file by its id, in one of two shapes:

- a ``file`` part in a list ``content`` (what a person sends)::

      {"content": [{"type": "text", "text": "What is this?"},
                   {"type": "file", "fileId": "…", "mediaType": "image/png",
                    "filename": "chart.png"}]}

- a message of type ``file`` (what an agent answers with): props ``{"fileId": "…",
  "mediaType": …, "filename": …}``.

A part without a ``fileId`` (a data URL, say) references nothing. Links are written in
the transaction that writes the messages, so a message and its links are kept together;
a reference the writer may not read is NOT_FOUND and the whole write is refused
(streams, persisted long after their chunks were accepted, leave such a reference
unlinked instead of failing).

A live stream's messages are not stored until it ends, so the files its chunks name are
linked to the stream instead (``stream_files``, :func:`link_stream_files`) when the push
naming them is accepted — checked as an append's references are (the pusher must read
each, else NOT_FOUND and the push is refused) — which makes them readable through the
chat while the stream lives (:func:`store.access.can_read_file`). The persist writes the
stored messages' links and drops the stream's (:func:`drop_stream_links`) in one
transaction; a stream that can never be stored drops its links too, and a link whose
stream's claim has ended counts for nothing (:func:`file_referenced` and the access
rule read only live ones; the orphan sweep removes the rest, :func:`drop_ended_stream_links`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.access import can_read_file
from chatql.store.db.tables import files, message_files, messages, stream_claims, stream_files
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import is_id
from chatql.store.records import Identity, Message

__all__ = ["FILE_TYPE", "drop_ended_stream_links", "drop_stream_links", "file_ids_in",
           "file_referenced", "link_files", "link_stream_files", "may_reference_files",
           "readable_files", "release_chat_files", "relink_message", "unlink_deleted"]

#: The message type, and the content part type, that reference a file.
FILE_TYPE = "file"


def _file_id(holder: dict[str, Any], strict: bool) -> str | None:
    if "fileId" not in holder:
        return None
    value = holder["fileId"]
    if not is_id(value):
        if strict:
            raise InvalidArgument("a file reference's fileId must be a file id")
        return None
    return value


def file_ids_in(message_type: str, props: Any, *, strict: bool = True) -> list[str]:
    """The file ids a message of ``message_type`` with ``props`` references, in order,
    each once; a ``fileId`` that is no id is INVALID_ARGUMENT (``strict``) or skipped."""
    if not isinstance(props, dict):
        return []
    found: list[str] = []
    if message_type == FILE_TYPE:
        own = _file_id(props, strict)
        if own is not None:
            found.append(own)
    content = props.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == FILE_TYPE:
                named = _file_id(part, strict)
                if named is not None:
                    found.append(named)
    return list(dict.fromkeys(found))


#: How the key every reference :func:`file_ids_in` finds is spelled in stored JSON text.
_REFERENCE_KEY = '"fileId"'


def may_reference_files(stored_props: Any) -> bool:
    """Whether a message whose props a driver gave as ``stored_props`` can reference a
    file (a cheap filter before a lookup; False only when it cannot). Each reference is a
    ``fileId`` key, which the stored JSON text (SQLite's, or Postgres's ``jsonb`` output)
    spells as written; a value already decoded is not looked into."""
    if isinstance(stored_props, str):
        return _REFERENCE_KEY in stored_props
    if isinstance(stored_props, bytes):
        return _REFERENCE_KEY.encode() in stored_props
    return True


async def readable_files(conn: AsyncConnection, who: Identity, named: Iterable[str], *,
                         at: datetime, strict: bool = True) -> set[str]:
    """The files of ``named`` that ``who`` may read at ``at``
    (:func:`store.access.can_read_file`). With ``strict``, one it may not read — missing,
    another tenant's, nobody's it may see — raises NOT_FOUND, as if it did not exist."""
    wanted = sorted(set(named))
    if not wanted:
        return set()
    readable = set((await conn.scalars(
        select(files.c.id).where(files.c.id.in_(wanted), can_read_file(who, at)))).all())
    if strict:
        for file_id in wanted:
            if file_id not in readable:
                raise NotFound(f"file {file_id!r} not found")
    return readable


async def link_files(conn: AsyncConnection, who: Identity, chat_id: str,
                     written: Iterable[Message], *, at: datetime, strict: bool = True) -> None:
    """Record the file references of ``written`` (messages of ``chat_id`` just written by
    ``who``). With ``strict``, a reference to a file ``who`` may not read raises
    NOT_FOUND (the caller's transaction then writes nothing); without, it stays unlinked."""
    wanted = [(message.id, file_id) for message in written
              for file_id in file_ids_in(message.type, message.props, strict=strict)]
    if not wanted:
        return
    readable = await readable_files(conn, who, (file_id for _, file_id in wanted), at=at,
                                    strict=strict)
    rows = [{"message_id": message_id, "file_id": file_id, "chat_id": chat_id}
            for message_id, file_id in wanted if file_id in readable]
    if rows:
        await conn.execute(insert(message_files), rows)


async def relink_message(conn: AsyncConnection, who: Identity, message: Message, *,
                         at: datetime) -> None:
    """Replace a message's links after its props changed."""
    await conn.execute(delete(message_files).where(message_files.c.message_id == message.id))
    await link_files(conn, who, message.chat_id, [message], at=at)


async def unlink_deleted(conn: AsyncConnection, chat_id: str) -> None:
    """Drop the links of the chat's messages that were deleted (the files stay until
    the orphan sweep finds nothing references them)."""
    still_there = exists(select(messages.c.id).where(
        messages.c.chat_id == chat_id, messages.c.id == message_files.c.message_id))
    await conn.execute(delete(message_files).where(message_files.c.chat_id == chat_id,
                                                   ~still_there))


async def release_chat_files(conn: AsyncConnection, chat_id: str) -> None:
    """A chat is being purged: its links go, and each file it referenced that no other
    chat references becomes DELETED (unreadable at once; the sweeper removes its
    object). Runs inside the purge's transaction."""
    elsewhere = file_referenced(files.c.id, except_chat=chat_id)
    linked = select(message_files.c.file_id).where(message_files.c.chat_id == chat_id)
    await conn.execute(update(files).where(files.c.id.in_(linked), ~elsewhere)
                       .values(state="DELETED"))
    await conn.execute(delete(message_files).where(message_files.c.chat_id == chat_id))
    # A live stream's links go with its chat; files only they named are left to the
    # orphan sweep (their uploader still holds them).
    await conn.execute(delete(stream_files).where(stream_files.c.chat_id == chat_id))


# ---- live streams ------------------------------------------------------------------------


def _stream_live() -> ColumnElement[bool]:
    """``stream_files`` rows whose stream's claim has not ended."""
    return exists(select(stream_claims.c.stream_id).where(
        stream_claims.c.stream_id == stream_files.c.stream_id,
        stream_claims.c.ended_at.is_(None)))


def file_referenced(file_id: Any, *, except_chat: str | None = None) -> ColumnElement[bool]:
    """Whether the file ``file_id`` (a column or value) is referenced: by a stored message,
    or by a live stream's accepted chunks — in a chat other than ``except_chat``, when
    given. What keeps a file from the orphan sweep and from a purge's release."""
    stored: Any = message_files.c.file_id == file_id
    streamed: Any = and_(stream_files.c.file_id == file_id, _stream_live())
    if except_chat is not None:
        stored = and_(stored, message_files.c.chat_id != except_chat)
        streamed = and_(streamed, stream_files.c.chat_id != except_chat)
    return or_(exists(select(message_files.c.file_id).where(stored)),
               exists(select(stream_files.c.file_id).where(streamed)))


async def link_stream_files(conn: AsyncConnection, who: Identity, *, chat_id: str,
                            stream_id: str, file_ids: Iterable[str], at: datetime) -> None:
    """A push of ``who`` to the live stream ``stream_id`` (of ``chat_id``) names
    ``file_ids``: each must be a file ``who`` may read (else NOT_FOUND, and nothing is
    linked: the push is refused); each not linked to the stream yet is linked now, which
    makes it readable to whoever may read the chat while the stream lives."""
    named = await readable_files(conn, who, file_ids, at=at, strict=True)
    if not named:
        return
    rows = [{"stream_id": stream_id, "file_id": file_id, "chat_id": chat_id}
            for file_id in sorted(named)]
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    # Already linked by an earlier push (or one racing on another instance): kept as is.
    await conn.execute(dialect.insert(stream_files).values(rows).on_conflict_do_nothing())


async def drop_stream_links(conn: AsyncConnection, stream_id: str) -> None:
    """The stream is stored (its messages' links replace these, in the same transaction)
    or can never be: its files are no longer referenced through it."""
    await conn.execute(delete(stream_files).where(stream_files.c.stream_id == stream_id))


async def drop_ended_stream_links(conn: AsyncConnection) -> int:
    """Remove the links of streams whose claims have ended (a stream lost with its
    process, say): they grant nothing already; this keeps them from piling up."""
    result = await conn.execute(delete(stream_files).where(~_stream_live()))
    return int(result.rowcount or 0)
