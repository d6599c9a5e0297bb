"""Compiled reads answer byte for byte what the general executor answers.

Two apps share one database and one cursor key: one with compiled reads (the default),
one with ``compiled_reads=False`` (the general executor alone). Hypothesis writes
random message-page documents — selections, aliases, repeated keys, inline and named
fragments, ``__typename``, literals or variables, operation names — with random
arguments (page sizes in and out of range, valid, foreign and forged cursors,
filters, absent and unreadable chats, other callers) and posts each to both over HTTP.
Status and body must be identical bytes, on SQLite and Postgres. Chat lists and
``chat(id)`` must really have been answered the compiled way; message pages, which follow
the chat's active branch, are declined by their plan and answered by the executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from gql.compiled_reads import CompiledReads
from gql.messages import _cursor_scope
from gql.settings import Settings
from store import chats as store_chats
from store import messages as store_messages
from store.cursors import CursorSigner
from store.database import Database
from store.messages import MessageFilter, NewMessage
from store.records import Identity
from tests.conftest import TEST_SECRET, running_app

EXAMPLES = 80
OWNER = Identity(user_id="alice", tenant_id="acme")
OTHER = Identity(user_id="bob", tenant_id="acme", team_id="red")
CALLERS = {
    "owner": {"X-User-Id": "alice", "X-Tenant-Id": "acme"},
    "teammate": {"X-User-Id": "bob", "X-Tenant-Id": "acme", "X-Team-Id": "red"},
    "admin": {"X-User-Id": "carol", "X-Tenant-Id": "acme", "X-Roles": "admin"},
    "stranger": {"X-User-Id": "dave", "X-Tenant-Id": "other"},
}
CHATS = ("long", "long", "long", "teamchat", "public", "empty", "absent", "bad id!")
MESSAGE_FIELDS = ("id", "chatId", "requestId", "role", "type", "props", "blockId",
                  "threadId", "assistantId", "sequence", "status", "metadata", "createdAt",
                  "updatedAt", "tokens", "tokensEstimated", "__typename")
PAGE_INFO_FIELDS = ("hasNextPage", "hasPreviousPage", "startCursor", "endCursor",
                    "__typename")
SIGNER = CursorSigner(TEST_SECRET.encode())


def _batch(count: int) -> list[NewMessage]:
    roles = ("USER", "ASSISTANT", "TOOL", "SYSTEM")
    return [
        NewMessage(
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
        await store_messages.append_messages(db, OWNER, "long", "seed", _batch(130))
        await store_messages.append_messages(db, OWNER, "teamchat", "seed", _batch(12))
        await store_messages.append_messages(db, OTHER, "public", "seed", _batch(7))
    finally:
        await db.dispose()
    reference = replace(settings, compiled_reads=False)
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
    first, last = draw(sizes), draw(sizes)

    def cursor() -> str | None:
        kind = draw(st.sampled_from(("none", "none", "none", "valid", "valid", "other",
                                     "forged", "text")))
        position = draw(st.integers(min_value=-1, max_value=140))
        if kind == "valid":
            return _cursor(chat, position, store_filter)
        if kind == "other":
            return _cursor("teamchat", position, MessageFilter(role="TOOL"))
        if kind == "forged":
            return _cursor(chat, position, store_filter)[:-3] + "AAA"
        if kind == "text":
            return _cursor(chat, "x", store_filter)
        return None

    after, before = cursor(), cursor()
    arguments = {"chatId": chat, "first": first, "last": last, "after": after,
                 "before": before, "filter": filter_value}
    by_variable = draw(st.booleans())
    variables: dict[str, Any] = {}
    if by_variable:
        declared = "$chatId: ID!, $first: Int, $last: Int, $after: String, $before: String, " \
                   "$filter: MessageFilter"
        written = ", ".join(f"{name}: ${name}" for name in arguments)
        variables = {name: value for name, value in arguments.items()
                     if value is not None or draw(st.booleans())}
        header = f"query Page({declared})" if draw(st.booleans()) else f"query ({declared})"
    else:
        def literal(value: Any) -> str:
            if isinstance(value, dict):
                return "{" + ", ".join(f"{k}: {v if k == 'role' else literal(v)}"
                                       for k, v in value.items()) + "}"
            if isinstance(value, str):
                return '"' + value + '"'
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
    original = CompiledReads.execute

    async def spy(self: CompiledReads, *args: Any) -> Any:
        result = await original(self, *args)
        if self._settings.compiled_reads:  # the reference app's requests are not counted
            answered.append(result is not None)
        return result

    monkeypatch.setattr(CompiledReads, "execute", spy)
    return answered


async def test_compiled_pages_match_the_executor_byte_for_byte(
    apps: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow = apps
    answered = _spy(monkeypatch)
    loop = asyncio.get_running_loop()

    def run(make: Callable[[], Coroutine[Any, Any, httpx.Response]]) -> httpx.Response:
        return asyncio.run_coroutine_threadsafe(make(), loop).result(30)

    @settings_(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
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
    # Message pages follow the chat's active branch (the ``branch``/``allBranches``
    # arguments), which the message plan does not know: it declines them when the plan
    # is made, so every page here was the executor's. Compiling the branch walk must
    # change this line.
    assert len(answered) == EXAMPLES
    assert sum(answered) == 0, sum(answered)


FIXED = """query Newest($chatId: ID!) { messages(chatId: $chatId, last: 50) {
  edges { cursor node { id sequence role type props createdAt } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""


async def test_a_front_end_page_and_its_walk_take_the_executor(
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
    # Pages follow the active branch, which the message plan declines (see above).
    assert answered == [False, False, False]


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
    assert answered == [False]


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
    assert len(answered) == EXAMPLES
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
    # The 23 chats of the owner (3 from the fixture, 20 here) and one public chat,
    # newest activity first.
    assert len(seen) == len(set(seen)) == 24
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
    assert len(answered) == EXAMPLES
    assert sum(answered) >= EXAMPLES // 8, sum(answered)
    # The empty chat's null lastMessage is answered the compiled way too.
    body = {"query": '{ chat(id: "empty") { id lastMessage { id } } }'}
    ours = await fast.post("/graphql", json=body, headers=CALLERS["owner"])
    assert ours.json() == {"data": {"chat": {"id": "empty", "lastMessage": None}}}
    assert answered[-1] is True
