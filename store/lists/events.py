"""A live chat list: chat events, carried to every instance and filtered per subscriber.

Every write path calls :meth:`ChatEvents.publish` once, after its transaction
committed, with the event's type and chat (and, when the write may have taken the chat
away from someone — an update, a delete, a purge — the chat as it was before). The
event goes through the stream backend (:meth:`store.streams.backends.FanOut.publish_chat_event`),
so it reaches every instance, this one included; each instance runs one listener that
takes the events in order and offers each to its local subscribers.

Delivery decides at delivery time with the chat as it is then: the listener reads the
chat's current row once (shared by every subscriber of the instance;
:func:`load_chats`) — or, for an append, takes the chat as the append committed it,
carried in the event (see :class:`ChatEvents`) — and for each
*audience* the event may concern — the subscribers with the same identity and
:class:`store.chat_lists.ChatListFilter`; those that could read the chat now or before,
or hold it, found without asking every other audience of the tenant — it applies the
same access rule as ``chats`` (:func:`store.access.may_read`) and the filter once.
Every subscriber an event reaches is queued the same event object (one
per published event and outcome), which a transport may serialise once for all:

- the chat is readable and matches: the event, carrying the current chat;
- it is not, but the subscriber could see it before (the write's before-image, or a
  chat it was sent earlier): one ``DELETED`` with no chat, then nothing more until the
  chat becomes visible to it again;
- otherwise nothing — an event never carries content to a caller who may not read it.

``DELETED`` and ``PURGED`` never carry a chat. Each subscriber has a bounded queue: one
that falls behind has its backlog replaced by a single ``RESYNC`` (empty chat id), after
which its list should be fetched again (events until it takes the RESYNC are dropped:
the refetch covers them).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from sqlalchemy import select

from chatql.store import access
from chatql.store.clock import now as service_now
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.partitions import message_chats
from chatql.store.db.replicas import reading_after, written_position
from chatql.store.lists.chat_lists import (
    ChatListFilter,
    awaiting_decision_ids,
    awaiting_reply_ids,
    awaiting_retry_ids,
)
from chatql.store.records import Chat, Identity
from chatql.store.streams.backends import FanOut

__all__ = [
    "CHAT_EVENT_TYPES",
    "DEFAULT_EVENT_QUEUE_LIMIT",
    "ChatEvent",
    "ChatEventSubscription",
    "ChatEventType",
    "ChatEvents",
    "Sink",
    "chat_of_message",
    "load_chat",
    "load_chats",
]

logger = logging.getLogger("chatql.events")

ChatEventType = Literal["CREATED", "UPDATED", "DELETED", "RESTORED", "PURGED", "MESSAGES",
                        "STREAM_STARTED", "STREAM_ENDED", "INTERRUPT_REQUESTED",
                        "INTERRUPT_RESOLVED", "RESYNC"]
CHAT_EVENT_TYPES: tuple[ChatEventType, ...] = (
    "CREATED", "UPDATED", "DELETED", "RESTORED", "PURGED", "MESSAGES", "STREAM_STARTED",
    "STREAM_ENDED", "INTERRUPT_REQUESTED", "INTERRUPT_RESOLVED", "RESYNC",
)
#: Events a subscriber may have waiting before its backlog becomes one RESYNC.
DEFAULT_EVENT_QUEUE_LIMIT = 256
# At most this many events share one read of their chats.
_BATCH = 500
# The chats whose last delivered state the listener keeps, to order appends' states by.
_KNOWN = 4096
_GONE: frozenset[str] = frozenset({"DELETED", "PURGED"})
_DATETIME_FIELDS = frozenset(f.name for f in dataclasses.fields(Chat) if "datetime" in str(f.type))


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One event as a subscriber receives it; ``chat`` is None when it must not carry one."""

    type: ChatEventType
    chat_id: str
    chat: Chat | None
    at: datetime


@dataclass(frozen=True, slots=True)
class _Published:
    """One event as it travels between instances."""

    type: ChatEventType
    chat_id: str
    tenant_id: str
    at: datetime
    before: Chat | None
    #: The WAL position of the write announced (0 without read replicas): the read at
    #: delivery must see at least that much.
    position: int = 0
    #: The chat as the write committed it, with its last sequence then (appends only).
    after: Chat | None = None
    sequence: int = 0


_CHAT_FIELDS = tuple(f.name for f in dataclasses.fields(Chat))
# metadata is content nobody filters on: it stays out of the before-image. Whether the
# chat awaits a reply is worked out at delivery, for the subscribers that ask.
_FLAGS = ("awaiting_reply", "awaiting_decision", "awaiting_retry")
_BEFORE_FIELDS = tuple(name for name in _CHAT_FIELDS if name not in ("metadata", *_FLAGS))
_AFTER_FIELDS = tuple(name for name in _CHAT_FIELDS if name not in _FLAGS)


def _chat_wire(chat: Chat, fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(chat, name) for name in fields}


def _chat_from_wire(data: dict[str, Any]) -> Chat:
    values: dict[str, Any] = {name: data.get(name) for name in _AFTER_FIELDS}
    for name in _DATETIME_FIELDS:
        if values[name] is not None:
            values[name] = datetime.fromisoformat(values[name])
    values["tags"] = values["tags"] or []
    return Chat(**values)


def _encode(event: _Published) -> bytes:
    data: dict[str, Any] = {
        "type": event.type, "chatId": event.chat_id, "tenantId": event.tenant_id,
        "at": event.at.isoformat(),
        "before": None if event.before is None else _chat_wire(event.before, _BEFORE_FIELDS),
    }
    if event.position:
        data["position"] = event.position
    if event.after is not None:
        data["after"] = _chat_wire(event.after, _AFTER_FIELDS)
        data["sequence"] = event.sequence
    return orjson.dumps(data)


def _decode(payload: bytes) -> _Published:
    data = orjson.loads(payload)
    before = data.get("before")
    after = data.get("after")
    return _Published(type=data["type"], chat_id=data["chatId"], tenant_id=data["tenantId"],
                      at=datetime.fromisoformat(data["at"]),
                      before=None if before is None else _chat_from_wire(before),
                      position=int(data.get("position") or 0),
                      after=None if after is None else _chat_from_wire(after),
                      sequence=int(data.get("sequence") or 0))


async def load_chats(db: Database, chat_ids: Collection[str]) -> dict[str, Chat]:
    """The chats as stored, by id (deleted or not, whoever may read them).

    The listener's read at delivery, once per batch: one prepared statement, and on a
    SQLite file connections of its own (a pooled one costs a checkout, a transaction
    and a reset, several times the read itself). A statement on them outside a
    transaction reads what is committed when it runs, as the delivery-time rule needs."""
    return {chat_id: chat for chat_id, (_, chat) in (await _read_chats(db, chat_ids)).items()}


async def chat_of_message(db: Database, message_id: str) -> str | None:
    """The id of the chat holding ``message_id``, or None."""
    async with db.read() as conn:
        found = await conn.scalar(
            select(message_chats.c.chat_id).where(message_chats.c.id == message_id))
    return None if found is None else str(found)


async def load_chat(db: Database, chat_id: str) -> Chat | None:
    """The chat as stored (deleted or not, whoever may read it), or None."""
    found = (await _read_chats(db, (chat_id,))).get(chat_id)
    return None if found is None else found[1]


async def _read_chats(db: Database, chat_ids: Collection[str]) -> dict[str, tuple[int, Chat]]:
    """The chats as stored, by id, each with its last sequence."""
    ids = list(chat_ids)
    statement = prepared.chats_by_id_statement(db, db.dialect)
    rows = await prepared.fetch(db, statement, {"ids": prepared.ids_argument(db.dialect, ids)},
                                keys=len(ids))
    return {row[0]: (row[-1], prepared.chat_record(row)) for row in rows}


#: Hands one event to a subscriber's transport right away; False when it cannot now.
Sink = Callable[[ChatEvent], bool]


class ChatEventSubscription:
    """One subscriber's view: who it is, its filter, and its bounded queue.

    A transport that can write an event without waiting gives a *sink*: while the
    subscriber's consumer is idle (nothing queued, nothing in hand) an event goes
    straight to the sink from the delivery, sparing the consumer's task a wake-up per
    event; anything the sink does not take, and every event behind one that waits,
    is queued as usual, so the order holds."""

    def __init__(self, who: Identity, list_filter: ChatListFilter, limit: int,
                 sink: Sink | None = None) -> None:
        self.who = who
        self.filter = list_filter
        self._limit = limit
        self._queue: deque[ChatEvent] = deque()
        self._ready = asyncio.Event()
        self._closed = False
        self._sink = sink
        # The consumer waits for the queue with no event in hand: the sink may write.
        self._idle = False
        # A RESYNC waits to be taken: the refetch it asks for covers anything until then.
        self._resync_pending = False
        # Chats this subscriber was last sent with content, and those it was told to drop.
        self._shown: set[str] = set()
        self._dropped: set[str] = set()
        #: How many times the backlog was replaced by RESYNC (for tests and metrics).
        self.resyncs = 0
        self._audience: _Audience | None = None

    def _show(self, chat_id: str, event: ChatEvent) -> None:
        if chat_id not in self._shown:
            self._shown.add(chat_id)
            if self._audience is not None:
                self._audience.hold(chat_id, 1)
        self._dropped.discard(chat_id)
        self._put(event)

    def _drop(self, chat_id: str, event: ChatEvent) -> None:
        self._forget(chat_id)
        self._dropped.add(chat_id)
        self._put(event)

    def _forget(self, chat_id: str) -> None:
        if chat_id in self._shown:
            self._shown.discard(chat_id)
            if self._audience is not None:
                self._audience.hold(chat_id, -1)

    def resync(self, at: datetime) -> None:
        """Replace the backlog with one RESYNC: the subscriber refetches its list."""
        self._queue.clear()
        self.resyncs += 1
        self._resync_pending = True
        self._queue.append(ChatEvent("RESYNC", "", None, at))
        # What it was sent before no longer tells what its refetched list holds.
        for chat_id in list(self._shown):
            self._forget(chat_id)
        self._dropped.clear()
        self._ready.set()

    def _put(self, event: ChatEvent) -> None:
        if self._closed or self._resync_pending:
            return
        if self._idle and not self._queue and self._sink is not None:
            try:
                if self._sink(event):
                    return
            except Exception:  # the consumer's ordinary send reports whatever it is
                logger.debug("chat event sink refused an event", exc_info=True)
        if len(self._queue) >= self._limit:
            self.resync(event.at)
            return
        self._queue.append(event)
        self._ready.set()

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    async def events(self) -> AsyncIterator[ChatEvent]:
        """The subscriber's events until it is closed."""
        while True:
            while self._queue:
                event = self._queue.popleft()
                if event.type == "RESYNC":
                    self._resync_pending = False
                yield event
            if self._closed:
                return
            self._ready.clear()
            self._idle = True
            try:
                await self._ready.wait()
            finally:
                self._idle = False


class _Audience:
    """Subscribers with the same identity and filter: whether they may see a chat is
    one decision per event. Members differ only in what each was sent before (a RESYNC
    forgets it), which decides who is told DELETED."""

    __slots__ = ("filter", "holders", "holding", "members", "who")

    def __init__(self, who: Identity, list_filter: ChatListFilter,
                 holders: dict[str, set[_Audience]]) -> None:
        self.who = who
        self.filter = list_filter
        self.members: set[ChatEventSubscription] = set()
        # How many members were last sent each chat with content: a chat no member
        # holds, that the audience could not see before either, concerns none of them.
        self.holding: dict[str, int] = {}
        # The tenant's audiences by chat they hold (an event for it is theirs to judge).
        self.holders = holders

    def hold(self, chat_id: str, change: int) -> None:
        count = self.holding.get(chat_id, 0) + change
        if count > 0:
            if chat_id not in self.holding:
                self.holders.setdefault(chat_id, set()).add(self)
            self.holding[chat_id] = count
        elif self.holding.pop(chat_id, None) is not None:
            holders = self.holders[chat_id]
            holders.discard(self)
            if not holders:
                del self.holders[chat_id]

    def _sees(self, chat: Chat | None, *, deleted_too: bool = False) -> bool:
        if chat is None or (chat.deleted_at is not None and not deleted_too):
            return False
        if chat.expires_at is not None and chat.expires_at <= service_now():
            return False  # expired reads as absent, swept or not
        return access.may_read(self.who, chat) and self.filter.matches(chat)

    def offer(self, event: _Published, current: Chat | None, sent: _Sent) -> None:
        """Queue what ``event`` means to each member, given the chat's current row
        (read at delivery: access is decided now, never remembered across events)."""
        chat_id = event.chat_id
        if event.type in _GONE:
            could = self._sees(event.before) or self._sees(current, deleted_too=True)
            if not could and chat_id not in self.holding:
                return
            for member in self.members:
                if could or chat_id in member._shown:
                    member._drop(chat_id, sent.gone())
            return
        if self._sees(current):
            for member in self.members:
                member._show(chat_id, sent.shown())
            return
        # It left these subscribers' lists (access taken away, filter no longer met).
        before = self._sees(event.before)
        if not before and chat_id not in self.holding:
            return
        for member in self.members:
            if chat_id not in member._dropped and (before or chat_id in member._shown):
                member._drop(chat_id, sent.dropped())


class _Sent:
    """What one published event can be to a subscriber, made once and shared by every
    audience it reaches (so a transport serialises each once per selection)."""

    __slots__ = ("_dropped", "_event", "_gone", "_shown", "current")

    def __init__(self, event: _Published, current: Chat | None) -> None:
        self._event = event
        self.current = current
        self._shown: ChatEvent | None = None
        self._gone: ChatEvent | None = None
        self._dropped: ChatEvent | None = None

    def shown(self) -> ChatEvent:
        """The event carrying the chat as it is now."""
        if self._shown is None:
            event = self._event
            self._shown = ChatEvent(event.type, event.chat_id, self.current, event.at)
        return self._shown

    def gone(self) -> ChatEvent:
        """A DELETED or PURGED event, with no chat."""
        if self._gone is None:
            event = self._event
            self._gone = ChatEvent(event.type, event.chat_id, None, event.at)
        return self._gone

    def dropped(self) -> ChatEvent:
        """DELETED for a subscriber the chat left, with no chat."""
        if self._dropped is None:
            event = self._event
            self._dropped = ChatEvent("DELETED", event.chat_id, None, event.at)
        return self._dropped


@dataclass
class _Tenant:
    """A tenant's audiences, and where to find those an event may concern.

    An event is offered only to the audiences that may read the chat now or before (a
    superset found by the shape of :func:`store.access.may_read`: the creator's, the
    team's for a TEAM chat, the tenant-wide readers', every one for a public chat) and
    those holding it — not to every audience of the tenant, most of which it does
    not concern. Each of them still decides with ``may_read`` itself: the index only
    spares the others, it never lets anyone see a chat."""

    audiences: dict[tuple[Identity, ChatListFilter], _Audience] = field(default_factory=dict)
    by_user: dict[str, set[_Audience]] = field(default_factory=dict)
    by_team: dict[str, set[_Audience]] = field(default_factory=dict)
    #: Admins and agents read every chat of the tenant.
    everywhere: set[_Audience] = field(default_factory=set)
    holders: dict[str, set[_Audience]] = field(default_factory=dict)

    def subscribers(self) -> list[ChatEventSubscription]:
        return [member for audience in self.audiences.values()
                for member in audience.members]

    def _places(self, who: Identity) -> list[set[_Audience]]:
        if who.is_admin or who.is_agent:
            return [self.everywhere]
        places = [self.by_user.setdefault(who.user_id, set())]
        if who.team_id:
            places.append(self.by_team.setdefault(who.team_id, set()))
        return places

    def add(self, audience: _Audience) -> None:
        for place in self._places(audience.who):
            place.add(audience)

    def remove(self, audience: _Audience) -> None:
        who = audience.who
        for place in self._places(who):
            place.discard(audience)
        if not self.by_user.get(who.user_id, True):
            del self.by_user[who.user_id]
        if who.team_id and not self.by_team.get(who.team_id, True):
            del self.by_team[who.team_id]

    def concerned(self, chat_id: str, current: Chat | None,
                  before: Chat | None) -> Collection[_Audience]:
        """The audiences an event for ``chat_id`` may mean something to."""
        found = set(self.everywhere)
        for chat in (current, before):
            if chat is None:
                continue
            if chat.public:
                return list(self.audiences.values())
            if chat.created_by is not None:
                found.update(self.by_user.get(chat.created_by, ()))
            if chat.share == "TEAM" and chat.team_id:
                found.update(self.by_team.get(chat.team_id, ()))
        found.update(self.holders.get(chat_id, ()))
        return found


class ChatEvents:
    """Publishes chat events through the backend and delivers them to local subscribers.

    An append's event carries the chat as the append committed it (read whole under
    the chat's lock, with the append's end applied) and the chat's last sequence then.
    Appends to one chat commit in sequence order but may be published out of it, so
    the listener keeps the last state it delivered of each recent chat with its
    sequence: an append's state newer than that one is delivered (and kept), an older
    one gives way to it. Any other event, and an append to a chat the listener keeps
    nothing of, reads the chat at delivery — a read at delivery sees every write
    committed before it, so it is never older than a state an event carries."""

    def __init__(self, db: Database, backend: FanOut, *,
                 queue_limit: int = DEFAULT_EVENT_QUEUE_LIMIT) -> None:
        self.db = db
        self.backend = backend
        self.queue_limit = queue_limit
        self._tenants: dict[str, _Tenant] = {}
        self._listener: asyncio.Task[None] | None = None
        # Each recent chat's last delivered state and its last sequence then.
        self._known: dict[str, tuple[int, Chat]] = {}
        #: Events this instance took from the backend and offered to its subscribers.
        self.received = 0
        #: Events taken from the backend, offered or waiting to be (for tests and metrics).
        self.taken = 0

    async def start(self) -> None:
        """Follow the backend's chat events (returns once following)."""
        if self._listener is not None:
            return
        feed = await self.backend.chat_event_feed()
        try:
            # The delivery-time read opens its connection now, not under the first
            # events (which would then wait for it, and share one later read).
            await load_chats(self.db, ())
        except Exception as error:
            logger.warning("chat events: the chats cannot be read yet: %s", error)
        self._listener = asyncio.create_task(self._listen(feed), name="chatql-chat-events")

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        for tenant in self._tenants.values():
            for subscriber in tenant.subscribers():
                subscriber.close()
        self._tenants.clear()

    async def publish(self, type: ChatEventType, chat_id: str, tenant_id: str, *,
                      before: Chat | None = None, after: Chat | None = None,
                      sequence: int = 0) -> None:
        """Announce a committed write. Never fails the write: a broker outage is logged.

        ``after``: for an append, the chat as it committed, whose last sequence was
        then ``sequence``."""
        event = _Published(type=type, chat_id=chat_id, tenant_id=tenant_id,
                           at=datetime.now(UTC), before=before,
                           position=written_position(), after=after, sequence=sequence)
        try:
            await self.backend.publish_chat_event(_encode(event))
        except Exception as error:
            logger.warning("chat event %s for %s not published: %s", type, chat_id, error)

    def subscribe(self, who: Identity, list_filter: ChatListFilter,
                  sink: Sink | None = None) -> ChatEventSubscription:
        subscriber = ChatEventSubscription(who, list_filter, self.queue_limit, sink)
        tenant = self._tenants.setdefault(who.tenant_id, _Tenant())
        audience = tenant.audiences.get((who, list_filter))
        if audience is None:
            audience = tenant.audiences[(who, list_filter)] = _Audience(
                who, list_filter, tenant.holders)
            tenant.add(audience)
        audience.members.add(subscriber)
        subscriber._audience = audience
        return subscriber

    def unsubscribe(self, subscriber: ChatEventSubscription) -> None:
        subscriber.close()
        tenant = self._tenants.get(subscriber.who.tenant_id)
        key = (subscriber.who, subscriber.filter)
        audience = None if tenant is None else tenant.audiences.get(key)
        if tenant is None or audience is None:
            return
        audience.members.discard(subscriber)
        for chat_id in list(subscriber._shown):
            subscriber._forget(chat_id)
        subscriber._audience = None
        if not audience.members:
            del tenant.audiences[key]
            tenant.remove(audience)
            if not tenant.audiences:
                del self._tenants[subscriber.who.tenant_id]

    def subscriber_count(self) -> int:
        return sum(len(t.subscribers()) for t in self._tenants.values())

    async def _listen(self, feed: AsyncIterator[bytes]) -> None:
        # One task takes events off the feed, this one delivers them: whatever arrived
        # while a batch was delivered is delivered next with ONE read of its chats.
        waiting: deque[bytes] = deque()
        arrived = asyncio.Event()

        async def take() -> None:
            async for payload in feed:
                waiting.append(payload)
                self.taken += 1
                arrived.set()

        taker = asyncio.create_task(take(), name="chatql-chat-event-feed")
        try:
            while True:
                await arrived.wait()
                arrived.clear()
                batch = [waiting.popleft() for _ in range(min(len(waiting), _BATCH))]
                if waiting:
                    arrived.set()
                try:
                    await self._deliver(batch)
                except Exception:
                    logger.exception("chat events could not be delivered")
        finally:
            taker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await taker

    def _follows(self, name: str) -> bool:
        """Whether a subscriber here filters on ``name`` (``awaiting_reply``,
        ``awaiting_decision`` or ``awaiting_retry``): only then is it read."""
        return any(getattr(key[1], name) is not None for tenant in self._tenants.values()
                   for key in tenant.audiences)

    async def _deliver(self, batch: list[bytes]) -> None:
        try:
            await self._offer(batch)
        finally:
            self.received += len(batch)

    async def _offer(self, batch: list[bytes]) -> None:
        events: list[_Published | None] = []
        for payload in batch:
            # An empty payload: the broker may have lost events; every list refetches.
            events.append(_decode(payload) if payload else None)
        known = self._known
        if None in events:
            known.clear()  # what was delivered before the loss orders nothing now
        live = [e for e in events if e is not None and e.tenant_id in self._tenants]
        purged = {e.chat_id for e in live if e.type == "PURGED"}
        for chat_id in purged:
            known.pop(chat_id, None)
        wanted = {e.chat_id for e in live if e.type != "PURGED" and (
            e.after is None or (e.chat_id not in known and e.chat_id not in purged))}
        # Read at delivery, once for every subscriber here: the chats as they are now
        # (on a read replica only one that has replayed every write announced).
        position = max((e.position for e in live), default=0)
        if wanted:
            with reading_after(position):
                read = await _read_chats(self.db, wanted)
            for chat_id in wanted:
                known.pop(chat_id, None)
                if chat_id in read:
                    known[chat_id] = read[chat_id]
        chats: list[Chat | None] = []
        for event in events:
            chat = None
            if (event is not None and event.tenant_id in self._tenants
                    and event.chat_id not in purged):
                state = known.get(event.chat_id)
                if (event.chat_id not in wanted and event.after is not None
                        and (state is None or event.sequence > state[0])):
                    state = known[event.chat_id] = (event.sequence, event.after)
                chat = None if state is None else state[1]
            chats.append(chat)
        while len(known) > _KNOWN:
            del known[next(iter(known))]
        for name, read_ids in (("awaiting_reply", awaiting_reply_ids),
                               ("awaiting_decision", awaiting_decision_ids),
                               ("awaiting_retry", awaiting_retry_ids)):
            if self._follows(name) and any(chats):
                ids = {chat.id for chat in chats if chat is not None}
                with reading_after(position):
                    async with self.db.read() as conn:
                        found = await read_ids(conn, list(ids))
                chats = [None if chat is None else _flagged(chat, name, chat.id in found)
                         for chat in chats]
        for event, chat in zip(events, chats, strict=True):
            if event is None:
                for every in self._tenants.values():
                    for subscriber in every.subscribers():
                        subscriber.resync(datetime.now(UTC))
                continue
            tenant = self._tenants.get(event.tenant_id)
            if tenant is None:
                continue
            if chat is not None and chat.tenant_id != event.tenant_id:
                continue
            sent = _Sent(event, chat)
            for audience in tenant.concerned(event.chat_id, chat, event.before):
                audience.offer(event, chat, sent)


def _flagged(chat: Chat, name: str, value: bool) -> Chat:
    """``chat`` with its awaiting flag ``name`` set to ``value``."""
    changes: dict[str, Any] = {name: value}
    return dataclasses.replace(chat, **changes)
