"""The access matrix over HTTP, generated from the oracle.

For every operation in ``OPERATIONS``, every owner in ``OWNERS``, every chat visibility
(PRIVATE/TEAM x public false/true) and every caller in ``CALLERS`` (all combinations of
tenant, team, user and role, and two holders of the ``approver`` role), the call's
outcome must be what ``tests/access/oracle.py`` says. "Hidden" is checked strictly: the
answer must equal the answer for a chat (or message) id that was never created — same
error code and same message text with the id swapped, or null where the field is
nullable — and a denied call must leave the whole store byte-for-byte unchanged.

Adding an operation (chats list, search, streams, subscribe, resume …) is one more
``Operation(...)`` entry in ``OPERATIONS``: a document, how to fill its variables from a
``Target``, the oracle rule that predicts it (``read_outcome``, ``change_outcome``,
``append_outcome``, ``stream_outcome`` for producer mutations, … in the oracle), and
how hiding shows (``hidden_as``):

- ``"not_found"`` (default): a NOT_FOUND error identical to a never-created id's;
- ``"null"``: the top-level field is null, as for a never-created id;
- ``"absent"``: for lists, counts, groups and search — the answer never errs, ``found``
  says whether the target chat is in it, and a hidden chat's id must not appear
  anywhere in the response. For example::

      Operation("chats", "query { chats(first: 100) { edges { node { id } } } }",
                lambda t: {}, read_outcome, hidden_as="absent",
                found=lambda value, t: t.chat_id in {e["node"]["id"] for e in value["edges"]})

A transport other than HTTP POST (a WebSocket subscription, say) goes in ``send``: an
async function ``(client, document, variables, headers) -> response body dict``.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import websockets

from chatql.store.db.database import Database
from tests.access.oracle import (
    APPROVERS,
    CALLERS,
    OWNERS,
    VISIBILITIES,
    Caller,
    ChatSpec,
    Outcome,
    append_outcome,
    change_outcome,
    chat_for_outcome,
    create_outcome,
    decide_outcome,
    deleted_change_outcome,
    feedback_outcome,
    inbox_outcome,
    may_change,
    may_use_memory,
    read_outcome,
    shared_outcome,
    stop_outcome,
    stream_outcome,
    uploader_outcome,
)
from tests.access.snapshot import store_fingerprint
from tests.conftest import GraphQLClient

_serial = itertools.count(1)


@dataclass(frozen=True)
class Target:
    """What an operation acts on: a chat, one of its messages, and what setup made."""

    chat_id: str
    message_id: str
    #: A stream in the chat (``Operation.setup``), and the stack of its resume records.
    stream_id: str = ""
    stack_id: str = ""
    #: The channel of a chat made by ``chatFor`` (``Operation.setup``).
    channel: str = ""
    #: A resume record in the chat (``Operation.setup``).
    resume_id: str = ""
    #: A TENANT share link of the chat made by its owner (``Operation.setup``).
    share_id: str = ""
    share_token: str = ""
    #: A file the chat's owner uploaded and a message of the chat references.
    file_id: str = ""
    #: A pending interrupt a stream of the chat asked (``Operation.setup``).
    interrupt_id: str = ""

    @staticmethod
    def unique() -> str:
        return f"n{next(_serial)}"


GHOST = Target(chat_id="ghost-chat", message_id="ghost-message", stream_id="ghost-stream",
               stack_id="ghost-stack", resume_id="ghost-resume", share_id="ghost-share",
               share_token="ghost-share-token-never-issued-0123", file_id="ghost-file",
               interrupt_id="ghost-interrupt")


@dataclass(frozen=True)
class Operation:
    """One row of the matrix."""

    name: str
    document: str
    variables: Callable[[Target], dict[str, Any]]
    expect: Callable[[Caller, ChatSpec], Outcome]
    #: ``"null"``: a hidden chat answers ``data.<field> == null`` (nullable fields);
    #: ``"not_found"``: it answers a NOT_FOUND error.
    hidden_as: str = "not_found"
    #: An allowed call uses the chat up (delete, purge): the next caller gets a new one.
    consumes: bool = False
    #: Soft-delete the chat (as its owner) before calling.
    deleted_first: bool = False
    #: Extra checks on an allowed answer's top-level field.
    check: Callable[[Any, Target, Caller], bool] = field(default=lambda value, t, c: True)
    #: For ``hidden_as="absent"``: whether the answer includes the target chat (or a
    #: text saying why the answer is inconsistent, e.g. a count that gives it away).
    found: Callable[[Any, Target], bool | str] | None = None
    #: How to deliver the document; None: HTTP POST through the ``client`` fixture.
    send: Callable[[GraphQLClient, str, dict[str, Any], dict[str, str]],
                   Awaitable[dict[str, Any]]] | None = None
    #: Run after the chat is made, by an authorised producer (start a stream, seed
    #: resume records); returns the target with what it made.
    setup: Callable[[GraphQLClient, Target, ChatSpec], Awaitable[Target]] | None = None
    #: An error code an allowed call answers (a push to a stream that has ended).
    allowed_error: str | None = None
    #: Makes the id a hidden chat must answer like, instead of the never-created GHOST
    #: (where a never-used id has an answer of its own, as purgeChat's success).
    ghost_setup: Callable[[GraphQLClient], Awaitable[Target]] | None = None

    async def call(self, client: GraphQLClient, target: Target,
                   caller: Caller) -> dict[str, Any]:
        send = self.send or (lambda c, d, v, h: c.execute(d, v, h))
        return await send(client, self.document, self.variables(target), caller.headers())


def _chat_vars(target: Target) -> dict[str, Any]:
    return {"chat": target.chat_id}


def marker(chat_id: str) -> str:
    """A word only this chat's messages contain, for search."""
    return f"marker{chat_id}"


def _listed(value: Any, target: Target) -> bool | str:
    """A chats connection filtered to the target's unique title: all or nothing."""
    ids = [edge["node"]["id"] for edge in value["edges"]]
    grouped = sum(group["totalCount"] for group in value["groups"])
    if ids == [target.chat_id] and value["totalCount"] == 1 and grouped == 1:
        return True
    if ids == [] and value["totalCount"] == 0 and value["groups"] == []:
        return False
    return f"inconsistent list, counts or groups: {value}"


def _hits(value: Any, target: Target) -> bool | str:
    chats = {hit["chat"]["id"] for hit in value} | {hit["message"]["chatId"] for hit in value}
    if chats == {target.chat_id}:
        return True
    return False if not value else f"hits from other chats: {chats}"

# ---- streams and resume: an authorised producer prepares the target -------------

START = """
mutation($chat: ID!, $stream: ID!) {
  startStream(input: {chatId: $chat, streamId: $stream, requestId: "r"}) { id } }"""
PUSH = """
mutation($stream: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $stream, chunks: $chunks) { accepted } }"""
RECORD = """
mutation($stream: ID!, $step: StepInput!) { recordStep(streamId: $stream, step: $step) }"""
END = """
mutation($stream: ID!, $status: StreamStatus!) {
  endStream(streamId: $stream, status: $status) { stream { status } } }"""
TEXT_CHUNK = {"type": "text", "messageId": "m1", "role": "ASSISTANT", "props": {"content": "hi"}}


def producer(spec: ChatSpec) -> Caller:
    """An agent of the chat's tenant and team: may stream into any chat of the tenant."""
    return Caller(spec.owner.tenant, spec.owner.team, "producer", ("agent",))


async def _live_stream(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """An active stream in the chat with one message pushed."""
    headers = producer(spec).headers()
    stream_id = f"s-{target.chat_id}"
    await client.data(START, {"chat": target.chat_id, "stream": stream_id}, headers)
    await client.data(PUSH, {"stream": stream_id, "chunks": [TEXT_CHUNK]}, headers)
    return replace(target, stream_id=stream_id)


async def _ended_stream(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    target = await _live_stream(client, target, spec)
    await client.data(END, {"stream": target.stream_id, "status": "COMPLETED"},
                      producer(spec).headers())
    return target


def _stack(chat_id: str) -> tuple[str, str]:
    """The root and the nested stack of the chat's resume record."""
    return f"root-{chat_id}", f"stack-{chat_id}"


async def _resume_records(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A stream interrupted with one recorded step: one resume record in the chat."""
    target = await _live_stream(client, target, spec)
    root, stack = _stack(target.chat_id)
    headers = producer(spec).headers()
    await client.data(RECORD, {"stream": target.stream_id, "step": {
        "id": "step-1", "type": "llm", "stackId": stack, "stackParentId": root,
        "stackDepth": 1}}, headers)
    await client.data(END, {"stream": target.stream_id, "status": "INTERRUPTED"}, headers)
    record = (await client.data("query($chat: ID!) { lastResume(chatId: $chat) { id } }",
                                {"chat": target.chat_id}, headers))["lastResume"]
    return replace(target, stack_id=stack, resume_id=record["id"])


#: The creator of each chat ``_owner_memory`` prepared, by chat id.
_memory_owners: dict[str, Caller] = {}


async def _owner_memory(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A memory entry of the chat's creator, for modelContext(memoryScopes)."""
    _memory_owners[target.chat_id] = spec.owner
    await client.data(
        "mutation($scope: String!, $content: String!) { writeMemory(input: {scope: $scope, "
        "content: $content}) { id } }",
        {"scope": f"ctx-{target.chat_id}", "content": f"remember {target.chat_id}"},
        spec.owner.headers())
    return target


def _memory_context(value: Any, target: Target, caller: Caller, owner: Caller) -> bool:
    """The memory message carries the creator's memory only for who may read it."""
    entries = [e["content"] for e in value[0]["props"]["entries"]]
    wanted = [f"remember {target.chat_id}"] if may_use_memory(caller, owner) else []
    return value[0]["type"] == "memory" and entries == wanted and len(value) == 3
USAGE_END = """
mutation($stream: ID!) { endStream(streamId: $stream, status: COMPLETED,
  usage: {promptTokens: 7, completionTokens: 3}) { stream { status } } }"""


async def _reported_usage(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A stream of the chat's own assistant ended with reported usage."""
    headers = producer(spec).headers()
    stream_id = f"s-{target.chat_id}"
    await client.data("""mutation($chat: ID!, $stream: ID!, $assistant: String!) {
      startStream(input: {chatId: $chat, streamId: $stream, assistantId: $assistant}) { id } }""",
                      {"chat": target.chat_id, "stream": stream_id,
                       "assistant": _assistant(target)}, headers)
    await client.data(USAGE_END, {"stream": stream_id}, headers)
    return replace(target, stream_id=stream_id)


def _assistant(target: Target) -> str:
    """An assistant id only this chat's usage is credited to."""
    return f"as-{target.chat_id}"


def _usage_found(value: Any, target: Target) -> bool | str:
    if value == [{"key": _assistant(target), "promptTokens": 7, "completionTokens": 3,
                  "requests": 1}]:
        return True
    return False if value == [] else f"unexpected usage rows {value}"


async def _person_chat(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """The owner's chatFor chat, shared as the spec says."""
    channel = f"ch-{target.chat_id}"
    owner = spec.owner.headers()
    made = await client.data(
        'mutation($channel: String!) { chatFor(assistantId: "a", channel: $channel) { id } }',
        {"channel": channel}, owner)
    chat_id = made["chatFor"]["id"]
    await client.data("""mutation($chat: ID!, $share: ChatShare!, $public: Boolean!) {
      updateChat(id: $chat, input: {share: $share, public: $public}) { id } }""",
                      {"chat": chat_id, "share": spec.share, "public": spec.public}, owner)
    return replace(target, chat_id=chat_id, channel=channel)


def _chat_for_check(value: Any, target: Target, caller: Caller) -> bool:
    """The owner's chat in its tenant; elsewhere a chat of the caller's own tenant."""
    if caller.tenant == "t1":
        return bool(value["id"] == target.chat_id)
    return bool(value["id"] != target.chat_id and value["tenantId"] == caller.tenant)


async def _answer(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """The target message is the chat's answer (the ASSISTANT message), not the question."""
    data = await client.data("query($chat: ID!) { messages(chatId: $chat) { edges { node "
                             "{ id role } } } }", {"chat": target.chat_id},
                             spec.owner.headers())
    answer = next(edge["node"]["id"] for edge in data["messages"]["edges"]
                  if edge["node"]["role"] == "ASSISTANT")
    return replace(target, message_id=answer)


async def _rated(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """The chat's answer, rated by the chat's owner."""
    target = await _answer(client, target, spec)
    await client.data("mutation($message: ID!) { rateMessage(messageId: $message, "
                      "rating: DOWN) { id } }", {"message": target.message_id},
                      spec.owner.headers())
    return target


def _feedback_found(value: Any, target: Target) -> bool | str:
    rows = [edge["node"] for edge in value["edges"]]
    if rows == [{"chatId": target.chat_id, "messageId": target.message_id, "rating": "DOWN"}]:
        return True
    return False if rows == [] else f"unexpected feedback {rows}"


async def _taken_ghost(client: GraphQLClient) -> Target:
    """An id taken by a chat of a tenant no caller belongs to."""
    chat_id = f"ghost-taken-{next(_serial)}"
    await client.data('mutation($id: ID!) { createChat(input: {id: $id, assistantId: "a"}) '
                      "{ id } }", {"id": chat_id}, {"X-Tenant-Id": "t9", "X-User-Id": "x"})
    return replace(GHOST, chat_id=chat_id)


async def _share_link(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A TENANT share link of the chat, made by its owner."""
    made = (await client.data(
        "mutation($chat: ID!) { shareChat(chatId: $chat, audience: TENANT) { id token } }",
        {"chat": target.chat_id}, spec.owner.headers()))["shareChat"]
    return replace(target, share_id=made["id"], share_token=made["token"])


async def _attached_file(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A file the chat's owner uploads and references in a message of the chat."""
    owner = spec.owner.headers()
    response = await client.http.post("/files", params={"filename": "note.txt"},
                                      content=f"note of {target.chat_id}".encode(),
                                      headers={**owner, "Content-Type": "text/plain"})
    assert response.status_code == 201, response.text
    file_id = response.json()["id"]
    await client.data(
        "mutation($chat: ID!, $m: [MessageInput!]!) { appendMessages(chatId: $chat,"
        " appendId: \"with-file\", messages: $m) { lastSequence } }",
        {"chat": target.chat_id, "m": [{"role": "USER", "type": "file",
                                        "props": {"fileId": file_id}}]}, owner)
    return replace(target, file_id=file_id)


async def _streamed_file(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A file an agent uploads under its own identity and names in a chunk of a live
    stream in the chat (not stored yet): readable through the chat while it lives."""
    headers = producer(spec).headers()
    response = await client.http.post("/files", params={"filename": "note.txt"},
                                      content=f"note streamed into {target.chat_id}".encode(),
                                      headers={**headers, "Content-Type": "text/plain"})
    assert response.status_code == 201, response.text
    file_id = response.json()["id"]
    stream_id = f"s-{target.chat_id}"
    await client.data(START, {"chat": target.chat_id, "stream": stream_id}, headers)
    await client.data(PUSH, {"stream": stream_id, "chunks": [
        {"messageId": "f", "type": "file", "role": "ASSISTANT",
         "props": {"fileId": file_id, "mediaType": "text/plain", "filename": "note.txt"}}]},
        headers)
    return replace(target, stream_id=stream_id, file_id=file_id)


async def _file_download(client: GraphQLClient, document: str, variables: dict[str, Any],
                         headers: dict[str, str]) -> dict[str, Any]:
    """``GET /files/{id}`` by identity, its bytes' first word as the answer's data."""
    response = await client.http.get(f"/files/{variables['id']}", headers=headers)
    if response.status_code != 200:
        body: dict[str, Any] = response.json()
        return body
    return {"data": {"download": response.text.split()[0]}}


def _stream_vars(target: Target) -> dict[str, Any]:
    return {"stream": target.stream_id}


def _stack_vars(target: Target) -> dict[str, Any]:
    return {"stack": target.stack_id}


def _path_found(value: Any, target: Target) -> bool | str:
    if value == list(_stack(target.chat_id)):
        return True
    return False if value == [] else f"unexpected stack path {value}"


async def _subscribe_first(client: GraphQLClient, document: str, variables: dict[str, Any],
                           headers: dict[str, str], *,
                           protocol: str = "graphql-transport-ws") -> dict[str, Any]:
    """``document`` as a subscription over ``protocol`` on the client's live server:
    the first result (or the error) it answers, as a response body."""
    server = client.http.base_url.netloc.decode()
    legacy = protocol == "graphql-ws"
    async with websockets.connect(f"ws://{server}/graphql",
                                  subprotocols=[protocol],  # type: ignore[list-item]
                                  compression=None) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": headers}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != "connection_ack":
            pass
        await ws.send(json.dumps({"id": "1", "type": "start" if legacy else "subscribe",
                                  "payload": {"query": document, "variables": variables}}))
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if message["type"] in ("next", "data"):
                body: dict[str, Any] = message["payload"]
                return body
            if message["type"] == "error":
                payload = message["payload"]
                return {"errors": payload if isinstance(payload, list) else [payload]}
            assert message["type"] in ("ping", "pong", "ka"), message


async def _subscribe_first_legacy(client: GraphQLClient, document: str,
                                  variables: dict[str, Any],
                                  headers: dict[str, str]) -> dict[str, Any]:
    return await _subscribe_first(client, document, variables, headers, protocol="graphql-ws")


async def _archived(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """The chat's messages moved to the archive by its owner."""
    await client.data("mutation($chat: ID!) { archiveChat(id: $chat) { id } }",
                      {"chat": target.chat_id}, spec.owner.headers())
    return target


async def _export(client: GraphQLClient, document: str, variables: dict[str, Any],
                  headers: dict[str, str]) -> dict[str, Any]:
    """``GET /chats/{id}/export``, its first line (the chat) as the answer's data."""
    response = await client.http.get(f"/chats/{variables['chat']}/export", headers=headers)
    if response.status_code != 200:
        body: dict[str, Any] = response.json()
        return body
    first = json.loads(response.text.splitlines()[0])
    return {"data": {"export": {"kind": first["kind"], "id": first["id"]}}}


# ---- a person in the loop: a stream that asks -------------------------------------

ASKING_END = """
mutation($stream: ID!) { endStream(streamId: $stream, status: COMPLETED) {
  stream { status } messages { id type } } }"""
APPROVAL_CHUNK = {"type": "tool_call", "messageId": "m-call", "role": "ASSISTANT", "props": {
    "id": "call-1", "name": "send_email", "arguments": '{"to": "board@acme.test"}',
    "needsApproval": True}}
QUESTION_CHUNK = {"type": "question", "messageId": "m-ask", "role": "ASSISTANT", "props": {
    "prompt": "Which city?", "responseSchema": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


async def _asked(client: GraphQLClient, target: Target, spec: ChatSpec,
                 chunk: dict[str, Any]) -> Target:
    """A producer's stream that asks with ``chunk`` and ends AWAITING_INPUT: one pending
    interrupt in the chat (named like the message that asked)."""
    headers = producer(spec).headers()
    stream_id = f"s-{target.chat_id}"
    await client.data(START, {"chat": target.chat_id, "stream": stream_id}, headers)
    await client.data(PUSH, {"stream": stream_id, "chunks": [chunk]}, headers)
    ended = (await client.data(ASKING_END, {"stream": stream_id}, headers))["endStream"]
    assert ended["stream"]["status"] == "AWAITING_INPUT", ended
    asked = next(m["id"] for m in ended["messages"] if m["type"] == chunk["type"])
    return replace(target, stream_id=stream_id, interrupt_id=asked)


async def _pending_approval(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    return await _asked(client, target, spec, APPROVAL_CHUNK)


async def _pending_question(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    return await _asked(client, target, spec, QUESTION_CHUNK)


RESOLVE_APPROVAL = """
mutation($id: ID!) { resolveInterrupt(id: $id, approved: true) {
  id state decision { approved decidedBy } } }"""


async def _decided_approval(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """The pending approval, approved by the chat's owner: the chat awaits a resumption."""
    target = await _pending_approval(client, target, spec)
    await client.data(RESOLVE_APPROVAL, {"id": target.interrupt_id}, spec.owner.headers())
    return target


def _resolved(value: Any, t: Target, c: Caller, **decision: Any) -> bool:
    """Decided once, by a caller of the chat's tenant (a later allowed caller sending
    the very same decision gets the interrupt as it is)."""
    return bool(value["id"] == t.interrupt_id and value["state"] == "RESOLVED"
                and value["decision"]["decidedBy"] in ("u1", "u2")
                and all(value["decision"][k] == v for k, v in decision.items()))


def _in_inbox(value: Any, target: Target) -> bool | str:
    ids = [edge["node"]["id"] for edge in value["edges"]]
    if ids == [target.interrupt_id]:
        return True
    return False if ids == [] else f"unexpected inbox {ids}"


async def _staged_upload(client: GraphQLClient, target: Target, spec: ChatSpec) -> Target:
    """A two-phase upload the chat's owner started and PUT the bytes of."""
    content = b"note"
    ticket = (await client.data(
        "mutation($input: CreateUploadInput!) { createUpload(input: $input) "
        "{ fileId uploadUrl headers } }",
        {"input": {"filename": "note.txt", "mediaType": "text/plain", "size": len(content),
                   "sha256": hashlib.sha256(content).hexdigest()}},
        spec.owner.headers()))["createUpload"]
    url = urlsplit(ticket["uploadUrl"])
    put = await client.http.put(f"{url.path}?{url.query}" if url.query else url.path,
                                content=content, headers=ticket["headers"])
    assert put.status_code in (200, 204), put.text
    return replace(target, file_id=ticket["fileId"])


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "chat", "query($chat: ID!) { chat(id: $chat) { id } }", _chat_vars,
        read_outcome, hidden_as="null",
        check=lambda value, t, c: value == {"id": t.chat_id},
    ),
    # The "absent" form lists use, here over the aliased lookup of the chat and a ghost.
    # A file is read through the chats that reference it (its uploader, the chat's owner
    # here, reads it anyway).
    Operation(
        "file", "query($id: ID!) { file(id: $id) { id } }", lambda t: {"id": t.file_id},
        read_outcome, hidden_as="null", setup=_attached_file,
        check=lambda value, t, c: value == {"id": t.file_id},
    ),
    Operation(
        "GET /files/{id}", "{ download(GET /files/ID) }", lambda t: {"id": t.file_id},
        read_outcome,
        setup=_attached_file, send=_file_download,
        check=lambda value, t, c: value == "note",
    ),
    # A file a live stream's chunk names (an agent's own upload): read through the chat
    # like a stored message's file, before the stream ends.
    Operation(
        "file (named by a live stream)", "query($id: ID!) { file(id: $id) { id } }",
        lambda t: {"id": t.file_id},
        read_outcome, hidden_as="null", setup=_streamed_file,
        check=lambda value, t, c: value == {"id": t.file_id},
    ),
    Operation(
        "GET /files/{id} (named by a live stream)", "{ download(GET /files/ID) }",
        lambda t: {"id": t.file_id},
        read_outcome,
        setup=_streamed_file, send=_file_download,
        check=lambda value, t, c: value == "note",
    ),
    Operation(
        "chat (as a list)",
        "query($chat: ID!) { chat(id: $chat) { id } ghost: chat(id: \"ghost-chat\") { id } }",
        _chat_vars, read_outcome, hidden_as="absent",
        found=lambda value, t: value is not None and value["id"] == t.chat_id,
    ),
    Operation(
        "Chat.messages",
        "query($chat: ID!) { chat(id: $chat) { messages(last: 10) { edges { node { id } } } } }",
        _chat_vars, read_outcome, hidden_as="null",
        check=lambda value, t, c: len(value["messages"]["edges"]) == 2,
    ),
    Operation(
        "messages",
        "query($chat: ID!) { messages(chatId: $chat) { edges { node { id chatId } } } }",
        _chat_vars, read_outcome,
        check=lambda value, t, c: [e["node"]["chatId"] for e in value["edges"]] == [t.chat_id] * 2,
    ),
    Operation(
        "chats (edges, totalCount, groups)",
        "query($kw: String!) { chats(filter: {keywords: $kw}) { totalCount "
        "edges { node { id } } groups { count totalCount chats { id } } } }",
        lambda t: {"kw": f"[{t.chat_id}]"}, read_outcome, hidden_as="absent", found=_listed,
    ),
    Operation(
        "chats (organising filters)",
        "query($kw: String!) { chats(filter: {keywords: $kw, pinned: false, tags: [], "
        "includeSubagents: true, mode: \"chat\"}) { totalCount "
        "edges { node { id } } groups { count totalCount chats { id } } } }",
        lambda t: {"kw": f"[{t.chat_id}]"}, read_outcome, hidden_as="absent", found=_listed,
    ),
    # The trash lists a deleted chat to exactly those who may restore it.
    Operation(
        "chats (trash)",
        "query($kw: String!) { chats(filter: {keywords: $kw, deleted: true}) { totalCount "
        "edges { node { id } } groups { count totalCount chats { id } } } }",
        lambda t: {"kw": f"[{t.chat_id}]"}, deleted_change_outcome, hidden_as="absent",
        found=_listed, deleted_first=True,
    ),
    Operation(
        "export", "{ export(GET /chats/ID/export) }", _chat_vars, read_outcome,
        send=_export, check=lambda value, t, c: value == {"kind": "chat", "id": t.chat_id},
    ),
    Operation(
        "searchMessages",
        "query($q: String!) { searchMessages(query: $q) { chat { id } message { chatId } "
        "window { chatId } } }",
        lambda t: {"q": marker(t.chat_id)}, read_outcome, hidden_as="absent", found=_hits,
    ),
    Operation(
        "searchMessages(chatId)",
        "query($chat: ID!, $q: String!) { searchMessages(chatId: $chat, query: $q) "
        "{ chat { id } } }",
        lambda t: {"chat": t.chat_id, "q": marker(t.chat_id)}, read_outcome,
        check=lambda value, t, c: {hit["chat"]["id"] for hit in value} == {t.chat_id},
    ),
    Operation(
        "modelContext",
        "query($chat: ID!) { modelContext(chatId: $chat, limit: 10) { chatId } }",
        _chat_vars, read_outcome,
        check=lambda value, t, c: value == [{"chatId": t.chat_id}] * 2,
    ),
    Operation(
        "modelContext(memoryScopes)",
        "query($chat: ID!, $scope: String!) { modelContext(chatId: $chat, limit: 10, "
        "memoryScopes: [$scope]) { chatId type props } }",
        lambda t: {"chat": t.chat_id, "scope": f"ctx-{t.chat_id}"}, read_outcome,
        setup=_owner_memory,
        check=lambda value, t, c: _memory_context(value, t, c, _memory_owners[t.chat_id]),
    ),
    Operation(
        "startOver", "mutation($chat: ID!) { startOver(chatId: $chat) { chatId type } }",
        _chat_vars, append_outcome,
        check=lambda value, t, c: value == {"chatId": t.chat_id, "type": "boundary"},
    ),
    Operation(
        "compactChat",
        'mutation($chat: ID!) { compactChat(chatId: $chat, summary: "recap") { chatId } }',
        _chat_vars, append_outcome,
    ),
    Operation(
        "createChat",
        'mutation($id: ID!) { createChat(input: {id: $id, assistantId: "a"}) '
        "{ createdBy teamId tenantId } }",
        lambda t: {"id": Target.unique()}, create_outcome,
        check=lambda value, t, c: value == {
            "createdBy": c.user, "teamId": c.team, "tenantId": c.tenant},
    ),
    Operation(
        "updateChat",
        'mutation($chat: ID!) { updateChat(id: $chat, input: {title: "renamed"}) { title } }',
        _chat_vars, change_outcome, check=lambda value, t, c: value == {"title": "renamed"},
    ),
    Operation(
        "updateChat (tags, pinned, expiresAt)",
        'mutation($chat: ID!) { updateChat(id: $chat, input: {tags: ["t"], pinned: true, '
        'expiresAt: "2999-01-01T00:00:00+00:00"}) { tags pinned } }',
        _chat_vars, change_outcome,
        check=lambda value, t, c: value == {"tags": ["t"], "pinned": True},
    ),
    Operation(
        "archiveChat", "mutation($chat: ID!) { archiveChat(id: $chat) { id } }", _chat_vars,
        change_outcome, check=lambda value, t, c: value == {"id": t.chat_id},
    ),
    # Restoring is what reading does anyway, so whoever may read may ask for it.
    Operation(
        "restoreArchive",
        "mutation($chat: ID!) { restoreArchive(id: $chat) { id archivedAt } }", _chat_vars,
        read_outcome, setup=_archived,
        check=lambda value, t, c: value == {"id": t.chat_id, "archivedAt": None},
    ),
    Operation(
        "importChat",
        'mutation($id: ID!) { importChat(input: {format: OPENAI, chatId: $id, assistantId: "a", '
        'document: {messages: [{role: "user", content: "hi"}]}}) '
        "{ createdBy teamId tenantId } }",
        lambda t: {"id": Target.unique()}, create_outcome,
        check=lambda value, t, c: value == {
            "createdBy": c.user, "teamId": c.team, "tenantId": c.tenant},
    ),
    Operation(
        "deleteChat", "mutation($chat: ID!) { deleteChat(id: $chat) }", _chat_vars,
        change_outcome, consumes=True, check=lambda value, t, c: value is True,
    ),
    Operation(
        "restoreChat", "mutation($chat: ID!) { restoreChat(id: $chat) { id } }", _chat_vars,
        change_outcome,
    ),
    Operation(
        "restoreChat(deleted)", "mutation($chat: ID!) { restoreChat(id: $chat) { id } }",
        _chat_vars, deleted_change_outcome, consumes=True, deleted_first=True,
    ),
    Operation(
        "deleteChat(deleted)", "mutation($chat: ID!) { deleteChat(id: $chat) }",
        _chat_vars, deleted_change_outcome, deleted_first=True,
    ),
    # A never-used id purges fine (and is closed); an id taken by a chat the caller may
    # not see answers like one taken in another tenant.
    Operation(
        "purgeChat", "mutation($chat: ID!) { purgeChat(id: $chat) }", _chat_vars,
        change_outcome, consumes=True, ghost_setup=_taken_ghost,
    ),
    Operation(
        "appendMessages",
        "mutation($chat: ID!, $append: String!) { appendMessages(chatId: $chat, "
        'appendId: $append, messages: [{role: ASSISTANT, type: "text", props: {}}]) '
        "{ chatId firstSequence } }",
        lambda t: {"chat": t.chat_id, "append": Target.unique()}, append_outcome,
        check=lambda value, t, c: value["chatId"] == t.chat_id and value["firstSequence"] > 2,
    ),
    Operation(
        "updateMessage",
        'mutation($message: ID!) { updateMessage(id: $message, input: {props: {x: 1}}) '
        "{ id props } }",
        lambda t: {"message": t.message_id}, change_outcome,
        check=lambda value, t, c: value == {"id": t.message_id, "props": {"x": 1}},
    ),
    Operation(
        "editMessage",
        'mutation($message: ID!) { editMessage(id: $message, appendId: "edit",'
        " input: {props: {x: 2}}) { parentId props siblings { count } } }",
        lambda t: {"message": t.message_id}, append_outcome,
        check=lambda value, t, c: value == {"parentId": None, "props": {"x": 2},
                                            "siblings": {"count": 2}},
    ),
    Operation(
        "switchBranch",
        "mutation($chat: ID!, $message: ID!) { switchBranch(chatId: $chat, leafId: $message)"
        " { id activeLeafId } }",
        lambda t: {"chat": t.chat_id, "message": t.message_id}, change_outcome,
        check=lambda value, t, c: value["id"] == t.chat_id and bool(value["activeLeafId"]),
    ),
    Operation(
        "messages(branch:)",
        "query($chat: ID!, $message: ID!) { messages(chatId: $chat, branch: $message)"
        " { edges { node { id } } } }",
        lambda t: {"chat": t.chat_id, "message": t.message_id}, read_outcome,
        check=lambda value, t, c: [e["node"]["id"] for e in value["edges"]][-1:] == [
            t.message_id],
    ),
    Operation(
        "deleteMessages",
        "mutation($chat: ID!, $ids: [ID!]!) { deleteMessages(chatId: $chat, ids: $ids) }",
        lambda t: {"chat": t.chat_id, "ids": [t.message_id]}, change_outcome,
    ),
    Operation(
        "startStream",
        'mutation($chat: ID!) { startStream(input: {chatId: $chat, requestId: "r"}) '
        "{ chatId status } }",
        _chat_vars, stream_outcome, consumes=True,
        check=lambda value, t, c: value == {"chatId": t.chat_id, "status": "ACTIVE"},
    ),
    Operation(
        "pushChunks",
        "mutation($stream: ID!) { pushChunks(streamId: $stream, chunks: "
        '[{type: "text", messageId: "m1", delta: true, props: {content: "!"}}]) '
        "{ accepted duplicates } }",
        _stream_vars, stream_outcome, setup=_live_stream,
        check=lambda value, t, c: value == {"accepted": 1, "duplicates": 0},
    ),
    Operation(
        "pushChunks(ended)",
        "mutation($stream: ID!) { pushChunks(streamId: $stream, chunks: "
        '[{type: "text"}]) { accepted } }',
        _stream_vars, stream_outcome, setup=_ended_stream, allowed_error="STREAM_CLOSED",
    ),
    Operation(
        "recordStep",
        'mutation($stream: ID!) { recordStep(streamId: $stream, step: {id: "x", type: "tool"}) }',
        _stream_vars, stream_outcome, setup=_live_stream,
        check=lambda value, t, c: value is True,
    ),
    Operation(
        "endStream",
        "mutation($stream: ID!) { endStream(streamId: $stream, status: INTERRUPTED) "
        "{ stream { id status } messages { chatId } } }",
        _stream_vars, stream_outcome, setup=_live_stream, consumes=True,
        check=lambda value, t, c: value == {
            "stream": {"id": t.stream_id, "status": "INTERRUPTED"},
            "messages": [{"chatId": t.chat_id}]},
    ),
    # A retried endStream (after a lost answer) is answered from what was persisted.
    Operation(
        "endStream(ended)",
        "mutation($stream: ID!) { endStream(streamId: $stream, status: COMPLETED) "
        "{ stream { id status } } }",
        _stream_vars, stream_outcome, setup=_ended_stream,
        check=lambda value, t, c: value == {"stream": {"id": t.stream_id, "status": "COMPLETED"}},
    ),
    # Stopping needs the right to write: a read-only viewer is FORBIDDEN.
    Operation(
        "stopStream", "mutation($chat: ID!) { stopStream(chatId: $chat) }", _chat_vars,
        stop_outcome, setup=_live_stream, consumes=True, check=lambda value, t, c: value is True,
    ),
    Operation(
        "usage",
        "query($assistant: String!) { usage(startTime: \"2000-01-01T00:00:00Z\", "
        "endTime: \"2100-01-01T00:00:00Z\", assistantId: $assistant, groupBy: ASSISTANT) "
        "{ key promptTokens completionTokens requests } }",
        lambda t: {"assistant": _assistant(t)}, read_outcome, setup=_reported_usage,
        hidden_as="absent", found=_usage_found,
    ),
    Operation(
        "chatFor",
        'mutation($channel: String!) { chatFor(assistantId: "a", channel: $channel, '
        'subject: "u1") { id tenantId } }',
        lambda t: {"channel": t.channel or "-"}, chat_for_outcome, setup=_person_chat,
        check=_chat_for_check,
    ),
    Operation(
        "resumeRecords",
        "query($chat: ID!) { resumeRecords(chatId: $chat) { chatId stackId status } }",
        _chat_vars, read_outcome, setup=_resume_records,
        check=lambda value, t, c: value == [
            {"chatId": t.chat_id, "stackId": t.stack_id, "status": "interrupted"}],
    ),
    Operation(
        "lastResume", "query($chat: ID!) { lastResume(chatId: $chat) { chatId stackId } }",
        _chat_vars, read_outcome, setup=_resume_records,
        check=lambda value, t, c: value == {"chatId": t.chat_id, "stackId": t.stack_id},
    ),
    Operation(
        "resumeByStack",
        "query($stack: String!) { resumeByStack(stackId: $stack) { chatId stackId } }",
        _stack_vars, read_outcome, setup=_resume_records, hidden_as="absent",
        found=lambda value, t: value == [{"chatId": t.chat_id, "stackId": t.stack_id}] or (
            False if value == [] else f"unexpected records {value}"),
    ),
    Operation(
        "stackPath", "query($stack: String!) { stackPath(stackId: $stack) }",
        _stack_vars, read_outcome, setup=_resume_records, hidden_as="absent",
        found=_path_found,
    ),
    # The store lets whoever may append clear the records (an agent resuming).
    Operation(
        "deleteResume", "mutation($chat: ID!) { deleteResume(chatId: $chat) }", _chat_vars,
        append_outcome, setup=_resume_records, consumes=True,
        check=lambda value, t, c: value == 1,
    ),
    # Changing a record takes what writing it took: the right to append.
    Operation(
        "updateResume",
        'mutation($id: ID!) { updateResume(id: $id, status: "completed") { chatId status } }',
        lambda t: {"id": t.resume_id}, append_outcome, setup=_resume_records,
        check=lambda value, t, c: value == {"chatId": t.chat_id, "status": "completed"},
    ),
    # "Whoever may read a chat may subscribe to it"; over a real WebSocket,
    # joining the stream the setup started (the late-join snapshot comes first).
    Operation(
        "chatStream",
        "subscription($chat: ID!) { chatStream(chatId: $chat) { streamId type } }",
        _chat_vars, read_outcome, setup=_live_stream, send=_subscribe_first,
        check=lambda value, t, c: value["streamId"] == t.stream_id,
    ),
    Operation(
        "chatStream(graphql-ws)",
        "subscription($chat: ID!) { chatStream(chatId: $chat) { streamId type } }",
        _chat_vars, read_outcome, setup=_live_stream, send=_subscribe_first_legacy,
        check=lambda value, t, c: value["streamId"] == t.stream_id,
    ),
    # Whoever may read a message may rate it (once per person); the chat's feedback is
    # listed to whoever may change the chat and to the tenant's admin.
    Operation(
        "rateMessage",
        'mutation($message: ID!) { rateMessage(messageId: $message, rating: UP, tags: ["m"]) '
        "{ messageId rating tags ratedBy } }",
        lambda t: {"message": t.message_id}, read_outcome, setup=_answer,
        check=lambda value, t, c: value == {"messageId": t.message_id, "rating": "UP",
                                            "tags": ["m"], "ratedBy": c.user},
    ),
    Operation(
        "feedback",
        "query($chat: ID!) { feedback(filter: {chatId: $chat}) { edges { node "
        "{ chatId messageId rating } } } }",
        _chat_vars, feedback_outcome, setup=_rated, hidden_as="absent", found=_feedback_found,
    ),
    # An agent's title: the producers' right; a person's title (every chat here has one)
    # stays.
    Operation(
        "setChatTitle",
        'mutation($chat: ID!) { setChatTitle(chatId: $chat, title: "Named") '
        "{ id title titleSource } }",
        _chat_vars, stream_outcome,
        check=lambda value, t, c: value == {"id": t.chat_id, "title": f"[{t.chat_id}]",
                                            "titleSource": "USER"},
    ),
    # chatEvents has a matrix of its own (test_events_matrix.py): every caller holds one
    # subscription while every target chat is touched.
    # Share links: sharing and revoking take the right to change the chat; a TENANT link
    # opens the chat's branch to its whole tenant, and to no one else.
    Operation(
        "shareChat", "mutation($chat: ID!) { shareChat(chatId: $chat) { audience token } }",
        _chat_vars, change_outcome,
        check=lambda value, t, c: value["audience"] == "TENANT" and len(value["token"]) >= 32,
    ),
    Operation(
        "revokeShare", "mutation($id: ID!) { revokeShare(id: $id) { id revokedAt } }",
        lambda t: {"id": t.share_id}, change_outcome, setup=_share_link,
        check=lambda value, t, c: value["id"] == t.share_id and value["revokedAt"] is not None,
    ),
    Operation(
        "sharedChat", "query($token: String!) { sharedChat(token: $token) { title "
        "messages { role } } }", lambda t: {"token": t.share_token}, shared_outcome,
        setup=_share_link,
        check=lambda value, t, c: value == {"title": f"[{t.chat_id}]", "messages": [
            {"role": "USER"}, {"role": "ASSISTANT"}]},
    ),
    Operation(
        "forkChat(fromShare)", "mutation($token: String!) { forkChat(fromShare: $token) "
        "{ createdBy tenantId } }", lambda t: {"token": t.share_token}, shared_outcome,
        setup=_share_link,
        check=lambda value, t, c: value == {"createdBy": c.user, "tenantId": c.tenant},
    ),
    Operation(
        "forkChat(fromMessage)", "mutation($message: ID!) { forkChat(fromMessage: $message) "
        "{ createdBy tenantId } }", lambda t: {"message": t.message_id}, read_outcome,
        check=lambda value, t, c: value == {"createdBy": c.user, "tenantId": c.tenant},
    ),
    # A person in the loop. Deciding takes the right to change the chat (or the approver
    # role): a reader, and an agent (the producer's own identity), is refused.
    Operation(
        "resolveInterrupt(approval)", RESOLVE_APPROVAL, lambda t: {"id": t.interrupt_id},
        decide_outcome, setup=_pending_approval,
        check=lambda value, t, c: _resolved(value, t, c, approved=True),
    ),
    Operation(
        "resolveInterrupt(question)",
        'mutation($id: ID!) { resolveInterrupt(id: $id, response: {city: "Lisbon"}, '
        'decisionId: "d-1") { id state decision { response decidedBy } } }',
        lambda t: {"id": t.interrupt_id}, decide_outcome, setup=_pending_question,
        check=lambda value, t, c: _resolved(value, t, c, response={"city": "Lisbon"}),
    ),
    # Reading an interrupt is reading its chat.
    Operation(
        "interrupt", "query($id: ID!) { interrupt(id: $id) { id chatId state kind } }",
        lambda t: {"id": t.interrupt_id}, read_outcome, setup=_pending_approval,
        check=lambda value, t, c: value == {"id": t.interrupt_id, "chatId": t.chat_id,
                                            "state": "PENDING", "kind": "TOOL_APPROVAL"},
    ),
    Operation(
        "Chat.interrupts",
        "query($chat: ID!) { chat(id: $chat) { interrupts(state: PENDING) { id toolName } } }",
        _chat_vars, read_outcome, hidden_as="null", setup=_pending_approval,
        check=lambda value, t, c: value == {"interrupts": [
            {"id": t.interrupt_id, "toolName": "send_email"}]},
    ),
    Operation(
        "Chat.resumption",
        "query($chat: ID!) { chat(id: $chat) { resumption { requestId decisions { id } } } }",
        _chat_vars, read_outcome, hidden_as="null", setup=_decided_approval,
        check=lambda value, t, c: value == {"resumption": {
            "requestId": "r.resume.1", "decisions": [{"id": t.interrupt_id}]}},
    ),
    # The inbox: what the caller may decide, and nothing else.
    Operation(
        "interrupts (inbox)",
        "query($chat: ID!) { interrupts(filter: {chatId: $chat}, first: 20) "
        "{ edges { node { id } } } }",
        _chat_vars, inbox_outcome, setup=_pending_approval, hidden_as="absent",
        found=_in_inbox,
    ),
    Operation(
        "chats (awaitingDecision)",
        "query($kw: String!) { chats(filter: {keywords: $kw, awaitingDecision: true}) "
        "{ totalCount edges { node { id } } groups { count totalCount chats { id } } } }",
        lambda t: {"kw": f"[{t.chat_id}]"}, read_outcome, setup=_pending_approval,
        hidden_as="absent", found=_listed,
    ),
    # Two-phase uploads: anyone may start one; only its uploader completes it.
    Operation(
        "createUpload",
        'mutation { createUpload(input: {filename: "a.txt", mediaType: "text/plain", '
        'size: 4, sha256: "0000000000000000000000000000000000000000000000000000000000000000"})'
        " { fileId } }",
        lambda t: {}, create_outcome, check=lambda value, t, c: bool(value["fileId"]),
    ),
    Operation(
        "completeUpload", "mutation($id: ID!) { completeUpload(id: $id) { id size } }",
        lambda t: {"id": t.file_id}, uploader_outcome, setup=_staged_upload,
        check=lambda value, t, c: value == {"id": t.file_id, "size": 4},
    ),
)

CREATE = """
mutation($input: CreateChatInput!) { createChat(input: $input) { id } }"""
APPEND = """
mutation($chat: ID!, $append: String!, $text: String!) {
  appendMessages(chatId: $chat, appendId: $append, messages: [
    {role: USER, type: "user_input", props: {content: $text}},
    {role: ASSISTANT, type: "text", props: {content: $text}}]) { messageIds }
}"""


async def _make_chat(client: GraphQLClient, spec: ChatSpec, operation: Operation) -> Target:
    owner = spec.owner.headers()
    chat_id = f"c{next(_serial)}"
    await client.data(CREATE, {"input": {
        "id": chat_id, "title": f"[{chat_id}]", "assistantId": "a", "share": spec.share,
        "public": spec.public}}, owner)
    data = await client.data(APPEND, {"chat": chat_id, "append": "setup",
                                      "text": f"hello {marker(chat_id)}"}, owner)
    target = Target(chat_id=chat_id, message_id=data["appendMessages"]["messageIds"][0])
    if operation.setup is not None:
        target = await operation.setup(client, target, spec)
    if operation.deleted_first:
        await client.data("mutation($chat: ID!) { deleteChat(id: $chat) }", {"chat": chat_id},
                          owner)
    return target


def _field(operation: Operation) -> str:
    """The top-level field an operation's document selects."""
    body = operation.document.split("{", 1)[1]
    return body.split("(", 1)[0].strip()


def _normalised(body: dict[str, Any], target: Target) -> Any:
    """The answer with the target's ids replaced, to compare with the ghost's."""
    errors = body.get("errors")
    if not errors:
        return ("data", body["data"])
    error = errors[0]
    message = error["message"]
    for placeholder, real in (("<stream>", target.stream_id), ("<stack>", target.stack_id),
                              ("<chat>", target.chat_id), ("<message>", target.message_id),
                              ("<resume>", target.resume_id), ("<share>", target.share_id),
                              ("<file>", target.file_id),
                              ("<interrupt>", target.interrupt_id)):
        if real:
            message = message.replace(repr(real), placeholder)
    return ("error", error["extensions"]["code"], message)


async def _outcome(
    client: GraphQLClient, operation: Operation, target: Target, caller: Caller,
    ghosts: dict[Caller | None, Any],
) -> tuple[Outcome | str, Any]:
    """Classify the answer: OK, HIDDEN (indistinguishable from a ghost), FORBIDDEN."""
    name = _field(operation)
    body = await operation.call(client, target, caller)
    if operation.hidden_as == "absent":
        assert operation.found is not None, operation.name
        if "errors" in body:
            return f"unexpected errors: {body['errors']}", None
        value = body["data"][name]
        found = operation.found(value, target)
        if isinstance(found, str):
            return found, None
        if found:
            return Outcome.OK, value
        if target.chat_id in json.dumps(body):
            return "hidden chat's id appears in the answer", None
        return Outcome.HIDDEN, None
    if caller not in ghosts:
        ghost = ghosts.get(None, GHOST)
        ghosts[caller] = _normalised(await operation.call(client, ghost, caller), ghost)
    seen = _normalised(body, target)
    errors = body.get("errors")
    if errors:
        code = errors[0]["extensions"]["code"]
        if code == "FORBIDDEN":
            return Outcome.FORBIDDEN, None
        if code == operation.allowed_error:
            return Outcome.OK, None
        # A stream id answers STREAM_NOT_FOUND where a chat id answers NOT_FOUND.
        if code in ("NOT_FOUND", "STREAM_NOT_FOUND") and operation.hidden_as == "not_found":
            return (Outcome.HIDDEN, None) if seen == ghosts[caller] else (
                f"NOT_FOUND unlike a ghost: {seen} vs {ghosts[caller]}", None)
        return f"unexpected {code}: {errors[0]['message']}", None
    value = body["data"][name]
    if value is None and operation.hidden_as == "null":
        return (Outcome.HIDDEN, None) if seen == ghosts[caller] else (
            f"null unlike a ghost: {ghosts[caller]}", None)
    return Outcome.OK, value


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.send is None],
                         ids=lambda op: op.name)
async def test_access_matrix(
    client: GraphQLClient, db: Database, operation: Operation
) -> None:
    await _run_matrix_batched(client, db, operation)


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.send is not None],
                         ids=lambda op: op.name)
async def test_access_matrix_live(live_server: str, db: Database, operation: Operation) -> None:
    """Another transport needs a real server; setup and calls all go to it, so the
    in-memory state (streams) is the one the calls see."""
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        await _run_matrix(GraphQLClient(http), db, operation)


async def _run_matrix(client: GraphQLClient, db: Database, operation: Operation) -> None:
    failures: list[str] = []
    # Per caller, the normalised answer for the ghost; under None, the ghost itself.
    ghosts: dict[Caller | None, Any] = {}
    if operation.ghost_setup is not None:
        ghosts[None] = await operation.ghost_setup(client)
    calls = 0
    for owner in OWNERS:
        for share, public in VISIBILITIES:
            spec = ChatSpec(owner, share, public)
            expected = {caller: operation.expect(caller, spec) for caller in CALLERS}
            # Denied callers first, between two fingerprints of the whole store: any
            # change by any of them shows (timestamps make changes never cancel out).
            denied = [c for c in CALLERS if expected[c] is not Outcome.OK]
            allowed = [c for c in CALLERS if expected[c] is Outcome.OK]
            target: Target | None = await _make_chat(client, spec, operation)
            before = await store_fingerprint(db)
            for index, caller in enumerate(denied + allowed):
                if index == len(denied) and await store_fingerprint(db) != before:
                    failures.append(f"{operation.name} on {spec.label()}: "
                                    "a denied call changed the store")
                if target is None:
                    target = await _make_chat(client, spec, operation)
                actual, value = await _outcome(client, operation, target, caller, ghosts)
                calls += 1
                where = f"{operation.name} by {caller.label()} on {spec.label()}"
                if actual != expected[caller]:
                    failures.append(f"{where}: expected {expected[caller]}, got {actual}")
                elif actual is Outcome.OK and not operation.check(value, target, caller):
                    failures.append(f"{where}: allowed but answered {value!r}")
                if actual is Outcome.OK and operation.consumes:
                    target = None
    assert calls == len(OWNERS) * len(VISIBILITIES) * len(CALLERS)
    assert not failures, f"{len(failures)} of {calls} calls wrong:\n" + "\n".join(failures[:30])


def test_matrix_covers_every_outcome() -> None:
    """The generated callers reach OK, HIDDEN and FORBIDDEN for the rules that have them."""
    for operation in OPERATIONS:
        outcomes = {
            operation.expect(caller, ChatSpec(owner, share, public))
            for owner in OWNERS for share, public in VISIBILITIES for caller in CALLERS
        }
        wanted = {Outcome.OK} if operation.expect is create_outcome else (
            {Outcome.OK, Outcome.HIDDEN} if operation.expect in (
                read_outcome, deleted_change_outcome, shared_outcome,
                feedback_outcome, inbox_outcome, uploader_outcome) else (
                {Outcome.OK, Outcome.FORBIDDEN} if operation.expect is chat_for_outcome
                else set(Outcome)))
        assert outcomes == wanted, operation.name


def test_matrix_reaches_the_approver_branch() -> None:
    """Some cells of the deciding rows are allowed by the approver role alone (the
    caller reads the chat but may not change it), and an approver is still refused
    what it may not read: so the matrix fails if either half of the branch goes."""
    for expect in (decide_outcome, inbox_outcome):
        by_role_alone = {
            (caller, spec) for owner in OWNERS for share, public in VISIBILITIES
            for caller in APPROVERS
            for spec in [ChatSpec(owner, share, public)]
            if expect(caller, spec) is Outcome.OK and not may_change(caller, spec)
            and expect(replace(caller, roles=()), spec) is not Outcome.OK
        }
        assert by_role_alone, expect.__name__
        assert {expect(caller, ChatSpec(owner, share, public)) for caller in APPROVERS
                for owner in OWNERS for share, public in VISIBILITIES} == {
            Outcome.OK, Outcome.HIDDEN}, expect.__name__
    assert set(APPROVERS) <= set(CALLERS)


#: Calls of one batch in flight at once: enough to keep the server busy while the
#: database answers, few enough to stay within its connection pool.
_IN_FLIGHT = 12


async def _run_matrix_batched(client: GraphQLClient, db: Database, operation: Operation) -> None:
    """The same cells as :func:`_run_matrix`, in three batches whose calls run
    concurrently: the ghost answers; every denied call of every visibility, between two
    fingerprints of the whole store (a denied call changes nothing, so their order
    cannot matter); then each visibility's allowed calls in order (one may use the chat
    up for the next), the visibilities side by side, as each has its own chat."""
    failures: list[str] = []
    ghosts: dict[Caller | None, Any] = {}
    if operation.ghost_setup is not None:
        ghosts[None] = await operation.ghost_setup(client)
    gate = asyncio.Semaphore(_IN_FLIGHT)
    specs = [ChatSpec(owner, share, public)
             for owner in OWNERS for share, public in VISIBILITIES]
    expected = {spec: {caller: operation.expect(caller, spec) for caller in CALLERS}
                for spec in specs}
    targets = {spec: await _make_chat(client, spec, operation) for spec in specs}
    calls = 0

    async def ghost(caller: Caller) -> None:
        target = ghosts.get(None, GHOST)
        async with gate:
            ghosts[caller] = _normalised(await operation.call(client, target, caller), target)

    async def cell(spec: ChatSpec, caller: Caller) -> Outcome | str:
        nonlocal calls
        target = targets[spec]
        async with gate:
            actual, value = await _outcome(client, operation, target, caller, ghosts)
        calls += 1
        where = f"{operation.name} by {caller.label()} on {spec.label()}"
        if actual != expected[spec][caller]:
            failures.append(f"{where}: expected {expected[spec][caller]}, got {actual}")
        elif actual is Outcome.OK and not operation.check(value, target, caller):
            failures.append(f"{where}: allowed but answered {value!r}")
        return actual

    async def allowed_in_order(spec: ChatSpec) -> None:
        for caller in CALLERS:
            if expected[spec][caller] is not Outcome.OK:
                continue
            if await cell(spec, caller) is Outcome.OK and operation.consumes:
                targets[spec] = await _make_chat(client, spec, operation)

    if operation.hidden_as != "absent":
        await asyncio.gather(*(ghost(caller) for caller in CALLERS))
    before = await store_fingerprint(db)
    await asyncio.gather(*(cell(spec, caller) for spec in specs for caller in CALLERS
                           if expected[spec][caller] is not Outcome.OK))
    if await store_fingerprint(db) != before:
        failures.append(f"{operation.name}: a denied call changed the store")
    await asyncio.gather(*(allowed_in_order(spec) for spec in specs))
    assert calls == len(OWNERS) * len(VISIBILITIES) * len(CALLERS)
    assert not failures, f"{len(failures)} of {calls} calls wrong:\n" + "\n".join(failures[:30])
