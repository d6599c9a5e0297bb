"""The conversation tree over HTTP: edits, regenerations, branches, pages, deletes."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from sqlalchemy import select

from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from chatql.store.messages.tree import Link, _below
from tests.conftest import GraphQLClient

AGENT = {"X-Roles": "agent"}
FIELDS = "id sequence parentId role type props siblings { index count ids }"
CREATE = 'mutation($id: ID) { createChat(input: {id: $id, assistantId: "bot"}) { id } }'
APPEND = """mutation($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!,
  $parentId: ID) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages,
                 parentId: $parentId) { messageIds firstSequence lastSequence } }"""
EDIT = """mutation($id: ID!, $props: JSON, $appendId: String!) {
  editMessage(id: $id, input: {props: $props}, appendId: $appendId) { """ + FIELDS + " } }"
SWITCH = """mutation($chatId: ID!, $leafId: ID!) {
  switchBranch(chatId: $chatId, leafId: $leafId) { id activeLeafId } }"""
PAGE = """query($chatId: ID!, $branch: ID, $allBranches: Boolean! = false, $first: Int,
  $after: String, $last: Int, $before: String) {
  messages(chatId: $chatId, branch: $branch, allBranches: $allBranches, first: $first,
           after: $after, last: $last, before: $before) {
    edges { cursor node { """ + FIELDS + """ } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""
CHAT = "query($id: ID!) { chat(id: $id) { activeLeafId } }"
START = """mutation($input: StartStreamInput!) { startStream(input: $input) { id } }"""
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted } }"""
END = """mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) {
  messages { id parentId sequence } } }"""
CONTEXT = "query($chatId: ID!) { modelContext(chatId: $chatId, limit: 50) { id props } }"


def say(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "type": "text" if role != "USER" else "user_input",
            "props": {"content": content}}


async def chat_with(client: GraphQLClient, chat_id: str, *lines: tuple[str, str]) -> list[str]:
    await client.data(CREATE, {"id": chat_id})
    receipt = (await client.data(APPEND, {
        "chatId": chat_id, "appendId": "seed", "messages": [say(*line) for line in lines],
    }))["appendMessages"]
    ids: list[str] = receipt["messageIds"]
    return ids


async def contents(client: GraphQLClient, chat_id: str, **variables: Any) -> list[str]:
    page = (await client.data(PAGE, {"chatId": chat_id, **variables}))["messages"]
    return [edge["node"]["props"]["content"] for edge in page["edges"]]


async def answer(client: GraphQLClient, chat_id: str, parent_id: str | None,
                 text: str) -> list[dict[str, Any]]:
    """An agent's stream answering ``parent_id`` (None: after the active leaf)."""
    start: dict[str, Any] = {"chatId": chat_id}
    if parent_id is not None:
        start["parentId"] = parent_id
    sid = (await client.data(START, {"input": start}, AGENT))["startStream"]["id"]
    await client.data(PUSH, {"id": sid, "chunks": [
        {"type": "text", "role": "ASSISTANT", "props": {"content": text}}]}, AGENT)
    written: list[dict[str, Any]] = (await client.data(END, {"id": sid}, AGENT))[
        "endStream"]["messages"]
    return written


async def test_edit_makes_a_sibling_and_keeps_the_old_branch(client: GraphQLClient) -> None:
    q1, a1, q2, a2 = await chat_with(client, "c", ("USER", "q1"), ("ASSISTANT", "a1"),
                                     ("USER", "q2"), ("ASSISTANT", "a2"))
    edited = (await client.data(EDIT, {"id": q2, "props": {"content": "q2 again"},
                                       "appendId": "e1"}))["editMessage"]
    assert edited["parentId"] == a1 and edited["role"] == "USER"
    assert edited["type"] == "user_input" and edited["sequence"] == 5
    assert edited["siblings"] == {"index": 1, "count": 2, "ids": [q2, edited["id"]]}
    # The same edit again is the same message; other content under its id is refused.
    again = (await client.data(EDIT, {"id": q2, "props": {"content": "q2 again"},
                                      "appendId": "e1"}))["editMessage"]
    assert again["id"] == edited["id"]
    assert await client.error_code(EDIT, {"id": q2, "props": {"content": "x"},
                                          "appendId": "e1"}) == "APPEND_CONFLICT"
    assert (await client.data(CHAT, {"id": "c"}))["chat"]["activeLeafId"] == edited["id"]
    assert await contents(client, "c") == ["q1", "a1", "q2 again"]
    page = (await client.data(PAGE, {"chatId": "c", "branch": a2}))["messages"]
    old = [edge["node"] for edge in page["edges"]]
    assert [m["props"]["content"] for m in old] == ["q1", "a1", "q2", "a2"]
    assert old[2]["siblings"] == {"index": 0, "count": 2, "ids": [q2, edited["id"]]}
    # The old branch comes back by switching to any message on it.
    switched = (await client.data(SWITCH, {"chatId": "c", "leafId": q2}))["switchBranch"]
    assert switched["activeLeafId"] == a2
    assert await contents(client, "c") == ["q1", "a1", "q2", "a2"]
    # Every message of every branch, in sequence order.
    assert await contents(client, "c", allBranches=True) == [
        "q1", "a1", "q2", "a2", "q2 again"]
    assert q1 != edited["id"]


async def test_regenerate_twice_gives_three_sibling_answers(client: GraphQLClient) -> None:
    q1, a1 = await chat_with(client, "r", ("USER", "q"), ("ASSISTANT", "first"))
    second = await answer(client, "r", q1, "second")
    third = await answer(client, "r", q1, "third")
    assert second[0]["parentId"] == q1 and third[0]["parentId"] == q1
    assert [second[0]["sequence"], third[0]["sequence"]] == [3, 4]
    page = (await client.data(PAGE, {"chatId": "r"}))["messages"]
    nodes = [edge["node"] for edge in page["edges"]]
    assert [n["props"]["content"] for n in nodes] == ["q", "third"]
    assert nodes[1]["siblings"] == {
        "index": 2, "count": 3, "ids": [a1, second[0]["id"], third[0]["id"]]}
    # A stream without parentId hangs after the active leaf.
    follow = await answer(client, "r", None, "more")
    assert follow[0]["parentId"] == third[0]["id"]
    assert await client.error_code(START, {"input": {"chatId": "r", "parentId": "nope"}},
                                   AGENT) == "NOT_FOUND"


async def test_page_walk_follows_exactly_one_branch(client: GraphQLClient) -> None:
    ids = await chat_with(client, "w", *[("USER" if i % 2 == 0 else "ASSISTANT", f"m{i}")
                                         for i in range(30)])
    # A second branch from the 10th message, 25 long; then back to the first.
    fork = (await client.data(APPEND, {
        "chatId": "w", "appendId": "fork", "parentId": ids[9],
        "messages": [say("USER", f"b{i}") for i in range(25)]}))["appendMessages"]
    expected_b = [f"m{i}" for i in range(10)] + [f"b{i}" for i in range(25)]
    expected_a = [f"m{i}" for i in range(30)]
    await client.data(SWITCH, {"chatId": "w", "leafId": ids[0]})  # newest leaf: branch b
    for branch, expected in ((None, expected_b), (ids[-1], expected_a)):
        for size in (1, 4, 7):
            # Forwards.
            seen: list[str] = []
            after = None
            while True:
                page = (await client.data(PAGE, {"chatId": "w", "branch": branch,
                                                 "first": size, "after": after}))["messages"]
                seen += [edge["node"]["props"]["content"] for edge in page["edges"]]
                info = page["pageInfo"]
                assert info["hasPreviousPage"] == (after is not None)
                assert info["hasNextPage"] == (len(seen) < len(expected))
                if not info["hasNextPage"]:
                    break
                after = info["endCursor"]
            assert seen == expected
            # Backwards.
            seen = []
            before = None
            while True:
                page = (await client.data(PAGE, {"chatId": "w", "branch": branch,
                                                 "last": size, "before": before}))["messages"]
                seen = [edge["node"]["props"]["content"] for edge in page["edges"]] + seen
                info = page["pageInfo"]
                assert info["hasNextPage"] == (before is not None)
                assert info["hasPreviousPage"] == (len(seen) < len(expected))
                if not info["hasPreviousPage"]:
                    break
                before = info["startCursor"]
            assert seen == expected
    # A cursor from one branch is refused on the other, whichever way it is bound.
    other = (await client.data(PAGE, {"chatId": "w", "branch": ids[-1], "last": 3}))
    cursor = other["messages"]["pageInfo"]["startCursor"]
    for variables in ({"after": cursor}, {"before": cursor, "last": 2},
                      {"after": cursor, "branch": fork["messageIds"][-1]}):
        assert await client.error_code(PAGE, {"chatId": "w", **variables}) == "INVALID_CURSOR"
    # A cursor of the active branch stays good while that branch grows.
    active = (await client.data(PAGE, {"chatId": "w", "last": 2}))["messages"]["pageInfo"]
    await client.data(APPEND, {"chatId": "w", "appendId": "grow",
                               "messages": [say("ASSISTANT", "b25")]})
    newer = await contents(client, "w", after=active["endCursor"])
    assert newer == ["b25"]
    # ... but not once another branch is active.
    await client.data(SWITCH, {"chatId": "w", "leafId": ids[-1]})
    assert await client.error_code(PAGE, {"chatId": "w", "after": active["endCursor"]}) == (
        "INVALID_CURSOR")
    assert await client.error_code(PAGE, {"chatId": "w", "branch": "missing"}) == "NOT_FOUND"


async def test_model_context_reads_only_the_active_branch(client: GraphQLClient) -> None:
    q1, a1, q2, a2 = await chat_with(client, "m", ("USER", "q1"), ("ASSISTANT", "a1"),
                                     ("USER", "q2"), ("ASSISTANT", "a2"))
    edited = (await client.data(EDIT, {"id": q2, "props": {"content": "q2b"},
                                       "appendId": "e"}))["editMessage"]
    await answer(client, "m", edited["id"], "a2b")
    context = (await client.data(CONTEXT, {"chatId": "m"}))["modelContext"]
    assert [m["props"]["content"] for m in context] == ["q1", "a1", "q2b", "a2b"]
    # A boundary drawn on the other branch does not hide this branch's history.
    await client.data(SWITCH, {"chatId": "m", "leafId": a2})
    await client.data('mutation { compactChat(chatId: "m", summary: "old") { id } }')
    await client.data(SWITCH, {"chatId": "m", "leafId": edited["id"]})
    context = (await client.data(CONTEXT, {"chatId": "m"}))["modelContext"]
    assert [m["props"]["content"] for m in context] == ["q1", "a1", "q2b", "a2b"]
    await client.data(SWITCH, {"chatId": "m", "leafId": a2})
    context = (await client.data(CONTEXT, {"chatId": "m"}))["modelContext"]
    assert [m["props"]["content"] for m in context] == ["old"]
    assert q1 and a1


DELETE = """mutation($chatId: ID!, $ids: [ID!]!, $withReplies: Boolean) {
  deleteMessages(chatId: $chatId, ids: $ids, withReplies: $withReplies) }"""
PARENTS = """query($chatId: ID!) { messages(chatId: $chatId, allBranches: true, first: 200) {
  edges { node { id parentId props } } } }"""


async def delete(client: GraphQLClient, chat_id: str, ids: list[str],
                 with_replies: bool | None = None) -> int:
    variables: dict[str, Any] = {"chatId": chat_id, "ids": ids}
    if with_replies is not None:
        variables["withReplies"] = with_replies
    deleted: int = (await client.data(DELETE, variables))["deleteMessages"]
    return deleted


async def parents(client: GraphQLClient, chat_id: str) -> list[tuple[str, str | None]]:
    page = (await client.data(PARENTS, {"chatId": chat_id}))["messages"]
    return [(edge["node"]["id"], edge["node"]["parentId"]) for edge in page["edges"]]


async def test_deleting_one_message_keeps_the_rest_of_the_conversation(
        client: GraphQLClient) -> None:
    m1, m2, m3, m4, m5 = await chat_with(client, "d", ("USER", "1"), ("ASSISTANT", "2"),
                                         ("USER", "3"), ("ASSISTANT", "4"), ("USER", "5"))
    assert await delete(client, "d", [m2]) == 1
    assert await contents(client, "d") == ["1", "3", "4", "5"]
    assert await contents(client, "d", allBranches=True) == ["1", "3", "4", "5"]
    assert await parents(client, "d") == [(m1, None), (m3, m1), (m4, m3), (m5, m4)]
    assert (await client.data(CHAT, {"id": "d"}))["chat"]["activeLeafId"] == m5
    # Deleting the root makes its reply the root; unknown ids count nothing.
    assert await delete(client, "d", [m1, "unknown"]) == 1
    assert await parents(client, "d") == [(m3, None), (m4, m3), (m5, m4)]
    assert await contents(client, "d", first=2) == ["3", "4"]


async def test_the_count_is_of_rows_removed(client: GraphQLClient) -> None:
    m1, m2, _m3 = await chat_with(client, "n", ("USER", "1"), ("ASSISTANT", "2"),
                                  ("USER", "3"))
    assert await delete(client, "n", [m1, m2]) == 2
    assert await contents(client, "n", allBranches=True) == ["3"]
    # With replies: a message named twice over (itself and below another) counts once.
    k1, k2, _k3 = await chat_with(client, "k", ("USER", "1"), ("ASSISTANT", "2"),
                                  ("USER", "3"))
    assert await delete(client, "k", [k1, k2], with_replies=True) == 3
    assert await contents(client, "k", allBranches=True) == []
    assert (await client.data(CHAT, {"id": "k"}))["chat"]["activeLeafId"] is None


async def test_deleting_with_replies_removes_the_subtree(client: GraphQLClient) -> None:
    _q1, a1, q2, a2 = await chat_with(client, "s", ("USER", "q1"), ("ASSISTANT", "a1"),
                                      ("USER", "q2"), ("ASSISTANT", "a2"))
    edited = (await client.data(EDIT, {"id": a1, "props": {"content": "a1b"},
                                       "appendId": "e"}))["editMessage"]
    await client.data(SWITCH, {"chatId": "s", "leafId": a2})
    assert await delete(client, "s", [a1], with_replies=True) == 3  # a1, q2, a2
    assert await contents(client, "s", allBranches=True) == ["q1", "a1b"]
    # The active branch fell back to what survives.
    assert (await client.data(CHAT, {"id": "s"}))["chat"]["activeLeafId"] == edited["id"]
    assert await contents(client, "s") == ["q1", "a1b"]
    assert q2 not in {a1, a2}


async def test_pages_and_siblings_after_deleting_a_message_with_siblings(
        client: GraphQLClient) -> None:
    ids = await chat_with(client, "p", *[("USER" if i % 2 == 0 else "ASSISTANT", f"m{i}")
                                         for i in range(12)])
    # Three answers to m4: the original m5 (and its branch), then two regenerations.
    second = await answer(client, "p", ids[4], "x1")
    third = await answer(client, "p", ids[4], "x2")
    await client.data(APPEND, {"chatId": "p", "appendId": "more", "parentId": third[0]["id"],
                               "messages": [say("USER", f"y{i}") for i in range(6)]})
    # The middle answer (x1) and a message above the fork (m2) go.
    assert await delete(client, "p", [second[0]["id"], ids[2]]) == 2
    expected = ["m0", "m1", "m3", "m4", "x2"] + [f"y{i}" for i in range(6)]
    for size in (1, 3, 4):
        seen: list[str] = []
        after = None
        while True:
            page = (await client.data(PAGE, {"chatId": "p", "first": size,
                                             "after": after}))["messages"]
            seen += [edge["node"]["props"]["content"] for edge in page["edges"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert seen == expected
        seen = []
        before = None
        while True:
            page = (await client.data(PAGE, {"chatId": "p", "last": size,
                                             "before": before}))["messages"]
            seen = [edge["node"]["props"]["content"] for edge in page["edges"]] + seen
            if not page["pageInfo"]["hasPreviousPage"]:
                break
            before = page["pageInfo"]["startCursor"]
        assert seen == expected
    nodes = [edge["node"] for edge in (await client.data(PAGE, {"chatId": "p"}))[
        "messages"]["edges"]]
    assert nodes[2]["parentId"] == ids[1]
    assert nodes[4]["siblings"] == {"index": 1, "count": 2, "ids": [ids[5], third[0]["id"]]}
    # The other branch through the fork lost m2 too and kept everything else.
    assert await contents(client, "p", branch=ids[-1]) == [
        f"m{i}" for i in range(12) if i != 2]


async def test_deleting_the_active_leaf(client: GraphQLClient) -> None:
    q1, a1, q2, a2 = await chat_with(client, "l", ("USER", "q1"), ("ASSISTANT", "a1"),
                                     ("USER", "q2"), ("ASSISTANT", "a2"))
    other = await answer(client, "l", q2, "a2b")
    # The active leaf (a2b) goes: its parent q2 leads, although a2 is still below it.
    assert await delete(client, "l", [other[0]["id"]]) == 1
    assert (await client.data(CHAT, {"id": "l"}))["chat"]["activeLeafId"] == q2
    assert await contents(client, "l") == ["q1", "a1", "q2"]
    # The leaf and its parent at once: the nearest ancestor that survives leads.
    await client.data(SWITCH, {"chatId": "l", "leafId": a2})
    assert await delete(client, "l", [a2, q2]) == 2
    assert (await client.data(CHAT, {"id": "l"}))["chat"]["activeLeafId"] == a1
    # A message higher up the active branch leaves the leaf where it is.
    assert await delete(client, "l", [q1]) == 1
    assert (await client.data(CHAT, {"id": "l"}))["chat"]["activeLeafId"] == a1
    assert await delete(client, "l", [a1]) == 1
    assert (await client.data(CHAT, {"id": "l"}))["chat"]["activeLeafId"] is None
    # The next message starts the chat again.
    await client.data(APPEND, {"chatId": "l", "appendId": "again",
                               "messages": [say("USER", "hello")]})
    assert await contents(client, "l") == ["hello"]


def fresh_links(rows: dict[str, tuple[str | None, int]]) -> dict[str, tuple[int, str, int]]:
    """(depth, jump_id, jump_depth) of every message as writing the tree afresh, parents
    first, would give them; ``rows``: id -> (parent_id, sequence)."""
    built: dict[str, Link] = {}

    def link(message_id: str) -> Link:
        if message_id not in built:
            parent_id = rows[message_id][0]
            if parent_id is None:
                built[message_id] = _below(message_id, None, None)
            else:
                parent = link(parent_id)
                built[message_id] = _below(message_id, parent, link(parent.jump_id))
        return built[message_id]

    return {m: (link(m).depth, link(m).jump_id, link(m).jump_depth) for m in rows}


async def test_tree_columns_after_random_deletes_match_a_fresh_build(
        client: GraphQLClient, settings: Settings) -> None:
    rng = random.Random(26)
    ids = await chat_with(client, "r", *[("USER", f"m{i}") for i in range(40)])
    # Forks at random places, so deletes hit messages with siblings and subtrees.
    for fork in range(5):
        at = rng.choice(ids)
        written = (await client.data(APPEND, {
            "chatId": "r", "appendId": f"f{fork}", "parentId": at,
            "messages": [say("USER", f"f{fork}-{i}") for i in range(rng.randint(3, 15))],
        }))["appendMessages"]["messageIds"]
        ids += written
    db = Database(settings.database_url)
    try:
        for _ in range(6):
            doomed = rng.sample(ids, rng.randint(1, 4))
            assert await delete(client, "r", doomed) == len(doomed)
            ids = [m for m in ids if m not in doomed]
            async with db.read() as conn:
                stored = (await conn.execute(
                    select(messages.c.id, messages.c.parent_id, messages.c.sequence,
                           messages.c.depth, messages.c.jump_id, messages.c.jump_depth)
                    .where(messages.c.chat_id == "r"))).all()
            assert sorted(row.id for row in stored) == sorted(ids)
            expected = fresh_links({row.id: (row.parent_id, row.sequence) for row in stored})
            assert {row.id: (row.depth, row.jump_id, row.jump_depth) for row in stored} == (
                expected)
            # Every surviving message's branch pages the same forwards and backwards.
            leaf = rng.choice(ids)
            chain = [leaf]
            by_id = {row.id: row.parent_id for row in stored}
            while by_id[chain[-1]] is not None:
                chain.append(by_id[chain[-1]])
            page = (await client.data(PAGE, {"chatId": "r", "branch": leaf, "first": 200}))
            assert [e["node"]["id"] for e in page["messages"]["edges"]] == chain[::-1]
    finally:
        await db.dispose()


async def test_concurrent_edits_make_distinct_siblings(client: GraphQLClient) -> None:
    q1, _ = await chat_with(client, "x", ("USER", "q"), ("ASSISTANT", "a"))
    edits = await asyncio.gather(*[
        client.data(EDIT, {"id": q1, "props": {"content": f"q{i}"}, "appendId": f"e{i}"})
        for i in range(6)])
    made = [e["editMessage"] for e in edits]
    assert len({m["id"] for m in made}) == 6
    assert sorted(m["sequence"] for m in made) == list(range(3, 9))
    page = (await client.data(PAGE, {"chatId": "x", "allBranches": True}))["messages"]
    nodes = [edge["node"] for edge in page["edges"]]
    assert [n["sequence"] for n in nodes] == list(range(1, 9))
    assert nodes[0]["siblings"]["count"] == 7 and nodes[0]["parentId"] is None


async def test_bad_tree_input_is_refused(client: GraphQLClient) -> None:
    q1, _ = await chat_with(client, "b", ("USER", "q"), ("ASSISTANT", "a"))
    await client.data(CREATE, {"id": "b2"})
    for query, variables, code in (
        (EDIT, {"id": "missing", "props": {}, "appendId": "e"}, "NOT_FOUND"),
        (EDIT, {"id": q1, "props": None, "appendId": "e"}, "INVALID_ARGUMENT"),
        (SWITCH, {"chatId": "b2", "leafId": q1}, "NOT_FOUND"),
        (APPEND, {"chatId": "b2", "appendId": "x", "parentId": q1,
                  "messages": [say("USER", "x")]}, "NOT_FOUND"),
        (PAGE, {"chatId": "b", "branch": q1, "allBranches": True}, "INVALID_ARGUMENT"),
    ):
        assert await client.error_code(query, variables) == code, (query, variables)
    assert await contents(client, "b2", allBranches=True) == []
    assert await contents(client, "b", allBranches=True) == ["q", "a"]


SEARCH = """query($q: String!) { searchMessages(query: $q, chatId: "s", window: 2) {
  message { id } window { props } } }"""


async def test_search_finds_every_branch_with_windows_along_each(
    client: GraphQLClient,
) -> None:
    q1, a1, q2, a2 = await chat_with(client, "s", ("USER", "hello"), ("ASSISTANT", "hi"),
                                     ("USER", "weather please"), ("ASSISTANT", "sunny"))
    edited = (await client.data(EDIT, {"id": q2, "props": {"content": "weather tomorrow"},
                                       "appendId": "e"}))["editMessage"]
    await answer(client, "s", edited["id"], "rainy")
    hits = (await client.data(SEARCH, {"q": "weather"}))["searchMessages"]
    windows = {hit["message"]["id"]: [m["props"]["content"] for m in hit["window"]]
               for hit in hits}
    assert windows == {q2: ["hello", "hi", "sunny"],
                       edited["id"]: ["hello", "hi", "rainy"]}
    # After a message, the window follows its newest reply.
    hits = (await client.data(SEARCH, {"q": "hello"}))["searchMessages"]
    assert [m["props"]["content"] for m in hits[0]["window"]] == ["hi", "weather tomorrow"]
    assert (q1, a1, a2) != ()


IMPORT = """mutation($input: ImportChatInput!) { importChat(input: $input) { id } }"""
TREE = """query($id: ID!) { messages(chatId: $id, allBranches: true) {
  edges { node { id parentId props } } } }"""


async def test_export_and_import_keep_the_tree(client: GraphQLClient) -> None:
    _q1, _a1, q2, _a2 = await chat_with(client, "t", ("USER", "q1"), ("ASSISTANT", "a1"),
                                        ("USER", "q2"), ("ASSISTANT", "a2"))
    await client.data(EDIT, {"id": q2, "props": {"content": "q2b"}, "appendId": "e"})
    before = (await client.data(TREE, {"id": "t"}))["messages"]["edges"]
    response = await client.http.get("/chats/t/export")
    assert response.status_code == 200, response.text
    lines = [json.loads(line) for line in response.content.splitlines()]
    assert [line.get("parentId") for line in lines if line["kind"] == "message"] == [
        edge["node"]["parentId"] for edge in before]
    # Purging frees the ids; the import brings the same tree back under a new chat id.
    await client.data('mutation { purgeChat(id: "t") }')
    await client.data(IMPORT, {"input": {"format": "CHATQL", "document": lines,
                                         "chatId": "t2", "importId": "i"}})
    assert (await client.data(TREE, {"id": "t2"}))["messages"]["edges"] == before
    assert await contents(client, "t2") == ["q1", "a1", "q2b"]
    # A document that says nothing of the tree imports as one chain.
    chain = (await client.data(IMPORT, {"input": {"format": "OPENAI", "chatId": "t3",
        "importId": "o", "assistantId": "a", "document": {"messages": [
            {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}}}))
    assert chain["importChat"]["id"] == "t3"
    nodes = [e["node"] for e in (await client.data(TREE, {"id": "t3"}))["messages"]["edges"]]
    assert [n["parentId"] for n in nodes] == [None, nodes[0]["id"]]
    assert await contents(client, "t3") == ["x", "y"]
