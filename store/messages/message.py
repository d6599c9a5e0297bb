"""Messages: idempotent appends, updates, deletes and keyset pages.

Sequences are handed out under a lock on the chat row (``SELECT … FOR UPDATE`` on
Postgres; the single SQLite writer elsewhere), so concurrent appends to one chat get
consecutive, gap-free numbers. The append receipt is written in the same transaction
as the batch, so a batch is either wholly accepted with its receipt or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import Row, Select, String, bindparam, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.access import present
from chatql.store.chats import titles
from chatql.store.chats.chat import chat_from_row, fetch_visible_chat
from chatql.store.clock import now
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.prepared import CHAT_COLUMNS
from chatql.store.db.rows import (
    CONTENT_COLUMNS,
    Content,
    content_maker,
    field_names,
    generated,
    record_from_mapping,
    write_chain,
)
from chatql.store.db.tables import chats, closed_chats, messages
from chatql.store.errors import (
    ChatClosed,
    Conflict,
    InvalidArgument,
    InvalidCursor,
    NotFound,
    PayloadTooLarge,
)
from chatql.store.files import links as file_links
from chatql.store.ids import check_append_id, check_chat_id, check_message_id, new_id
from chatql.store.jsonutil import canonical_digest
from chatql.store.limits import (
    MAX_TOKENS,
    TYPE_CHARS,
    check_length,
    check_optional_name,
    check_tokens,
)
from chatql.store.messages import feedback, pages, tree
from chatql.store.messages.receipts import (
    Earlier,
    earlier_receipt,
    earlier_receipt_joined,
    receipted_write,
)
from chatql.store.records import AppendReceipt, BranchPosition, Chat, Identity, Message, MessagePage

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_APPEND_BATCH",
    "MAX_PAGE_SIZE",
    "MAX_TOKENS",
    "MESSAGE_STATUSES",
    "ROLES",
    "MessageFilter",
    "NewMessage",
    "append_messages",
    "batch_digest",
    "check_page_size",
    "delete_messages",
    "edit_message",
    "get_message",
    "insert_chain",
    "insert_messages",
    "list_branch",
    "list_messages",
    "lock_chat_for_append",
    "lock_chat_for_write",
    "message_from_row",
    "message_siblings",
    "new_contents",
    "switch_branch",
    "update_message",
    "wire_name",
]

ROLES = ("USER", "ASSISTANT", "SYSTEM", "TOOL")
MESSAGE_STATUSES = ("COMPLETED", "INTERRUPTED", "FAILED")
MAX_APPEND_BATCH = 1_000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


def wire_name(name: str) -> str:
    """The API's camelCase name of a field or column (``request_id``: ``requestId``)."""
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to be written, as a caller describes it.

    Every content column of a message (:data:`store.db.rows.CONTENT_COLUMNS`) is a
    field here, of the column's name: appends, edits and persists write them all by
    name. A field is on the wire (:meth:`wire`, the append digest) under its
    :func:`wire_name` unless its metadata says ``wire: False``.
    """

    role: str
    type: str
    props: dict[str, Any]
    id: str | None = None
    request_id: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    assistant_id: str | None = None
    metadata: dict[str, Any] | None = None
    # Not in MessageInput (never sent, so never part of an append's digest).
    status: str = field(default="COMPLETED", metadata={"wire": False})
    tokens: int | None = None

    def wire(self) -> dict[str, Any]:
        """The message as sent on the wire (camelCase, nulls left out), for digests."""
        return {key: value for key, value in _wire(self).items() if value is not None}

    def check(self) -> None:
        if self.id is not None:
            check_message_id(self.id)
        if self.role not in ROLES:
            raise InvalidArgument(f"role must be one of {', '.join(ROLES)}")
        check_length(self.type, "message type", TYPE_CHARS)
        if self.type == "event":
            raise InvalidArgument("messages of type 'event' are never stored")
        if not isinstance(self.props, dict):
            raise InvalidArgument("props must be a JSON object")
        if self.metadata is not None and not isinstance(self.metadata, dict):
            raise InvalidArgument("metadata must be a JSON object")
        if self.status not in MESSAGE_STATUSES:
            raise InvalidArgument(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
        check_tokens(self.tokens)
        for name, limit in _NAMES:
            check_optional_name(getattr(self, name), name, limit)


# A content column a new message cannot say would be written NULL by every writer.
_UNSAID = set(CONTENT_COLUMNS) - field_names(NewMessage)
if _UNSAID:
    raise TypeError(f"NewMessage lacks the content columns {sorted(_UNSAID)}")
# The wire's fields by their wire names, nulls and all: the id first (as the wire has
# always spelled it), then the rest in field order.
_WIRE_FIELDS = sorted((item.name for item in dataclasses.fields(NewMessage)
                       if item.metadata.get("wire", True)), key=lambda name: name != "id")
_WIRE_ITEMS = ", ".join(f"{wire_name(name)!r}: message.{name}" for name in _WIRE_FIELDS)
_wire: Callable[[NewMessage], dict[str, Any]] = generated("_wire", "message",
                                                          f"{{{_WIRE_ITEMS}}}")
#: The optional names a message carries, checked against their column's length: the
#: nullable text columns of its content that have one.
_NAMES = tuple((column.name, column.type.length)
               for column in (messages.c[name] for name in CONTENT_COLUMNS)
               if isinstance(column.type, String) and column.type.length and column.nullable)
#: New messages' content, read by name; ``assistant_id`` for one that names none.
new_contents: Callable[..., Iterator[Content]] = content_maker(
    field_names(NewMessage), defaults=("assistant_id",))


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """Narrows a message list; every field given must match."""

    request_id: str | None = None
    role: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    type: str | None = None

    def clauses(self) -> list[Any]:
        pairs = (
            (messages.c.request_id, self.request_id),
            (messages.c.role, self.role),
            (messages.c.block_id, self.block_id),
            (messages.c.thread_id, self.thread_id),
            (messages.c.type, self.type),
        )
        return [column == value for column, value in pairs if value is not None]

    def given(self) -> dict[str, str]:
        """The fields given, by column name, in the order of the filter's fields."""
        return {name: value for name, value in (
            ("request_id", self.request_id), ("role", self.role),
            ("block_id", self.block_id), ("thread_id", self.thread_id), ("type", self.type),
        ) if value is not None}

    def key(self) -> str:
        """A stable text form, so cursors can be bound to the filter."""
        return "|".join("" if v is None else v for v in (
            self.request_id, self.role, self.block_id, self.thread_id, self.type
        ))


def message_from_row(row: Row[Any]) -> Message:
    return record_from_mapping(row._mapping)


def batch_digest(batch: Sequence[NewMessage]) -> str:
    """SHA-256 of the batch's canonical JSON (wire names, nulls left out)."""
    return canonical_digest([message.wire() for message in batch])


async def lock_chat_for_append(conn: AsyncConnection, who: Identity, chat_id: str) -> int:
    """Lock the chat for appending and return its last handed-out sequence.

    A purged id is CHAT_CLOSED; a deleted, absent or unreadable chat is NOT_FOUND.
    """
    return (await lock_chat_for_write(conn, who, chat_id)).last_sequence


class ChatEnd(NamedTuple):
    """Where a locked chat's next messages go: after ``last_sequence``, below
    ``active_leaf_id`` (None while the chat has no messages)."""

    last_sequence: int
    active_leaf_id: str | None


async def lock_chat_for_write(conn: AsyncConnection, who: Identity, chat_id: str,
                              *, stop_archived: bool = False) -> ChatEnd:
    """:func:`lock_chat_for_append`, also returning the chat's active leaf (one read);
    ``stop_archived`` raises ChatArchived for a chat whose messages are archived."""
    row = await _locked_chat(conn, who, chat_id, stop_archived=stop_archived)
    return ChatEnd(int(row.last_sequence), row.active_leaf_id)


_END_COLUMNS = (chats.c.last_sequence, chats.c.active_leaf_id)
# An append reads the whole chat under its lock: the chat as the append commits it is
# that row with the append's end, which the live chat lists are then sent.
_APPEND_COLUMNS = (*(chats.c[name] for name in CHAT_COLUMNS), chats.c.last_sequence)


async def _locked_chat(conn: AsyncConnection, who: Identity, chat_id: str, *,
                       stop_archived: bool,
                       joined: Callable[[Select[Any]], Select[Any]] | None = None,
                       params: dict[str, Any] | None = None,
                       columns: tuple[Any, ...] = _END_COLUMNS) -> Any:
    """The chat's row for :func:`lock_chat_for_write` (with what ``joined`` adds)."""
    try:
        row = await access.require(conn, who, chat_id, "append", columns=columns,
                                   lock=True, stop_archived=stop_archived, joined=joined,
                                   params=params)
    except NotFound:
        # A purged id has no chat row (and is never used again), so the tombstone is
        # only looked for here — also when a purge that held the chat lock while we
        # waited has committed it by now: report the closure, not a mere absence.
        # Scoped to the caller's tenant: another tenant's purged id reads as absent.
        if await conn.scalar(select(exists().where(
            closed_chats.c.id == chat_id, closed_chats.c.tenant_id == who.tenant_id
        ))):
            raise ChatClosed(
                f"chat {chat_id!r} was purged; it accepts no more messages") from None
        raise
    return row


class AppendStart(NamedTuple):
    """What an append reads under the chat's lock before it writes."""

    end: ChatEnd
    #: The chat as the lock read found it.
    chat: Chat
    #: The receipt under the append id, or None (see store.receipts.receipted_write).
    earlier: Earlier | None
    #: The active leaf's and its jump target's links (see store.tree.chain_links).
    leaf: tuple[tree.Link, tree.Link] | None


def _append_state(query: Select[Any]) -> Select[Any]:
    """``query`` over ``chats`` with the receipt and the active leaf joined."""
    return tree.leaf_joined(earlier_receipt_joined(query))


# Postgres: read after the lock is held (see _lock_for_append).
_APPEND_STATE = _append_state(select().select_from(chats)).where(
    chats.c.id == bindparam("b_chat"))


async def _lock_for_append(conn: AsyncConnection, who: Identity, chat_id: str,
                           append_id: str, *, stop_archived: bool) -> AppendStart:
    """Lock the chat for an append and read what the append needs next: the receipt
    under ``append_id`` and the active leaf with its jump target.

    On SQLite the write transaction holds the database's write lock before it reads
    anything, so all of it comes back with the chat's lock read, in one statement. On
    Postgres a lock read that waited for the row lock sees the joined rows as they
    were before the wait (only the locked row is read again), so they are read by a
    second statement once the lock is held.
    """
    if conn.dialect.name == "sqlite":
        row = await _locked_chat(conn, who, chat_id, stop_archived=stop_archived,
                                 joined=_append_state,
                                 params={"b_receipt_append_id": append_id},
                                 columns=_APPEND_COLUMNS)
        state = row
    else:
        row = await _locked_chat(conn, who, chat_id, stop_archived=stop_archived,
                                 columns=_APPEND_COLUMNS)
        state = (await conn.execute(_APPEND_STATE, {
            "b_chat": chat_id, "b_receipt_append_id": append_id})).one()
    leaf = row.active_leaf_id
    return AppendStart(ChatEnd(int(row.last_sequence), leaf), chat_from_row(row),
                       earlier_receipt(state), tree.leaf_links(state, leaf))


async def insert_messages(
    conn: AsyncConnection,
    chat_id: str,
    batch: Sequence[NewMessage],
    *,
    last_sequence: int,
    default_assistant_id: str | None = None,
    parent_id: str | None = None,
    explicit_parent: bool = False,
    parent_rows: tuple[tree.Link, tree.Link] | None = None,
) -> list[Message]:
    """Write ``batch`` after ``last_sequence`` (the chat must be locked by the caller).

    The batch is a chain hung below the chat's active leaf, or below ``parent_id``
    when ``explicit_parent`` (None then makes a new root); see :func:`insert_chain`.
    """
    ids = [message.id or new_id() for message in batch]
    contents = list(new_contents(batch, assistant_id=default_assistant_id))
    return await insert_chain(conn, chat_id, ids, contents, last_sequence=last_sequence,
                              chosen=[m.id for m in batch if m.id is not None],
                              parent_id=parent_id, explicit_parent=explicit_parent,
                              parent_rows=parent_rows)


# Built once: every append and persisted stream runs it.
_CHAT_END = (
    update(chats)
    .where(chats.c.id == bindparam("b_chat"))
    .values(last_sequence=bindparam("b_last"), last_message_at=bindparam("b_stamp"),
            activity_at=bindparam("b_stamp"), active_leaf_id=bindparam("b_leaf"))
)


async def insert_chain(
    conn: AsyncConnection,
    chat_id: str,
    ids: Sequence[str],
    contents: Iterable[Content],
    *,
    last_sequence: int,
    chosen: Sequence[str] = (),
    parent_id: str | None = None,
    explicit_parent: bool = False,
    parent_rows: tuple[tree.Link, tree.Link] | None = None,
) -> list[Message]:
    """Write messages ``ids`` (with their :data:`store.rows.Content`)
    as one chain after ``last_sequence``; the chat must be locked by the caller.

    The chain hangs below the chat's active leaf, or below ``parent_id`` when
    ``explicit_parent`` (None then makes a new root); its last message becomes the
    active leaf. The rows go in with :func:`store.rows.write_chain`, then one update of
    the chat. Raises CONFLICT when one of the ``chosen`` (caller-chosen) ids is
    already in the store. ``parent_rows``: see :func:`store.tree.chain_links`.
    """
    if len(set(chosen)) != len(chosen):
        raise InvalidArgument("message ids within one batch must be distinct")
    if chosen:
        taken = (
            await conn.scalars(
                select(message_chats.c.id).where(message_chats.c.id.in_(chosen)))
        ).all()
        if taken:
            raise Conflict(f"message id {taken[0]!r} is already taken")
    if not explicit_parent:
        parent_id = await conn.scalar(select(chats.c.active_leaf_id)
                                      .where(chats.c.id == chat_id))
    stamp = now()
    links = await tree.chain_links(conn, chat_id, parent_id, ids, parent_rows=parent_rows)
    written = await write_chain(conn, chat_id, last_sequence + 1, stamp, links, contents,
                                count=len(ids))
    await conn.execute(_CHAT_END, {"b_chat": chat_id, "b_last": last_sequence + len(written),
                                   "b_stamp": stamp, "b_leaf": ids[-1]})
    return written


async def append_messages(
    db: Database,
    who: Identity,
    chat_id: str,
    append_id: str,
    batch: Sequence[NewMessage],
    *,
    parent_id: str | None = None,
    stop_archived: bool = False,
) -> AppendReceipt:
    """Append ``batch`` atomically, exactly once per ``append_id``.

    The batch is a chain after the chat's active leaf, or after ``parent_id`` when
    given (which then counts toward the batch's digest). With ``stop_archived``, a chat
    whose messages are in the archive raises ChatArchived and nothing is written (the
    check rides on the chat's lock read, so an unarchived chat costs no extra read).
    An untitled chat whose first USER message the batch carries takes its automatic
    title in the same transaction (:func:`store.chats.titles.entitle`).
    """
    check_chat_id(chat_id)
    check_append_id(append_id)
    if not batch:
        raise InvalidArgument("messages must not be empty")
    if len(batch) > MAX_APPEND_BATCH:
        raise PayloadTooLarge(f"at most {MAX_APPEND_BATCH} messages per append")
    for message in batch:
        message.check()
    if parent_id is not None:
        check_message_id(parent_id)
    digest = batch_digest(batch) if parent_id is None else canonical_digest(
        {"parentId": parent_id, "messages": [message.wire() for message in batch]})
    try:
        async with db.write() as conn:
            start = await _lock_for_append(conn, who, chat_id, append_id,
                                           stop_archived=stop_archived)
            last_sequence, leaf = start.end
            title = start.chat.title

            async def write() -> list[Message]:
                nonlocal title
                written = await insert_messages(conn, chat_id, batch,
                                                last_sequence=last_sequence,
                                                parent_id=leaf if parent_id is None else parent_id,
                                                explicit_parent=True, parent_rows=start.leaf)
                if title is None:
                    # The chat's first question names an untitled chat, in this transaction.
                    title = await titles.entitle(conn, chat_id, written)
                # In the same transaction: a file the caller may not read refuses all.
                await file_links.link_files(conn, who, chat_id, written, at=now())
                return written

            receipt, written = await receipted_write(
                conn, chat_id=chat_id, append_id=append_id, digest=digest,
                last_sequence=last_sequence, write=write, conflict="batch",
                earlier=start.earlier)
    except IntegrityError:
        # Two inserts of one caller-chosen message id racing past the check above.
        raise Conflict("a message id in this batch is already taken") from None
    if not written:
        return receipt
    chat = start.chat
    if title is not None and chat.title is None:
        chat = dataclasses.replace(chat, title=title, title_source="AUTO")
    return dataclasses.replace(receipt, chat=chain_end(chat, written[-1]))


def chain_end(chat: Chat, last: Message) -> Chat:
    """``chat`` after :func:`insert_chain` wrote a chain ending with ``last``."""
    return dataclasses.replace(chat, last_message_at=last.created_at,
                               activity_at=last.created_at, active_leaf_id=last.id)


async def _chat_of(conn: AsyncConnection, message_id: str) -> str | None:
    """The chat holding ``message_id`` (None: no such message). Statements then name
    the chat too, so on hash-partitioned tables they read one partition."""
    found = await conn.scalar(
        select(message_chats.c.chat_id).where(message_chats.c.id == message_id))
    return None if found is None else str(found)


async def get_message(db: Database, who: Identity, message_id: str) -> Message | None:
    async with db.read() as conn:
        chat_id = await _chat_of(conn, message_id)
        if chat_id is None:
            return None
        row = (
            await conn.execute(
                select(messages)
                .join(chats, chats.c.id == messages.c.chat_id)
                .where(
                    messages.c.id == message_id,
                    messages.c.chat_id == chat_id,
                    present(),
                    access.can_read(who),
                )
            )
        ).first()
    return None if row is None else message_from_row(row)


async def update_message(
    db: Database,
    who: Identity,
    message_id: str,
    *,
    props: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    status: str | None = None,
) -> Message:
    """Replace a message's props and/or metadata, or set its status."""
    if props is not None and not isinstance(props, dict):
        raise InvalidArgument("props must be a JSON object")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidArgument("metadata must be a JSON object")
    if status is not None and status not in MESSAGE_STATUSES:
        raise InvalidArgument(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
    changes: dict[str, Any] = {"props": props, "metadata": metadata, "status": status}
    changes = {key: value for key, value in changes.items() if value is not None}
    async with db.write() as conn:
        chat_id = await _chat_of(conn, message_id)
        if chat_id is None:
            raise NotFound(f"message {message_id!r} not found")
        try:
            await _lock_writable(conn, who, chat_id)
        except NotFound:
            raise NotFound(f"message {message_id!r} not found") from None
        query = update(messages).where(messages.c.id == message_id,
                                       messages.c.chat_id == chat_id)
        row = (
            await conn.execute(query.values(**changes, updated_at=now()).returning(messages))
        ).one()
        updated = message_from_row(row)
        if props is not None:
            await file_links.relink_message(conn, who, updated, at=now())
    return updated


async def _lock_writable(conn: AsyncConnection, who: Identity, chat_id: str) -> None:
    await access.require(conn, who, chat_id, "write", lock=True)


async def delete_messages(db: Database, who: Identity, chat_id: str, ids: Sequence[str], *,
                          with_replies: bool = False) -> int:
    """Delete the given messages of one chat; returns how many rows went.

    By default exactly those messages go and each one's replies hang on its nearest
    surviving ancestor; ``with_replies`` also deletes everything below them. Ids not
    in the chat are ignored.
    """
    check_chat_id(chat_id)
    if len(ids) > MAX_APPEND_BATCH:
        raise PayloadTooLarge(f"at most {MAX_APPEND_BATCH} ids per call")
    async with db.write() as conn:
        await _lock_writable(conn, who, chat_id)
        if not ids:
            return 0
        if with_replies:
            deleted = await tree.delete_subtrees(conn, chat_id, ids)
        else:
            deleted = await tree.delete_exactly(conn, chat_id, ids)
        if deleted:
            # The feedback on a deleted message goes with it.
            await feedback.forget_deleted(conn, chat_id)
            # Its file links too (the files stay until nothing references them).
            await file_links.unlink_deleted(conn, chat_id)
        return deleted


def check_page_size(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if value <= 0:
        raise InvalidArgument(f"{name} must be a positive number")
    return min(value, MAX_PAGE_SIZE)


@dataclass(frozen=True, slots=True)
class RowPage:
    """A page of message rows as the driver gave them, oldest first: each row holds the
    columns asked for, then what the page's statement adds (a branch page: the row's
    depth next)."""

    rows: list[Sequence[Any]]
    has_previous: bool
    has_next: bool
    #: For a page along a branch: the branch's last message the page was read for.
    branch_leaf: str | None = None


def _page_size(first: int | None, last: int | None, after: object) -> tuple[bool, int]:
    """Whether a page reads forward, and how many rows it holds. ``after`` alone reads
    forward from the cursor (Relay's reading of it); with no size and no ``after`` the
    newest rows are read, backwards."""
    if first is not None and last is not None:
        raise InvalidArgument("pass either first or last, not both")
    forward = first is not None or (after is not None and last is None)
    return forward, (first if forward else last) or DEFAULT_PAGE_SIZE


def _identity_values(who: Identity, chat_id: str, filter: MessageFilter) -> dict[str, Any]:
    values: dict[str, Any] = {"chat": chat_id, "user": who.user_id, "tenant": who.tenant_id,
                              "team": who.team_id}
    values.update(filter.given())
    return values


async def page_rows(
    db: Database,
    who: Identity,
    chat_id: str,
    *,
    filter: MessageFilter | None = None,
    first: int | None = None,
    after: int | None = None,
    last: int | None = None,
    before: int | None = None,
    columns: tuple[str, ...] = prepared.MESSAGE_COLUMNS,
) -> RowPage:
    """A keyset page of a chat's messages in ``sequence`` order, as rows of ``columns``:
    the one reader of such pages (:func:`list_messages` makes records of its rows; the
    compiled reads fill their answers from them).

    ``after``/``before`` are sequence numbers (already checked cursors). With no size,
    the newest ``DEFAULT_PAGE_SIZE`` before ``before`` (or the end) are returned;
    ``first`` (or ``after`` alone) walks forward from ``after``. Neighbour flags are
    exact (never a guess from a full page): each is an index probe next to the
    cursor, folded with the access check into the page's one prepared statement.
    """
    first = check_page_size(first, "first")
    last = check_page_size(last, "last")
    forward, size = _page_size(first, last, after)
    filter = filter or MessageFilter()
    shape = pages.MessagePageShape.of(
        db, who, forward=forward, after=after is not None, before=before is not None,
        filters=tuple(filter.given()), columns=columns)
    values = _identity_values(who, chat_id, filter)
    values.update(after=after, before=before)
    rows = await prepared.fetch(db, pages.message_page_statement(db, shape),
                                {**values, "limit": size + 1})
    if rows:
        has_older, has_newer = bool(rows[0][-2]), bool(rows[0][-1])
    else:
        # Empty: tell an invisible chat from an empty page, and still answer exactly.
        flags = (await prepared.fetch(db, pages.message_flags_statement(db, shape),
                                      values))[0]
        if not flags[0]:
            raise NotFound(f"chat {chat_id!r} not found")
        has_older, has_newer = bool(flags[1]), bool(flags[2])
    more = len(rows) > size
    page = list(rows[:size])
    if forward:
        return RowPage(page, has_older, more or has_newer)
    page.reverse()
    return RowPage(page, more or has_older, has_newer)


async def list_messages(
    db: Database,
    who: Identity,
    chat_id: str,
    *,
    filter: MessageFilter | None = None,
    first: int | None = None,
    after: int | None = None,
    last: int | None = None,
    before: int | None = None,
) -> MessagePage:
    """A keyset page of a chat's messages, oldest first, as records (see
    :func:`page_rows`)."""
    page = await page_rows(db, who, chat_id, filter=filter, first=first, after=after,
                           last=last, before=before)
    return MessagePage(items=[prepared.message_record(row) for row in page.rows],
                       has_previous=page.has_previous, has_next=page.has_next)


#: A walk's bound when a filter may skip any number of its rows.
_UNBOUNDED = 2**31 - 1


async def branch_rows(
    db: Database,
    who: Identity,
    chat_id: str,
    *,
    branch: str | None = None,
    filter: MessageFilter | None = None,
    first: int | None = None,
    after: BranchPosition | None = None,
    last: int | None = None,
    before: BranchPosition | None = None,
    columns: tuple[str, ...] = prepared.MESSAGE_COLUMNS,
) -> RowPage:
    """A keyset page along one branch — the path from the root to ``branch`` — as rows
    of ``columns`` followed by each row's depth: the one reader of such pages
    (:func:`list_branch` makes records of its rows; the compiled reads fill their
    answers from them).

    ``branch`` defaults to the chat's active leaf. Pages walk parent links from their
    upper end (and a forward page finds that end with one jump climb), so a page
    costs the same deep in a long branch as at its end. A cursor is valid while its
    message lies on the branch: one issued before the active leaf moved on still
    works; one from another branch is INVALID_CURSOR. With a filter, the walk reads
    the path between the cursor and the page's far end until the page is full.
    """
    first = check_page_size(first, "first")
    last = check_page_size(last, "last")
    if branch is not None:
        check_message_id(branch)
    forward, size = _page_size(first, last, after)
    filter = filter or MessageFilter()
    filters = tuple(filter.given())
    shape = pages.BranchPageShape.of(
        db, who, forward=forward, branch=branch is not None, before=before is not None,
        filters=filters, columns=columns)
    floor = 0 if after is None else after.depth
    values = _identity_values(who, chat_id, filter)
    values.update(branch=branch, floor=floor, limit=size + 1)
    if forward:
        values["top"] = None if before is None else before.depth - 1
        values["cap"] = _UNBOUNDED if filters else floor + size + 1
    else:
        skip = 0 if before is None else 1
        values["start"] = branch if before is None else before.id
        values["count"] = _UNBOUNDED if filters else size + 1 + skip
        values["skip"] = skip
    rows = await prepared.fetch(db, pages.branch_page_statement(db, shape), values)
    if not rows:
        return await _empty_branch(db, who, chat_id, branch, forward, after, before)
    # A row: the columns, its depth, the chat's active leaf.
    depth = len(columns)
    leaf = branch if branch is not None else rows[0][depth + 1]
    for cursor in (after, before):
        if cursor is not None and cursor.leaf != leaf:
            # Issued for another end of this list (the active leaf moved since): still
            # good while its message lies on the branch.
            found = await prepared.fetch(db, pages.ancestor_statement(db, db.dialect),
                                         {"start": leaf, "depth": cursor.depth,
                                          "chat": chat_id})
            if not found or found[0][0] != cursor.id:
                raise InvalidCursor("the cursor is not on this branch")
    more = len(rows) > size
    page = list(rows[:size])
    if forward:
        return RowPage(page, after is not None, more or before is not None, leaf)
    page.reverse()
    return RowPage(page, more or after is not None, before is not None, leaf)


async def _empty_branch(db: Database, who: Identity, chat_id: str, branch: str | None,
                        forward: bool, after: BranchPosition | None,
                        before: BranchPosition | None) -> RowPage:
    """What a branch page that read no rows answers: the chat or the named branch not
    found, a cursor not on the branch, or an empty page (none written yet, the rows in
    the cold archive, nothing past a cursor)."""
    async with db.read() as conn:
        row = (await conn.execute(
            select(chats.c.active_leaf_id).where(
                chats.c.id == chat_id, present(), access.can_read(who))
        )).first()
        if row is None:
            raise NotFound(f"chat {chat_id!r} not found")
        end: str | None = branch or row.active_leaf_id
        if branch is not None or (forward and end is not None):
            end_depth = await conn.scalar(select(messages.c.depth).where(
                messages.c.id == end, messages.c.chat_id == chat_id))
            if end_depth is None and branch is not None:
                raise NotFound(f"message {branch!r} not found in chat {chat_id!r}")
            if end_depth is None:
                # The active leaf's row is gone: the messages are in the cold archive.
                return RowPage([], False, False)
        if end is None:
            if after is not None or before is not None:
                raise InvalidCursor("the cursor is not valid for this list")
            return RowPage([], False, False)
        for cursor in (after, before):
            if cursor is not None and cursor.leaf != end:
                on_branch: str | None = await conn.scalar(
                    tree.ancestor_at(end, cursor.depth, chat=chat_id,
                                     dialect=conn.dialect.name))
                if on_branch != cursor.id:
                    raise InvalidCursor("the cursor is not on this branch")
    return RowPage([], after is not None, before is not None, end)


async def list_branch(
    db: Database,
    who: Identity,
    chat_id: str,
    *,
    branch: str | None = None,
    filter: MessageFilter | None = None,
    first: int | None = None,
    after: BranchPosition | None = None,
    last: int | None = None,
    before: BranchPosition | None = None,
) -> MessagePage:
    """A keyset page along one branch, oldest first, as records (see
    :func:`branch_rows`)."""
    page = await branch_rows(db, who, chat_id, branch=branch, filter=filter, first=first,
                             after=after, last=last, before=before)
    depth = len(prepared.MESSAGE_COLUMNS)
    return MessagePage(items=[prepared.message_record(row) for row in page.rows],
                       has_previous=page.has_previous, has_next=page.has_next,
                       branch_leaf=page.branch_leaf,
                       depths=[int(row[depth]) for row in page.rows])


async def edit_message(
    db: Database,
    who: Identity,
    message_id: str,
    append_id: str,
    *,
    props: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """Write an edited copy of a message as its sibling and make it the active leaf.

    The copy has the original's parent, role, type and ids of request, block, thread
    and assistant; ``props``/``metadata`` replace the original's when given. The
    original and everything after it stay on their branch. Idempotent by
    ``append_id`` like an append: the same edit again returns the same message, a
    different one under the same id is APPEND_CONFLICT.
    """
    check_message_id(message_id)
    check_append_id(append_id)
    if props is None and metadata is None:
        raise InvalidArgument("give props, metadata or both")
    if props is not None and not isinstance(props, dict):
        raise InvalidArgument("props must be a JSON object")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidArgument("metadata must be a JSON object")
    digest = canonical_digest({"edit": message_id, "props": props, "metadata": metadata})
    async with db.write() as conn:
        original = (await conn.execute(
            select(messages).where(messages.c.id == message_id,
                                   messages.c.chat_id == await _chat_of(conn, message_id))
        )).first()
        if original is None:
            raise NotFound(f"message {message_id!r} not found")
        chat_id = original.chat_id
        try:
            last_sequence = await lock_chat_for_append(conn, who, chat_id)
        except NotFound:
            raise NotFound(f"message {message_id!r} not found") from None
        # The original's content, every column of it, but for what the edit changes:
        # new props carry no token count of their own, and the copy is a whole message.
        changes: dict[str, Any] = {"status": "COMPLETED"}
        if props is not None:
            changes.update(props=props, tokens=None)
        if metadata is not None:
            changes["metadata"] = metadata
        edited = NewMessage(**{name: original._mapping[name] for name in CONTENT_COLUMNS}
                            | changes)

        async def write() -> list[Message]:
            written = await insert_messages(conn, chat_id, [edited],
                                            last_sequence=last_sequence,
                                            parent_id=original.parent_id, explicit_parent=True)
            await file_links.link_files(conn, who, chat_id, written, at=now())
            return written

        receipt, fresh = await receipted_write(
            conn, chat_id=chat_id, append_id=append_id, digest=digest,
            last_sequence=last_sequence, write=write, conflict="write")
        if fresh is not None:
            return fresh[0]
        row = (await conn.execute(select(messages).where(
            messages.c.id == receipt.message_ids[0], messages.c.chat_id == chat_id))).first()
        if row is None:
            raise NotFound(f"the message edit {append_id!r} wrote was deleted since")
        return message_from_row(row)


async def switch_branch(db: Database, who: Identity, chat_id: str, leaf_id: str) -> Chat:
    """Make the branch through ``leaf_id`` active: its newest leaf becomes the active leaf."""
    check_chat_id(chat_id)
    check_message_id(leaf_id)
    async with db.write() as conn:
        await _lock_writable(conn, who, chat_id)
        leaf = await tree.newest_leaf_below(conn, chat_id, leaf_id)
        await tree.set_active_leaf(conn, chat_id, leaf)
        chat = await fetch_visible_chat(conn, who, chat_id)
    assert chat is not None
    return chat


async def regenerate(db: Database, who: Identity, message_id: str) -> Chat:
    """Make the USER message ``message_id`` the chat's active leaf again, so the chat
    awaits a reply; its earlier answers stay below it, and the next answer (a stream
    with ``parentId`` = this message) becomes their sibling. Needs the right to append
    to the chat; a message of another role is INVALID_ARGUMENT."""
    check_message_id(message_id)
    async with db.write() as conn:
        original = (await conn.execute(
            select(messages.c.chat_id, messages.c.role).where(
                messages.c.id == message_id,
                messages.c.chat_id == await _chat_of(conn, message_id))
        )).first()
        if original is None:
            raise NotFound(f"message {message_id!r} not found")
        chat_id = original.chat_id
        try:
            await lock_chat_for_append(conn, who, chat_id)
        except NotFound:
            raise NotFound(f"message {message_id!r} not found") from None
        if original.role != "USER":
            raise InvalidArgument(
                f"message {message_id!r} is a {original.role} message; regenerate answers"
                " a USER message again")
        await tree.set_active_leaf(conn, chat_id, message_id)
        chat = await fetch_visible_chat(conn, who, chat_id)
    assert chat is not None
    return chat


async def message_siblings(db: Database, message: Message) -> list[str]:
    """Ids of the messages sharing ``message``'s parent, oldest first (itself included)."""
    async with db.read() as conn:
        return await tree.sibling_ids(conn, message.chat_id, message.parent_id)
