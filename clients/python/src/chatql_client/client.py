"""``ChatqlClient``: thin, typed calls over chatql's GraphQL HTTP endpoint.

One ``httpx.AsyncClient`` per client. Every call is retried with backoff when the request
gets no answer (a transport failure or a 5xx) — never when the service answered a GraphQL
error, which is raised as :class:`~chatql_client.errors.ChatqlError` carrying its
``extensions.code``. Writes are safe to retry: appends carry an ``appendId``, stream
chunks a ``chunkId``, chats and memory entries an id chosen here.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import httpx

from chatql_client.errors import ChatqlError, ChatqlTransportError
from chatql_client.types import (
    AppendReceipt,
    Chat,
    ChatPage,
    MemoryEntry,
    MemoryHit,
    Message,
    MessageInput,
    SearchHit,
)

__all__ = ["CHAT_FIELDS", "MESSAGE_FIELDS", "ChatqlClient"]

MESSAGE_FIELDS = ("id chatId requestId role type props blockId threadId assistantId sequence "
                  "status metadata tokens parentId createdAt")
CHAT_FIELDS = ("id title assistantId mode status channel lastMessageAt activeLeafId metadata "
               "createdAt createdBy")
MEMORY_FIELDS = "id scope content pinned subject createdAt updatedAt"


class _NoAnswer(Exception):
    """One attempt got no usable answer (transport failure or 5xx): worth retrying."""


class ChatqlClient:
    """An async client of one chatql service.

    ``url`` is the GraphQL endpoint (``http://host:8000/graphql``); ``headers`` go with
    every request and WebSocket (the ``X-User-Id`` … identity headers of a service in
    ``dev`` auth mode), ``token`` becomes ``Authorization: Bearer <token>``.
    ``transport`` is handed to httpx (tests and proxies).
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None,
                 token: str | None = None, *, timeout: float = 30.0,
                 max_retries: int = 8, retry_backoff: float = 0.05,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url
        self.headers: dict[str, str] = dict(headers or {})
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        #: HTTP requests sent so far (retries included).
        self.requests_sent = 0
        self._http = httpx.AsyncClient(
            headers={**self.headers, "content-type": "application/json"},
            timeout=timeout, transport=transport)

    async def __aenter__(self) -> ChatqlClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    @property
    def ws_url(self) -> str:
        """The WebSocket address of the same endpoint."""
        if self.url.startswith("https://"):
            return "wss://" + self.url[len("https://"):]
        if self.url.startswith("http://"):
            return "ws://" + self.url[len("http://"):]
        return self.url

    # ---- the wire ------------------------------------------------------------------

    async def _attempt(self, body: bytes) -> dict[str, Any]:
        """One POST: the answer's ``data``; ChatqlError for a GraphQL error, _NoAnswer
        when there was no usable answer."""
        self.requests_sent += 1
        try:
            response = await self._http.post(self.url, content=body)
        except httpx.TransportError as exc:
            raise _NoAnswer(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 500:
            raise _NoAnswer(f"HTTP {response.status_code}: {response.text[:200]}")
        try:
            answer = response.json()
        except ValueError:
            raise ChatqlError(f"HTTP {response.status_code}: {response.text[:200]}",
                              f"HTTP_{response.status_code}") from None
        if not isinstance(answer, dict):
            raise ChatqlError(f"unexpected answer: {response.text[:200]}")
        if answer.get("errors"):
            raise ChatqlError.from_error(answer["errors"][0])
        if response.status_code != 200 or not isinstance(answer.get("data"), dict):
            raise ChatqlError(f"HTTP {response.status_code}: {response.text[:200]}",
                              f"HTTP_{response.status_code}")
        return cast(dict[str, Any], answer["data"])

    async def _retrying(self, attempt: Callable[[], Awaitable[dict[str, Any]]],
                        retry_codes: tuple[str, ...] = ()) -> dict[str, Any]:
        delay = self.retry_backoff
        for tries in range(self.max_retries + 1):
            try:
                return await attempt()
            except _NoAnswer as exc:
                failure: Exception = exc
            except ChatqlError as exc:
                if exc.code not in retry_codes:
                    raise
                failure = exc
            if tries == self.max_retries:
                break
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, 5.0)
        if isinstance(failure, ChatqlError):
            raise failure
        raise ChatqlTransportError(f"{self.url}: no answer after {self.max_retries + 1} "
                                   f"attempts ({failure})") from failure

    @staticmethod
    def _body(query: str, variables: Mapping[str, Any] | None) -> bytes:
        return json.dumps({"query": query, "variables": dict(variables or {})},
                          separators=(",", ":"), ensure_ascii=False).encode()

    async def execute(self, query: str, variables: Mapping[str, Any] | None = None, *,
                      retry: bool = True, retry_codes: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run one GraphQL document; its ``data``. Retries requests that got no answer
        (``retry=False``: one attempt) and the GraphQL error codes in ``retry_codes``."""
        body = self._body(query, variables)
        if not retry:
            try:
                return await self._attempt(body)
            except _NoAnswer as exc:
                raise ChatqlTransportError(f"{self.url}: {exc}") from exc
        return await self._retrying(lambda: self._attempt(body), retry_codes)

    # ---- chats -----------------------------------------------------------------------

    async def create_chat(self, assistant_id: str, *, title: str | None = None,
                          chat_id: str | None = None, channel: str = "api",
                          metadata: Mapping[str, Any] | None = None,
                          **fields: Any) -> Chat:
        """A new chat (``fields``: any other ``CreateChatInput`` field, as spelled there).
        The id is chosen here when not given, so a retried request finds its own chat."""
        ours = chat_id is None
        chat_id = chat_id or uuid.uuid4().hex
        payload = {"assistantId": assistant_id, "id": chat_id, "title": title,
                   "channel": channel, "metadata": metadata, **fields}
        query = (f"mutation($input: CreateChatInput!) {{ createChat(input: $input) "
                 f"{{ {CHAT_FIELDS} }} }}")
        try:
            data = await self.execute(query, {"input": payload})
        except ChatqlError as exc:
            # A retry of a create whose answer was lost finds the chat there: with an id
            # made here, that chat can only be this call's own.
            if exc.code != "CONFLICT" or not ours:
                raise
            found = await self.chat(chat_id)
            if found is None:
                raise
            return found
        return cast(Chat, data["createChat"])

    async def chat(self, chat_id: str) -> Chat | None:
        data = await self.execute(f"query($id: ID!) {{ chat(id: $id) {{ {CHAT_FIELDS} }} }}",
                                  {"id": chat_id})
        return cast("Chat | None", data["chat"])

    async def chat_for(self, assistant_id: str, channel: str,
                       subject: str | None = None) -> Chat:
        """The chat of this assistant with the caller (or ``subject``) on ``channel``,
        created on first use."""
        data = await self.execute(
            f"mutation($a: String!, $c: String!, $s: String) {{ chatFor(assistantId: $a, "
            f"channel: $c, subject: $s) {{ {CHAT_FIELDS} }} }}",
            {"a": assistant_id, "c": channel, "s": subject})
        return cast(Chat, data["chatFor"])

    async def chats_page(self, filter: Mapping[str, Any] | None = None, *, first: int = 50,
                         after: str | None = None) -> ChatPage:
        """One page of the chats the caller may read (``filter``: a ``ChatFilter``)."""
        data = await self.execute(
            f"query($f: ChatFilter, $first: Int, $after: String) {{ chats(filter: $f, "
            f"first: $first, after: $after) {{ edges {{ node {{ {CHAT_FIELDS} }} }} "
            f"pageInfo {{ hasNextPage endCursor }} }} }}",
            {"f": dict(filter) if filter else None, "first": first, "after": after})
        connection = data["chats"]
        return {"chats": [edge["node"] for edge in connection["edges"]],
                "end_cursor": connection["pageInfo"]["endCursor"],
                "has_next_page": connection["pageInfo"]["hasNextPage"]}

    async def chats(self, filter: Mapping[str, Any] | None = None, *,
                    page_size: int = 50) -> AsyncIterator[Chat]:
        """Every chat matching ``filter``, page after page."""
        after: str | None = None
        while True:
            page = await self.chats_page(filter, first=page_size, after=after)
            for chat in page["chats"]:
                yield chat
            if not page["has_next_page"] or not page["end_cursor"]:
                return
            after = page["end_cursor"]

    # ---- messages --------------------------------------------------------------------

    async def append(self, chat_id: str, messages: Sequence[MessageInput | Mapping[str, Any]],
                     *, append_id: str | None = None,
                     parent_id: str | None = None) -> AppendReceipt:
        """Append a batch atomically. ``append_id`` makes a re-send harmless (one is made
        here when not given, so this call's own retries are)."""
        data = await self.execute(
            "mutation($c: ID!, $a: String!, $m: [MessageInput!]!, $p: ID) { appendMessages("
            "chatId: $c, appendId: $a, messages: $m, parentId: $p) { chatId appendId "
            "messageIds firstSequence lastSequence } }",
            {"c": chat_id, "a": append_id or uuid.uuid4().hex,
             "m": [dict(message) for message in messages], "p": parent_id})
        return cast(AppendReceipt, data["appendMessages"])

    async def say(self, chat_id: str, content: str, *, role: str = "USER",
                  append_id: str | None = None) -> str:
        """Append one text message (``user_input`` for USER, ``text`` otherwise); its id."""
        kind = "user_input" if role == "USER" else "text"
        receipt = await self.append(chat_id, [{"role": role, "type": kind,
                                               "props": {"content": content}}],
                                    append_id=append_id)
        return receipt["messageIds"][0]

    async def messages(self, chat_id: str, *, last: int | None = 50,
                       branch: str | None = None, all_branches: bool = False) -> list[Message]:
        """The newest ``last`` messages along the active branch (or ``branch``; every
        branch with ``all_branches``), oldest first."""
        data = await self.execute(
            f"query($c: ID!, $last: Int, $b: ID, $all: Boolean!) {{ messages(chatId: $c, "
            f"last: $last, branch: $b, allBranches: $all) {{ edges {{ node "
            f"{{ {MESSAGE_FIELDS} }} }} }} }}",
            {"c": chat_id, "last": last, "b": branch, "all": all_branches})
        return [edge["node"] for edge in data["messages"]["edges"]]

    async def model_context(self, chat_id: str, *, limit: int | None = 50,
                            max_tokens: int | None = None, include_thinking: bool = False,
                            memory_scopes: Sequence[str] | None = None) -> list[Message]:
        """What the agent should send its model (see the service's ``modelContext``)."""
        data = await self.execute(
            f"query($c: ID!, $l: Int, $t: Int, $th: Boolean, $ms: [String!]) {{ modelContext("
            f"chatId: $c, limit: $l, maxTokens: $t, includeThinking: $th, memoryScopes: $ms) "
            f"{{ {MESSAGE_FIELDS} }} }}",
            {"c": chat_id, "l": limit, "t": max_tokens, "th": include_thinking,
             "ms": list(memory_scopes) if memory_scopes is not None else None})
        return cast(list[Message], data["modelContext"])

    async def search(self, query: str, *, first: int = 20, chat_id: str | None = None,
                     assistant_id: str | None = None, window: int = 2) -> list[SearchHit]:
        """Full-text search over the messages the caller may read, best match first."""
        data = await self.execute(
            f"query($q: String!, $f: Int, $c: ID, $a: String, $w: Int) {{ searchMessages("
            f"query: $q, first: $f, chatId: $c, assistantId: $a, window: $w) {{ score "
            f"message {{ {MESSAGE_FIELDS} }} chat {{ {CHAT_FIELDS} }} "
            f"window {{ {MESSAGE_FIELDS} }} }} }}",
            {"q": query, "f": first, "c": chat_id, "a": assistant_id, "w": window})
        return cast(list[SearchHit], data["searchMessages"])

    # ---- memory ----------------------------------------------------------------------

    async def write_memory(self, content: str, *, scope: str = "_global", pinned: bool = False,
                           subject: str | None = None,
                           write_id: str | None = None) -> MemoryEntry:
        """Remember something about the caller (or ``subject``); ``write_id`` (made here
        when not given) makes retries return the same entry."""
        data = await self.execute(
            f"mutation($i: WriteMemoryInput!) {{ writeMemory(input: $i) {{ {MEMORY_FIELDS} }} }}",
            {"i": {"scope": scope, "content": content, "pinned": pinned, "subject": subject,
                   "writeId": write_id or uuid.uuid4().hex}})
        return cast(MemoryEntry, data["writeMemory"])

    async def recent_memory(self, scopes: Sequence[str] = ("_global",), *, limit: int = 20,
                            subject: str | None = None) -> list[MemoryEntry]:
        data = await self.execute(
            f"query($s: [String!]!, $l: Int, $sub: String) {{ recentMemory(scopes: $s, "
            f"limit: $l, subject: $sub) {{ {MEMORY_FIELDS} }} }}",
            {"s": list(scopes), "l": limit, "sub": subject})
        return cast(list[MemoryEntry], data["recentMemory"])

    async def search_memory(self, query: str, scopes: Sequence[str] = ("_global",), *,
                            first: int = 20, subject: str | None = None) -> list[MemoryHit]:
        data = await self.execute(
            f"query($q: String!, $s: [String!]!, $f: Int, $sub: String) {{ searchMemory("
            f"query: $q, scopes: $s, first: $f, subject: $sub) {{ score entry "
            f"{{ {MEMORY_FIELDS} }} }} }}",
            {"q": query, "s": list(scopes), "f": first, "sub": subject})
        return cast(list[MemoryHit], data["searchMemory"])

    async def update_memory(self, entry_id: str, *, content: str | None = None,
                            pinned: bool | None = None) -> MemoryEntry:
        data = await self.execute(
            f"mutation($id: ID!, $i: UpdateMemoryInput!) {{ updateMemory(id: $id, input: $i) "
            f"{{ {MEMORY_FIELDS} }} }}",
            {"id": entry_id, "i": {"content": content, "pinned": pinned}})
        return cast(MemoryEntry, data["updateMemory"])

    async def delete_memory(self, entry_id: str) -> bool:
        data = await self.execute("mutation($id: ID!) { deleteMemory(id: $id) }",
                                  {"id": entry_id})
        return bool(data["deleteMemory"])

    # ---- streams ---------------------------------------------------------------------

    def stream(self, chat_id: str, request_id: str | None = None, parent_id: str | None = None,
               input: str | Mapping[str, Any] | None = None, flush_interval: float = 0.02,
               max_batch: int = 256, *, assistant_id: str | None = None,
               stream_id: str | None = None) -> StreamWriter:
        """A stream into ``chat_id``: ``async with client.stream(chat_id) as s:``.

        ``input`` is the person's message the stream answers (a string becomes a
        ``user_input``); ``parent_id`` makes the stream answer that message (again)."""
        return StreamWriter(self, chat_id, request_id=request_id, parent_id=parent_id,
                            input=input, flush_interval=flush_interval, max_batch=max_batch,
                            assistant_id=assistant_id, stream_id=stream_id)

    async def stop_stream(self, chat_id: str) -> bool:
        """Stop the chat's active stream (the Stop button); False when none is active."""
        data = await self.execute("mutation($c: ID!) { stopStream(chatId: $c) }",
                                  {"c": chat_id})
        return bool(data["stopStream"])

    async def regenerate(self, message_id: str) -> Chat:
        """Make that USER message the chat's active leaf again, so the chat awaits a new
        answer (earlier answers stay as its siblings)."""
        data = await self.execute(
            f"mutation($id: ID!) {{ regenerate(messageId: $id) {{ {CHAT_FIELDS} }} }}",
            {"id": message_id})
        return cast(Chat, data["regenerate"])

    async def serve(self, assistant_id: str, handler: Handler, **options: Any) -> None:
        """Answer every chat of ``assistant_id`` that awaits a reply, until cancelled
        (see :class:`~chatql_client.agent_loop.AgentLoop` for the options)."""
        await AgentLoop(self, assistant_id, handler, **options).run()


from chatql_client.agent_loop import AgentLoop, Handler  # noqa: E402
from chatql_client.writer import StreamWriter  # noqa: E402
