"""Prepared statements read what the store's own page functions read.

Message pages have one reader, the prepared statement (``list_messages`` runs it on
the raw driver): its records must be what SQLAlchemy's typed columns give for the same
rows. A chat-list page is built once per shape from the same predicates as
``list_chats``. Should that function change what it asks the database (another
condition, another order), these tests fail: the SQL it runs is captured and its
``FROM … WHERE … ORDER BY …`` part compared with the prepared statement's; and the rows
both return are compared too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, select

from chatql.store.chats import chat as chats
from chatql.store.db.database import Database
from chatql.store.db.prepared import CHAT_COLUMNS, chat_after, chat_positions, fetch
from chatql.store.db.tables import messages as messages_table
from chatql.store.lists import chat_lists
from chatql.store.lists.pages import ChatPageShape, chat_page_statement
from chatql.store.messages import message as messages
from chatql.store.messages.message import MessageFilter, NewMessage
from chatql.store.records import Identity

OWNER = Identity(user_id="alice", tenant_id="acme", team_id="red")
ADMIN = Identity(user_id="root", tenant_id="acme", roles=frozenset({"admin"}))


@contextmanager
def captured(db: Database) -> Iterator[list[str]]:
    statements: list[str] = []

    def remember(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().startswith("SELECT"):  # not SQLite's BEGIN
            statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", remember)
    try:
        yield statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", remember)


def tail(sql: str, table: str) -> str:
    """The outermost ``FROM table WHERE …`` onwards (the select lists differ), with
    Postgres' numbered parameters unnumbered (a repeated value may share a number)."""
    return re.sub(r"\$\d+", "$n", sql[sql.rindex(f"\nFROM {table} \nWHERE"):])


@pytest.fixture
async def seeded(db: Database) -> Database:
    await chats.create_chat(db, OWNER, id="c", assistant_id="helper")
    batch = [NewMessage(role="USER" if n % 2 else "ASSISTANT", type="text", props={"n": n},
                        request_id=f"r{n % 3}") for n in range(30)]
    await messages.append_messages(db, OWNER, "c", "seed", batch)
    for n in range(12):
        await chats.create_chat(db, OWNER, id=f"k{n}", assistant_id="helper",
                                share="TEAM" if n % 2 else "PRIVATE")
    await chats.delete_chat(db, OWNER, "k4")
    return db


@pytest.mark.parametrize("who", [OWNER, ADMIN], ids=["member", "admin"])
@pytest.mark.parametrize("arguments", [
    {}, {"first": 5}, {"last": 4, "before": 20}, {"first": 3, "after": 10},
    {"after": 25}, {"last": 6, "before": 28, "filter": MessageFilter(role="USER")},
    {"first": 2, "after": 3, "before": 9, "filter": MessageFilter(request_id="r1",
                                                                   role="ASSISTANT")},
])
async def test_message_pages_are_the_records_sqlalchemy_reads(
    seeded: Database, who: Identity, arguments: dict[str, Any],
) -> None:
    """``list_messages`` reads its page with the prepared statement on the raw driver;
    the records it makes of the driver's values are the ones SQLAlchemy's typed columns
    give for the same rows (times aware and in UTC, JSON decoded, booleans as such)."""
    db = seeded
    page = await messages.list_messages(db, who, "c", **arguments)
    assert page.items
    ids = [message.id for message in page.items]
    async with db.read() as conn:
        rows = (await conn.execute(select(messages_table).where(
            messages_table.c.id.in_(ids)))).all()
    typed = {row.id: messages.message_from_row(row) for row in rows}
    assert page.items == [typed[message_id] for message_id in ids]
    sequences = [message.sequence for message in page.items]
    assert sequences == sorted(sequences)
    store_filter = arguments.get("filter") or MessageFilter()
    assert all(getattr(message, name) == value for message in page.items
               for name, value in store_filter.given().items())


@pytest.mark.parametrize("who", [OWNER, ADMIN, Identity(user_id="bob", tenant_id="acme")],
                         ids=["member", "admin", "stranger"])
async def test_chat_lists_ask_what_list_chats_asks(seeded: Database, who: Identity) -> None:
    db = seeded
    with captured(db) as statements:
        first = await chat_lists.list_chats(db, who, first=4, with_totals=False)
    page_of_five = chat_page_statement(db, ChatPageShape.of(db, who, after=False, limit=5))
    assert tail(page_of_five.sql, "chats") == tail(statements[0], "chats")
    # The page size and the mode left out are written into both texts (so Postgres
    # plans them as values).
    assert "LIMIT 5" in statements[0]
    assert "mode != 'subagent'" in statements[0]
    values = {"user": who.user_id, "tenant": who.tenant_id, "team": who.team_id}
    rows = await fetch(db, page_of_five, values)
    assert [row[0] for row in rows[:4]] == [chat.id for chat in first.items]
    if not first.items:
        return
    _, chat_position = chat_positions()
    assert [chat_position(row) for row in rows[:4]] == first.positions
    position = first.positions[-1]
    with captured(db) as statements:
        second = await chat_lists.list_chats(db, who, first=4, after=position,
                                             with_totals=False)
    statement = chat_page_statement(db, ChatPageShape.of(db, who, after=True, limit=5))
    assert tail(statement.sql, "chats") == tail(statements[0], "chats")
    start = chat_lists._parse_position(position, "LAST_MESSAGE_AT")
    rows = await fetch(db, statement, {**values, **chat_after(start, db.dialect)})
    assert [row[0] for row in rows[:4]] == [chat.id for chat in second.items]
    assert bool(rows[0][len(CHAT_COLUMNS)]) is second.has_previous is True
