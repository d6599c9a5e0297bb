"""Compiled reads answer byte for byte what the general executor answers.

Two apps share one database and one cursor key: one with compiled reads (the default),
one with the ``reads`` plan switched off (the general executor alone). Hypothesis writes
random message-page documents — selections, aliases, repeated keys, inline and named
fragments, ``__typename``, literals or variables, operation names — with random
arguments (page sizes in and out of range, valid, foreign and forged cursors,
filters, absent and unreadable chats, other callers) and posts each to both over HTTP.
Status and body must be identical bytes, on SQLite and Postgres. Message pages (along
the active branch, a named ``branch`` or ``allBranches``), chat lists and ``chat(id)``
must really have been answered the compiled way often enough.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from graphql import GraphQLEnumType, GraphQLObjectType, GraphQLScalarType, get_named_type
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_
from hypothesis import strategies as st
from sqlalchemy import update

from chatql.gql.document_shapes import plain_attribute
from chatql.gql.plans.compiled_reads import CompiledReads
from chatql.gql.schema.pages import _branch_scope, _cursor_scope
from chatql.gql.schema.root import build_schema
from chatql.gql.settings import Settings
from chatql.store.chats import chat as store_chats
from chatql.store.cursors import CursorSigner
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages
from chatql.store.messages import message as store_messages
from chatql.store.messages.message import MessageFilter, NewMessage
from chatql.store.records import Identity
from tests.conftest import TEST_SECRET, running_app

EXAMPLES = 80
#: Message pages have the most arguments, most of them ways to an error: more examples.
PAGE_EXAMPLES = 200
OWNER = Identity(user_id="alice", tenant_id="acme")
OTHER = Identity(user_id="bob", tenant_id="acme", team_id="red")
CALLERS = {
    "owner": {"X-User-Id": "alice", "X-Tenant-Id": "acme"},
    "teammate": {"X-User-Id": "bob", "X-Tenant-Id": "acme", "X-Team-Id": "red"},
    "admin": {"X-User-Id": "carol", "X-Tenant-Id": "acme", "X-Roles": "admin"},
    "stranger": {"X-User-Id": "dave", "X-Tenant-Id": "other"},
}
CHATS = ("long", "long", "long", "tree", "tree", "teamchat", "public", "empty", "absent",
         "bad id!")
#: Each chat's messages on its active branch, by depth (the seeded chains below).
PATHS: dict[str, list[str]] = {
    "long": [f"long-{n}" for n in range(1, 131)],
    "tree": [*(f"tree-{n}" for n in range(1, 30)), "tree-edit",
             *(f"tree-e-{n}" for n in range(1, 6))],
    "teamchat": [f"teamchat-{n}" for n in range(1, 13)],
    "public": [f"public-{n}" for n in range(1, 8)],
}
#: Named branches: leaves, a message inside a branch, an inactive leaf, absent and bad ids.
BRANCHES = ("tree-40", "tree-35", "tree-e-5", "tree-20", "long-130", "long-100", "nope",
            "bad id!")


def plain_leaves(type_name: str) -> tuple[str, ...]:
    """The fields of ``type_name`` whose value is the record's attribute, a scalar or an
    enum (or a list of them), and ``__typename``: what a compiled node may select."""
    kind = build_schema(Settings())._schema.type_map[type_name]
    assert isinstance(kind, GraphQLObjectType)
    return (*sorted(name for name, field in kind.fields.items()
                    if plain_attribute(field) is not None and isinstance(
                        get_named_type(field.type), GraphQLScalarType | GraphQLEnumType)),
            "__typename")


#: Read from the schema, so a field added to Message is drawn (and must be compiled).
MESSAGE_FIELDS = plain_leaves("Message")
PAGE_INFO_FIELDS = ("hasNextPage", "hasPreviousPage", "startCursor", "endCursor",
                    "__typename")
SIGNER = CursorSigner(TEST_SECRET.encode())


def _batch(count: int, prefix: str) -> list[NewMessage]:
    roles = ("USER", "ASSISTANT", "TOOL", "SYSTEM")
    return [
        NewMessage(
            id=f"{prefix}-{n}",
            role=roles[n % 4], type="text" if n % 2 else "tool_call",
            props={"n": n, "text": f"message {n} ✓", "nested": {"list": [n, None, True]}},
            request_id=f"r{n % 5}" if n % 3 else None, block_id=f"b{n % 7}",
            thread_id=None if n % 2 else "t1", assistant_id="helper" if n % 4 else None,
            metadata={"k": n} if n % 5 == 0 else None, tokens=n * 3 if n % 6 else None,
        )
        for n in range(1, count + 1)
    ]


@pytest.fixture
async def apps(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    db = Database(settings.database_url)
    try:
        await store_chats.create_chat(db, OWNER, id="long", assistant_id="helper")
        await store_chats.create_chat(db, OWNER, id="empty", assistant_id="helper")
        await store_chats.create_chat(db, OWNER, id="teamchat", assistant_id="helper")
        await store_chats.create_chat(db, OTHER, id="public", assistant_id="helper",
                                      public=True)
        await store_messages.append_messages(db, OWNER, "long", "seed", _batch(130, "long"))
        await store_messages.append_messages(db, OWNER, "teamchat", "seed",
                                             _batch(12, "teamchat"))
        await store_messages.append_messages(db, OTHER, "public", "seed", _batch(7, "public"))
        # A tree: 40 messages, message 30 edited (the edit is the active leaf), five
        # more below the edit. The first branch ends at tree-40.
        await store_chats.create_chat(db, OWNER, id="tree", assistant_id="helper")
        await store_messages.append_messages(db, OWNER, "tree", "seed", _batch(40, "tree"))
        edited = await store_messages.edit_message(db, OWNER, "tree-30", "edit",
                                                   props={"text": "again"})
        async with db.write() as conn:  # a readable id for the edit, for the cursors
            await conn.execute(update(messages).where(messages.c.id == edited.id)
                               .values(id="tree-edit"))
            await conn.execute(update(chats).where(chats.c.id == "tree")
                               .values(active_leaf_id="tree-edit"))
        await store_messages.append_messages(db, OWNER, "tree", "more", _batch(5, "tree-e"))
    finally:
        await db.dispose()
    reference = replace(settings, disabled_plans=("reads",))
    async with (
        running_app(settings) as fast,
        running_app(reference) as slow,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=fast),
                          base_url="http://chatql") as a,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=slow),
                          base_url="http://chatql") as b,
    ):
        yield a, b


def _cursor(chat: str, position: Any, filter: MessageFilter) -> str:
    return SIGNER.encode(_cursor_scope(chat, filter), position)


@st.composite
def selections(draw: st.DrawFn, fields: tuple[str, ...], type_name: str) -> str:
    """A selection set body: fields (some aliased or repeated), perhaps via fragments."""
    chosen = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=6))
    parts: list[str] = []
    for name in chosen:
        alias = draw(st.sampled_from(("", "", "a1: ", "x_: ")))
        if alias and name == "__typename":
            alias = ""
        if alias and f"{alias}" in "".join(parts):
            alias = ""
        parts.append(f"{alias}{name}")
    how = draw(st.sampled_from(("plain", "plain", "inline", "typed")))
    body = " ".join(parts)
    if how == "inline":
        return "... { " + body + " }"
    if how == "typed":
        return f"... on {type_name} {{ {body} }}"
    return body


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[str, Any], str | None]:
    node = draw(selections(MESSAGE_FIELDS, "Message"))
    edge_parts = draw(st.lists(st.sampled_from(("cursor", "node", "__typename")), min_size=1,
                               max_size=3, unique=True))
    edge = " ".join(f"node {{ {node} }}" if part == "node" else part for part in edge_parts)
    info = draw(selections(PAGE_INFO_FIELDS, "PageInfo"))
    connection_parts = draw(st.lists(st.sampled_from(("edges", "pageInfo", "__typename")),
                                     min_size=1, max_size=3, unique=True))
    use_fragment = draw(st.booleans())
    rendered = []
    for part in connection_parts:
        if part == "edges":
            rendered.append("page: edges { " + edge + " }" if draw(st.booleans()) and (
                "pageInfo" not in connection_parts) else "edges { " + edge + " }")
        elif part == "pageInfo":
            rendered.append("pageInfo { ...Info }" if use_fragment else
                            "pageInfo { " + info + " }")
        else:
            rendered.append(part)
    connection = " ".join(rendered)

    chat = draw(st.sampled_from(CHATS))
    role = draw(st.sampled_from((None, "USER", "ASSISTANT")))
    request_id = draw(st.sampled_from((None, "r1", "r9")))
    filter_value = {key: value for key, value in (("role", role), ("requestId", request_id))
                    if value is not None} if draw(st.booleans()) else None
    store_filter = MessageFilter(role=role, request_id=request_id) if filter_value else (
        MessageFilter())
    sizes = st.sampled_from((None, None, None, None, 1, 3, 20, 50, 0, -2, 250))
    # Mostly one size or none (a front end's pages); both, or out of range, now and then.
    first, last = draw(sizes), draw(sizes)
    if draw(st.integers(0, 2)):
        first, last = (None, last) if draw(st.booleans()) else (first, None)

    all_branches = draw(st.sampled_from((None, None, False, True)))
    branch = draw(st.sampled_from(BRANCHES)) if draw(st.integers(0, 4)) == 0 else None
    path = PATHS.get(chat, [])

    def cursor() -> str | None:
        kind = draw(st.sampled_from(("none", "none", "none", "valid", "valid", "valid",
                                     "stale", "other", "forged", "text")))
        position = draw(st.integers(min_value=-1, max_value=140))
        if all_branches:
            if kind in ("valid", "stale"):
                return _cursor(chat, position, store_filter)
            if kind == "other":
                return _cursor("teamchat", position, MessageFilter(role="TOOL"))
            if kind == "forged":
                return _cursor(chat, position, store_filter)[:-3] + "AAA"
            if kind == "text":
                return _cursor(chat, "x", store_filter)
            return None
        scope = _branch_scope(chat, store_filter, branch)
        depth = min(max(position, 1), len(path) or 1)
        message = path[depth - 1] if path else "nothing"
        leaf = branch or (path[-1] if path else "nothing")
        if kind == "valid":
            return SIGNER.encode(scope, [message, depth, leaf])
        if kind == "stale":  # issued while the branch ended further up (or elsewhere)
            stale = path[max(depth, len(path) - 3) - 1] if path else "tree-40"
            return SIGNER.encode(scope, [message, depth, draw(st.sampled_from(
                (stale, "tree-40", "long-129")))])
        if kind == "other":
            return SIGNER.encode(_branch_scope("teamchat", MessageFilter(role="TOOL"), None),
                                 ["teamchat-3", 3, "teamchat-12"])
        if kind == "forged":
            return SIGNER.encode(scope, [message, depth, leaf])[:-3] + "AAA"
        if kind == "text":
            return SIGNER.encode(scope, position)
        return None

    after, before = cursor(), cursor()
    if draw(st.integers(0, 2)):  # mostly one cursor, as a front end walks a chat
        after, before = (None, before) if draw(st.booleans()) else (after, None)
    arguments = {"chatId": chat, "first": first, "last": last, "after": after,
                 "before": before, "filter": filter_value, "branch": branch,
                 "allBranches": all_branches}
    by_variable = draw(st.booleans())
    variables: dict[str, Any] = {}
    if by_variable:
        declared = "$chatId: ID!, $first: Int, $last: Int, $after: String, $before: String, " \
                   "$filter: MessageFilter, $branch: ID, $allBranches: Boolean!"
        written = ", ".join(f"{name}: ${name}" for name in arguments)
        variables = {name: value for name, value in arguments.items()
                     if value is not None or draw(st.booleans())}
        if variables.get("allBranches") is None:  # non-null: given, or a 400 every time
            variables["allBranches"] = bool(all_branches)
        header = f"query Page({declared})" if draw(st.booleans()) else f"query ({declared})"
    else:
        def literal(value: Any) -> str:
            if isinstance(value, dict):
                return "{" + ", ".join(f"{k}: {v if k == 'role' else literal(v)}"
                                       for k, v in value.items()) + "}"
            if isinstance(value, str):
                return '"' + value + '"'
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)

        written = ", ".join(f"{name}: {literal(value)}" for name, value in arguments.items()
                            if value is not None)
        header = draw(st.sampled_from(("", "query ", "query Page ")))
    root_alias = draw(st.sampled_from(("", "page: ")))
    typename = draw(st.sampled_from(("", "__typename ", "t: __typename ")))
    query = f"{header}{{ {typename}{root_alias}messages({written}) {{ {connection} }} }}"
    if use_fragment:
        query += " fragment Info on PageInfo { " + info + " }"
    operation = "Page" if "Page" in header and draw(st.booleans()) else None
    return query, variables, operation


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    answered: list[bool] = []
    original = CompiledReads.run

    async def spy(self: CompiledReads, *args: Any) -> Any:
        # Only the app with the plan has one to run: the reference app is not counted.
        result = await original(self, *args)
        answered.append(result is not None)
        return result

    monkeypatch.setattr(CompiledReads, "run", spy)
    return answered


async def test_compiled_pages_match_the_executor_byte_for_byte(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    loop = asyncio.get_running_loop()

    def run(make: Callable[[], Coroutine[Any, Any, httpx.Response]]) -> httpx.Response:
        return asyncio.run_coroutine_threadsafe(make(), loop).result(30)

    @settings_(max_examples=PAGE_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(documents(), st.sampled_from(sorted(CALLERS)))
    def check(document: tuple[str, dict[str, Any], str | None], caller: str) -> None:
        query, variables, operation = document
        body: dict[str, Any] = {"query": query, "variables": variables}
        if operation:
            body["operationName"] = operation
        headers = CALLERS[caller]
        ours = run(lambda: fast.post("/graphql", json=body, headers=headers))
        theirs = run(lambda: slow.post("/graphql", json=body, headers=headers))
        assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), query

    await asyncio.to_thread(check)
    assert len(answered) <= PAGE_EXAMPLES
    # Most random documents end in an error or an empty page (the executor's to answer);
    # without compiled message pages none at all would be compiled.
    assert sum(answered) >= PAGE_EXAMPLES // 20, sum(answered)


FIXED = """query Newest($chatId: ID!) { messages(chatId: $chatId, last: 50) {
  edges { cursor node { id sequence role type props createdAt } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""


async def test_a_front_end_page_and_its_walk_are_compiled(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    headers = CALLERS["owner"]
    body = {"query": FIXED, "variables": {"chatId": "long"}}
    ours = await fast.post("/graphql", json=body, headers=headers)
    theirs = await slow.post("/graphql", json=body, headers=headers)
    assert ours.content == theirs.content
    page = ours.json()["data"]["messages"]
    assert [e["node"]["sequence"] for e in page["edges"]] == list(range(81, 131))
    assert page["pageInfo"]["hasPreviousPage"] is True
    # Walk back with its cursor until the start, every byte equal.
    walk = FIXED.replace("last: 50", "last: 50, before: $before").replace(
        "$chatId: ID!", "$chatId: ID!, $before: String")
    cursor = page["pageInfo"]["startCursor"]
    while True:
        body = {"query": walk, "variables": {"chatId": "long", "before": cursor}}
        ours = await fast.post("/graphql", json=body, headers=headers)
        theirs = await slow.post("/graphql", json=body, headers=headers)
        assert ours.content == theirs.content
        info = ours.json()["data"]["messages"]["pageInfo"]
        if not info["hasPreviousPage"]:
            break
        cursor = info["startCursor"]
    assert answered == [True, True, True]


@pytest.mark.parametrize("document", [
    # Fields and arguments a plan does not know run the ordinary way.
    "{ messages(chatId: \"long\", last: 2) { edges { node { sequence } } } "
    "chat(id: \"long\") { id } }",
    "{ messages(chatId: \"long\", last: 2) @include(if: true) { edges { cursor } } }",
    "query($x: Boolean!) { messages(chatId: \"long\", last: 2) { edges { node { "
    "sequence @skip(if: $x) } } } }",
    "{ messages(chatId: \"long\", last: 2) { edges { node { id } } nope } }",
])
async def test_documents_a_plan_does_not_cover_take_the_executor(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
    document: str,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    body = {"query": document, "variables": {"x": False}}
    ours = await fast.post("/graphql", json=body, headers=CALLERS["owner"])
    theirs = await slow.post("/graphql", json=body, headers=CALLERS["owner"])
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content)
    assert True not in answered


CHAT_FIELDS = ("id", "title", "assistantId", "mode", "status", "public", "share", "sort",
               "lastMessageAt", "metadata", "createdAt", "updatedAt", "createdBy",
               "updatedBy", "teamId", "tenantId", "channel", "tags", "pinned", "expiresAt",
               "archivedAt", "__typename")
CHAT_LIST = "{ chats(first: 100) { edges { cursor } } }"


async def _chat_cursors(slow: httpx.AsyncClient) -> list[str]:
    """Real cursors of every caller's chat list (they differ per caller)."""
    found: list[str] = []
    for headers in CALLERS.values():
        body = (await slow.post("/graphql", json={"query": CHAT_LIST}, headers=headers)).json()
        found.extend(edge["cursor"] for edge in body["data"]["chats"]["edges"])
    return found


@st.composite
def chat_documents(draw: st.DrawFn, cursors: list[str]) -> tuple[str, dict[str, Any]]:
    node = draw(selections(CHAT_FIELDS, "Chat"))
    if draw(st.integers(0, 9)) == 0:  # a resolver field: the executor's
        node += " lastMessage { id }"
    edge_parts = draw(st.lists(st.sampled_from(("cursor", "node", "__typename")), min_size=1,
                               max_size=3, unique=True))
    edge = " ".join(f"node {{ {node} }}" if part == "node" else part for part in edge_parts)
    info = draw(selections(PAGE_INFO_FIELDS, "PageInfo"))
    parts = draw(st.lists(st.sampled_from(("edges", "pageInfo", "__typename", "edges",
                                           "pageInfo", "totalCount")),
                          min_size=1, max_size=3, unique=True))
    connection = " ".join(
        "edges { " + edge + " }" if part == "edges" else
        "pageInfo { " + info + " }" if part == "pageInfo" else part for part in parts)
    first = draw(st.sampled_from((None, None, 1, 5, 20, 0, -1, 150)))
    after = draw(st.one_of(st.none(), st.none(), st.sampled_from(cursors),
                           st.sampled_from(cursors),
                           st.sampled_from(cursors).map(lambda c: c[:-2] + "xx"),
                           st.just("garbage")))
    extra = draw(st.sampled_from(("", "", "", "", "", "order: ASC",
                                  "filter: {status: ACTIVE}")))
    variables: dict[str, Any] = {}
    if draw(st.booleans()):
        written = ", ".join(part for part in ("first: $first", "after: $after", extra) if part)
        header = "query($first: Int, $after: String) "
        variables = {"first": first, "after": after}
    else:
        pieces = [f"first: {first}" if first is not None else "",
                  f'after: "{after}"' if after is not None else "", extra]
        written = ", ".join(piece for piece in pieces if piece)
        header = ""
    call = f"chats({written})" if written else "chats"
    return f"{header}{{ {call} {{ {connection} }} }}", variables


async def test_compiled_chat_lists_match_the_executor_byte_for_byte(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    db = Database(settings.database_url)
    try:
        for n in range(25):
            await store_chats.create_chat(db, OWNER, id=f"mine{n}", assistant_id="helper",
                                          title=None if n % 4 == 0 else f"Chat {n}",
                                          metadata={"n": n} if n % 3 == 0 else None)
        for n in range(4):
            await store_chats.create_chat(db, OTHER, id=f"team{n}", assistant_id="helper",
                                          share="TEAM")
        await store_chats.delete_chat(db, OWNER, "mine3")
    finally:
        await db.dispose()
    cursors = await _chat_cursors(slow)
    answered = _spy(monkeypatch)
    loop = asyncio.get_running_loop()

    def run(make: Callable[[], Coroutine[Any, Any, httpx.Response]]) -> httpx.Response:
        return asyncio.run_coroutine_threadsafe(make(), loop).result(30)

    @settings_(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
    @given(chat_documents(cursors), st.sampled_from(sorted(CALLERS)))
    def check(document: tuple[str, dict[str, Any]], caller: str) -> None:
        query, variables = document
        body = {"query": query, "variables": variables}
        headers = CALLERS[caller]
        ours = run(lambda: fast.post("/graphql", json=body, headers=headers))
        theirs = run(lambda: slow.post("/graphql", json=body, headers=headers))
        assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), query

    await asyncio.to_thread(check)
    assert len(answered) <= EXAMPLES
    assert sum(answered) >= EXAMPLES // 8, sum(answered)


CHAT_PAGE = """query($after: String) { chats(first: 7, after: $after) {
  edges { cursor node { id title assistantId lastMessageAt createdAt } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""


async def test_a_chat_list_walk_is_compiled_page_by_page(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    db = Database(settings.database_url)
    try:
        for n in range(20):
            await store_chats.create_chat(db, OWNER, id=f"walk{n}", assistant_id="helper")
    finally:
        await db.dispose()
    answered = _spy(monkeypatch)
    seen: list[str] = []
    after = None
    while True:
        body = {"query": CHAT_PAGE, "variables": {"after": after}}
        ours = await fast.post("/graphql", json=body, headers=CALLERS["owner"])
        theirs = await slow.post("/graphql", json=body, headers=CALLERS["owner"])
        assert ours.content == theirs.content
        page = ours.json()["data"]["chats"]
        seen.extend(edge["node"]["id"] for edge in page["edges"])
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    # The 24 chats of the owner (4 from the fixture, 20 here) and one public chat,
    # newest activity first.
    assert len(seen) == len(set(seen)) == 25
    assert seen[:20] == [f"walk{n}" for n in reversed(range(20))]
    assert answered == [True, True, True, True]


@st.composite
def single_chat_documents(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    fields = draw(selections(CHAT_FIELDS, "Chat"))
    extra = draw(st.sampled_from(("", "", "usage { messageTokens }",
                                  "messages(last: 2) { edges { cursor } }")))
    if draw(st.booleans()):
        last = draw(selections(MESSAGE_FIELDS, "Message"))
        fields += f" {draw(st.sampled_from(('', 'newest: ')))}lastMessage {{ {last} }}"
    chat = draw(st.sampled_from(("long", "long", "empty", "teamchat", "public", "absent",
                                 "bad id!")))
    if draw(st.booleans()):
        return f"query($id: ID!) {{ chat(id: $id) {{ {fields} {extra} }} }}", {"id": chat}
    return f'{{ chat(id: "{chat}") {{ {fields} {extra} }} }}', {}


async def test_compiled_chats_with_their_last_message_match_the_executor(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    loop = asyncio.get_running_loop()

    def run(make: Callable[[], Coroutine[Any, Any, httpx.Response]]) -> httpx.Response:
        return asyncio.run_coroutine_threadsafe(make(), loop).result(30)

    @settings_(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
    @given(single_chat_documents(), st.sampled_from(sorted(CALLERS)))
    def check(document: tuple[str, dict[str, Any]], caller: str) -> None:
        query, variables = document
        body = {"query": query, "variables": variables}
        headers = CALLERS[caller]
        ours = run(lambda: fast.post("/graphql", json=body, headers=headers))
        theirs = run(lambda: slow.post("/graphql", json=body, headers=headers))
        assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), query

    await asyncio.to_thread(check)
    assert len(answered) <= EXAMPLES
    assert sum(answered) >= EXAMPLES // 8, sum(answered)
    # The empty chat's null lastMessage is answered the compiled way too.
    body = {"query": '{ chat(id: "empty") { id lastMessage { id } } }'}
    ours = await fast.post("/graphql", json=body, headers=CALLERS["owner"])
    assert ours.json() == {"data": {"chat": {"id": "empty", "lastMessage": None}}}
    assert answered[-1] is True


BRANCH_WALK = """query($after: String, $branch: ID) {
  messages(chatId: "tree", first: 7, after: $after, branch: $branch) {
    edges { cursor node { id parentId sequence } }
    pageInfo { hasNextPage hasPreviousPage endCursor } } }"""


@pytest.mark.parametrize("branch", [None, "tree-40"])
async def test_a_branch_walked_from_its_root_is_compiled_page_by_page(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
    branch: str | None,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    seen: list[str] = []
    after = None
    while True:
        body = {"query": BRANCH_WALK, "variables": {"after": after, "branch": branch}}
        ours = await fast.post("/graphql", json=body, headers=CALLERS["owner"])
        theirs = await slow.post("/graphql", json=body, headers=CALLERS["owner"])
        assert ours.content == theirs.content
        page = ours.json()["data"]["messages"]
        seen.extend(edge["node"]["id"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    # The active branch runs through the edit; the named one through the original.
    expected = PATHS["tree"] if branch is None else [f"tree-{n}" for n in range(1, 41)]
    assert seen == expected
    assert answered == [True] * len(answered) and len(answered) == -(-len(expected) // 7)


async def test_a_walk_goes_on_compiled_after_the_active_leaf_moved(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    headers = CALLERS["owner"]
    body = {"query": FIXED, "variables": {"chatId": "long"}}
    first = (await fast.post("/graphql", json=body, headers=headers)).json()
    cursor = first["data"]["messages"]["pageInfo"]["startCursor"]
    # A reply moves the active leaf: the cursor was issued for the old end.
    db = Database(settings.database_url)
    try:
        await store_messages.append_messages(db, OWNER, "long", "more", _batch(1, "later"))
    finally:
        await db.dispose()
    walk = FIXED.replace("last: 50", "last: 50, before: $before").replace(
        "$chatId: ID!", "$chatId: ID!, $before: String")
    body = {"query": walk, "variables": {"chatId": "long", "before": cursor}}
    ours = await fast.post("/graphql", json=body, headers=headers)
    theirs = await slow.post("/graphql", json=body, headers=headers)
    assert ours.content == theirs.content
    page = ours.json()["data"]["messages"]
    assert [e["node"]["sequence"] for e in page["edges"]] == list(range(31, 81))
    # A cursor from another branch of the same chat is the executor's INVALID_CURSOR.
    foreign = SIGNER.encode(_branch_scope("tree", MessageFilter(), None),
                            ["tree-35", 35, "tree-40"])
    body = {"query": walk, "variables": {"chatId": "tree", "before": foreign}}
    ours = await fast.post("/graphql", json=body, headers=headers)
    theirs = await slow.post("/graphql", json=body, headers=headers)
    assert ours.content == theirs.content
    assert ours.json()["errors"][0]["extensions"]["code"] == "INVALID_CURSOR"
    assert answered == [True, True, False]


def test_a_time_field_prints_the_stored_instant_in_utc_whatever_the_driver_gave() -> None:
    """A time's output is remembered per value the driver gave; every spelling of one
    instant (aware in any zone, naive UTC, SQLite's text) prints as the schema prints
    that instant in UTC, and another instant prints as itself."""
    from datetime import UTC, datetime, timedelta, timezone

    from graphql import parse

    from chatql.gql.library_adapters import graphql_core_schema
    from chatql.gql.plans.compiled_reads import _Columns, _Rows
    from chatql.gql.plans.shapes import object_shape
    from chatql.store.db.prepared import message_attribute

    schema = graphql_core_schema(build_schema(Settings()))
    message = schema.type_map["Message"]
    serialise = schema.type_map["DateTime"].serialize  # type: ignore[union-attr]
    selection = parse("{ createdAt }").definitions[0].selection_set  # type: ignore[attr-defined]
    columns = _Columns(("created_at",), ("created_at",))
    columns.bind()
    fill = object_shape(message, selection,  # type: ignore[arg-type]
                        reader=_Rows(message_attribute, columns))

    def output(row: tuple[Any, ...]) -> Any:
        return fill(row)["createdAt"]
    utc = datetime(2026, 12, 5, 8, 0, 0, 123456, tzinfo=UTC)
    spellings = (utc, utc.astimezone(timezone(timedelta(hours=2))), utc.replace(tzinfo=None),
                 "2026-12-05 08:00:00.123456")
    later = utc + timedelta(seconds=1)
    for value in (*spellings, later, *spellings):
        expected = serialise(later if value is later else utc)
        assert output((value,)) == expected, value
    assert output((spellings[1],)).endswith("+00:00")
    assert output((later,)) != output((utc,))


def test_a_compiled_read_asks_for_the_columns_it_shows_and_its_cursors() -> None:
    """Postgres and the driver skip what no field shows: a plan's rows carry the columns
    of its selected fields (every alias and fragment of them) and of its cursors."""
    from chatql.store.lists.pages import ChatPageShape, chat_statement
    from chatql.store.messages.pages import BranchPageShape, branch_page_statement

    settings = Settings()
    reads = CompiledReads(build_schema(settings), settings)
    page = reads.compile('{ messages(chatId: "c") { edges { node { createdAt ...F } } '
                          'a: edges { node { p: props } } } } fragment F on Message { role }',
                          None)
    assert page is not None and page.columns == ("id", "sequence", "role", "props", "created_at")
    chat_list = reads.compile("{ chats { edges { node { title } } } }", None)
    assert chat_list is not None and chat_list.columns == ("id", "title", "activity_at")
    chat = reads.compile('{ chat(id: "c") { tags lastMessage { status } } }', None)
    assert chat is not None
    assert (chat.columns, chat.message_columns) == (("id", "tags"), ("id", "status"))
    bare = reads.compile('{ chat(id: "c") { title } }', None)
    assert bare is not None and bare.message_columns == ()

    db: Any = SimpleNamespace(dialect="postgresql", statements={})
    shape = BranchPageShape.of(db, OWNER, forward=False, branch=False, before=False,
                               filters=(), columns=page.columns)
    selected = branch_page_statement(db, shape).sql.rsplit(" SELECT ", 1)[1]
    # The walk reads them on its way up the branch, and the page takes them from it.
    assert selected.startswith("walk.id, walk.sequence, walk.role, walk.props, "
                               "walk.created_at, walk.depth, ")
    assert "up.props" in branch_page_statement(db, shape).sql
    text = chat_statement(db, ChatPageShape.of(db, OWNER, after=False, columns=chat.columns,
                                               message_columns=chat.message_columns)).sql
    assert text.startswith("SELECT chats.id, chats.tags, messages.id AS id_1, messages.status \n")
