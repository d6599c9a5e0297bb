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
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.access import can_read_file
from chatql.store.db.tables import files, message_files, messages
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import is_id
from chatql.store.records import Identity, Message

__all__ = ["FILE_TYPE", "file_ids_in", "link_files", "may_reference_files", "release_chat_files",
           "relink_message", "unlink_deleted"]

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


async def link_files(conn: AsyncConnection, who: Identity, chat_id: str,
                     written: Iterable[Message], *, at: datetime, strict: bool = True) -> None:
    """Record the file references of ``written`` (messages of ``chat_id`` just written by
    ``who``). With ``strict``, a reference to a file ``who`` may not read raises
    NOT_FOUND (the caller's transaction then writes nothing); without, it stays unlinked."""
    wanted = [(message.id, file_id) for message in written
              for file_id in file_ids_in(message.type, message.props, strict=strict)]
    if not wanted:
        return
    named = sorted({file_id for _, file_id in wanted})
    readable = set((await conn.scalars(
        select(files.c.id).where(files.c.id.in_(named), can_read_file(who, at)))).all())
    if strict:
        for file_id in named:
            if file_id not in readable:
                raise NotFound(f"file {file_id!r} not found")
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
    other = message_files.alias("other_links")
    elsewhere = exists(select(other.c.file_id).where(
        other.c.file_id == files.c.id, other.c.chat_id != chat_id))
    linked = select(message_files.c.file_id).where(message_files.c.chat_id == chat_id)
    await conn.execute(update(files).where(files.c.id.in_(linked), ~elsewhere)
                       .values(state="DELETED"))
    await conn.execute(delete(message_files).where(message_files.c.chat_id == chat_id))
