"""The access matrix for agent memory over HTTP, generated from the oracle.

Memory belongs to a (tenant, subject), not to a chat, so chat visibilities do not
apply: for every memory operation, an entry of the owner (``OWNERS[0]``, user ``u1`` of
tenant ``t1``) is tried by every caller in ``CALLERS``, and the outcome must be the
oracle's (``memory_read_outcome``, ``memory_own_outcome``, ``memory_write_outcome``).
Hidden is checked as strictly as for chats: lists answer as if the entry did not
exist (and never mention it), an id answers exactly what a never-written id answers,
and denied calls leave the whole store byte-for-byte unchanged.

``modelContext(memoryScopes)`` is in the chat matrix (``test_matrix.py``), since it is
reached through a chat.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import replace
from typing import Any

import pytest

from chatql.store.db.database import Database
from tests.access.oracle import (
    CALLERS,
    OWNERS,
    Caller,
    ChatSpec,
    Outcome,
    memory_own_outcome,
    memory_read_outcome,
    memory_write_outcome,
)
from tests.access.snapshot import store_fingerprint
from tests.access.test_matrix import GHOST, Operation, Target, _normalised, _outcome
from tests.conftest import GraphQLClient

_serial = itertools.count(1)
OWNER = OWNERS[0]
SPEC = ChatSpec(OWNER, "PRIVATE", False)
WRITE = """
mutation($scope: String!, $content: String!) {
  writeMemory(input: {scope: $scope, content: $content}) { id } }"""


def word(target: Target) -> str:
    """A word only the target entry says (its scope name is unique too)."""
    return f"memo{target.chat_id}"


def _entries_found(value: Any, target: Target) -> bool | str:
    ids = [edge["node"]["id"] for edge in value["edges"]]
    if ids == [target.message_id] and value["totalCount"] == 1 and value["totalChars"] > 0:
        return True
    if ids == [] and value["totalCount"] == 0 and value["totalChars"] == 0:
        return False
    return f"inconsistent page or totals: {value}"


def _ids_found(ids: list[str], target: Target) -> bool | str:
    if ids == [target.message_id]:
        return True
    return False if ids == [] else f"unexpected entries {ids}"


MEMORY_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "recentMemory(subject)",
        "query($scope: String!) { recentMemory(scopes: [$scope], subject: \"u1\") { id } }",
        lambda t: {"scope": t.chat_id}, memory_read_outcome, hidden_as="absent",
        found=lambda value, t: _ids_found([e["id"] for e in value], t),
    ),
    Operation(
        "recentMemory(own)",
        "query($scope: String!) { recentMemory(scopes: [$scope]) { id subject } }",
        lambda t: {"scope": t.chat_id}, memory_own_outcome, hidden_as="absent",
        found=lambda value, t: _ids_found([e["id"] for e in value], t),
    ),
    Operation(
        "memoryEntries",
        "query($scope: String!) { memoryEntries(scope: $scope, subject: \"u1\") "
        "{ edges { node { id } } totalCount totalChars } }",
        lambda t: {"scope": t.chat_id}, memory_read_outcome, hidden_as="absent",
        found=_entries_found,
    ),
    Operation(
        "searchMemory",
        "query($scope: String!, $q: String!) { searchMemory(query: $q, scopes: [$scope], "
        "subject: \"u1\") { entry { id } } }",
        lambda t: {"scope": t.chat_id, "q": word(t)}, memory_read_outcome, hidden_as="absent",
        found=lambda value, t: _ids_found([hit["entry"]["id"] for hit in value], t),
    ),
    Operation(
        "updateMemory",
        "mutation($id: ID!) { updateMemory(id: $id, input: {pinned: true}) { id pinned } }",
        lambda t: {"id": t.message_id}, memory_read_outcome,
        check=lambda value, t, c: value == {"id": t.message_id, "pinned": True},
    ),
    Operation(
        "deleteMemory", "mutation($id: ID!) { deleteMemory(id: $id) }",
        lambda t: {"id": t.message_id}, memory_read_outcome, consumes=True,
        check=lambda value, t, c: value is True,
    ),
    Operation(
        "writeMemory(subject)",
        "mutation($scope: String!) { writeMemory(input: {scope: $scope, content: \"noted\", "
        "subject: \"u1\"}) { subject tenantId createdBy } }",
        lambda t: {"scope": t.chat_id}, memory_write_outcome,
        check=lambda value, t, c: value == {
            "subject": "u1", "tenantId": c.tenant, "createdBy": c.user},
    ),
)


async def _make_entry(client: GraphQLClient) -> Target:
    scope = f"m{next(_serial)}"
    target = Target(chat_id=scope, message_id="")
    data = await client.data(WRITE, {"scope": scope, "content": f"remember {word(target)}"},
                             OWNER.headers())
    return replace(target, message_id=data["writeMemory"]["id"])


@pytest.mark.parametrize("operation", MEMORY_OPERATIONS, ids=lambda op: op.name)
async def test_memory_access_matrix(
    client: GraphQLClient, db: Database, operation: Operation
) -> None:
    failures: list[str] = []
    ghosts: dict[Caller | None, Any] = {}
    expected = {caller: operation.expect(caller, SPEC) for caller in CALLERS}
    denied = [c for c in CALLERS if expected[c] is not Outcome.OK]
    allowed = [c for c in CALLERS if expected[c] is Outcome.OK]
    assert denied and allowed
    target = await _make_entry(client)

    async def cell(caller: Caller) -> Outcome | str:
        actual, value = await _outcome(client, operation, target, caller, ghosts)
        where = f"{operation.name} by {caller.label()}"
        if actual != expected[caller]:
            failures.append(f"{where}: expected {expected[caller]}, got {actual}")
        elif actual is Outcome.OK and not operation.check(value, target, caller):
            failures.append(f"{where}: allowed but answered {value!r}")
        elif actual is Outcome.HIDDEN and target.message_id in json.dumps(value):
            failures.append(f"{where}: hidden, yet the entry id appears")
        return actual

    # The ghost answers first, then the denied calls side by side (none may change the
    # store, so their order cannot matter), then the allowed ones in turn.
    if operation.hidden_as != "absent":
        answers = await asyncio.gather(*(operation.call(client, GHOST, c) for c in CALLERS))
        ghosts.update({c: _normalised(a, GHOST) for c, a in zip(CALLERS, answers, strict=True)})
    before = await store_fingerprint(db)
    await asyncio.gather(*(cell(caller) for caller in denied))
    if await store_fingerprint(db) != before:
        failures.append(f"{operation.name}: a denied call changed the store")
    for caller in allowed:
        if await cell(caller) is Outcome.OK and operation.consumes:
            target = await _make_entry(client)
    assert not failures, f"{len(failures)} of {len(CALLERS)} calls wrong:\n" + "\n".join(
        failures[:30])
