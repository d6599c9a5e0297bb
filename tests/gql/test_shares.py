"""Share links and forks end to end over real HTTP, on SQLite and Postgres: a link shows
one branch as it was when shared and nothing else, opens to its audience (PUBLIC with no
identity at all, in ``dev`` and ``jwt`` mode), stops opening when revoked or expired,
counts its views, shrugs off guessing, and a branch — shared or one's own — continues
as a new chat."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from chatql.gql.app import create_app
from chatql.gql.schema.file_type import file_url
from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.tables import shares
from tests.access.snapshot import store_fingerprint
from tests.access.test_auth import HS_SECRET, bearer, token
from tests.conftest import uvicorn_serving

BOB = {"X-User-Id": "bob-owner", "X-Tenant-Id": "acme"}
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
MALLORY = {"X-User-Id": "mallory", "X-Tenant-Id": "other"}
NOBODY: dict[str, str] = {}

CREATE = """mutation($id: ID!, $title: String) {
  createChat(input: {id: $id, assistantId: "guide", title: $title}) { id } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { messageIds } }"""
EDIT = """mutation($id: ID!, $text: String!) {
  editMessage(id: $id, appendId: $text, input: {props: {content: $text}}) { id } }"""
SHARE = """mutation($chat: ID!, $message: ID, $audience: ShareAudience, $expires: DateTime) {
  shareChat(chatId: $chat, messageId: $message, audience: $audience, expiresAt: $expires) {
    id token url audience createdAt expiresAt revokedAt views messageId } }"""
REVOKE = """mutation($id: ID!) { revokeShare(id: $id) { id token url revokedAt views } }"""
SHARED = """query($token: String!) { sharedChat(token: $token) {
  title createdAt messages { id role type props createdAt assistantId } } }"""
SHARES = """query($chat: ID!) { chat(id: $chat) {
  shares { id token url audience revokedAt expiresAt views messageId } } }"""
FORK = """mutation($share: String, $message: ID) {
  forkChat(fromShare: $share, fromMessage: $message) {
    id title assistantId createdBy tenantId activeLeafId
    messages(first: 200) { edges { node { id chatId parentId role type props } } } } }"""
MESSAGES = """query($chat: ID!, $branch: ID) { messages(chatId: $chat, branch: $branch,
  first: 200) { edges { node { id role type props parentId } } } }"""
DELETE = "mutation($chat: ID!) { deleteChat(id: $chat) }"


def turn(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "type": "text", "props": {"content": text},
            "assistantId": "guide" if role == "ASSISTANT" else None}


class Client:
    """GraphQL (and plain pages) over real HTTP to the live server."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def body(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = BOB) -> Any:
        response = await self.http.post("/graphql", json={"query": query,
                                                          "variables": variables or {}},
                                        headers=who)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = BOB) -> Any:
        body = await self.body(query, variables, who)
        assert not body.get("errors"), body
        return body["data"]

    async def error(self, query: str, variables: dict[str, Any] | None = None,
                    who: dict[str, str] = BOB) -> tuple[str, str]:
        body = await self.body(query, variables, who)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"]), str(body["errors"][0]["message"])

    async def chat(self, chat: str, *turns: tuple[str, str], title: str | None = None,
                   who: dict[str, str] = BOB) -> list[str]:
        """A chat of ``who``'s with ``turns`` as one chain; the messages' ids."""
        await self.data(CREATE, {"id": chat, "title": title}, who)
        return await self.append(chat, *turns, who=who)

    async def append(self, chat: str, *turns: tuple[str, str],
                     who: dict[str, str] = BOB) -> list[str]:
        made = await self.data(APPEND, {"chat": chat, "aid": secrets.token_hex(4), "messages": [
            turn(role, text) for role, text in turns]}, who)
        return list(made["appendMessages"]["messageIds"])

    async def share(self, chat: str, who: dict[str, str] = BOB, **arguments: Any) -> Any:
        return (await self.data(SHARE, {"chat": chat, **arguments}, who))["shareChat"]

    async def shared(self, link: str, who: dict[str, str] = NOBODY) -> Any:
        return (await self.data(SHARED, {"token": link}, who))["sharedChat"]

    async def shared_error(self, link: str, who: dict[str, str] = NOBODY) -> tuple[str, str]:
        return await self.error(SHARED, {"token": link}, who)

    async def shares_of(self, chat: str, who: dict[str, str] = BOB) -> list[dict[str, Any]]:
        return list((await self.data(SHARES, {"chat": chat}, who))["chat"]["shares"])


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[tuple[Client, str]]:
    async with uvicorn_serving(create_app(settings)) as port:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            yield Client(http), base


@pytest.fixture
async def client(served: tuple[Client, str]) -> Client:
    return served[0]


def texts(shared: dict[str, Any]) -> list[str]:
    return [message["props"]["content"] for message in shared["messages"]]


GHOST_TOKEN = secrets.token_urlsafe(24)


async def test_a_link_shows_the_branch_as_it_was_and_nothing_else(
        served: tuple[Client, str]) -> None:
    client, base = served
    ids = await client.chat("secret-chat", ("USER", "q1"), ("ASSISTANT", "a1"), ("USER", "q2"),
                            ("ASSISTANT", "a2"), title="Trip to Lisbon")
    # An edit of q2 starts a second branch, which becomes the active one.
    edited = (await client.data(EDIT, {"id": ids[2], "text": "q2 edited"}))["editMessage"]["id"]
    by_default = await client.share("secret-chat", audience="PUBLIC")
    explicit = await client.share("secret-chat", message=ids[3], audience="PUBLIC")
    # Written after the links were made: on the active branch, and on the first one.
    await client.append("secret-chat", ("ASSISTANT", "a2 to the edit"))
    await client.data("""mutation($chat: ID!, $parent: ID!) { appendMessages(chatId: $chat,
      appendId: "late", parentId: $parent, messages: [{role: USER, type: "text",
      props: {content: "q3"}}]) { messageIds } }""", {"chat": "secret-chat", "parent": ids[3]})

    assert by_default["messageId"] == edited and explicit["messageId"] == ids[3]
    assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", by_default["token"])
    assert by_default["url"] == f"{base}/s/{by_default['token']}"
    assert by_default["views"] == 0 and by_default["revokedAt"] is None

    active = await client.shared(by_default["token"])
    assert texts(active) == ["q1", "a1", "q2 edited"]
    assert [m["id"] for m in active["messages"]] == [ids[0], ids[1], edited]
    assert active["title"] == "Trip to Lisbon"
    assert active["createdAt"] == by_default["createdAt"]
    assert [(m["role"], m["type"], m["assistantId"]) for m in active["messages"]] == [
        ("USER", "text", None), ("ASSISTANT", "text", "guide"), ("USER", "text", None)]
    first = await client.shared(explicit["token"])
    assert texts(first) == ["q1", "a1", "q2", "a2"]

    # Nothing leads from a link to the chat, its owner or its other branches.
    fields = await client.data("""{ c: __type(name: "SharedChat") { fields { name } }
      m: __type(name: "SharedMessage") { fields { name } } }""")
    assert {f["name"] for f in fields["c"]["fields"]} == {"title", "createdAt", "messages"}
    assert {f["name"] for f in fields["m"]["fields"]} == {
        "id", "role", "type", "props", "createdAt", "assistantId", "files"}
    for reach in ("id", "chatId", "createdBy", "messages { chatId }", "messages { parentId }",
                  "messages { siblings { ids } }", "messages { metadata }",
                  "usage { promptTokens }"):
        code, _ = await client.error(
            "query($t: String!) { sharedChat(token: $t) { " + reach + " } }",
            {"t": by_default["token"]}, NOBODY)
        assert code == "INVALID_ARGUMENT", reach
    raw = (await client.http.post("/graphql", json={"query": SHARED, "variables": {
        "token": by_default["token"]}})).text
    assert "secret-chat" not in raw and "bob-owner" not in raw and "acme" not in raw


async def test_public_links_open_to_anyone_tenant_links_to_the_tenant(client: Client) -> None:
    await client.chat("team-notes", ("USER", "hello"), ("ASSISTANT", "hi"))
    public = await client.share("team-notes", audience="PUBLIC")
    tenant = await client.share("team-notes")  # TENANT by default
    assert tenant["audience"] == "TENANT"
    ghost = await client.shared_error(GHOST_TOKEN)
    assert ghost[0] == "NOT_FOUND"

    for who in (NOBODY, MALLORY, CAROL, BOB):
        assert texts(await client.shared(public["token"], who)) == ["hello", "hi"]
    for who in (CAROL, BOB):
        assert texts(await client.shared(tenant["token"], who)) == ["hello", "hi"]
    # Another tenant and a caller who names no one: exactly a token never issued.
    for who in (MALLORY, NOBODY):
        assert await client.shared_error(tenant["token"], who) == ghost

    # In dev mode a request without headers acts as "dev" of tenant "default" — but it
    # named no one, so a TENANT link of that tenant stays closed to it.
    default = {"X-User-Id": "dev", "X-Tenant-Id": "default"}
    await client.chat("defaults", ("USER", "in the default tenant"), who=default)
    closed = await client.share("defaults", who=default)
    assert await client.shared_error(closed["token"], NOBODY) == ghost
    assert texts(await client.shared(closed["token"], default)) == ["in the default tenant"]


async def test_in_jwt_mode_a_public_link_needs_no_token(settings: Settings) -> None:
    signed = dataclasses.replace(settings, auth="jwt", jwt_secret=HS_SECRET)
    owner = bearer(token({"sub": "bob-owner", "roles": []}))
    neighbour = bearer(token({"sub": "carol", "roles": []}))
    outsider = bearer(token({"sub": "mallory", "tenant_id": "other", "roles": []}))
    async with uvicorn_serving(create_app(signed)) as port, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        client = Client(http)
        await client.chat("signed", ("USER", "question"), ("ASSISTANT", "answer"), who=owner)
        public = await client.share("signed", owner, audience="PUBLIC")
        tenant = await client.share("signed", owner, audience="TENANT")

        assert texts(await client.shared(public["token"], NOBODY)) == ["question", "answer"]
        ghost = await client.shared_error(GHOST_TOKEN, NOBODY)
        assert ghost[0] == "NOT_FOUND"
        assert await client.shared_error(tenant["token"], NOBODY) == ghost
        assert await client.shared_error(tenant["token"], outsider) == ghost
        assert texts(await client.shared(tenant["token"], neighbour)) == ["question", "answer"]
        # Anything else still needs a token, and a bad token is refused even for a link.
        refused = await http.post("/graphql", json={"query": SHARES,
                                                     "variables": {"chat": "signed"}})
        assert refused.status_code == 401
        mixed = await http.post("/graphql", json={
            "query": 'query($t: String!) { sharedChat(token: $t) { title } chat(id: "signed")'
                     " { id } }", "variables": {"token": public["token"]}})
        assert mixed.status_code == 401
        forged = await http.post("/graphql", headers=bearer("not-a-jwt"), json={
            "query": SHARED, "variables": {"token": public["token"]}})
        assert forged.status_code == 401


async def test_revoked_and_expired_links_are_not_found(client: Client, db: Database) -> None:
    await client.chat("closing", ("USER", "a question"))
    ghost = await client.shared_error(GHOST_TOKEN)
    link = await client.share("closing", audience="PUBLIC")
    assert texts(await client.shared(link["token"])) == ["a question"]

    # Only its creator or whoever may change the chat revokes it.
    await client.data("""mutation { updateChat(id: "closing", input: {public: true}) { id } }""")
    assert (await client.error(REVOKE, {"id": link["id"]}, CAROL))[0] == "FORBIDDEN"
    assert (await client.error(REVOKE, {"id": link["id"]}, MALLORY))[0] == "NOT_FOUND"
    assert await client.shares_of("closing", CAROL) == []

    revoked = (await client.data(REVOKE, {"id": link["id"]}))["revokeShare"]
    assert revoked["revokedAt"] is not None and revoked["token"] is None
    assert await client.shared_error(link["token"]) == ghost
    assert await client.shared_error(link["token"], BOB) == ghost
    again = (await client.data(REVOKE, {"id": link["id"]}))["revokeShare"]
    assert again == revoked
    listed = await client.shares_of("closing")
    assert [(s["id"], s["token"], s["url"], s["revokedAt"]) for s in listed] == [
        (link["id"], None, None, revoked["revokedAt"])]

    soon = (datetime.now(UTC) + timedelta(seconds=1.5)).isoformat()
    expiring = await client.share("closing", audience="PUBLIC", expires=soon)
    assert texts(await client.shared(expiring["token"])) == ["a question"]
    await asyncio.sleep(1.7)
    assert await client.shared_error(expiring["token"]) == ghost
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    assert (await client.error(SHARE, {"chat": "closing", "expires": past}))[0] == (
        "INVALID_ARGUMENT")

    # A link to a deleted chat does not open either.
    lasting = await client.share("closing", audience="PUBLIC")
    await client.data(DELETE, {"chat": "closing"})
    assert await client.shared_error(lasting["token"]) == ghost
    # Purged, the chat takes its links with it.
    await client.data('mutation { purgeChat(id: "closing") }')
    async with db.read() as conn:
        assert (await conn.execute(select(shares).where(shares.c.chat_id == "closing"))).all() == []


async def test_views_are_counted(client: Client, db: Database) -> None:
    await client.chat("popular", ("USER", "worth reading"))
    public = await client.share("popular", audience="PUBLIC")
    tenant = await client.share("popular")
    for who in (NOBODY, CAROL, MALLORY):
        await client.shared(public["token"], who)
    await client.shared(tenant["token"], CAROL)
    await client.shared_error(tenant["token"], MALLORY)  # refused: not a view
    await client.data(FORK, {"share": public["token"]}, CAROL)  # a fork is not a view
    views = {s["id"]: s["views"] for s in await client.shares_of("popular")}
    assert views == {public["id"]: 3, tenant["id"]: 1}
    # The store keeps the token's SHA-256, never the token.
    async with db.read() as conn:
        rows = (await conn.execute(select(shares))).all()
    assert {row.token_hash for row in rows} == {
        hashlib.sha256(t.encode()).hexdigest() for t in (public["token"], tenant["token"])}
    assert not any(t in repr(tuple(row)) for row in rows
                   for t in (public["token"], tenant["token"]))


async def test_guessing_tokens_changes_nothing_and_is_rate_limited(
        client: Client, db: Database) -> None:
    await client.chat("guarded", ("USER", "private words"))
    link = await client.share("guarded", audience="PUBLIC")
    before = await store_fingerprint(db)
    answers = [await client.http.post("/graphql", json={"query": SHARED, "variables": {
        "token": secrets.token_urlsafe(24) if n % 10 else f"guess-{n}"}}) for n in range(1000)]
    codes = [a.json()["errors"][0]["extensions"]["code"] for a in answers]
    # The default limit of share reads: 300 a minute for each caller (here, one address).
    assert codes[:300] == ["NOT_FOUND"] * 300
    assert set(codes[300:]) == {"RATE_LIMITED"}
    assert {a.status_code for a in answers[300:]} == {429}
    assert 1 <= int(answers[-1].headers["retry-after"]) <= 60
    assert await store_fingerprint(db) == before
    # The real link is refused from that address too now; a named caller is counted
    # on its own.
    assert (await client.shared_error(link["token"]))[0] == "RATE_LIMITED"
    assert texts(await client.shared(link["token"], CAROL)) == ["private words"]


async def test_a_message_of_another_chat_cannot_be_shared(client: Client, db: Database) -> None:
    mine = await client.chat("mine", ("USER", "mine"))
    theirs = await client.chat("theirs", ("USER", "theirs"), who=MALLORY)
    other = await client.chat("other-of-mine", ("USER", "another chat"))
    await client.data(CREATE, {"id": "empty", "title": None})
    before = await store_fingerprint(db)
    for message in (other[0], theirs[0], "never-written"):
        code, text = await client.error(SHARE, {"chat": "mine", "message": message})
        assert code == "NOT_FOUND" and "not found in chat 'mine'" in text
    assert (await client.error(SHARE, {"chat": "theirs", "message": theirs[0]}))[0] == (
        "NOT_FOUND")
    assert (await client.error(SHARE, {"chat": "empty"}))[0] == "INVALID_ARGUMENT"
    # Sharing takes the right to change the chat: a reader (the agent role) may not.
    agent = {**CAROL, "X-Roles": "agent"}
    assert (await client.error(SHARE, {"chat": "mine"}, agent))[0] == "FORBIDDEN"
    assert await store_fingerprint(db) == before
    assert (await client.share("mine", message=mine[0]))["messageId"] == mine[0]


async def test_a_branch_continues_as_a_new_chat(client: Client) -> None:
    ids = await client.chat("original", ("USER", "q1"), ("ASSISTANT", "a1"), ("USER", "q2"),
                            ("ASSISTANT", "a2"), title="Original")
    link = await client.share("original", message=ids[3], audience="PUBLIC")
    await client.append("original", ("USER", "after the link"))
    before = (await client.data(MESSAGES, {"chat": "original"}))["messages"]

    # Someone of another tenant continues the shared branch as a chat of their own.
    forked = (await client.data(FORK, {"share": link["token"]}, MALLORY))["forkChat"]
    assert (forked["title"], forked["assistantId"], forked["createdBy"],
            forked["tenantId"]) == ("Original", "guide", "mallory", "other")
    copies = [edge["node"] for edge in forked["messages"]["edges"]]
    assert [(m["role"], m["props"]["content"]) for m in copies] == [
        ("USER", "q1"), ("ASSISTANT", "a1"), ("USER", "q2"), ("ASSISTANT", "a2")]
    assert not {m["id"] for m in copies} & set(ids)
    assert {m["chatId"] for m in copies} == {forked["id"]}
    assert [m["parentId"] for m in copies] == [None, *(m["id"] for m in copies[:-1])]
    assert forked["activeLeafId"] == copies[-1]["id"]
    # It goes on like any chat of theirs; the original is as it was.
    await client.append(forked["id"], ("USER", "q3 in the fork"), who=MALLORY)
    assert (await client.data(MESSAGES, {"chat": "original"}))["messages"] == before
    assert (await client.error(MESSAGES, {"chat": forked["id"]}, BOB))[0] == "NOT_FOUND"

    # One's own branch, from any message one may read.
    own = (await client.data(FORK, {"message": ids[1]}))["forkChat"]
    assert [e["node"]["props"]["content"] for e in own["messages"]["edges"]] == ["q1", "a1"]
    assert own["createdBy"] == "bob-owner" and own["id"] not in ("original", forked["id"])

    for variables in ({}, {"share": link["token"], "message": ids[0]}):
        assert (await client.error(FORK, variables))[0] == "INVALID_ARGUMENT"
    assert (await client.error(FORK, {"message": ids[0]}, MALLORY))[0] == "NOT_FOUND"
    await client.data(REVOKE, {"id": link["id"]})
    assert (await client.error(FORK, {"share": link["token"]}, MALLORY))[0] == "NOT_FOUND"


async def test_a_fork_of_an_untitled_chat_is_titled_from_its_first_question(
        client: Client) -> None:
    ids = await client.chat("nameless", ("ASSISTANT", "Hello, how can I help?"),
                            ("USER", "Which trains run from Oslo to Bergen, and when?"),
                            ("ASSISTANT", "Four a day."))
    titled = "query($id: ID!) { chat(id: $id) { title titleSource } }"
    assert (await client.data(titled, {"id": "nameless"}))["chat"] == {
        "title": "Which trains run from Oslo to Bergen, and when", "titleSource": "AUTO"}
    # The source's automatic title is kept by a fork, as any title is.
    own = (await client.data(FORK, {"message": ids[2]}))["forkChat"]
    assert own["title"] == "Which trains run from Oslo to Bergen, and when"

    # A source still untitled (its first question came before titles, say): the fork
    # takes its title from its own first USER message, here and on a later read.
    await client.chat("blank", ("ASSISTANT", "Hi"), ("USER", "Pack for Lisbon in May?"))
    await client.data('mutation { updateChat(id: "blank", input: {title: null}) { id } }')
    assert (await client.data(titled, {"id": "blank"}))["chat"]["title"] is None
    link = await client.share("blank", audience="PUBLIC")
    for forked in ((await client.data(FORK, {"share": link["token"]}, CAROL))["forkChat"],
                   (await client.data(FORK, {"message": (await client.data(
                       MESSAGES, {"chat": "blank"}))["messages"]["edges"][-1]["node"]["id"]}
                   ))["forkChat"]):
        assert forked["title"] == "Pack for Lisbon in May"
        who = CAROL if forked["createdBy"] == "carol" else BOB
        assert (await client.data(titled, {"id": forked["id"]}, who))["chat"] == {
            "title": "Pack for Lisbon in May", "titleSource": "AUTO"}
    # A fork without any USER message stays untitled.
    await client.chat("monologue", ("ASSISTANT", "Just me"))
    await client.data('mutation { updateChat(id: "monologue", input: {title: null}) { id } }')
    lone = await client.share("monologue", audience="PUBLIC")
    assert (await client.data(FORK, {"share": lone["token"]}, CAROL))["forkChat"]["title"] is None


async def test_a_link_to_an_archived_chat_brings_it_back(client: Client) -> None:
    await client.chat("cold", ("USER", "an old question"), ("ASSISTANT", "an old answer"))
    link = await client.share("cold", audience="PUBLIC")
    archive = "mutation { archiveChat(id: \"cold\") { archivedAt } }"
    assert (await client.data(archive))["archiveChat"]["archivedAt"] is not None
    assert texts(await client.shared(link["token"])) == ["an old question", "an old answer"]
    await client.data(archive)
    forked = (await client.data(FORK, {"share": link["token"]}, CAROL))["forkChat"]
    assert [e["node"]["props"]["content"] for e in forked["messages"]["edges"]] == [
        "an old question", "an old answer"]


async def test_a_link_shows_its_messages_files(settings: Settings, tmp_path: Any) -> None:
    stored = dataclasses.replace(settings, files_url=f"file://{tmp_path / 'files'}")
    http_app = create_app(stored)
    async with uvicorn_serving(http_app) as port, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        client = Client(http)
        uploaded = (await http.post("/files?filename=notes.txt", headers={
            **BOB, "content-type": "text/plain"}, content=b"pack a coat\n")).json()
        await client.data(CREATE, {"id": "with-file", "title": None})
        await client.data(APPEND, {"chat": "with-file", "aid": "f", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": [
                {"type": "text", "text": "my list"},
                {"type": "file", "fileId": uploaded["id"], "mediaType": "text/plain",
                 "filename": "notes.txt"}]}}]})
        link = await client.share("with-file", audience="PUBLIC")
        shared = (await client.data(
            "query($t: String!) { sharedChat(token: $t) { messages { files { id filename url"
            " } } } }", {"t": link["token"]}, NOBODY))["sharedChat"]
        (file,) = shared["messages"][0]["files"]
        assert (file["id"], file["filename"]) == (uploaded["id"], "notes.txt")
        fetched = await http.get(file["url"])  # no identity: the signed address opens it
        assert fetched.status_code == 200 and fetched.content == b"pack a coat\n"
        # The address is the link's: it names the link, and cannot be moved to another.
        assert f"share={link['id']}" in file["url"]
        other = await client.share("with-file", audience="PUBLIC")
        moved = file["url"].replace(link["id"], other["id"])
        assert (await http.get(moved)).status_code == 403

        # Revoked, the link takes its file addresses with it — before they expire.
        await client.data(REVOKE, {"id": link["id"]})
        gone = await http.get(file["url"])
        assert gone.status_code == 404
        assert gone.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        # The owner still reads the file, and so does the other link.
        assert (await http.get(f"/files/{uploaded['id']}", headers=BOB)).status_code == 200
        (kept,) = (await client.data(
            "query($t: String!) { sharedChat(token: $t) { messages { files { url } } } }",
            {"t": other["token"]}, NOBODY))["sharedChat"]["messages"][0]["files"]
        assert (await http.get(kept["url"])).content == b"pack a coat\n"

        # A link's addresses show only what the link shows: a file added later is not
        # among them, even signed for the link.
        later = (await http.post("/files?filename=later.txt", headers={
            **BOB, "content-type": "text/plain"}, content=b"later\n")).json()
        await client.data(APPEND, {"chat": "with-file", "aid": "g", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": [
                {"type": "file", "fileId": later["id"], "mediaType": "text/plain",
                 "filename": "later.txt"}]}}]})
        services = http_app.state.services
        forged = kept["url"].split("/files/")[0] + file_url(
            _Context(services), later["id"], share_id=other["id"])
        assert (await http.get(forged)).status_code == 404

        # An expired link closes them too.
        soon = (datetime.now(UTC) + timedelta(seconds=1.5)).isoformat()
        brief = await client.share("with-file", audience="PUBLIC", expires=soon)
        (short,) = (await client.data(
            "query($t: String!) { sharedChat(token: $t) { messages { files { url } } } }",
            {"t": brief["token"]}, NOBODY))["sharedChat"]["messages"][0]["files"]
        assert (await http.get(short["url"])).status_code == 200
        await asyncio.sleep(1.7)
        assert (await http.get(short["url"])).status_code == 404


async def test_a_fork_reads_the_files_of_the_branch_it_copied(
        settings: Settings, tmp_path: Any) -> None:
    stored = dataclasses.replace(settings, files_url=f"file://{tmp_path / 'files'}")
    async with uvicorn_serving(create_app(stored)) as port, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        client = Client(http)
        uploaded = (await http.post("/files?filename=plan.txt", headers={
            **BOB, "content-type": "text/plain"}, content=b"day one: walk\n")).json()
        await client.data(CREATE, {"id": "forked-file", "title": "Plan"})
        await client.data(APPEND, {"chat": "forked-file", "aid": "f", "messages": [
            {"role": "USER", "type": "user_input", "props": {"content": [
                {"type": "text", "text": "my plan"},
                {"type": "file", "fileId": uploaded["id"], "mediaType": "text/plain",
                 "filename": "plan.txt"}]}}]})
        link = await client.share("forked-file", audience="PUBLIC")
        ours = (await client.data(FORK, {"share": link["token"]}, CAROL))["forkChat"]
        theirs = (await client.data(FORK, {"share": link["token"]}, MALLORY))["forkChat"]
        await client.data(REVOKE, {"id": link["id"]})

        async def files_of(fork: dict[str, Any], who: dict[str, str]) -> list[Any]:
            edges = (await client.data(
                "query($c: ID!) { messages(chatId: $c, first: 5) { edges { node {"
                " props files { id url } } } } }", {"c": fork["id"]}, who))["messages"]["edges"]
            (edge,) = edges
            assert edge["node"]["props"]["content"][1]["fileId"] == uploaded["id"]
            return list(edge["node"]["files"])

        # The link is gone; Carol's fork, her own chat now, still reads its file.
        (file,) = await files_of(ours, CAROL)
        assert file["id"] == uploaded["id"]
        assert (await http.get(file["url"])).content == b"day one: walk\n"
        assert (await http.get(f"/files/{uploaded['id']}", headers=CAROL)).status_code == 200
        # Files belong to their tenant: a fork in another keeps the reference, no file.
        assert await files_of(theirs, MALLORY) == []
        assert (await http.get(f"/files/{uploaded['id']}", headers=MALLORY)).status_code == 404
        # Purging the original keeps the file while Carol's fork references it.
        await client.data(DELETE, {"chat": "forked-file"})
        await client.data("mutation($c: ID!) { purgeChat(id: $c) }", {"c": "forked-file"})
        assert (await http.get(f"/files/{uploaded['id']}", headers=CAROL)).status_code == 200


@dataclasses.dataclass
class _Context:
    """Just what signing a file address needs of a request's context."""

    services: Any
    request: Any = None


async def test_the_share_page_is_served_unindexed(served: tuple[Client, str]) -> None:
    client, _base = served
    await client.chat("paged", ("USER", "hello"))
    link = await client.share("paged", audience="PUBLIC")
    page = await client.http.get(link["url"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["x-robots-tag"] == "noindex"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert '<meta name="robots" content="noindex" />' in page.text
    assert '<div id="root">' in page.text or "<script" in page.text
    home = await client.http.get("/")
    assert "x-robots-tag" not in home.headers and "noindex" not in home.text
