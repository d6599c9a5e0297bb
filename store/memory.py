"""Agent memory: what an agent chose to remember about a person, outside every chat.

An entry belongs to a (tenant, subject) — the person it is about — and to a *scope*
(a workspace or project key, or ``_global`` for what applies everywhere). Chats never
own memory: starting over, compacting, deleting or purging a chat leaves it as it was.

Rules this module enforces (the limits come in a :class:`MemoryLimits`; the store never
reads the environment):

- Access (``store.access``): the subject reads and changes its own; ``agent`` and
  ``admin`` may name any subject of their tenant. Reads by anyone else find nothing
  (empty lists, NOT_FOUND for an id); a write naming someone else's subject is
  FORBIDDEN (it reveals nothing: the caller chose the name).
- ``content``: 1 to ``entry_chars`` characters, not blank, no NUL; ``scope`` and
  ``subject``: 1 to 200 characters without control characters. Refusals happen before
  anything is written.
- The cap: a (subject, scope) holds at most ``scope_chars`` characters of content.
  ``memory_scopes`` keeps each scope's running total, and every write, update and
  delete changes it with one conditional UPDATE in the entry's own transaction
  (``chars + delta <= limit``). The database serialises writers on that row — and on
  Postgres re-checks the condition against the row as the previous writer left it —
  so concurrent writers can never together pass the cap. A change that would is
  MEMORY_FULL and rolls back; changes that shrink a scope are always accepted.
- ``write_id`` makes a write idempotent: the digest of (scope, content, pinned) is
  kept with the entry; the same key with the same digest answers the entry as it is
  now and writes nothing, with another digest it is CONFLICT. (Once the entry is
  deleted, its key is free again.)
- Order: recent memory is pinned first, then most recently updated; a scope's pages
  (``list_memory``) are pinned first, then newest created, so an update during a walk
  does not move entries between pages. Keyset pages, exact neighbour flags.
- Search follows message search: every word must occur, the query is never parsed as
  syntax, BM25-ranked, near-ties newest (most recently updated) first. On SQLite the
  FTS5 table carries an ``owner`` token per (tenant, subject), so a search reads only
  that person's postings; on Postgres the candidate rows are the subject's scopes, and
  each word's weight is its inverse frequency among them.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Row,
    String,
    column,
    delete,
    exists,
    func,
    insert,
    literal,
    literal_column,
    select,
    table,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access, jsonutil
from chatql.store.db.database import Database
from chatql.store.db.tables import UTCDateTime, memory_entries, memory_scopes
from chatql.store.errors import (
    Conflict,
    Forbidden,
    InvalidArgument,
    InvalidCursor,
    MemoryFull,
    NotFound,
)
from chatql.store.ids import is_id, new_id
from chatql.store.limits import KEY_CHARS, NAME_CHARS
from chatql.store.records import Chat, Identity, Message
from chatql.store.text import MAX_TERMS, RELEVANCE_TIE_TOLERANCE, clean_query, fts5_match

__all__ = [
    "DEFAULT_ENTRY_CHARS",
    "DEFAULT_PAGE",
    "DEFAULT_RECENT",
    "DEFAULT_SCOPE_CHARS",
    "DEFAULT_SEARCH",
    "GLOBAL_SCOPE",
    "MEMORY_MESSAGE_TYPE",
    "MemoryEntry",
    "MemoryHit",
    "MemoryLimits",
    "MemoryPage",
    "MemoryPosition",
    "cursor_scope",
    "delete_memory",
    "list_memory",
    "memory_message",
    "position_from",
    "position_of",
    "recent_memory",
    "search_memory",
    "update_memory",
    "write_memory",
]

DEFAULT_ENTRY_CHARS = 4_000
DEFAULT_SCOPE_CHARS = 20_000
GLOBAL_SCOPE = "_global"
MEMORY_MESSAGE_TYPE = "memory"
DEFAULT_RECENT = 20
MAX_RECENT = 200
DEFAULT_PAGE = 20
MAX_PAGE = 100
DEFAULT_SEARCH = 20
MAX_SEARCH = 100
#: Scopes one read may name.
MAX_SCOPES = 50
MAX_NAME_CHARS = NAME_CHARS
MAX_WRITE_ID_CHARS = KEY_CHARS
#: Candidates ranked in SQL before near-ties are reordered, beyond ``first``.
_CANDIDATE_MARGIN = 20

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_fts = table("memory_search", column("rowid"), column("owner"), column("body"))
_fts_keys = table("memory_search_keys", column("key"), column("entry_id"))
_SIMPLE: ColumnElement[Any] = literal_column("'simple'::regconfig")
_VECTOR: ColumnElement[Any] = literal_column("memory_entries.search_vector")


@dataclass(frozen=True, slots=True)
class MemoryLimits:
    """The two size limits (characters): per entry, and per (subject, scope)."""

    entry_chars: int = DEFAULT_ENTRY_CHARS
    scope_chars: int = DEFAULT_SCOPE_CHARS


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One remembered fact about ``subject`` (a user of ``tenant_id``), in ``scope``."""

    id: str
    tenant_id: str
    subject: str
    scope: str
    content: str
    pinned: bool
    created_by: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of a scope's entries, pinned first then newest, with exact flags."""

    items: list[MemoryEntry]
    has_previous: bool
    has_next: bool
    #: Entries and characters in the whole scope.
    total_count: int
    total_chars: int


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """An entry matching a memory search, with its relevance (higher is better)."""

    entry: MemoryEntry
    score: float


#: Where a page ends: (pinned, created_at, id) of its last entry.
MemoryPosition = tuple[bool, datetime, str]


def _entry_from_row(row: Row[Any] | Any) -> MemoryEntry:
    return MemoryEntry(
        id=row.id, tenant_id=row.tenant_id, subject=row.subject, scope=row.scope,
        content=row.content, pinned=bool(row.pinned), created_by=row.created_by,
        created_at=row.created_at, updated_at=row.updated_at,
    )


# ---- validation -------------------------------------------------------------------


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} must be valid Unicode (no lone surrogates)") from None
    return value


def _check_name(value: object, what: str) -> str:
    name = _check_text(value, what)
    if not 1 <= len(name) <= MAX_NAME_CHARS:
        raise InvalidArgument(f"{what} must be 1-{MAX_NAME_CHARS} characters long")
    if _CONTROL_RE.search(name):
        raise InvalidArgument(f"{what} must not contain control characters")
    return name


def check_scope(scope: object) -> str:
    return _check_name(scope, "scope")


def _check_scopes(scopes: Sequence[str]) -> list[str]:
    if not scopes:
        raise InvalidArgument("scopes must name at least one scope (for example '_global')")
    if len(scopes) > MAX_SCOPES:
        raise InvalidArgument(f"scopes must name at most {MAX_SCOPES} scopes")
    return sorted({check_scope(scope) for scope in scopes})


def _subject_of(who: Identity, subject: str | None) -> str:
    return who.user_id if subject is None else _check_name(subject, "subject")


def _check_content(content: object, limits: MemoryLimits) -> str:
    text = _check_text(content, "content")
    if "\x00" in text:
        raise InvalidArgument("content must not contain NUL characters")
    if not text.strip():
        raise InvalidArgument("content must not be empty")
    if len(text) > limits.entry_chars:
        raise InvalidArgument(
            f"content is {len(text)} characters; an entry holds at most {limits.entry_chars}"
        )
    return text


def _check_write_id(write_id: object) -> str:
    value = _check_text(write_id, "writeId")
    if not 1 <= len(value) <= MAX_WRITE_ID_CHARS:
        raise InvalidArgument(f"writeId must be 1-{MAX_WRITE_ID_CHARS} characters long")
    if _CONTROL_RE.search(value):
        raise InvalidArgument("writeId must not contain control characters")
    if value != value.strip():
        raise InvalidArgument("writeId must not start or end with whitespace")
    return value


def _check_entry_id(entry_id: object) -> str:
    if not is_id(entry_id):
        raise InvalidArgument(
            "a memory entry id is 1-64 characters of letters, digits, '_', '.', ':' or '-'"
        )
    return entry_id


def _bounded(value: int | None, default: int, cap: int, what: str) -> int:
    value = default if value is None else value
    if value <= 0:
        raise InvalidArgument(f"{what} must be a positive number")
    return min(value, cap)


def _digest(scope: str, content: str, pinned: bool) -> str:
    canonical = jsonutil.dumps({"content": content, "pinned": pinned, "scope": scope})
    return hashlib.sha256(canonical.encode()).hexdigest()


# ---- cursors ----------------------------------------------------------------------


def cursor_scope(who: Identity, subject: str | None, scope: str) -> str:
    """What a page cursor is bound to: the tenant, the subject and the scope."""
    return jsonutil.dumps(["memory", who.tenant_id, _subject_of(who, subject), scope])


def position_of(entry: MemoryEntry) -> list[Any]:
    """The JSON form of an entry's page position (to be signed into a cursor)."""
    return [entry.pinned, entry.created_at.isoformat(), entry.id]


def position_from(value: Any) -> MemoryPosition:
    """The position a signed cursor carried; INVALID_CURSOR when it is not one."""
    try:
        pinned, created_at, entry_id = value
        if not isinstance(pinned, bool) or not isinstance(entry_id, str):
            raise ValueError
        moment = datetime.fromisoformat(created_at)
        if moment.tzinfo is None:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidCursor("the cursor is not valid for this list") from None
    return pinned, moment.astimezone(UTC), entry_id


# ---- the per-scope counter --------------------------------------------------------


async def _change_scope_chars(
    conn: AsyncConnection, key: tuple[str, str, str], delta: int, limit: int
) -> None:
    """Add ``delta`` to the scope's total, or MEMORY_FULL if that would pass ``limit``."""
    tenant_id, subject, scope = key
    where = (
        memory_scopes.c.tenant_id == tenant_id,
        memory_scopes.c.subject == subject,
        memory_scopes.c.scope == scope,
    )
    if delta > 0:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        await conn.execute(
            dialect.insert(memory_scopes)
            .values(tenant_id=tenant_id, subject=subject, scope=scope, chars=0)
            .on_conflict_do_nothing()
        )
        condition: tuple[ColumnElement[bool], ...] = (
            memory_scopes.c.chars + delta <= limit,)
    else:
        condition = ()
    result = await conn.execute(
        update(memory_scopes).where(*where, *condition)
        .values(chars=memory_scopes.c.chars + delta)
    )
    if result.rowcount == 0 and delta > 0:
        held = int(await conn.scalar(select(memory_scopes.c.chars).where(*where)) or 0)
        raise MemoryFull(
            f"scope {scope!r} holds {held} of {limit} characters; {delta} more do not fit."
            " Consolidate (update or delete entries) and retry",
            scope_chars=held, limit=limit,
        )


async def _scope_chars(conn: AsyncConnection, key: tuple[str, str, str]) -> int:
    tenant_id, subject, scope = key
    held = await conn.scalar(select(memory_scopes.c.chars).where(
        memory_scopes.c.tenant_id == tenant_id, memory_scopes.c.subject == subject,
        memory_scopes.c.scope == scope))
    return int(held or 0)


# ---- writes -----------------------------------------------------------------------


async def write_memory(
    db: Database,
    who: Identity,
    *,
    scope: str,
    content: str,
    pinned: bool = False,
    subject: str | None = None,
    write_id: str | None = None,
    limits: MemoryLimits = MemoryLimits(),
) -> MemoryEntry:
    """Remember ``content`` about ``subject`` (default: the caller) in ``scope``."""
    scope = check_scope(scope)
    content = _check_content(content, limits)
    owner = _subject_of(who, subject)
    if write_id is not None:
        write_id = _check_write_id(write_id)
    if not access.may_use_memory(who, owner):
        raise Forbidden("only the subject itself, an agent or an admin may write its memory")
    digest = _digest(scope, content, bool(pinned))
    if write_id is not None:
        async with db.read() as conn:
            earlier = await _written(conn, who.tenant_id, owner, write_id, digest)
        if earlier is not None:
            return earlier
    moment = datetime.now(UTC)
    try:
        async with db.write() as conn:
            await _change_scope_chars(
                conn, (who.tenant_id, owner, scope), len(content), limits.scope_chars)
            row = (await conn.execute(
                insert(memory_entries).values(
                    id=new_id(), tenant_id=who.tenant_id, subject=owner, scope=scope,
                    content=content, pinned=bool(pinned), created_by=who.user_id,
                    write_id=write_id, write_digest=None if write_id is None else digest,
                    created_at=moment, updated_at=moment,
                ).returning(*memory_entries.c)
            )).one()
            return _entry_from_row(row)
    except IntegrityError:
        if write_id is None:
            raise
        # A concurrent write with the same key won; answer as its retry would.
        async with db.read() as conn:
            earlier = await _written(conn, who.tenant_id, owner, write_id, digest)
        if earlier is None:
            raise
        return earlier


async def _written(
    conn: AsyncConnection, tenant_id: str, subject: str, write_id: str, digest: str
) -> MemoryEntry | None:
    """The entry an earlier write with ``write_id`` made; CONFLICT if it wrote otherwise."""
    row = (await conn.execute(select(memory_entries).where(
        memory_entries.c.tenant_id == tenant_id, memory_entries.c.subject == subject,
        memory_entries.c.write_id == write_id))).first()
    if row is None:
        return None
    if row.write_digest != digest:
        raise Conflict(f"writeId {write_id!r} was already used for a different write")
    return _entry_from_row(row)


async def _locked_entry(conn: AsyncConnection, who: Identity, entry_id: str) -> Row[Any]:
    row = (await conn.execute(
        select(memory_entries)
        .where(memory_entries.c.id == entry_id, access.can_use_memory(who))
        .with_for_update()
    )).first()
    if row is None:
        raise NotFound(f"memory entry {entry_id!r} not found")
    return row


async def update_memory(
    db: Database,
    who: Identity,
    entry_id: str,
    *,
    content: str | None = None,
    pinned: bool | None = None,
    limits: MemoryLimits = MemoryLimits(),
) -> MemoryEntry:
    """Replace an entry's content or pinned flag; its id and ``created_at`` stay."""
    entry_id = _check_entry_id(entry_id)
    if content is None and pinned is None:
        raise InvalidArgument("give at least one of content or pinned")
    if content is not None:
        content = _check_content(content, limits)
    async with db.write() as conn:
        row = await _locked_entry(conn, who, entry_id)
        values: dict[str, Any] = {"updated_at": datetime.now(UTC)}
        if content is not None:
            await _change_scope_chars(
                conn, (row.tenant_id, row.subject, row.scope),
                len(content) - len(row.content), limits.scope_chars)
            values["content"] = content
        if pinned is not None:
            values["pinned"] = bool(pinned)
        updated = (await conn.execute(
            update(memory_entries).where(memory_entries.c.id == entry_id)
            .values(**values).returning(*memory_entries.c)
        )).one()
        return _entry_from_row(updated)


async def delete_memory(db: Database, who: Identity, entry_id: str) -> bool:
    """Forget an entry; NOT_FOUND when it does not exist or is not the caller's to see."""
    entry_id = _check_entry_id(entry_id)
    async with db.write() as conn:
        row = await _locked_entry(conn, who, entry_id)
        await conn.execute(delete(memory_entries).where(memory_entries.c.id == entry_id))
        await _change_scope_chars(
            conn, (row.tenant_id, row.subject, row.scope), -len(row.content), 0)
    return True


# ---- reads ------------------------------------------------------------------------


def _owned(who: Identity, subject: str, scopes: Sequence[str]) -> tuple[ColumnElement[bool], ...]:
    return (
        memory_entries.c.tenant_id == who.tenant_id,
        memory_entries.c.subject == subject,
        memory_entries.c.scope.in_(scopes) if len(scopes) > 1
        else memory_entries.c.scope == scopes[0],
    )


async def _recent(
    conn: AsyncConnection, who: Identity, subject: str, scopes: list[str], limit: int
) -> list[MemoryEntry]:
    rows = (await conn.execute(
        select(memory_entries).where(*_owned(who, subject, scopes))
        .order_by(memory_entries.c.pinned.desc(), memory_entries.c.updated_at.desc(),
                  memory_entries.c.id.desc())
        .limit(limit)
    )).all()
    return [_entry_from_row(row) for row in rows]


async def recent_memory(
    db: Database,
    who: Identity,
    scopes: Sequence[str],
    *,
    limit: int | None = DEFAULT_RECENT,
    subject: str | None = None,
) -> list[MemoryEntry]:
    """Pinned entries first, then the most recently updated, across ``scopes``."""
    wanted = _check_scopes(scopes)
    limit = _bounded(limit, DEFAULT_RECENT, MAX_RECENT, "limit")
    owner = _subject_of(who, subject)
    if not access.may_use_memory(who, owner):
        return []
    async with db.read() as conn:
        return await _recent(conn, who, owner, wanted, limit)


async def list_memory(
    db: Database,
    who: Identity,
    scope: str,
    *,
    subject: str | None = None,
    first: int | None = None,
    after: MemoryPosition | None = None,
) -> MemoryPage:
    """One page of a scope's entries: pinned first, then newest created first."""
    scope = check_scope(scope)
    first = _bounded(first, DEFAULT_PAGE, MAX_PAGE, "first")
    owner = _subject_of(who, subject)
    if not access.may_use_memory(who, owner):
        return MemoryPage(items=[], has_previous=False, has_next=False, total_count=0,
                          total_chars=0)
    owned = _owned(who, owner, [scope])
    key = tuple_(memory_entries.c.pinned, memory_entries.c.created_at, memory_entries.c.id)
    query = select(memory_entries).where(*owned).order_by(
        memory_entries.c.pinned.desc(), memory_entries.c.created_at.desc(),
        memory_entries.c.id.desc()).limit(first + 1)
    position = None
    if after is not None:
        position = tuple_(literal(after[0], Boolean()), literal(after[1], UTCDateTime()),
                          literal(after[2], String()))
        query = query.where(key < position)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
        has_previous = False
        if position is not None:
            has_previous = bool(await conn.scalar(
                select(exists().where(*owned, key >= position))))
        total_count = int(await conn.scalar(
            select(func.count()).select_from(memory_entries).where(*owned)) or 0)
        total_chars = await _scope_chars(conn, (who.tenant_id, owner, scope))
    return MemoryPage(
        items=[_entry_from_row(row) for row in rows[:first]],
        has_previous=has_previous,
        has_next=len(rows) > first,
        total_count=total_count,
        total_chars=total_chars,
    )


async def search_memory(
    db: Database,
    who: Identity,
    query: str,
    scopes: Sequence[str],
    *,
    first: int | None = DEFAULT_SEARCH,
    subject: str | None = None,
) -> list[MemoryHit]:
    """The subject's entries in ``scopes`` containing every word of ``query``, best first."""
    text = clean_query(query)
    wanted = _check_scopes(scopes)
    first = _bounded(first, DEFAULT_SEARCH, MAX_SEARCH, "first")
    owner = _subject_of(who, subject)
    if not access.may_use_memory(who, owner):
        return []
    limit = first + _CANDIDATE_MARGIN
    owned = _owned(who, owner, wanted)
    async with db.read() as conn:
        if db.is_sqlite:
            ranked = await _rank_sqlite(conn, text, who.tenant_id, owner, owned, limit)
        else:
            ranked = await _rank_postgres(conn, text, owned, limit)
    return _newest_first_among_near_ties(ranked)[:first]


def _owner_token(tenant_id: str, subject: str) -> str:
    """The FTS5 ``owner`` token the triggers write: hex of tenant, U+001F, subject."""
    return (tenant_id + "\x1f" + subject).encode("utf-8").hex().upper()


async def _rank_sqlite(
    conn: AsyncConnection, text: str, tenant_id: str, subject: str,
    owned: tuple[ColumnElement[bool], ...], limit: int,
) -> list[MemoryHit]:
    words = fts5_match(text)
    if not words:
        return []
    match = f'owner : "{_owner_token(tenant_id, subject)}" AND body : ({words})'
    # bm25() is lower-is-better; the owner column weighs nothing in the rank.
    bm25 = func.bm25(literal_column("memory_search"), 0.0, 1.0)
    query = (
        select(*memory_entries.c, (-bm25).label("score"))
        .select_from(
            _fts.join(_fts_keys, _fts_keys.c.key == _fts.c.rowid)
            .join(memory_entries, memory_entries.c.id == _fts_keys.c.entry_id)
        )
        .where(literal_column("memory_search").op("MATCH")(match), *owned)
        .order_by(bm25.asc(), memory_entries.c.updated_at.desc(), memory_entries.c.id.desc())
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    return [MemoryHit(entry=_entry_from_row(row), score=float(row.score)) for row in rows]


def _term_query(term: str) -> ColumnElement[Any]:
    return func.plainto_tsquery(_SIMPLE, literal(term))


async def _rank_postgres(
    conn: AsyncConnection, text: str, owned: tuple[ColumnElement[bool], ...], limit: int
) -> list[MemoryHit]:
    terms = list((await conn.scalars(
        select(func.unnest(func.tsvector_to_array(func.to_tsvector(_SIMPLE, text))))
    )).all())[:MAX_TERMS]
    if not terms:
        return []  # nothing but punctuation: no word can match
    # Document frequencies among the candidates (one person's scopes: a few hundred
    # entries at most), for BM25-shaped weights as in message search.
    counts = (await conn.execute(
        select(func.count(), *(func.count().filter(_VECTOR.op("@@")(_term_query(term)))
                               for term in terms))
        .select_from(memory_entries).where(*owned)
    )).one()
    documents = int(counts[0])
    weights = [math.log(1.0 + (documents - int(n) + 0.5) / (int(n) + 0.5))
               for n in counts[1:]]
    score: ColumnElement[Any] = sum(
        (literal(weight) * func.ts_rank(_VECTOR, _term_query(term), 1)
         for term, weight in zip(terms, weights, strict=True)),
        start=literal(0.0),
    )
    query = (
        select(*memory_entries.c, score.label("score"))
        .where(*owned, _VECTOR.op("@@")(func.plainto_tsquery(_SIMPLE, text)))
        .order_by(literal_column("score").desc(), memory_entries.c.updated_at.desc(),
                  memory_entries.c.id.desc())
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    return [MemoryHit(entry=_entry_from_row(row), score=float(row.score)) for row in rows]


def _newest_first_among_near_ties(ranked: list[MemoryHit]) -> list[MemoryHit]:
    """Reorder runs of near-equal scores most recently updated first (best first in)."""
    ordered: list[MemoryHit] = []
    start = 0
    while start < len(ranked):
        lead = ranked[start].score
        end = start + 1
        while end < len(ranked) and lead - ranked[end].score <= (
            RELEVANCE_TIE_TOLERANCE * abs(lead) + 1e-12
        ):
            end += 1
        run = ranked[start:end]
        run.sort(key=lambda hit: (hit.entry.updated_at, hit.entry.id), reverse=True)
        ordered.extend(run)
        start = end
    return ordered


# ---- the model's context ----------------------------------------------------------


async def memory_message(
    conn: AsyncConnection, who: Identity, chat: Chat, scopes: Sequence[str]
) -> Message:
    """The SYSTEM message of type ``memory`` that opens a model context.

    ``props.entries`` is the recent memory (``DEFAULT_RECENT`` entries, pinned first)
    of the chat's creator over ``scopes``, as ``[{id, scope, content, pinned}]``. A
    caller who may not read the creator's memory gets the message with no entries,
    as for a person with no memory. It is not stored: its id is ``memory:<chat id>``,
    its sequence 0 (before every stored message) and its time the newest entry's.
    """
    wanted = _check_scopes(scopes)
    creator = chat.created_by
    entries: list[MemoryEntry] = []
    if creator is not None and chat.tenant_id == who.tenant_id and access.may_use_memory(
        who, creator
    ):
        entries = await _recent(conn, who, creator, wanted, DEFAULT_RECENT)
    moment = max((entry.updated_at for entry in entries), default=chat.created_at)
    return Message(
        id=f"memory:{chat.id}", chat_id=chat.id, sequence=0, request_id=None,
        role="SYSTEM", type=MEMORY_MESSAGE_TYPE,
        props={"entries": [
            {"id": e.id, "scope": e.scope, "content": e.content, "pinned": e.pinned}
            for e in entries
        ]},
        block_id=None, thread_id=None, assistant_id=None, status="COMPLETED",
        metadata=None, created_at=moment, updated_at=moment,
    )
