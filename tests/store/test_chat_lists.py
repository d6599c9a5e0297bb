"""Chat lists on every backend: keyset order, filters, access, totals and time buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import update

from chatql.store.chats import chat as store_chats
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.errors import InvalidArgument, InvalidCursor
from chatql.store.lists import chat_lists
from chatql.store.lists.chat_lists import ChatListFilter, ChatListPage
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import NewMessage
from chatql.store.records import Identity

ALICE = Identity(user_id="alice", tenant_id="acme")
BOB = Identity(user_id="bob", tenant_id="acme")
ADMIN = Identity(user_id="root", tenant_id="acme", roles=frozenset({"admin"}))


async def make_chat(
    db: Database,
    chat_id: str,
    at: datetime,
    *,
    who: Identity = ALICE,
    created: datetime | None = None,
    messages: bool = True,
    **fields: Any,
) -> None:
    """A chat whose activity time is ``at`` (its creation time too unless ``created``)."""
    fields.setdefault("assistant_id", "helper")
    await store_chats.create_chat(db, who, id=chat_id, **fields)
    created = created or at
    async with db.write() as conn:
        await conn.execute(
            update(chats).where(chats.c.id == chat_id).values(
                created_at=created,
                updated_at=created,
                activity_at=at if messages else created,
                last_message_at=at if messages else None,
            )
        )


def groups_of(page: ChatListPage) -> dict[str, tuple[int, int, list[str]]]:
    return {g.key: (g.count, g.total_count, [c.id for c in g.chats]) for g in page.groups}


def bucket_map(page: ChatListPage) -> dict[str, str]:
    return {chat.id: group.key for group in page.groups for chat in group.chats}


async def walk(db: Database, who: Identity = ALICE, size: int = 3, **kwargs: Any) -> list[str]:
    """Every chat id of the list, read page by page through keyset positions."""
    seen: list[str] = []
    after = None
    for _ in range(100):
        page = await chat_lists.list_chats(db, who, first=size, after=after, **kwargs)
        assert page.has_previous == (after is not None)
        seen += [chat.id for chat in page.items]
        assert len(page.items) == size or not page.has_next
        if not page.has_next:
            return seen
        after = page.positions[-1]
    raise AssertionError("the walk did not end")


T0 = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("order", ["ASC", "DESC"])
@pytest.mark.parametrize("order_by", list(chat_lists.ORDER_FIELDS))
async def test_every_ordering_walks_each_chat_once_stable_under_ties(
    db: Database, order_by: str, order: str
) -> None:
    # Three distinct values, each shared by several chats, and untitled chats: the
    # id breaks every tie, so pages never repeat or skip a chat.
    expected_keys: dict[str, tuple[Any, ...]] = {}
    for i in range(11):
        at = T0 + timedelta(hours=i % 3)
        title = None if i % 4 == 0 else f"topic {i % 3}"
        await make_chat(db, f"c{i:02d}", at, title=title, sort=i % 3)
        value: Any = {"TITLE": title, "SORT": i % 3}.get(order_by, at)
        expected_keys[f"c{i:02d}"] = (value is None, "" if value is None else value, f"c{i:02d}")
    expected = sorted(expected_keys, key=lambda c: expected_keys[c], reverse=order == "DESC")
    assert await walk(db, order_by=order_by, order=order) == expected


async def test_chat_without_messages_orders_by_creation_time(db: Database) -> None:
    await make_chat(db, "old-with-news", T0 - timedelta(minutes=1), created=T0 - timedelta(days=9))
    await make_chat(db, "new-silent", T0 - timedelta(hours=2), messages=False)
    await make_chat(db, "older-silent", T0 - timedelta(days=3), messages=False)
    assert await walk(db, size=2) == ["old-with-news", "new-silent", "older-silent"]
    page = await chat_lists.list_chats(db, ALICE, now=T0)
    assert bucket_map(page) == {
        "old-with-news": "today", "new-silent": "today", "older-silent": "this_week"}
    by_creation = await chat_lists.list_chats(
        db, ALICE, now=T0, filter=ChatListFilter(time_field="CREATED_AT"))
    assert bucket_map(by_creation)["old-with-news"] == "this_month"  # created Tue Jan 6


async def test_appending_moves_a_chat_to_the_top(db: Database) -> None:
    await make_chat(db, "a", T0, messages=False)
    await make_chat(db, "b", T0 + timedelta(seconds=1), messages=False)
    assert await walk(db) == ["b", "a"]
    await store_messages.append_messages(
        db, ALICE, "a", "x", [NewMessage(role="USER", type="text", props={})])
    assert await walk(db) == ["a", "b"]


async def test_filters(db: Database) -> None:
    await make_chat(db, "plan", T0, title="Trip PLANS to Lisbon")
    await make_chat(db, "pct", T0 + timedelta(hours=1), title="100% done")
    await make_chat(db, "other", T0 + timedelta(hours=2), title="plans", assistant_id="x")
    await make_chat(db, "arch", T0 + timedelta(hours=3), title="Plan B",
                    created=T0 - timedelta(days=30))
    await store_chats.update_chat(db, ALICE, "arch", {"status": "ARCHIVED"})

    async def ids(**fields: Any) -> list[str]:
        page = await chat_lists.list_chats(db, ALICE, filter=ChatListFilter(**fields))
        return [chat.id for chat in page.items]

    assert await ids(keywords="plans") == ["other", "plan"]
    assert await ids(keywords="PLAN") == ["arch", "other", "plan"]
    assert await ids(keywords="0%") == ["pct"]  # % is a literal, not a wildcard
    assert await ids(keywords="_") == []
    assert await ids(assistant_id="x") == ["other"]
    assert await ids(status="ARCHIVED") == ["arch"]
    assert await ids(status="ACTIVE", keywords="plan") == ["other", "plan"]
    hour = timedelta(hours=1)
    assert await ids(start_time=T0 + hour, end_time=T0 + 3 * hour) == ["other", "pct"]
    assert await ids(end_time=T0, time_field="CREATED_AT") == ["arch"]
    assert await ids(start_time=T0, time_field="CREATED_AT") == ["other", "pct", "plan"]


async def test_only_readable_live_chats_are_listed(db: Database) -> None:
    await make_chat(db, "mine", T0)
    await make_chat(db, "bobs", T0, who=BOB)
    await make_chat(db, "bobs-public", T0, who=BOB, public=True)
    await make_chat(db, "foreign", T0, who=Identity(user_id="alice", tenant_id="other"))
    await make_chat(db, "deleted", T0)
    await make_chat(db, "purged", T0)
    await store_chats.delete_chat(db, ALICE, "deleted")
    await store_chats.purge_chat(db, ALICE, "purged")
    page = await chat_lists.list_chats(db, ALICE, order_by="CREATED_AT", order="ASC")
    assert [chat.id for chat in page.items] == ["bobs-public", "mine"]
    assert page.total_count == 2
    assert sum(g.total_count for g in page.groups) == 2
    admin = await chat_lists.list_chats(db, ADMIN, order_by="CREATED_AT", order="ASC")
    assert [chat.id for chat in admin.items] == ["bobs", "bobs-public", "mine"]


async def test_page_sizes(db: Database) -> None:
    for i in range(105):
        await make_chat(db, f"c{i:03d}", T0 + timedelta(seconds=i))
    default = await chat_lists.list_chats(db, ALICE)
    assert len(default.items) == 20 and default.has_next and default.total_count == 105
    capped = await chat_lists.list_chats(db, ALICE, first=500)
    assert len(capped.items) == 100 and capped.has_next
    rest = await chat_lists.list_chats(db, ALICE, first=100, after=capped.positions[-1])
    assert [c.id for c in rest.items] == [f"c{i:03d}" for i in range(4, -1, -1)]
    assert (rest.has_previous, rest.has_next) == (True, False)
    for bad in (0, -1):
        with pytest.raises(InvalidArgument):
            await chat_lists.list_chats(db, ALICE, first=bad)


async def test_has_previous_survives_the_cursor_chat_leaving(db: Database) -> None:
    for i in range(4):
        await make_chat(db, f"c{i}", T0 + timedelta(seconds=i))
    page = await chat_lists.list_chats(db, ALICE, first=1)
    await store_chats.delete_chat(db, ALICE, "c3")
    following = await chat_lists.list_chats(db, ALICE, first=1, after=page.positions[-1])
    assert [c.id for c in following.items] == ["c2"]
    assert following.has_previous is False  # nothing at or before the cursor remains
    again = await chat_lists.list_chats(db, ALICE, first=1, after=following.positions[-1])
    assert [c.id for c in again.items] == ["c1"] and again.has_previous


@pytest.mark.parametrize(
    "position",
    ["x", [], ["2026-01-01T00:00:00+00:00"], [1, "c1"], ["not a time", "c1"],
     ["2026-01-01T00:00:00", "c1"], ["2026-01-01T00:00:00+00:00", 5]],
)
async def test_malformed_positions_are_invalid_cursor(db: Database, position: Any) -> None:
    with pytest.raises(InvalidCursor):
        await chat_lists.list_chats(db, ALICE, after=position)


async def test_bad_arguments(db: Database) -> None:
    for kwargs in ({"timezone": "Mars/Olympus"}, {"timezone": "../etc/passwd"},
                   {"timezone": ""}, {"week_start": "FRIDAY"}, {"order_by": "ID"},
                   {"order": "UP"}, {"filter": ChatListFilter(status="GONE")},
                   {"filter": ChatListFilter(time_field="UPDATED_AT")},
                   {"filter": ChatListFilter(start_time=datetime(2026, 1, 1))}):
        with pytest.raises(InvalidArgument):
            await chat_lists.list_chats(db, ALICE, **kwargs)


# --- time buckets -----------------------------------------------------------------

NEW_YORK = "America/New_York"


async def test_midnight_in_a_non_utc_zone(db: Database) -> None:
    zone = ZoneInfo(NEW_YORK)
    now = datetime(2026, 1, 15, 12, 0, tzinfo=zone)  # a Thursday, UTC-5
    local = {
        "midnight": datetime(2026, 1, 15, 0, 0, tzinfo=zone),
        "just-before": datetime(2026, 1, 14, 23, 59, 59, 999999, tzinfo=zone),
        "day-before-yesterday": datetime(2026, 1, 13, 23, 59, tzinfo=zone),
        "sunday": datetime(2026, 1, 11, 23, 59, tzinfo=zone),
        "first-of-month": datetime(2026, 1, 1, 0, 0, tzinfo=zone),
        "last-year": datetime(2025, 12, 31, 23, 59, tzinfo=zone),
    }
    for chat_id, at in local.items():
        await make_chat(db, chat_id, at)
    page = await chat_lists.list_chats(db, ALICE, now=now, timezone=NEW_YORK)
    assert bucket_map(page) == {
        "midnight": "today",
        "just-before": "yesterday",
        "day-before-yesterday": "this_week",
        "sunday": "this_month",
        "first-of-month": "this_month",
        "last-year": "earlier",
    }
    assert [g.label for g in page.groups] == [
        "Today", "Yesterday", "This Week", "This Month", "Earlier"]
    # In UTC both sides of New York's midnight fall on January 15th.
    utc = await chat_lists.list_chats(db, ALICE, now=now)
    assert bucket_map(utc)["just-before"] == "today"
    assert bucket_map(utc)["last-year"] == "this_month"  # 2026-01-01 04:59 UTC


async def test_sunday_week_start(db: Database) -> None:
    zone = ZoneInfo(NEW_YORK)
    now = datetime(2026, 1, 15, 12, 0, tzinfo=zone)
    await make_chat(db, "sunday", datetime(2026, 1, 11, 0, 0, tzinfo=zone))
    await make_chat(db, "saturday", datetime(2026, 1, 10, 23, 59, tzinfo=zone))
    await make_chat(db, "monday", datetime(2026, 1, 12, 9, 0, tzinfo=zone))
    monday = await chat_lists.list_chats(db, ALICE, now=now, timezone=NEW_YORK)
    assert groups_of(monday) == {
        "this_week": (1, 1, ["monday"]), "this_month": (2, 2, ["sunday", "saturday"])}
    sunday = await chat_lists.list_chats(
        db, ALICE, now=now, timezone=NEW_YORK, week_start="SUNDAY")
    assert groups_of(sunday) == {
        "this_week": (2, 2, ["monday", "sunday"]), "this_month": (1, 1, ["saturday"])}


async def test_first_of_month(db: Database) -> None:
    now = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)  # a Sunday; the week began Feb 23
    await make_chat(db, "today", datetime(2026, 3, 1, 0, 0, tzinfo=UTC))
    await make_chat(db, "yesterday", datetime(2026, 2, 28, 8, 0, tzinfo=UTC))
    await make_chat(db, "last-month-this-week", datetime(2026, 2, 23, 0, 0, tzinfo=UTC))
    await make_chat(db, "last-month", datetime(2026, 2, 22, 23, 59, tzinfo=UTC))
    page = await chat_lists.list_chats(db, ALICE, now=now)
    assert bucket_map(page) == {
        "today": "today", "yesterday": "yesterday",
        "last-month-this-week": "this_week", "last-month": "earlier",
    }
    # With Sunday starts the week is just today: Monday the 23rd is no longer "this week".
    sunday = await chat_lists.list_chats(db, ALICE, now=now, week_start="SUNDAY")
    assert bucket_map(sunday)["last-month-this-week"] == "earlier"
    assert "this_week" not in groups_of(sunday) and "this_month" not in groups_of(sunday)


async def test_dst_change_days(db: Database) -> None:
    # Berlin springs forward on 2026-03-29: that day began at 23:00 UTC on the 28th,
    # one hour earlier in UTC than "now minus the current offset" would say.
    berlin = "Europe/Berlin"
    now = datetime(2026, 3, 29, 12, 0, tzinfo=ZoneInfo(berlin))
    await make_chat(db, "first-minute", datetime(2026, 3, 28, 23, 0, tzinfo=UTC))
    await make_chat(db, "last-second", datetime(2026, 3, 28, 22, 59, 59, tzinfo=UTC))
    await make_chat(db, "yesterday-start", datetime(2026, 3, 27, 23, 0, tzinfo=UTC))
    await make_chat(db, "before-yesterday", datetime(2026, 3, 27, 22, 59, tzinfo=UTC))
    page = await chat_lists.list_chats(db, ALICE, now=now, timezone=berlin)
    assert bucket_map(page) == {
        "first-minute": "today", "last-second": "yesterday",
        "yesterday-start": "yesterday", "before-yesterday": "this_week",
    }
    # New York falls back on 2026-11-01, a 25-hour day starting 04:00 UTC.
    now = datetime(2026, 11, 2, 12, 0, tzinfo=ZoneInfo(NEW_YORK))  # Monday
    await make_chat(db, "fall-yesterday", datetime(2026, 11, 1, 4, 0, tzinfo=UTC))
    await make_chat(db, "fall-october", datetime(2026, 11, 1, 3, 59, tzinfo=UTC))
    await make_chat(db, "fall-today", datetime(2026, 11, 2, 5, 0, tzinfo=UTC))
    await make_chat(db, "fall-late-yesterday", datetime(2026, 11, 2, 4, 59, tzinfo=UTC))
    page = await chat_lists.list_chats(
        db, ALICE, now=now, timezone=NEW_YORK,
        filter=ChatListFilter(start_time=datetime(2026, 10, 1, tzinfo=UTC)))
    assert bucket_map(page) == {
        "fall-today": "today", "fall-late-yesterday": "yesterday",
        "fall-yesterday": "yesterday", "fall-october": "earlier",
    }


async def test_bucket_totals_hold_across_pages(db: Database) -> None:
    now = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
    spec = {"today": 2, "yesterday": 3, "this_week": 1, "earlier": 2}
    offsets = {"today": 1, "yesterday": 20, "this_week": 44, "earlier": 24 * 40}
    for key, count in spec.items():
        for i in range(count):
            at = now - timedelta(hours=offsets[key], minutes=i)
            await make_chat(db, f"{key}-{i}", at)
    await make_chat(db, "deleted-today", now)
    await store_chats.delete_chat(db, ALICE, "deleted-today")
    pages: list[dict[str, tuple[int, int, list[str]]]] = []
    after = None
    while True:
        page = await chat_lists.list_chats(db, ALICE, now=now, first=3, after=after)
        assert page.total_count == 8
        pages.append(groups_of(page))
        if not page.has_next:
            break
        after = page.positions[-1]
    assert pages == [
        {"today": (2, 2, ["today-0", "today-1"]), "yesterday": (1, 3, ["yesterday-0"])},
        {"yesterday": (2, 3, ["yesterday-1", "yesterday-2"]),
         "this_week": (1, 1, ["this_week-0"])},
        {"earlier": (2, 2, ["earlier-0", "earlier-1"])},
    ]
    filtered = await chat_lists.list_chats(
        db, ALICE, now=now, filter=ChatListFilter(keywords="x"))
    assert (filtered.total_count, filtered.groups) == (0, [])


async def test_newest_messages_one_per_chat(db: Database) -> None:
    await make_chat(db, "a", T0)
    await make_chat(db, "b", T0)
    await make_chat(db, "hidden", T0, who=BOB)
    for chat_id in ("a", "hidden"):
        await store_messages.append_messages(db, ALICE if chat_id == "a" else BOB, chat_id, "1", [
            NewMessage(role="USER", type="text", props={"n": n}) for n in range(3)])
    found = await chat_lists.newest_messages(db, ALICE, ["a", "b", "hidden", "a"])
    assert {k: (m.sequence, m.props) for k, m in found.items()} == {"a": (3, {"n": 2})}
