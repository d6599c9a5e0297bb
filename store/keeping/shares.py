"""Share links: a read-only snapshot of one branch of a chat, and forks of a branch.

Rules kept here:

- **Who shares**: whoever may change the chat (its creator, its team for a team chat,
  an admin of the tenant); the agent role alone does not. A link shows the branch that
  ends at a message of the chat (default: the active leaf); a message of another chat
  is NOT_FOUND and nothing is written.
- **A snapshot**: the link keeps the branch's path as it is when shared (at most
  :data:`MAX_SHARED_MESSAGES` messages). A message written later — on that branch or
  another — never shows; one deleted since is gone from it; one corrected in place
  shows as it reads now. Other branches, the chat's other fields, its owner, usage and
  memory are never reachable through a link.
- **Tokens**: ``secrets.token_urlsafe(24)`` (192 random bits), handed out once, in the
  answer that makes the link. The table keeps only its SHA-256, so a copy of the
  database opens no link (with 192 random bits an unsalted hash is enough: there is
  nothing to guess from). A lost link cannot be shown again; make a new one.
- **Who reads**: ``PUBLIC`` — anyone with the link, signed in or not; ``TENANT`` — an
  identity of the chat's tenant. A revoked or expired link, a link to a deleted or
  expired chat, a link the caller's audience does not reach and a token never issued
  are one and the same NOT_FOUND.
- **Views**: each read answered counts one (a fork does not), added up in memory and
  written in batches (:class:`ShareViews`). A wrong token is one indexed probe that
  writes nothing.
- **Revoking**: the link's creator, or whoever may change the chat. Revoking again
  answers the link as it is.
- **Forks**: a branch shared with the caller (by token) or one the caller may read (by
  the id of its last message) becomes a new chat of the caller's, in one transaction:
  new ids, the same order, each copy below the one before it; the title (and where it
  came from), assistant and mode come along. A fork of a link copies what the link
  shows (role, type, props, assistant); a fork of one's own branch also keeps each
  message's status, block, thread, metadata and token count. Request ids are never
  copied.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    String,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.access import present
from chatql.store.chats.chat import insert_chat, normalised_fields
from chatql.store.chats.titles import entitle
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.prepared import PreparedStatement, compile_prepared, fetch, message_attribute
from chatql.store.db.rows import Content, content_maker, field_names
from chatql.store.db.tables import UTCDateTime, chats, files, message_files, messages, shares
from chatql.store.errors import ChatArchived, Forbidden, InvalidArgument, NotFound
from chatql.store.files.service import file_from_row
from chatql.store.ids import check_chat_id, check_message_id, new_id
from chatql.store.keeping.archive import ChatArchive, restore_archive
from chatql.store.messages import tree
from chatql.store.messages.message import chain_end, insert_chain, message_from_row
from chatql.store.records import Chat, File, Identity, Message, Share, SharedChat, SharedMessage

__all__ = [
    "MAX_SHARED_MESSAGES",
    "SHARED_COLUMNS",
    "SHARE_AUDIENCES",
    "ShareViews",
    "chat_shares",
    "fork_chat",
    "read_shared",
    "revoke_share",
    "share_chat",
    "shared_file",
    "token_hash",
]

logger = logging.getLogger("chatql")

SHARE_AUDIENCES = ("PUBLIC", "TENANT")
#: The longest branch a link shows or a fork copies.
MAX_SHARED_MESSAGES = 10_000
#: Random bytes in a token (``token_urlsafe`` writes 4 characters per 3 bytes).
TOKEN_BYTES = 24
# What a token can look like; anything else is NOT_FOUND without a database read.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")
#: The one answer for every link that does not open (never names the token).
_GONE = "share not found"


def token_hash(token: str) -> str:
    """What the table keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def _share_from_row(row: Any) -> Share:
    return Share(id=row.id, chat_id=row.chat_id, message_id=row.message_id,
                 audience=row.audience, created_by=row.created_by, created_at=row.created_at,
                 expires_at=row.expires_at, revoked_at=row.revoked_at, views=int(row.views))


def _check_expiry(expires_at: datetime | None) -> None:
    if expires_at is None:
        return
    if expires_at.tzinfo is None:
        raise InvalidArgument("expiresAt needs a UTC offset")
    if expires_at <= now():
        raise InvalidArgument("expiresAt must be in the future")


async def _branch(conn: AsyncConnection, chat_id: str, leaf_id: str) -> list[str]:
    """The ids on the path from the root to ``leaf_id``, oldest first: one walk up the
    parent links, stopped past the longest branch a link holds."""
    walk = tree.path_walk(leaf_id, chat=chat_id, count=MAX_SHARED_MESSAGES + 1,
                          dialect=conn.dialect.name)
    ids = list((await conn.scalars(select(walk.c.id).order_by(walk.c.n.desc()))).all())
    if not ids:
        raise NotFound(f"message {leaf_id!r} not found in chat {chat_id!r}")
    if len(ids) > MAX_SHARED_MESSAGES:
        raise InvalidArgument(
            f"a branch longer than {MAX_SHARED_MESSAGES} messages cannot be shared or forked")
    return ids


async def _path_messages(conn: AsyncConnection, chat_id: str,
                         ids: Sequence[str]) -> list[Message]:
    """The messages ``ids`` of one chat still in the store, in branch order (a
    descendant's sequence is always above its ancestors'): one statement."""
    if not ids:
        return []
    rows = (await conn.execute(
        select(messages).where(messages.c.chat_id == chat_id, messages.c.id.in_(ids))
        .order_by(messages.c.sequence))).all()
    return [message_from_row(row) for row in rows]


async def _copy_file_links(conn: AsyncConnection, source_chat_id: str, chat_id: str,
                           copies: dict[str, str]) -> None:
    """The copied messages reference the same files as their originals: the fork's
    owner reads them through the fork (as through any chat they may read), also after
    the link it came from is revoked, and they are kept while the fork references them.
    Files belong to a tenant: a fork made in another tenant (from a public link) keeps
    the references in its messages but reads no file through them."""
    rows = (await conn.execute(
        select(message_files.c.message_id, message_files.c.file_id).where(
            message_files.c.chat_id == source_chat_id,
            message_files.c.message_id.in_(list(copies))))).all()
    if rows:
        await conn.execute(insert(message_files), [
            {"message_id": copies[row.message_id], "file_id": row.file_id, "chat_id": chat_id}
            for row in rows])


# ---- making, listing and revoking links -------------------------------------------------


async def share_chat(db: Database, who: Identity, chat_id: str, *,
                     message_id: str | None = None, audience: str = "TENANT",
                     expires_at: datetime | None = None,
                     stop_archived: bool = False) -> Share:
    """A new link to the branch of ``chat_id`` ending at ``message_id`` (default: the
    active leaf) as it is now; the answer carries the token, the only time it is seen.

    ``stop_archived`` raises ChatArchived for a chat whose messages are in the archive
    (the caller brings them back and asks again)."""
    check_chat_id(chat_id)
    if message_id is not None:
        check_message_id(message_id)
    if audience not in SHARE_AUDIENCES:
        raise InvalidArgument(f"audience must be one of {', '.join(SHARE_AUDIENCES)}")
    _check_expiry(expires_at)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    async with db.write() as conn:
        row = await access.require(conn, who, chat_id, "write",
                                   columns=(chats.c.tenant_id, chats.c.active_leaf_id),
                                   stop_archived=stop_archived)
        leaf = message_id or row.active_leaf_id
        if leaf is None:
            raise InvalidArgument(f"chat {chat_id!r} has no messages to share")
        sequence = await conn.scalar(select(messages.c.sequence).where(
            messages.c.id == leaf, messages.c.chat_id == chat_id))
        if sequence is None:
            raise NotFound(f"message {leaf!r} not found in chat {chat_id!r}")
        path = await _branch(conn, chat_id, leaf)
        share = Share(id=new_id(), chat_id=chat_id, message_id=leaf, audience=audience,
                      created_by=who.user_id, created_at=now(), expires_at=expires_at,
                      revoked_at=None, views=0, token=token)
        await conn.execute(insert(shares).values(
            id=share.id, token_hash=token_hash(token), chat_id=chat_id,
            tenant_id=row.tenant_id, created_by=share.created_by, message_id=leaf,
            leaf_sequence=int(sequence), message_ids=path, audience=audience,
            created_at=share.created_at, expires_at=expires_at))
    return share


async def chat_shares(db: Database, who: Identity,
                      chat_ids: Sequence[str]) -> dict[str, list[Share]]:
    """The links of each chat the caller may change (newest first, revoked and expired
    ones too); chats it may not change have none to show."""
    if not chat_ids:
        return {}
    query = (select(shares).join(chats, chats.c.id == shares.c.chat_id)
             .where(shares.c.chat_id.in_(list(chat_ids)), access.can_write(who))
             .order_by(shares.c.created_at.desc(), shares.c.id.desc()))
    found: dict[str, list[Share]] = {chat_id: [] for chat_id in chat_ids}
    async with db.read() as conn:
        for row in (await conn.execute(query)).all():
            found[row.chat_id].append(_share_from_row(row))
    return found


async def revoke_share(db: Database, who: Identity, share_id: str) -> Share:
    """Close a link for good: its creator, or whoever may change the chat, may."""
    _check_share_id(share_id)
    may_revoke = or_(shares.c.created_by == who.user_id, access.can_write(who))
    async with db.write() as conn:
        row = (await conn.execute(
            select(shares, may_revoke.label("allowed"))
            .join(chats, chats.c.id == shares.c.chat_id)
            .where(shares.c.id == share_id, access.can_read(who), present()))).first()
        if row is None:
            raise NotFound(f"share {share_id!r} not found")
        if not row.allowed:
            raise Forbidden(
                f"only the creator of share {share_id!r} or whoever may change its chat "
                "may revoke it")
        if row.revoked_at is not None:
            return _share_from_row(row)
        revoked = (await conn.execute(
            update(shares).where(shares.c.id == share_id).values(revoked_at=now())
            .returning(shares))).one()
    return _share_from_row(revoked)


def _check_share_id(share_id: str) -> None:
    """A share id follows the id rule; anything else cannot name one."""
    try:
        check_message_id(share_id)
    except InvalidArgument:
        raise InvalidArgument("share id must be 1-64 characters of letters, digits, '_', "
                              "'.', ':' or '-'") from None


# ---- reading a link ---------------------------------------------------------------------


def _opens(token_digest: Any, tenant_id: Any, at: Any) -> list[ColumnElement[bool]]:
    """Rows of ``shares`` (joined with ``chats``) a token opens for a caller of
    ``tenant_id`` at ``at``: not revoked, not expired, reaching the caller (PUBLIC, or
    TENANT of its tenant; a NULL tenant, a caller who named no one, reaches PUBLIC
    only), of a chat that is there. Values or bind parameters."""
    return [
        shares.c.token_hash == token_digest, shares.c.revoked_at.is_(None),
        or_(shares.c.expires_at.is_(None), shares.c.expires_at > at),
        or_(shares.c.audience == "PUBLIC",
            and_(shares.c.audience == "TENANT", shares.c.tenant_id == tenant_id)),
        chats.c.deleted_at.is_(None), or_(chats.c.expires_at.is_(None), chats.c.expires_at > at),
    ]


async def _open(conn: AsyncConnection, token: str, tenant_id: str | None) -> Row[Any]:
    """The link ``token`` opens for the caller, with its chat's columns; NOT_FOUND for
    anything that does not open (one indexed probe)."""
    _check_token(token)
    row: Any = (await conn.execute(
        select(shares.c.id, shares.c.chat_id, shares.c.message_ids, shares.c.created_at,
               shares.c.tenant_id, shares.c.created_by, chats.c.title, chats.c.title_source,
               chats.c.assistant_id, chats.c.mode, chats.c.archived_at)
        .join(chats, chats.c.id == shares.c.chat_id)
        .where(*_opens(token_hash(token), tenant_id, now())))).first()
    if row is None:
        raise NotFound(_GONE)
    found: Row[Any] = row
    return found


def _check_token(token: str) -> None:
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise NotFound(_GONE)


#: The columns a shared message is read from: :class:`SharedMessage`'s fields, in order.
SHARED_COLUMNS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(SharedMessage))


def _converters() -> tuple[Callable[[Any], Any] | None, ...]:
    found = [message_attribute(name) for name in SHARED_COLUMNS]
    assert all(attribute is not None for attribute in found)
    return tuple(attribute.convert for attribute in found if attribute is not None)


_CONVERT = _converters()
_TIME = _CONVERT[SHARED_COLUMNS.index("created_at")]


def _shared_statement(db: Database) -> PreparedStatement:
    """The branch a token opens, in one driver-level statement: each shared message
    still in the store (:data:`SHARED_COLUMNS`, in branch order — a descendant's
    sequence is above its ancestors'), then the link's id and creation time and the
    chat's title. Slots ``hash`` and ``tenant`` (``now`` is :func:`fetch`'s)."""
    key = ("shared_branch", db.dialect)
    statement: PreparedStatement | None = db.statements.get(key)
    if statement is None:
        path = (func.jsonb_array_elements_text(shares.c.message_ids) if db.is_postgres
                else func.json_each(shares.c.message_ids)).table_valued("value")
        # Each message by its id, in the link's chat. SQLite would rather walk the
        # chat's (chat_id, sequence) index, matching each row against the whole path
        # (200 x 200 for a 200-message branch); a chat id it cannot look up by keeps it
        # on the primary key.
        chat_of = (messages.c.chat_id if db.is_postgres
                   else messages.c.chat_id.concat(""))
        query = (
            select(*(messages.c[name] for name in SHARED_COLUMNS), shares.c.id,
                   shares.c.created_at, chats.c.title)
            .select_from(shares)
            .join(chats, chats.c.id == shares.c.chat_id)
            .join(path, true())
            .join(messages, and_(chat_of == shares.c.chat_id, messages.c.id == path.c.value))
            .where(*_opens(bindparam("hash", type_=String()),
                           bindparam("tenant", type_=String()),
                           bindparam("now", type_=UTCDateTime())))
            .order_by(messages.c.sequence)
        )
        statement = db.statements[key] = compile_prepared(query, db.dialect)
    return statement


async def _bring_back(db: Database, archive: ChatArchive | None, link: Row[Any]) -> None:
    """Restore a shared chat whose messages went to the archive (a read of the link
    reads them, as any read of the chat does). The link's reader need not be anyone
    the chat knows, so the restore is done as a reader of the chat's tenant."""
    if archive is None:
        raise ChatArchived(link.chat_id)
    reader = Identity(user_id=link.created_by, tenant_id=link.tenant_id,
                      roles=frozenset({"agent"}))
    await restore_archive(db, archive, reader, link.chat_id)


async def read_shared(db: Database, token: str, *, tenant_id: str | None,
                      archive: ChatArchive | None = None) -> SharedChat:
    """What the link ``token`` shows to a caller of ``tenant_id`` (None: a caller who
    named no one). Whoever answers with it counts the view (:meth:`ShareViews.count`
    with its ``share_id``): a read is only a read."""
    _check_token(token)
    rows = await fetch(db, _shared_statement(db), {"hash": token_hash(token),
                                                   "tenant": tenant_id})
    if rows:
        width = len(SHARED_COLUMNS)
        convert = _CONVERT
        found = [SharedMessage(*[value if to is None else to(value)
                                 for value, to in zip(row[:width], convert, strict=True)])
                 for row in rows]
        share_id, created_at, title = rows[0][width], rows[0][width + 1], rows[0][width + 2]
        created_at = created_at if _TIME is None else _TIME(created_at)
    else:
        # Nothing opened — or a link whose messages are not in the store: archived
        # (brought back, then read), or every one of them deleted since.
        async with db.read() as conn:
            link = await _open(conn, token, tenant_id)
        if link.archived_at is not None:
            await _bring_back(db, archive, link)
            return await read_shared(db, token, tenant_id=tenant_id, archive=archive)
        found, share_id, created_at, title = [], link.id, link.created_at, link.title
    return SharedChat(title=title, created_at=created_at, messages=found, share_id=share_id)


async def shared_file(db: Database, share_id: str, file_id: str) -> File | None:
    """The READY file ``file_id`` as the link ``share_id`` shows it: None when the link
    is revoked or expired, its chat deleted, or none of its messages references the
    file (what a link's file addresses are checked against on every read)."""
    at = now()
    async with db.read() as conn:
        link = (await conn.execute(
            select(shares.c.chat_id, shares.c.message_ids)
            .join(chats, chats.c.id == shares.c.chat_id)
            .where(shares.c.id == share_id, shares.c.revoked_at.is_(None),
                   or_(shares.c.expires_at.is_(None), shares.c.expires_at > at),
                   chats.c.deleted_at.is_(None),
                   or_(chats.c.expires_at.is_(None), chats.c.expires_at > at)))).first()
        if link is None:
            return None
        holders = set((await conn.scalars(select(message_files.c.message_id).where(
            message_files.c.file_id == file_id,
            message_files.c.chat_id == link.chat_id))).all())
        if not holders & set(link.message_ids or ()):
            return None
        row = (await conn.execute(select(files).where(
            files.c.id == file_id, files.c.state == "READY"))).first()
    return None if row is None else file_from_row(row)


async def _write_views(db: Database, counted: dict[str, int]) -> None:
    async with db.write() as conn:
        await conn.execute(
            update(shares).where(shares.c.id == bindparam("b_id"))
            .values(views=shares.c.views + bindparam("b_views")),
            [{"b_id": share_id, "b_views": count} for share_id, count in counted.items()])


class ShareViews:
    """Views of share links, added up in memory and written in batches.

    Reading a link is a read: writing its view in the same request would make every
    read a write transaction. Each instance adds up the views it served and writes them
    every ``interval`` seconds (one statement for all), when asked (before its chats'
    links are listed) and when it closes; a crash loses at most one interval's views.
    A batch that fails is kept for the next.
    """

    def __init__(self, db: Database, *, interval: float = 1.0) -> None:
        self._db = db
        self._interval = interval
        self._pending: dict[str, int] = {}
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def count(self, share_id: str) -> None:
        self._pending[share_id] = self._pending.get(share_id, 0) + 1

    async def flush(self) -> None:
        """Write the views counted so far."""
        counted, self._pending = self._pending, {}
        if not counted:
            return
        try:
            await _write_views(self._db, counted)
        except BaseException:
            for share_id, count in counted.items():
                self._pending[share_id] = self._pending.get(share_id, 0) + count
            raise

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="chatql-share-views")

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._stop.wait()
            if self._stop.is_set():
                return
            try:
                await self.flush()
            except Exception as error:  # kept, and tried again next time
                logger.warning("share views not written yet: %s", error)


# ---- forks ------------------------------------------------------------------------------


_SHOWN = content_maker(field_names(SharedMessage), given=("status",))
_KEPT = content_maker(field_names(Message), given=("request_id",))


def _shown(found: Iterable[Message]) -> Iterator[Content]:
    """The copies' content (store.db.rows.Content) from a link: what the link shows
    (a SharedMessage's fields), nothing more; each a whole message."""
    return _SHOWN(found, status="COMPLETED")


def _kept(found: Iterable[Message]) -> Iterator[Content]:
    """The copies' content from one's own branch: all the record's but the request id."""
    return _KEPT(found, request_id=None)


async def fork_chat(db: Database, who: Identity, *, token: str | None = None,
                    message_id: str | None = None, tenant_id: str | None = None,
                    archive: ChatArchive | None = None) -> Chat:
    """A new chat of the caller's continuing a branch: the one the link ``token`` shows
    (to a caller of ``tenant_id``), or the one ending at ``message_id`` of a chat the
    caller may read. Exactly one of the two."""
    if (token is None) == (message_id is None):
        raise InvalidArgument("give exactly one of fromShare and fromMessage")
    if token is not None:
        async with db.read() as conn:
            link = await _open(conn, token, tenant_id)
        if link.archived_at is not None:
            await _bring_back(db, archive, link)
        return await _fork(db, who, link.chat_id, link.message_ids, _shown,
                           lambda conn: _open(conn, token, tenant_id))
    assert message_id is not None
    check_message_id(message_id)
    async with db.read() as conn:
        chat_id = await conn.scalar(
            select(message_chats.c.chat_id).where(message_chats.c.id == message_id))
    if chat_id is None:
        raise NotFound(f"message {message_id!r} not found")

    async def readable(conn: AsyncConnection) -> Row[Any]:
        try:
            row: Row[Any] = await access.require(conn, who, str(chat_id), "read",
                                        columns=(chats.c.title, chats.c.title_source,
                                                 chats.c.assistant_id, chats.c.mode))
        except NotFound:
            raise NotFound(f"message {message_id!r} not found") from None
        return row

    return await _fork(db, who, str(chat_id), None, _kept, readable, leaf=message_id)


async def _fork(db: Database, who: Identity, chat_id: str, path: Sequence[str] | None,
                content: Callable[[Iterable[Message]], Iterator[Content]],
                source: Callable[[AsyncConnection], Awaitable[Row[Any]]], *,
                leaf: str | None = None) -> Chat:
    """Copy the branch (``path``, or the path to ``leaf``) of ``chat_id`` as a new chat
    of ``who``'s, checking the ``source`` (the link, or the caller's access) again in
    the writing transaction."""
    async with db.write() as conn:
        origin = await source(conn)
        if path is None:
            assert leaf is not None
            path = await _branch(conn, chat_id, leaf)
        found = await _path_messages(conn, chat_id, path)
        stamp = now()
        values = {
            "id": new_id(), "assistant_id": origin.assistant_id, "mode": origin.mode,
            "channel": "api", "status": "ACTIVE",
            **normalised_fields({"title": origin.title, "share": "PRIVATE", "public": False,
                                 "sort": 0, "metadata": None, "tags": [], "pinned": False,
                                 "expires_at": None}),
            # The title comes along with where it came from: a person's stays theirs.
            "title_source": origin.title_source,
            "activity_at": stamp, "created_at": stamp, "updated_at": stamp,
            "created_by": who.user_id, "updated_by": who.user_id, "team_id": who.team_id,
            "tenant_id": who.tenant_id,
        }
        chat = await insert_chat(conn, values)
        if not found:
            return chat
        written = await insert_chain(conn, chat.id, [new_id() for _ in found],
                                     list(content(found)),
                                     last_sequence=0, parent_id=None, explicit_parent=True)
        # A link row names its chat's tenant; one's own branch is in one's tenant.
        if origin._mapping.get("tenant_id", who.tenant_id) == who.tenant_id:
            await _copy_file_links(conn, chat_id, chat.id, {
                old.id: new.id for old, new in zip(found, written, strict=True)})
        # An untitled source: the fork is titled from its first question, as any chat.
        title = None if chat.title is not None else await entitle(conn, chat.id, written)
    if title is not None:
        chat = dataclasses.replace(chat, title=title, title_source="AUTO")
    return chain_end(chat, written[-1])
