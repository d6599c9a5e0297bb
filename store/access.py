"""Who may read and who may change a chat, as SQL predicates.

One place for the rule, so every query that touches chats applies the same one:

- tenants never see each other;
- ``admin`` may do everything in its tenant, ``agent`` reads and appends everywhere
  in its tenant;
- a ``PRIVATE`` chat is its creator's, a ``TEAM`` chat is its team's;
- ``public`` lets the rest of the tenant read (never write).

A chat the caller may not read is treated exactly as if it did not exist.

How operations use it (new operations pick the predicate of their kind):

- reads, subscriptions, search, lists and counts: ``can_read`` (``may_read`` for a
  chat already loaded, as live chat events are checked);
- ``stopStream``: ``can_write(append=True)`` (whoever may write to the chat);
- changes (update, delete, restore, purge, message edits): ``can_read`` to see the chat
  at all (else NOT_FOUND), then ``can_write`` (else FORBIDDEN);
- appends: ``can_write(append=True)``;
- producer mutations (start/push/record/end a stream): ``can_stream``.

Agent memory belongs to a (tenant, subject) rather than to a chat: the subject reads
and changes its own; ``agent`` and ``admin`` may name any subject of their tenant;
everyone else finds nothing (``may_use_memory`` for a named subject,
``can_use_memory`` as a predicate over ``memory_entries`` rows).

An operation on one chat checks it with :func:`require` (the NOT_FOUND / FORBIDDEN
rule written once); queries over many chats filter with the predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from sqlalchemy import ColumnElement, Row, Select, and_, false, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from store.errors import ChatArchived, Forbidden, NotFound
from store.records import Chat, Identity
from store.tables import chats, memory_entries

__all__ = ["Need", "can_read", "can_stream", "can_use_memory", "can_write", "may_read",
           "may_use_memory", "require"]


def _owner_clause(who: Identity) -> ColumnElement[bool]:
    team = (
        and_(chats.c.share == "TEAM", chats.c.team_id == who.team_id)
        if who.team_id
        else false()
    )
    return or_(chats.c.created_by == who.user_id, team)


def can_read(who: Identity) -> ColumnElement[bool]:
    """Rows of ``chats`` the caller may see (and subscribe to)."""
    same_tenant = chats.c.tenant_id == who.tenant_id
    if who.is_admin or who.is_agent:
        return and_(same_tenant, true())
    return and_(same_tenant, or_(_owner_clause(who), chats.c.public.is_(True)))


def may_read(who: Identity, chat: Chat) -> bool:
    """:func:`can_read` for a chat already loaded (live events decide per subscriber
    without a query); a test holds the two to the same answers."""
    if chat.tenant_id != who.tenant_id:
        return False
    if who.is_admin or who.is_agent or chat.public or chat.created_by == who.user_id:
        return True
    return bool(who.team_id) and chat.share == "TEAM" and chat.team_id == who.team_id


def can_write(who: Identity, *, append: bool = False) -> ColumnElement[bool]:
    """Rows of ``chats`` the caller may change; ``append`` admits the ``agent`` role."""
    same_tenant = chats.c.tenant_id == who.tenant_id
    if who.is_admin or (append and who.is_agent):
        return and_(same_tenant, true())
    return and_(same_tenant, _owner_clause(who))


def can_stream(who: Identity) -> ColumnElement[bool]:
    """Rows of ``chats`` the caller may stream into: producers are ``agent`` or ``admin``."""
    if who.is_admin or who.is_agent:
        return chats.c.tenant_id == who.tenant_id
    return false()


def may_use_memory(who: Identity, subject: str) -> bool:
    """Whether the caller may read and change the memory of ``subject`` in its tenant."""
    return subject == who.user_id or who.is_admin or who.is_agent


def can_use_memory(who: Identity) -> ColumnElement[bool]:
    """Rows of ``memory_entries`` the caller may read and change."""
    same_tenant = memory_entries.c.tenant_id == who.tenant_id
    if who.is_admin or who.is_agent:
        return and_(same_tenant, true())
    return and_(same_tenant, memory_entries.c.subject == who.user_id)
#: What a caller needs a chat for: ``read`` it, ``write`` (change) it, ``append`` to it
#: (agents may), or ``stream`` into it (agents and admins).
Need = Literal["read", "write", "append", "stream"]

_REFUSED = {"write": "change it", "append": "append to it", "stream": "stream into it"}


async def require(conn: AsyncConnection, who: Identity, chat_id: str, need: Need = "read",
                  *, columns: Sequence[Any] = (), lock: bool = False,
                  include_deleted: bool = False, stop_archived: bool = False,
                  joined: Callable[[Select[Any]], Select[Any]] | None = None) -> Row[Any]:
    """The chat row ``who`` may use for ``need`` (with ``columns``, and ``allowed``).

    The one access check of the store: a chat the caller may not read — or a deleted
    one, unless ``include_deleted`` and the caller may change it — is NOT_FOUND; a
    readable one the caller may not use for ``need`` is FORBIDDEN. ``lock`` takes the
    chat's row lock for the transaction. ``stop_archived`` raises
    :class:`~store.errors.ChatArchived` for a visible chat whose messages are in the
    archive, before any refusal (a reader may restore a chat it may not write).
    ``joined`` adds outer joins (and their columns) to the statement, so rows the
    caller needs next come back with the chat's in the same statement.
    """
    allowed = {
        "read": true(),
        "write": can_write(who),
        "append": can_write(who, append=True),
        "stream": can_stream(who),
    }[need]
    query: Select[Any] = select(
        *(columns or (chats.c.id,)), chats.c.deleted_at.label("chat_deleted_at"),
        allowed.label("allowed")).where(chats.c.id == chat_id, can_read(who))
    if stop_archived:
        query = query.add_columns(chats.c.archived_at.label("chat_archived_at"))
    # A chat past its expiry reads as absent even before the sweeper purges it. The
    # service clock lives in store.chats, which imports this module.
    from store import chats as chat_rows

    query = query.where(or_(chats.c.expires_at.is_(None), chats.c.expires_at > chat_rows.now()))
    if not include_deleted:
        query = query.where(chats.c.deleted_at.is_(None))
    if joined is not None:
        query = joined(query)
    if lock:
        query = query.with_for_update(of=chats)
    row: Any = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"chat {chat_id!r} not found")
    if stop_archived and row.chat_archived_at is not None:
        raise ChatArchived(chat_id)
    if not row.allowed:
        if row.chat_deleted_at is not None:
            # A deleted chat is hidden from everyone who could not restore it.
            raise NotFound(f"chat {chat_id!r} not found")
        raise Forbidden(f"you may read chat {chat_id!r} but not {_REFUSED[need]}")
    allowed_row: Row[Any] = row
    return allowed_row
