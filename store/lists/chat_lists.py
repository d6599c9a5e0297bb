"""Chat lists: filtered keyset pages grouped by calendar time.

A page is ordered by ``(order value, id)`` and continues strictly after the position a
cursor names, so it is stable under ties and costs the same at any depth: each order
field has a ``(tenant_id, field, id)`` index (``LAST_MESSAGE_AT`` uses the
``activity_at`` column, which holds the newest message's time or the creation time of
a chat without messages).

``title`` is the one nullable order field. Chats without a title sort as if their
title were greater than every other (``NULLS LAST`` ascending, ``NULLS FIRST``
descending, Postgres' natural order). Rather than ``coalesce()`` — which no plain
index serves — the list is read as two *segments*, titled and untitled chats, each an
index range scan; a page that crosses the border reads from both.

Groups (today, yesterday, this week, this month, earlier) are computed from bucket
boundaries worked out in the caller's IANA time zone and compared in UTC, so the
database never needs time zone data: the page's chats are bucketed in Python, the
whole filter's per-bucket totals by one aggregate ``CASE`` query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    or_,
    select,
    tuple_,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.access import present
from chatql.store.chats.chat import CHAT_STATUSES, chat_from_row, check_channel, check_tags
from chatql.store.clock import now
from chatql.store.db.database import Database
from chatql.store.db.prepared import fixed
from chatql.store.db.tables import chat_tags, chats, messages, resume_records, stream_claims
from chatql.store.errors import InvalidArgument, InvalidCursor
from chatql.store.messages.interrupts import (
    awaiting_decision_clause,
    awaiting_resumption_clause,
)
from chatql.store.messages.message import message_from_row
from chatql.store.records import Chat, Identity, Message

__all__ = [
    "BUCKETS",
    "DEFAULT_CHAT_PAGE_SIZE",
    "MAX_CHAT_PAGE_SIZE",
    "ORDER_FIELDS",
    "TIME_FIELDS",
    "WEEKDAYS",
    "BucketBoundaries",
    "ChatGroupBucket",
    "ChatListFilter",
    "ChatListPage",
    "bucket_boundaries",
    "current_time",
    "list_chats",
    "newest_messages",
    "resolve_timezone",
]

DEFAULT_CHAT_PAGE_SIZE = 20
MAX_CHAT_PAGE_SIZE = 100
#: Bucket keys and labels, in the order groups are returned.
BUCKETS: tuple[tuple[str, str], ...] = (
    ("today", "Today"),
    ("yesterday", "Yesterday"),
    ("this_week", "This Week"),
    ("this_month", "This Month"),
    ("earlier", "Earlier"),
)
ORDER_FIELDS: dict[str, Any] = {
    "LAST_MESSAGE_AT": chats.c.activity_at,
    "CREATED_AT": chats.c.created_at,
    "UPDATED_AT": chats.c.updated_at,
    "SORT": chats.c.sort,
    "TITLE": chats.c.title,
}
TIME_FIELDS: dict[str, Any] = {
    "LAST_MESSAGE_AT": chats.c.activity_at,
    "CREATED_AT": chats.c.created_at,
}
WEEKDAYS = {"MONDAY": 0, "SUNDAY": 6}
_TIME_ORDERS = ("LAST_MESSAGE_AT", "CREATED_AT", "UPDATED_AT")
_MAX_KEYWORDS = 200
#: Chats of this mode are internal agent runs, left out of lists unless asked for.
SUBAGENT_MODE = "subagent"


def awaiting_reply_clause() -> ColumnElement[bool]:
    """Chats awaiting a reply: no stream of the chat is live (one probe of the claims'
    index), and either the active leaf is a USER message (one primary-key probe) or a
    person's decisions await a worker's resumption (see store.messages.interrupts)."""
    return and_(
        or_(exists().where(messages.c.id == chats.c.active_leaf_id,
                           messages.c.chat_id == chats.c.id, messages.c.role == "USER"),
            awaiting_resumption_clause()),
        ~exists().where(stream_claims.c.chat_id == chats.c.id,
                        stream_claims.c.ended_at.is_(None)),
    )


def awaiting_retry_clause() -> ColumnElement[bool]:
    """Chats whose reply was cut off because its producer went away: no stream of the
    chat is live, the active leaf is a reply (not a USER message) ended INTERRUPTED, and
    the step its producer had running was kept with the reason the service ended the
    stream (its heartbeats stopped, or the service shut down). A reply a person stopped,
    or one its producer ended itself, keeps no such reason. The record is matched
    through the leaf's row: a subquery nested two deep correlates only with the one
    around it."""
    return and_(
        exists().where(
            messages.c.id == chats.c.active_leaf_id, messages.c.chat_id == chats.c.id,
            messages.c.role != "USER", messages.c.status == "INTERRUPTED",
            exists().where(resume_records.c.chat_id == messages.c.chat_id,
                           resume_records.c.request_id == messages.c.request_id,
                           resume_records.c.error.is_not(None))),
        ~exists().where(stream_claims.c.chat_id == chats.c.id,
                        stream_claims.c.ended_at.is_(None)),
    )


async def awaiting_retry_ids(conn: AsyncConnection, chat_ids: Sequence[str]) -> set[str]:
    """Which of ``chat_ids`` await a retry (see :func:`awaiting_retry_clause`)."""
    return await _ids_where(conn, chat_ids, awaiting_retry_clause())


async def awaiting_reply_ids(conn: AsyncConnection, chat_ids: Sequence[str]) -> set[str]:
    """Which of ``chat_ids`` await a reply (see :func:`awaiting_reply_clause`)."""
    return await _ids_where(conn, chat_ids, awaiting_reply_clause())


async def awaiting_decision_ids(conn: AsyncConnection, chat_ids: Sequence[str]) -> set[str]:
    """Which of ``chat_ids`` have an interrupt waiting for a person's decision."""
    return await _ids_where(conn, chat_ids, awaiting_decision_clause())


async def _ids_where(conn: AsyncConnection, chat_ids: Sequence[str],
                     clause: ColumnElement[bool]) -> set[str]:
    if not chat_ids:
        return set()
    rows = await conn.scalars(select(chats.c.id).where(chats.c.id.in_(list(chat_ids)),
                                                       clause))
    return set(rows.all())


@dataclass(frozen=True, slots=True)
class ChatListFilter:
    """Narrows a chat list; every field given must match.

    ``start_time`` is inclusive and ``end_time`` exclusive, both applied to
    ``time_field`` (the same field the groups bucket by). Chats whose ``mode`` is
    ``subagent`` are left out unless ``include_subagents`` or ``mode`` names them;
    ``tags`` keeps chats carrying every one of the tags; ``deleted=True`` lists the
    trash instead: the soft-deleted chats the caller may restore.
    """

    assistant_id: str | None = None
    status: str | None = None
    keywords: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    time_field: str = "LAST_MESSAGE_AT"
    channel: str | None = None
    created_by: str | None = None
    team_id: str | None = None
    mode: str | None = None
    include_subagents: bool = False
    tags: tuple[str, ...] | None = None
    pinned: bool | None = None
    awaiting_reply: bool | None = None
    awaiting_decision: bool | None = None
    awaiting_retry: bool | None = None
    deleted: bool = False

    def check(self) -> None:
        if self.tags is not None:
            check_tags(list(self.tags))
        if self.status is not None and self.status not in CHAT_STATUSES:
            raise InvalidArgument(f"status must be one of {', '.join(CHAT_STATUSES)}")
        if self.time_field not in TIME_FIELDS:
            raise InvalidArgument(f"timeField must be one of {', '.join(TIME_FIELDS)}")
        if self.channel is not None:
            check_channel(self.channel)
        if self.keywords is not None and len(self.keywords) > _MAX_KEYWORDS:
            raise InvalidArgument(f"keywords must be at most {_MAX_KEYWORDS} characters")
        for name in ("start_time", "end_time"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise InvalidArgument(f"{name} needs a UTC offset")

    def clauses(self) -> list[ColumnElement[bool]]:
        column = TIME_FIELDS[self.time_field]
        found: list[ColumnElement[bool]] = []
        if self.assistant_id is not None:
            found.append(chats.c.assistant_id == self.assistant_id)
        if self.status is not None:
            found.append(chats.c.status == self.status)
        if self.channel is not None:
            found.append(chats.c.channel == self.channel)
        if self.keywords:
            # lower(title) LIKE lower('%…%') on both backends, with % and _ escaped.
            found.append(chats.c.title.icontains(self.keywords, autoescape=True))
        if self.start_time is not None:
            found.append(column >= self.start_time)
        if self.end_time is not None:
            found.append(column < self.end_time)
        if self.created_by is not None:
            found.append(chats.c.created_by == self.created_by)
        if self.team_id is not None:
            found.append(chats.c.team_id == self.team_id)
        if self.mode is not None:
            found.append(chats.c.mode == self.mode)
        elif not self.include_subagents:
            found.append(chats.c.mode != fixed(SUBAGENT_MODE))
        for tag in sorted(set(self.tags or ())):
            # A primary-key probe of chat_tags per candidate (or a semi-join the planner
            # picks when the tag is rare); the chat list keeps its keyset index order.
            found.append(exists().where(chat_tags.c.chat_id == chats.c.id, chat_tags.c.tag == tag))
        if self.pinned is not None:
            found.append(chats.c.pinned.is_(self.pinned))
        if self.awaiting_reply is not None:
            awaiting = awaiting_reply_clause()
            found.append(awaiting if self.awaiting_reply else ~awaiting)
        if self.awaiting_decision is not None:
            deciding = awaiting_decision_clause()
            found.append(deciding if self.awaiting_decision else ~deciding)
        if self.awaiting_retry is not None:
            retrying = awaiting_retry_clause()
            found.append(retrying if self.awaiting_retry else ~retrying)
        return found

    def matches(self, chat: Chat) -> bool:
        """Whether one chat passes the filter: :meth:`clauses` applied to a record."""
        if self.assistant_id is not None and chat.assistant_id != self.assistant_id:
            return False
        if self.status is not None and chat.status != self.status:
            return False
        if self.channel is not None and chat.channel != self.channel:
            return False
        if self.keywords and self.keywords.lower() not in (chat.title or "").lower():
            return False
        if chat.title is None and self.keywords:
            return False
        if self.start_time is not None or self.end_time is not None:
            value = (chat.created_at if self.time_field == "CREATED_AT"
                     else chat.activity_at or chat.last_message_at or chat.created_at)
            if self.start_time is not None and value < self.start_time:
                return False
            if self.end_time is not None and value >= self.end_time:
                return False
        if self.created_by is not None and chat.created_by != self.created_by:
            return False
        if self.team_id is not None and chat.team_id != self.team_id:
            return False
        if self.mode is not None:
            if chat.mode != self.mode:
                return False
        elif not self.include_subagents and chat.mode == SUBAGENT_MODE:
            return False
        if self.tags and not set(self.tags) <= set(chat.tags):
            return False
        if self.awaiting_reply is not None and chat.awaiting_reply is not self.awaiting_reply:
            # A record read without looking (None) never matches either way.
            return False
        if (self.awaiting_decision is not None
                and chat.awaiting_decision is not self.awaiting_decision):
            return False
        if self.awaiting_retry is not None and chat.awaiting_retry is not self.awaiting_retry:
            return False
        return self.pinned is None or chat.pinned is self.pinned

    def visible(self, who: Identity) -> list[ColumnElement[bool]]:
        """The rows this list may show ``who``: live chats, or its restorable trash."""
        if not self.deleted:
            return [present(), access.can_read(who)]
        return [
            chats.c.deleted_at.is_not(None),
            or_(chats.c.expires_at.is_(None), chats.c.expires_at > now()),
            access.can_read(who),
            access.can_write(who),
        ]

    def key(self) -> str:
        """A stable text form, so cursors can be bound to the filter."""
        parts = (
            self.assistant_id,
            self.status,
            self.keywords,
            None if self.start_time is None else self.start_time.astimezone(UTC).isoformat(),
            None if self.end_time is None else self.end_time.astimezone(UTC).isoformat(),
            self.time_field,
            self.created_by,
            self.team_id,
            self.mode,
            "subagents" if self.include_subagents else "-",
            None if self.tags is None else ",".join(sorted(set(self.tags))),
            None if self.pinned is None else str(self.pinned),
            "trash" if self.deleted else "live",
        )
        # Length-prefixed so no choice of values can collide with another.
        key = "|".join("-" if p is None else f"{len(p)}:{p}" for p in parts)
        # Appended only when set, so cursors issued without them keep their binding.
        if self.channel is not None:
            key = f"{key}|c{len(self.channel)}:{self.channel}"
        if self.awaiting_reply is not None:
            key = f"{key}|a{int(self.awaiting_reply)}"
        if self.awaiting_decision is not None:
            key = f"{key}|d{int(self.awaiting_decision)}"
        if self.awaiting_retry is not None:
            key = f"{key}|r{int(self.awaiting_retry)}"
        return key


@dataclass(frozen=True, slots=True)
class ChatGroupBucket:
    """One time bucket of a page: its chats on this page and its size across the filter."""

    key: str
    label: str
    count: int
    total_count: int
    chats: list[Chat]


@dataclass(frozen=True, slots=True)
class ChatListPage:
    """A page of chats with each one's keyset position (what its cursor encodes)."""

    items: list[Chat]
    positions: list[list[Any]]
    has_next: bool
    has_previous: bool
    #: None when the caller did not ask for totals (``with_totals=False``).
    total_count: int | None
    groups: list[ChatGroupBucket]


@dataclass(frozen=True, slots=True)
class BucketBoundaries:
    """UTC instants where today, yesterday, this week and this month begin."""

    today: datetime
    yesterday: datetime
    this_week: datetime
    this_month: datetime

    def bucket_of(self, moment: datetime) -> str:
        # The first bucket that holds the moment wins (the CASE below mirrors this).
        if moment >= self.today:
            return "today"
        if moment >= self.yesterday:
            return "yesterday"
        if moment >= self.this_week:
            return "this_week"
        if moment >= self.this_month:
            return "this_month"
        return "earlier"


def current_time() -> datetime:
    """The moment buckets are computed for (a seam tests replace to pin the clock)."""
    return datetime.now(UTC)


def resolve_timezone(name: str) -> ZoneInfo:
    """The IANA zone called ``name``; INVALID_ARGUMENT when there is none."""
    if not name or len(name) > 100 or name.startswith(("/", ".")) or ".." in name:
        raise InvalidArgument(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidArgument(f"unknown time zone {name!r}; use an IANA name") from None


def _local_midnight(day: date, zone: ZoneInfo) -> datetime:
    # When a DST jump skips midnight, fold=0 maps the missing wall time onto the
    # instant of the jump, which is when that calendar day really begins.
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def bucket_boundaries(now: datetime, zone: ZoneInfo, week_start: str) -> BucketBoundaries:
    """Calendar-day boundaries in ``zone`` for the moment ``now``."""
    if week_start not in WEEKDAYS:
        raise InvalidArgument(f"weekStart must be one of {', '.join(WEEKDAYS)}")
    today = now.astimezone(zone).date()
    into_week = (today.weekday() - WEEKDAYS[week_start]) % 7
    return BucketBoundaries(
        today=_local_midnight(today, zone),
        yesterday=_local_midnight(today - timedelta(days=1), zone),
        this_week=_local_midnight(today - timedelta(days=into_week), zone),
        this_month=_local_midnight(today.replace(day=1), zone),
    )


def _position_value(chat: Chat, order_by: str) -> Any:
    if order_by == "LAST_MESSAGE_AT":
        return chat.activity_at.isoformat() if chat.activity_at else None
    if order_by == "CREATED_AT":
        return chat.created_at.isoformat()
    if order_by == "UPDATED_AT":
        return chat.updated_at.isoformat()
    if order_by == "SORT":
        return chat.sort
    return chat.title


def _parse_position(position: Any, order_by: str) -> tuple[Any, str]:
    """The (value, id) a cursor names, checked against the order field's type."""
    if not (isinstance(position, list) and len(position) == 2 and isinstance(position[1], str)):
        raise InvalidCursor("the cursor is not valid for this list")
    value, chat_id = position
    try:
        if order_by in _TIME_ORDERS:
            if not isinstance(value, str):
                raise ValueError(value)
            parsed = datetime.fromisoformat(value)
            if parsed.tzinfo is None:
                raise ValueError(value)
            return parsed, chat_id
        if order_by == "SORT":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(value)
            return value, chat_id
        if value is not None and not isinstance(value, str):
            raise ValueError(value)
        return value, chat_id
    except ValueError:
        raise InvalidCursor("the cursor is not valid for this list") from None


@dataclass(frozen=True, slots=True)
class _Segment:
    """A run of the ordering readable as one index range scan."""

    where: ColumnElement[bool] | None
    null_values: bool


def _segments(order_by: str, descending: bool) -> list[_Segment]:
    if order_by != "TITLE":
        return [_Segment(where=None, null_values=False)]
    titled = _Segment(where=chats.c.title.is_not(None), null_values=False)
    untitled = _Segment(where=chats.c.title.is_(None), null_values=True)
    return [untitled, titled] if descending else [titled, untitled]


def _keyset_rows(
    base: Select[Any],
    order_by: str,
    descending: bool,
    start: tuple[Any, str] | None,
    *,
    inclusive: bool,
    limit: int,
) -> list[Select[Any]]:
    """The statements that read ``limit`` rows past ``start`` in order, segment by segment.

    The caller runs them in turn and stops once it has enough rows.
    """
    column = ORDER_FIELDS[order_by]
    segments = _segments(order_by, descending)
    first_segment = 0
    if start is not None and order_by == "TITLE":
        first_segment = next(
            i for i, s in enumerate(segments) if s.null_values == (start[0] is None)
        )
    statements = []
    for index, segment in enumerate(segments[first_segment:], start=first_segment):
        query = base if segment.where is None else base.where(segment.where)
        if start is not None and index == first_segment:
            value, chat_id = start
            here: ColumnElement[Any]
            there: ColumnElement[Any]
            if segment.null_values:
                # Untitled chats tie on the value: only the id orders them.
                here, there = chats.c.id, literal(chat_id, chats.c.id.type)
            else:
                here = tuple_(column, chats.c.id)
                there = tuple_(literal(value, column.type), literal(chat_id, chats.c.id.type))
            if descending:
                bound = here <= there if inclusive else here < there
            else:
                bound = here >= there if inclusive else here > there
            query = query.where(bound)
        if segment.null_values:
            ordering = [chats.c.id.desc() if descending else chats.c.id.asc()]
        else:
            ordering = [
                column.desc() if descending else column.asc(),
                chats.c.id.desc() if descending else chats.c.id.asc(),
            ]
        statements.append(query.order_by(*ordering).limit(fixed(limit)))
    return statements


async def _read_keyset(
    conn: AsyncConnection, statements: Sequence[Select[Any]], limit: int
) -> list[Any]:
    rows: list[Any] = []
    for statement in statements:
        rows.extend((await conn.execute(statement.limit(fixed(limit - len(rows))))).all())
        if len(rows) >= limit:
            break
    return rows


async def list_chats(
    db: Database,
    who: Identity,
    *,
    filter: ChatListFilter | None = None,
    order_by: str = "LAST_MESSAGE_AT",
    order: str = "DESC",
    first: int | None = None,
    after: Any = None,
    timezone: str = "UTC",
    week_start: str = "MONDAY",
    now: datetime | None = None,
    with_totals: bool = True,
) -> ChatListPage:
    """A keyset page of the chats ``who`` may read, with totals and time groups.

    ``after`` is the position from a verified cursor (see ``ChatListPage.positions``);
    ``now`` defaults to the current time and exists so tests can pin bucket edges.
    ``first`` defaults to 20 and is capped at 100. The totals (``total_count`` and
    the groups) need one aggregate over the whole filter — the only part of a page
    whose cost grows with the list — so ``with_totals=False`` skips it (and the groups)
    for callers that asked for neither.
    """
    filter = filter or ChatListFilter()
    filter.check()
    if order_by not in ORDER_FIELDS:
        raise InvalidArgument(f"orderBy must be one of {', '.join(ORDER_FIELDS)}")
    if order not in ("ASC", "DESC"):
        raise InvalidArgument("order must be ASC or DESC")
    if first is not None and first <= 0:
        raise InvalidArgument("first must be a positive number")
    size = min(first or DEFAULT_CHAT_PAGE_SIZE, MAX_CHAT_PAGE_SIZE)
    zone = resolve_timezone(timezone)
    bounds = bucket_boundaries(now or current_time(), zone, week_start)
    start = None if after is None else _parse_position(after, order_by)
    descending = order == "DESC"

    where = [*filter.visible(who), *filter.clauses()]
    base = select(chats).where(*where)
    time_column = TIME_FIELDS[filter.time_field]
    bucket = case(
        (time_column >= bounds.today, "today"),
        (time_column >= bounds.yesterday, "yesterday"),
        (time_column >= bounds.this_week, "this_week"),
        (time_column >= bounds.this_month, "this_month"),
        else_="earlier",
    ).label("bucket")

    statements = _keyset_rows(base, order_by, descending, start, inclusive=False, limit=size + 1)
    behind: ColumnElement[bool] = false()
    if start is not None:
        # Anything at or before the cursor's position (the cursor's own chat may have
        # left the list since) means there is a previous page. Asked as "(first id
        # behind) IS NOT NULL" beside the page's own rows, it costs no round trip.
        behind = or_(*(
            # Never correlated with the page's own FROM chats: the probe is standalone.
            probe.correlate(None).scalar_subquery().is_not(None)
            for probe in _keyset_rows(
                select(chats.c.id).where(*where), order_by, not descending, start,
                inclusive=True, limit=1,
            )
        ))
        statements[0] = statements[0].add_columns(behind.label("_behind"))
    async with db.read() as conn:
        rows = await _read_keyset(conn, statements, size + 1)
        if start is None:
            has_previous = False
        elif rows and "_behind" in rows[0]._mapping:
            has_previous = bool(rows[0]._behind)
        else:  # the first segment was empty: ask on its own
            has_previous = bool(await conn.scalar(select(behind)))
        totals: dict[str, int] = {}
        if with_totals:
            totals = {
                key: count
                for key, count in (
                    await conn.execute(
                        select(bucket, func.count()).where(*where).group_by(bucket))
                ).all()
            }
    items = [chat_from_row(row) for row in rows[:size]]
    groups: list[ChatGroupBucket] = []
    for key, label in BUCKETS if with_totals else ():
        members = [
            chat for chat in items
            if bounds.bucket_of(_time_of(chat, filter.time_field)) == key
        ]
        if members:
            groups.append(ChatGroupBucket(
                key=key, label=label, count=len(members),
                total_count=int(totals.get(key, 0)), chats=members,
            ))
    return ChatListPage(
        items=items,
        positions=[[_position_value(chat, order_by), chat.id] for chat in items],
        has_next=len(rows) > size,
        has_previous=has_previous,
        total_count=int(sum(totals.values())) if with_totals else None,
        groups=groups,
    )


def _time_of(chat: Chat, time_field: str) -> datetime:
    if time_field == "CREATED_AT":
        return chat.created_at
    assert chat.activity_at is not None  # the column is NOT NULL
    return chat.activity_at


async def newest_messages(
    db: Database, who: Identity, chat_ids: Sequence[str]
) -> dict[str, Message]:
    """Each listed chat's newest message (chats without messages are left out).

    One statement for any number of chats: per chat, ``max(sequence)`` is a single
    probe of the ``(chat_id, sequence)`` unique index on both backends, then a join
    on that index fetches the row — never a scan of a long chat's history.
    """
    if not chat_ids:
        return {}
    later = messages.alias("later")
    newest = (
        select(func.max(later.c.sequence)).where(later.c.chat_id == chats.c.id).scalar_subquery()
    )
    query = (
        select(messages)
        .select_from(chats)
        .join(messages, and_(messages.c.chat_id == chats.c.id, messages.c.sequence == newest))
        .where(
            chats.c.id.in_(list(dict.fromkeys(chat_ids))),
            or_(chats.c.expires_at.is_(None), chats.c.expires_at > now()),
            # The trash shows its chats' newest messages to those who may restore them.
            or_(chats.c.deleted_at.is_(None), access.can_write(who)),
            access.can_read(who),
        )
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return {row.chat_id: message_from_row(row) for row in rows}

