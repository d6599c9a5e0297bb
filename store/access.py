"""Who may read and who may change a chat (SPEC §10), as SQL predicates.

One place for the rule, so every query that touches chats applies the same one:

- tenants never see each other;
- ``admin`` may do everything in its tenant, ``agent`` reads and appends everywhere
  in its tenant;
- a ``PRIVATE`` chat is its creator's, a ``TEAM`` chat is its team's;
- ``public`` lets the rest of the tenant read (never write).

A chat the caller may not read is treated exactly as if it did not exist.

How operations use it (new operations pick the predicate of their kind):

- reads, subscriptions, ``stopStream``, search, lists and counts: ``can_read``;
- changes (update, delete, restore, purge, message edits): ``can_read`` to see the chat
  at all (else NOT_FOUND), then ``can_write`` (else FORBIDDEN);
- appends: ``can_write(append=True)``;
- producer mutations (start/push/record/end a stream): ``can_stream``.

Agent memory belongs to a (tenant, subject) rather than to a chat: the subject reads
and changes its own; ``agent`` and ``admin`` may name any subject of their tenant;
everyone else finds nothing (``may_use_memory`` for a named subject,
``can_use_memory`` as a predicate over ``memory_entries`` rows).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, false, or_, true

from store.records import Identity
from store.tables import chats, memory_entries

__all__ = ["can_read", "can_stream", "can_use_memory", "can_write", "may_use_memory"]


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
