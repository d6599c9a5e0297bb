"""Chat titles: a person's, an agent's, or the first question's.

A titled chat records where its title came from (``chats.title_source``):

- ``USER``: a person named it (``createChat`` with a title, ``updateChat``). Only a
  person's change replaces it; clearing it (``title: null``) leaves the chat untitled.
- ``AGENT``: its agent named it (:func:`set_agent_title`, ``setChatTitle``): replaces an
  ``AUTO`` or ``AGENT`` title, never a ``USER`` one.
- ``AUTO``: a chat nobody named takes one from its first ``USER`` message, in the
  transaction that writes that message (:func:`entitle`): the message's first line, at
  most :data:`AUTO_TITLE_CHARS` characters cut at a word boundary, with trailing
  punctuation and spaces trimmed (:func:`automatic_title`). A first message without
  words (a file alone) names nothing, and no later message does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import bindparam, exists, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.chats.chat import chat_from_row
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages
from chatql.store.errors import InvalidArgument
from chatql.store.ids import check_chat_id
from chatql.store.limits import TITLE_CHARS
from chatql.store.records import Chat, Identity, Message
from chatql.store.text import message_text

__all__ = ["AUTO_TITLE_CHARS", "TITLE_SOURCES", "automatic_title", "check_title", "entitle",
           "set_agent_title"]

TITLE_SOURCES = ("USER", "AGENT", "AUTO")
#: The longest automatic title.
AUTO_TITLE_CHARS = 60
# What an automatic title does not end with: spaces and the punctuation that continues a
# sentence or ends one (closing brackets and quotes stay, they close something shown).
_TRAILING = " \t.,;:!?-\u2026\u2013\u2014\u3001\u3002\uff01\uff0c\uff1a\uff1b\uff1f"
_SPACES = re.compile(r"\s+")


def automatic_title(text: str | None) -> str | None:
    """The title a chat takes from its first question ``text``, or None (no words).

    The first line with words (runs of spaces as one), at most
    :data:`AUTO_TITLE_CHARS` characters: a longer line is cut after its last whole word
    that fits (a single longer word is cut inside); trailing punctuation and spaces go.
    """
    if not text:
        return None
    line = next((words for words in (_SPACES.sub(" ", raw).strip()
                                     for raw in text.splitlines()) if words), "")
    if len(line) > AUTO_TITLE_CHARS:
        if line[AUTO_TITLE_CHARS] in _TRAILING:
            # A space or punctuation right after the limit: the word before it is whole.
            line = line[:AUTO_TITLE_CHARS]
        else:
            cut = line.rfind(" ", 0, AUTO_TITLE_CHARS)
            line = line[:cut] if cut > 0 else line[:AUTO_TITLE_CHARS]
    return line.rstrip(_TRAILING) or None


# Built once: every append of a chat's first question runs it. The chat is untitled and
# no USER message comes before the first one written now.
_ENTITLE = (
    update(chats)
    .where(chats.c.id == bindparam("t_chat"), chats.c.title.is_(None),
           ~exists().where(messages.c.chat_id == bindparam("t_chat"),
                           messages.c.role == "USER",
                           messages.c.sequence < bindparam("t_sequence")))
    .values(title=bindparam("t_title"), title_source="AUTO")
    .returning(chats.c.title)
)


async def entitle(conn: AsyncConnection, chat_id: str, written: Sequence[Message]) -> str | None:
    """Within the transaction that wrote ``written`` to the (locked) chat: title an
    untitled chat from its first USER message when that is among them. Returns the
    title it set, or None (the chat had one, or asked before, or the message has no
    words)."""
    first = next((message for message in written if message.role == "USER"), None)
    if first is None:
        return None
    title = automatic_title(message_text(first.props))
    if title is None:
        return None
    applied: str | None = await conn.scalar(
        _ENTITLE, {"t_chat": chat_id, "t_sequence": first.sequence, "t_title": title})
    return applied


def check_title(title: str) -> str:
    """An agent's title without its surrounding spaces: 1 to TITLE_CHARS characters."""
    if not isinstance(title, str):
        raise InvalidArgument("title must be a string")
    title = title.strip()
    if not 1 <= len(title) <= TITLE_CHARS:
        raise InvalidArgument(f"title must be 1-{TITLE_CHARS} characters (spaces aside)")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in title):
        raise InvalidArgument("title must be one line without control characters")
    return title


async def set_agent_title(db: Database, who: Identity, chat_id: str, title: str) -> Chat:
    """The chat's agent names it: ``title`` replaces an automatic or agent's title; a
    title a person gave stays (the chat comes back unchanged). Needs the right to
    stream into the chat (``agent`` or ``admin``); NOT_FOUND when the caller may not
    read it, FORBIDDEN when it may only read it."""
    check_chat_id(chat_id)
    title = check_title(title)
    async with db.write() as conn:
        row = await access.require(conn, who, chat_id, "stream", columns=(chats,), lock=True)
        if row.title_source == "USER" or (row.title_source == "AGENT" and row.title == title):
            return chat_from_row(row)
        # The chat's row is locked: no person's title can arrive before this update.
        row = (await conn.execute(
            update(chats).where(chats.c.id == chat_id)
            .values(title=title, title_source="AGENT", updated_at=now(),
                    updated_by=who.user_id)
            .returning(chats))).one()
    return chat_from_row(row)
