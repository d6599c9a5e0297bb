"""Who may read and who may change a chat, as SQL predicates.

One place for the rule, so every query that touches chats applies the same one:

- tenants never see each other;
- ``admin`` may do everything in its tenant, ``agent`` reads and appends everywhere
  in its tenant;
- a ``PRIVATE`` chat is its creator's, a ``TEAM`` chat is its team's;
- ``public`` lets the rest of the tenant read (never write).

A chat the caller may not read is treated exactly as if it did not exist, and so is a
chat in the trash or past its expiry (``present``).

How operations use it (new operations pick the predicate of their kind):

- reads, subscriptions, search, lists and counts: ``can_read`` (``may_read`` for a
  chat already loaded, as live chat events are checked);
- ``stopStream``: ``can_write(append=True)`` (whoever may write to the chat);
- changes (update, delete, restore, purge, message edits): ``can_read`` to see the chat
  at all (else NOT_FOUND), then ``can_write`` (else FORBIDDEN);
- appends: ``can_write(append=True)``;
- producer mutations (start/push/record/end a stream): ``can_stream``.

A file is readable by its uploader and by whoever may read a chat with a message that
references it, or with a live stream whose accepted chunks name it (``admin``: every
file of its tenant); ``can_read_file`` is that rule as a predicate over ``files`` rows.

Agent memory belongs to a (tenant, subject) rather than to a chat: the subject reads
and changes its own; ``agent`` and ``admin`` may name any subject of their tenant;
everyone else finds nothing (``may_use_memory`` for a named subject,
``can_use_memory`` as a predicate over ``memory_entries`` rows).

An operation on one chat checks it with :func:`require` (the NOT_FOUND / FORBIDDEN
rule written once); queries over many chats filter with the predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    and_,
    bindparam,
    exists,
    false,
    or_,
    select,
    true,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BindParameter

from chatql.store import clock
from chatql.store.db.tables import (
    chats,
    files,
    memory_entries,
    message_files,
    stream_claims,
    stream_files,
)
from chatql.store.errors import ChatArchived, Forbidden, NotFound
from chatql.store.records import Chat, Identity

__all__ = ["Need", "can_read", "can_read_file", "can_stream", "can_use_memory", "can_write",
           "may_read", "may_use_memory", "present", "require"]


def present(at: datetime | None = None) -> ColumnElement[bool]:
    """Rows of ``chats`` that exist for readers: not deleted and not past their expiry
    (at ``at``, or now on the store's clock)."""
    moment = clock.now() if at is None else at
    return and_(
        chats.c.deleted_at.is_(None),
        or_(chats.c.expires_at.is_(None), chats.c.expires_at > moment),
    )


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


def can_read_file(who: Identity, at: datetime) -> ColumnElement[bool]:
    """Rows of ``files`` the caller may read at ``at``: READY files of its tenant that it
    uploaded, that a message references in a chat it may read (not deleted, not
    expired), or that the accepted chunks of a live stream in such a chat name (a
    ``stream_files`` row whose stream's claim has not ended: the producer could read the
    file when it pushed them); an ``admin`` reads every file of its tenant."""
    ready = and_(files.c.tenant_id == who.tenant_id, files.c.state == "READY")
    if who.is_admin:
        return ready
    chat_readable = and_(can_read(who), chats.c.deleted_at.is_(None),
                         or_(chats.c.expires_at.is_(None), chats.c.expires_at > at))
    referenced = exists(
        select(message_files.c.file_id)
        .join(chats, chats.c.id == message_files.c.chat_id)
        .where(message_files.c.file_id == files.c.id, chat_readable)
    )
    streamed = exists(
        select(stream_files.c.file_id)
        .join(chats, chats.c.id == stream_files.c.chat_id)
        .join(stream_claims, stream_claims.c.stream_id == stream_files.c.stream_id)
        .where(stream_files.c.file_id == files.c.id, stream_claims.c.ended_at.is_(None),
               chat_readable)
    )
    return and_(ready, or_(files.c.uploader == who.user_id, referenced, streamed))


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


# Marker values standing in for the caller's identity while a statement is built.
_MARKS = {"\x00access:user": "w_user", "\x00access:tenant": "w_tenant",
          "\x00access:team": "w_team"}
_statements: dict[tuple[Any, ...], Select[Any]] = {}
_MAX_STATEMENTS = 512


def _require_statement(who: Identity, need: Need, columns: tuple[Any, ...], *, lock: bool,
                       include_deleted: bool, stop_archived: bool,
                       joined: Callable[[Select[Any]], Select[Any]] | None) -> Select[Any]:
    """The statement :func:`require` runs, built once per shape (what decides its text:
    the caller's kind of access and the options) with the chat id, the moment and the
    caller's identity as bound parameters (``w_chat``, ``w_now``, ``w_user``,
    ``w_tenant``, ``w_team``).

    Building and keying a fresh statement for every write cost more than SQLite spends
    running it; a statement built once keeps SQLAlchemy's cache key and compiled form.
    The access rule is the one of :func:`can_read` and friends, applied to an identity
    of marker values that are then swapped for the parameters.
    """
    key = (who.is_admin, who.is_agent, bool(who.team_id), need, columns, lock,
           include_deleted, stop_archived, joined)
    known = _statements.get(key)
    if known is not None:
        return known
    marked = Identity(user_id="\x00access:user", tenant_id="\x00access:tenant",
                      team_id="\x00access:team" if who.team_id else None,
                      roles=frozenset(role for role in ("admin", "agent")
                                      if role in who.roles))
    allowed = {
        "read": true(),
        "write": can_write(marked),
        "append": can_write(marked, append=True),
        "stream": can_stream(marked),
    }[need]
    query: Any = select(
        *(columns or (chats.c.id,)), chats.c.deleted_at.label("chat_deleted_at"),
        allowed.label("allowed"),
    ).where(chats.c.id == bindparam("w_chat"), can_read(marked))
    if stop_archived:
        query = query.add_columns(chats.c.archived_at.label("chat_archived_at"))
    query = query.where(or_(chats.c.expires_at.is_(None),
                            chats.c.expires_at > bindparam("w_now", type_=chats.c.expires_at.type)))
    if not include_deleted:
        query = query.where(chats.c.deleted_at.is_(None))
    if joined is not None:
        query = joined(query)
    if lock:
        query = query.with_for_update(of=chats)

    def named(element: Any, **_: Any) -> Any:
        if isinstance(element, BindParameter) and isinstance(element.value, str) and (
            element.value in _MARKS
        ):
            return bindparam(_MARKS[element.value], type_=element.type)
        return None

    built: Select[Any] = visitors.replacement_traverse(query, {}, named)
    if len(_statements) >= _MAX_STATEMENTS:
        _statements.clear()
    _statements[key] = built
    return built


async def require(conn: AsyncConnection, who: Identity, chat_id: str, need: Need = "read",
                  *, columns: Sequence[Any] = (), lock: bool = False,
                  include_deleted: bool = False, stop_archived: bool = False,
                  joined: Callable[[Select[Any]], Select[Any]] | None = None,
                  params: Mapping[str, Any] | None = None) -> Row[Any]:
    """The chat row ``who`` may use for ``need`` (with ``columns``, and ``allowed``).

    The one access check of the store: a chat the caller may not read — or a deleted
    one, unless ``include_deleted`` and the caller may change it — is NOT_FOUND; a
    readable one the caller may not use for ``need`` is FORBIDDEN. ``lock`` takes the
    chat's row lock for the transaction. ``stop_archived`` raises
    :class:`~store.errors.ChatArchived` for a visible chat whose messages are in the
    archive, before any refusal (a reader may restore a chat it may not write).
    ``joined`` adds outer joins (and their columns) to the statement, so rows the
    caller needs next come back with the chat's in the same statement; it is part of
    the statement's shape (a function of the module's, not one made per call) and
    ``params`` binds the parameters it names.
    """
    # A chat past its expiry reads as absent even before the sweeper purges it.
    query = _require_statement(who, need, tuple(columns), lock=lock,
                               include_deleted=include_deleted, stop_archived=stop_archived,
                               joined=joined)
    values = {"w_chat": chat_id, "w_now": clock.now(), "w_user": who.user_id,
              "w_tenant": who.tenant_id, "w_team": who.team_id, **(params or {})}
    row: Any = (await conn.execute(query, values)).first()
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
