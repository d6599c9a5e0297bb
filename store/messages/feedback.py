"""Feedback: a person's rating of an assistant's message, kept as part of the record.

Rules kept here:

- **Who rates**: whoever may read the message (its chat's readers: the creator, the
  team of a TEAM chat, the tenant when it is public, agents and admins of the tenant).
  A message the caller may not read is NOT_FOUND, exactly like one that never existed.
  Only an ``ASSISTANT`` message is rated; another role is INVALID_ARGUMENT.
- **One per person and message**: rating again replaces the rating, comment and tags
  (a comment or tags left out are cleared); the same rating again changes nothing. A
  null rating clears the person's feedback (with no comment or tags: INVALID_ARGUMENT).
- **Checked first**: a comment is at most :data:`MAX_COMMENT_CHARS` characters; at most
  :data:`MAX_FEEDBACK_TAGS` tags, each 1-:data:`~store.limits.TAG_CHARS` characters
  without control characters (kept sorted, repeats dropped). A refused call writes
  nothing.
- **What an evaluation starts from** is written with the rating: the question the
  message answered (its nearest ``USER`` ancestor), the assistant, and the request and
  model of the stream that wrote it (the model its producer reported with
  ``endStream(usage:)``).
- **Who lists**: :func:`list_feedback` pages, newest first, the feedback on the chats the
  caller may change (its own, its team's shared ones): the whole tenant for ``admin``.
- **Kept with its message**: purging a chat removes its feedback (and the foreign key
  cascades); deleting a message removes the feedback on it (:func:`forget_deleted`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access, jsonutil
from chatql.store.access import present
from chatql.store.clock import now
from chatql.store.cursors import MomentPosition, moment_position_from
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.rows import record_from_mapping
from chatql.store.db.tables import chats, feedback, messages, usage_records
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import check_chat_id, check_message_id, new_id
from chatql.store.limits import NAME_CHARS, TAG_CHARS, check_length
from chatql.store.messages import tree
from chatql.store.records import Feedback, Identity, Message
from chatql.store.text import message_text

__all__ = [
    "DEFAULT_FEEDBACK_PAGE",
    "MAX_COMMENT_CHARS",
    "MAX_FEEDBACK_PAGE",
    "MAX_FEEDBACK_TAGS",
    "RATINGS",
    "FeedbackFilter",
    "FeedbackPage",
    "FeedbackSummary",
    "cursor_scope",
    "export_feedback",
    "feedback_of",
    "forget_deleted",
    "list_feedback",
    "messages_by_id",
    "position_from",
    "position_of",
    "rate_message",
    "summaries",
]

RATINGS = ("UP", "DOWN")
MAX_COMMENT_CHARS = 4_000
MAX_FEEDBACK_TAGS = 10
DEFAULT_FEEDBACK_PAGE = 20
MAX_FEEDBACK_PAGE = 100
#: How far above the rated message its question is looked for.
_MAX_CLIMB = 500


@dataclass(frozen=True, slots=True)
class FeedbackSummary:
    """How many people rated a message up and down."""

    up: int = 0
    down: int = 0


@dataclass(frozen=True, slots=True)
class FeedbackFilter:
    """Narrows the feedback listing; every field given must match. ``since`` and
    ``until`` bound when the rating was last set (``since`` included, ``until`` not)."""

    assistant_id: str | None = None
    rating: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    chat_id: str | None = None

    def check(self) -> None:
        _check_rating(self.rating, "filter.rating")
        if self.assistant_id is not None:
            check_length(self.assistant_id, "filter.assistantId", NAME_CHARS)
        if self.chat_id is not None:
            check_chat_id(self.chat_id)
        for name, moment in (("since", self.since), ("until", self.until)):
            if moment is not None and moment.tzinfo is None:
                raise InvalidArgument(f"filter.{name} needs a UTC offset")

    def clauses(self) -> list[ColumnElement[bool]]:
        """The filter as conditions on ``feedback`` rows."""
        found: list[ColumnElement[bool]] = []
        if self.assistant_id is not None:
            found.append(feedback.c.assistant_id == self.assistant_id)
        if self.rating is not None:
            found.append(feedback.c.rating == self.rating)
        if self.since is not None:
            found.append(feedback.c.updated_at >= self.since)
        if self.until is not None:
            found.append(feedback.c.updated_at < self.until)
        if self.chat_id is not None:
            found.append(feedback.c.chat_id == self.chat_id)
        return found


@dataclass(frozen=True, slots=True)
class FeedbackPage:
    items: list[Feedback]
    has_next: bool


def _check_rating(rating: str | None, what: str = "rating") -> None:
    if rating is not None and rating not in RATINGS:
        raise InvalidArgument(f"{what} must be one of {', '.join(RATINGS)}")


def _checked_comment(comment: str | None) -> str | None:
    if comment is None or comment == "":
        return None
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT_CHARS:
        raise InvalidArgument(f"comment must be at most {MAX_COMMENT_CHARS} characters")
    return comment


def _checked_tags(tags: Sequence[str] | None) -> list[str]:
    if tags is None:
        return []
    if not all(isinstance(tag, str) for tag in tags):
        raise InvalidArgument("tags must be a list of strings")
    for tag in tags:
        if not 1 <= len(tag) <= TAG_CHARS:
            raise InvalidArgument(f"each tag must be 1-{TAG_CHARS} characters, got {tag!r:.80}")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in tag):
            raise InvalidArgument(f"tag {tag!r:.80} contains a control character")
    distinct = sorted(set(tags))
    if len(distinct) > MAX_FEEDBACK_TAGS:
        raise InvalidArgument(f"at most {MAX_FEEDBACK_TAGS} tags, got {len(distinct)}")
    return distinct


def _feedback_from_row(row: Any) -> Feedback:
    return Feedback(
        id=row.id, chat_id=row.chat_id, message_id=row.message_id,
        question_id=row.question_id, rated_by=row.rated_by, rating=row.rating,
        comment=row.comment, tags=list(row.tags or []), assistant_id=row.assistant_id,
        request_id=row.request_id, model=row.model, created_at=row.created_at,
        updated_at=row.updated_at)


# ---- rating ----------------------------------------------------------------------------


async def _question_of(conn: AsyncConnection, chat_id: str, parent_id: str | None) -> str | None:
    """The nearest USER message at or above ``parent_id`` (None: there is none)."""
    if parent_id is None:
        return None
    walk = tree.path_walk(parent_id, chat=chat_id, carry=("role",), count=_MAX_CLIMB,
                          dialect=conn.dialect.name)
    found: str | None = await conn.scalar(
        select(walk.c.id).where(walk.c.role == "USER").order_by(walk.c.n).limit(1))
    return found


async def _model_of(conn: AsyncConnection, chat_id: str, request_id: str | None) -> str | None:
    """The model the stream answering ``request_id`` reported (the newest, if several)."""
    if request_id is None:
        return None
    model: str | None = await conn.scalar(
        select(usage_records.c.model)
        .where(usage_records.c.chat_id == chat_id, usage_records.c.request_id == request_id,
               usage_records.c.model.is_not(None))
        .order_by(usage_records.c.created_at.desc()).limit(1))
    return model


async def rate_message(db: Database, who: Identity, message_id: str, rating: str | None, *,
                       comment: str | None = None,
                       tags: Sequence[str] | None = None) -> Feedback | None:
    """Set (or, with ``rating`` None, clear) the caller's feedback on a message; returns
    it as it stands (None once cleared). See the module's rules."""
    check_message_id(message_id)
    _check_rating(rating)
    comment = _checked_comment(comment)
    checked_tags = _checked_tags(tags)
    if rating is None and (comment is not None or checked_tags):
        raise InvalidArgument("a comment or tags need a rating (a null rating clears the"
                              " feedback)")
    try:
        return await _rate(db, who, message_id, rating, comment, checked_tags)
    except IntegrityError:
        # The person's first rating of the message, sent twice at once: the other one
        # was written first, so this one now replaces it.
        return await _rate(db, who, message_id, rating, comment, checked_tags)


async def _rate(db: Database, who: Identity, message_id: str, rating: str | None,
                comment: str | None, checked_tags: list[str]) -> Feedback | None:
    hidden = NotFound(f"message {message_id!r} not found")
    async with db.write() as conn:
        chat_id = await conn.scalar(
            select(message_chats.c.chat_id).where(message_chats.c.id == message_id))
        if chat_id is None:
            raise hidden
        try:
            chat = await access.require(conn, who, chat_id, "read",
                                        columns=(chats.c.tenant_id, chats.c.assistant_id))
        except NotFound:
            raise hidden from None
        mine = and_(feedback.c.message_id == message_id, feedback.c.rated_by == who.user_id)
        if rating is None:
            await conn.execute(delete(feedback).where(mine))
            return None
        message = (await conn.execute(
            select(messages.c.role, messages.c.parent_id, messages.c.request_id,
                   messages.c.assistant_id)
            .where(messages.c.id == message_id, messages.c.chat_id == chat_id))).first()
        if message is None:
            raise hidden
        if message.role != "ASSISTANT":
            raise InvalidArgument(f"message {message_id!r} is a {message.role} message; only"
                                  " an ASSISTANT message is rated")
        values = {
            "rating": rating, "comment": comment, "tags": checked_tags,
            "question_id": await _question_of(conn, chat_id, message.parent_id),
            "assistant_id": message.assistant_id or chat.assistant_id,
            "request_id": message.request_id,
            "model": await _model_of(conn, chat_id, message.request_id),
        }
        earlier = (await conn.execute(select(feedback).where(mine))).first()
        if earlier is not None and all(getattr(earlier, key) == value
                                       for key, value in values.items()):
            return _feedback_from_row(earlier)  # the same again: nothing changes
        stamp = now()
        if earlier is not None:
            row = (await conn.execute(
                update(feedback).where(feedback.c.id == earlier.id)
                .values(**values, updated_at=stamp).returning(feedback))).one()
        else:
            row = (await conn.execute(insert(feedback).values(
                id=new_id(), chat_id=chat_id, tenant_id=chat.tenant_id,
                message_id=message_id, rated_by=who.user_id, created_at=stamp,
                updated_at=stamp, **values).returning(feedback))).one()
    return _feedback_from_row(row)


async def forget_deleted(conn: AsyncConnection, chat_id: str) -> None:
    """Within the transaction that deleted messages of the chat: the feedback on them goes
    too. (Only after rows went: an archived chat's messages are away, not deleted.)"""
    await conn.execute(delete(feedback).where(
        feedback.c.chat_id == chat_id,
        ~exists().where(messages.c.chat_id == chat_id, messages.c.id == feedback.c.message_id)))


# ---- reads ------------------------------------------------------------------------------


async def feedback_of(db: Database, who: Identity,
                      message_ids: Sequence[str]) -> dict[str, Feedback]:
    """The caller's own feedback on each of ``message_ids`` that has some (messages the
    caller has been shown: ``Message.myFeedback``)."""
    if not message_ids:
        return {}
    async with db.read() as conn:
        rows = (await conn.execute(select(feedback).where(
            feedback.c.message_id.in_(list(message_ids)),
            feedback.c.rated_by == who.user_id, feedback.c.tenant_id == who.tenant_id))).all()
    return {row.message_id: _feedback_from_row(row) for row in rows}


async def summaries(db: Database, who: Identity,
                    message_ids: Sequence[str]) -> dict[str, FeedbackSummary]:
    """How many people rated each of ``message_ids`` up and down (messages the caller has
    been shown: ``Message.feedbackSummary``); a message nobody rated is left out."""
    if not message_ids:
        return {}
    async with db.read() as conn:
        rows = (await conn.execute(
            select(feedback.c.message_id, feedback.c.rating, func.count().label("n"))
            .where(feedback.c.message_id.in_(list(message_ids)),
                   feedback.c.tenant_id == who.tenant_id)
            .group_by(feedback.c.message_id, feedback.c.rating))).all()
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(row.message_id, {})[row.rating] = int(row.n)
    return {message_id: FeedbackSummary(up=found.get("UP", 0), down=found.get("DOWN", 0))
            for message_id, found in counts.items()}


#: A listing position: (rating last set at, feedback id); the listing runs newest first.
Position = MomentPosition


def cursor_scope(who: Identity, feedback_filter: FeedbackFilter) -> str:
    """What a listing cursor is bound to: the caller and the filter."""
    moments = [None if moment is None else moment.isoformat()
               for moment in (feedback_filter.since, feedback_filter.until)]
    return jsonutil.dumps(["feedback", who.tenant_id, who.user_id, feedback_filter.assistant_id,
                           feedback_filter.rating, *moments, feedback_filter.chat_id])


def position_of(item: Feedback) -> list[str]:
    return [item.updated_at.isoformat(), item.id]


def position_from(value: Any) -> Position:
    """The position a signed cursor carried; INVALID_CURSOR when it is not one."""
    return moment_position_from(value)


async def list_feedback(db: Database, who: Identity, feedback_filter: FeedbackFilter, *,
                        first: int | None = None, after: Position | None = None) -> FeedbackPage:
    """The feedback on the chats the caller may change (the tenant's, for ``admin``),
    newest first (by when the rating was last set)."""
    feedback_filter.check()
    size = DEFAULT_FEEDBACK_PAGE if first is None else first
    if not 1 <= size <= MAX_FEEDBACK_PAGE:
        raise InvalidArgument(f"first must be between 1 and {MAX_FEEDBACK_PAGE}")
    query = (select(feedback).join(chats, chats.c.id == feedback.c.chat_id)
             .where(feedback.c.tenant_id == who.tenant_id, access.can_write(who), present(),
                    *feedback_filter.clauses()))
    if after is not None:
        at, feedback_id = after
        query = query.where(or_(feedback.c.updated_at < at,
                                and_(feedback.c.updated_at == at, feedback.c.id < feedback_id)))
    query = query.order_by(feedback.c.updated_at.desc(), feedback.c.id.desc()).limit(size + 1)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return FeedbackPage([_feedback_from_row(row) for row in rows[:size]],
                        has_next=len(rows) > size)


async def messages_by_id(db: Database, who: Identity,
                         keys: Iterable[tuple[str, str]]) -> dict[str, Message]:
    """The messages named by (chat id, message id) that the caller may read: what the
    listing's rated messages and questions are (one read for a page of them)."""
    wanted = set(keys)
    if not wanted:
        return {}
    chat_ids = sorted({chat_id for chat_id, _ in wanted})
    ids = sorted({message_id for _, message_id in wanted})
    async with db.read() as conn:
        rows = (await conn.execute(
            select(messages).join(chats, chats.c.id == messages.c.chat_id)
            .where(messages.c.chat_id.in_(chat_ids), messages.c.id.in_(ids), present(),
                   access.can_read(who)))).all()
    return {row.id: record_from_mapping(row._mapping) for row in rows}


# ---- the operator's export ---------------------------------------------------------------

_EXPORT_BATCH = 500


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


async def export_feedback(db: Database, feedback_filter: FeedbackFilter, *,
                          tenant_id: str | None = None,
                          batch: int = _EXPORT_BATCH) -> AsyncIterator[dict[str, Any]]:
    """Every rating matching ``feedback_filter`` (of ``tenant_id``, or of every tenant),
    oldest first, as the lines ``chatql export-feedback`` writes: the rating with the
    texts of the question and the answer. For operators, who reach the database
    directly; no access rule applies. Read in keyset batches, so memory stays flat."""
    feedback_filter.check()
    answer = messages.alias("answer")
    question = messages.alias("question")
    query = (
        select(feedback, answer.c.props.label("answer_props"),
               question.c.props.label("question_props"))
        .join(chats, chats.c.id == feedback.c.chat_id)
        .outerjoin(answer, and_(answer.c.chat_id == feedback.c.chat_id,
                                answer.c.id == feedback.c.message_id))
        .outerjoin(question, and_(question.c.chat_id == feedback.c.chat_id,
                                  question.c.id == feedback.c.question_id))
        .where(present(), *feedback_filter.clauses())
        .order_by(feedback.c.updated_at, feedback.c.id)
        .limit(batch)
    )
    if tenant_id is not None:
        query = query.where(feedback.c.tenant_id == tenant_id)
    after: Position | None = None
    while True:
        page = query if after is None else query.where(or_(
            feedback.c.updated_at > after[0],
            and_(feedback.c.updated_at == after[0], feedback.c.id > after[1])))
        async with db.read() as conn:
            rows = (await conn.execute(page)).all()
        for row in rows:
            yield {
                "id": row.id, "tenantId": row.tenant_id, "chatId": row.chat_id,
                "messageId": row.message_id, "questionId": row.question_id,
                "assistantId": row.assistant_id, "rating": row.rating,
                "comment": row.comment, "tags": list(row.tags or []),
                "ratedBy": row.rated_by, "createdAt": _time(row.created_at),
                "updatedAt": _time(row.updated_at),
                "question": message_text(row.question_props),
                "answer": message_text(row.answer_props),
                "model": row.model, "requestId": row.request_id,
            }
        if len(rows) < batch:
            return
        after = (rows[-1].updated_at, rows[-1].id)
