"""``store/access.py`` predicates against the oracle, for every caller and chat.

The HTTP matrix proves the operations that exist; this proves the predicates that
future operations (lists, search, streams) will filter with, including ``can_stream``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from chatql.store import access
from chatql.store.chats.chat import create_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats
from chatql.store.records import Identity
from tests.access.oracle import (
    CALLERS,
    OWNERS,
    VISIBILITIES,
    Caller,
    ChatSpec,
    Outcome,
    may_append,
    may_change,
    may_read,
    may_stream,
    stream_outcome,
)


def _identity(caller: Caller) -> Identity:
    return Identity(user_id=caller.user, tenant_id=caller.tenant, team_id=caller.team,
                    roles=frozenset(caller.roles))


async def test_predicates_match_the_oracle(db: Database) -> None:
    specs: dict[str, ChatSpec] = {}
    for number, (owner, (share, public)) in enumerate(
        (owner, visibility) for owner in OWNERS for visibility in VISIBILITIES
    ):
        chat = await create_chat(db, _identity(owner), id=f"p{number}", assistant_id="a",
                                 share=share, public=public)
        specs[chat.id] = ChatSpec(owner, share, public)
    rules: list[tuple[str, Any, Any]] = [
        ("can_read", access.can_read, may_read),
        ("can_write", access.can_write, may_change),
        ("can_write(append)", lambda who: access.can_write(who, append=True), may_append),
        ("can_stream", access.can_stream, may_stream),
    ]
    wrong: list[str] = []
    async with db.read() as conn:
        for caller in CALLERS:
            for name, predicate, oracle in rules:
                got = set((await conn.scalars(
                    select(chats.c.id).where(predicate(_identity(caller)))
                )).all())
                want = {chat_id for chat_id, spec in specs.items() if oracle(caller, spec)}
                if got != want:
                    wrong.append(f"{name} for {caller.label()}: extra {sorted(got - want)}, "
                                 f"missing {sorted(want - got)}")
    assert not wrong, "\n".join(wrong)


def test_stream_outcome_follows_spec_roles() -> None:
    """Producers: agent/admin of the tenant; readers without the role are FORBIDDEN."""
    owner = OWNERS[0]
    chat = ChatSpec(owner, "PRIVATE", True)
    by_role = {caller.roles: stream_outcome(caller, chat) for caller in CALLERS
               if caller.tenant == owner.tenant and caller.user == owner.user
               and caller.team == owner.team}
    assert by_role == {(): Outcome.FORBIDDEN, ("agent",): Outcome.OK, ("admin",): Outcome.OK}
    stranger = next(c for c in CALLERS if c.tenant != owner.tenant and "admin" in c.roles)
    assert stream_outcome(stranger, chat) is Outcome.HIDDEN
