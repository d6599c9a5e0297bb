"""``ChatqlClient``: thin, typed calls over chatql's GraphQL HTTP endpoint.

One ``httpx.AsyncClient`` per client. Every call is retried with backoff when the request
gets no answer (a transport failure or a 5xx) — never when the service answered a GraphQL
error, which is raised as :class:`~chatql_client.errors.ChatqlError` carrying its
``extensions.code``. Writes are safe to retry: appends carry an ``appendId``, stream
chunks a ``chunkId``, chats and memory entries an id chosen here.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx

from chatql_client import documents
from chatql_client.documents import CHAT_FIELDS, MESSAGE_FIELDS
from chatql_client.errors import ChatqlError, ChatqlTransportError, NoAnswer
from chatql_client.files import FileSource, UploadedFile, upload_source
from chatql_client.types import (
    AppendReceipt,
    Chat,
    ChatPage,
    FileLimits,
    MemoryEntry,
    MemoryHit,
    Message,
    MessageInput,
    SearchHit,
)

__all__ = ["CHAT_FIELDS", "MESSAGE_FIELDS", "Attempt", "CallerIdentity", "ChatqlClient"]

#: One try at a request, for :meth:`ChatqlClient.with_retries`: the answer's ``data``, or
#: :class:`~chatql_client.errors.NoAnswer` (retried) or
#: :class:`~chatql_client.errors.ChatqlError` (retried when its code is listed).
Attempt = Callable[[], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class CallerIdentity:
    """Who the service will take a client for, as far as the client can tell.

    ``source`` is ``"headers"`` (the ``X-User-Id``, ``X-Tenant-Id``, ``X-Team-Id`` and
    ``X-Roles`` headers a service in ``dev`` auth mode trusts; one left out is the
    service's default there: user ``dev``, tenant ``default``) or ``"token"`` (the bearer
    token's ``sub``, ``tenant_id``, ``team_id`` and ``roles`` claims, read here without
    verifying the token; None when it cannot be read). ``defaults`` names what was left
    to the service's defaults or could not be read.
    """

    user_id: str | None
    tenant_id: str | None
    team_id: str | None = None
    roles: tuple[str, ...] = ()
    source: str = "headers"
    defaults: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"user {self.user_id or '?'!r} in tenant {self.tenant_id or '?'!r}"
        if self.team_id:
            text += f", team {self.team_id!r}"
        details = [f"roles: {','.join(self.roles) or 'none'}",
                   "from the X-* identity headers" if self.source == "headers"
                   else "from the bearer token, unverified", *self.defaults]
        return f"{text} ({'; '.join(details)})"


def _roles(value: Any) -> tuple[str, ...]:
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, list | tuple):
        return ()
    return tuple(part.strip() for part in parts if isinstance(part, str) and part.strip())


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _identity_of(headers: Mapping[str, str]) -> CallerIdentity:
    values = {name.lower(): value for name, value in headers.items()}
    authorization = values.get("authorization", "")
    scheme, _, token = authorization.strip().partition(" ")
    if authorization and scheme.lower() == "bearer":
        claims: Any = None
        try:
            payload = token.strip().split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError, binascii.Error):
            pass
        if not isinstance(claims, dict):
            return CallerIdentity(None, None, source="token",
                                  defaults=("the bearer token is not a readable JWT",))
        return CallerIdentity(_text(claims.get("sub")), _text(claims.get("tenant_id")),
                              _text(claims.get("team_id")), _roles(claims.get("roles")),
                              source="token")
    user, tenant = _text(values.get("x-user-id")), _text(values.get("x-tenant-id"))
    defaults = []
    if user is None:
        defaults.append("no X-User-Id header: the service's default user")
    if tenant is None:
        defaults.append("no X-Tenant-Id header: the service's default tenant")
    return CallerIdentity(user or "dev", tenant or "default", _text(values.get("x-team-id")),
                          _roles(values.get("x-roles", "")), "headers", tuple(defaults))


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
    def identity(self) -> CallerIdentity:
        """Who the service will take this client for (read from ``headers`` or the bearer
        token; a service only ever sees the chats of the caller's tenant)."""
        return _identity_of(self.headers)

    @property
    def ws_url(self) -> str:
        """The WebSocket address of the same endpoint."""
        if self.url.startswith("https://"):
            return "wss://" + self.url[len("https://"):]
        if self.url.startswith("http://"):
            return "ws://" + self.url[len("http://"):]
        return self.url

    def subscribe(self, query: str, variables: Mapping[str, Any] | None = None, *,
                  handshake_timeout: float | None = None) -> Subscription:
        """A subscription over a WebSocket of its own: ``async with client.subscribe(
        CHAT_EVENTS, {...}) as events:``, then ``await events.receive()`` for each result
        (see :class:`~chatql_client.subscriptions.Subscription`). ``handshake_timeout``:
        seconds the service has to open and acknowledge the socket (default 10)."""
        if handshake_timeout is None:
            return Subscription(self, query, variables)
        return Subscription(self, query, variables, handshake_timeout=handshake_timeout)

    # ---- the wire ------------------------------------------------------------------
    #
    # ``execute`` is what almost every call needs. A caller that must decide per attempt
    # (the stream writer's start, which checks whether a lost attempt opened the stream)
    # builds on the three pieces under it: ``encode_request``, ``post_once`` and
    # ``with_retries``.

    @staticmethod
    def encode_request(query: str, variables: Mapping[str, Any] | None = None) -> bytes:
        """The HTTP body of one GraphQL request. Encode a request once and send these
        bytes on every attempt, so that a retry is the very same request."""
        return json.dumps({"query": query, "variables": dict(variables or {})},
                          separators=(",", ":"), ensure_ascii=False).encode()

    async def post_once(self, body: bytes) -> dict[str, Any]:
        """One POST of ``body`` (from :meth:`encode_request`), never retried: the answer's
        ``data``.

        Raises :class:`~chatql_client.errors.ChatqlError` when the service answered a
        GraphQL error (or an answer that is not GraphQL), and
        :class:`~chatql_client.errors.NoAnswer` when there was no usable answer (a
        transport failure or a 5xx) — what :meth:`with_retries` tries again.
        Counts in :attr:`requests_sent`."""
        self.requests_sent += 1
        try:
            response = await self._http.post(self.url, content=body)
        except httpx.TransportError as exc:
            raise NoAnswer(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 500:
            raise NoAnswer(f"HTTP {response.status_code}: {response.text[:200]}")
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

    async def with_retries(self, attempt: Attempt,
                           retry_codes: tuple[str, ...] = ()) -> dict[str, Any]:
        """``await attempt()`` until it answers; its ``data``.

        After :class:`~chatql_client.errors.NoAnswer`, or a
        :class:`~chatql_client.errors.ChatqlError` whose code is in ``retry_codes``, the
        attempt is made again after a jittered backoff (``retry_backoff`` seconds,
        doubling, at most 5), up to ``max_retries`` more times; then the last ChatqlError
        is raised, or :class:`~chatql_client.errors.ChatqlTransportError` when the last
        attempt got no answer. Any other exception propagates at once."""
        delay = self.retry_backoff
        for tries in range(self.max_retries + 1):
            try:
                return await attempt()
            except NoAnswer as exc:
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

    async def execute(self, query: str, variables: Mapping[str, Any] | None = None, *,
                      retry: bool = True, retry_codes: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run one GraphQL document; its ``data``. Retries requests that got no answer
        (``retry=False``: one attempt) and the GraphQL error codes in ``retry_codes``."""
        body = self.encode_request(query, variables)
        if not retry:
            try:
                return await self.post_once(body)
            except NoAnswer as exc:
                raise ChatqlTransportError(f"{self.url}: {exc}") from exc
        return await self.with_retries(lambda: self.post_once(body), retry_codes)

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
        try:
            data = await self.execute(documents.CREATE_CHAT, {"input": payload})
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
        data = await self.execute(documents.CHAT, {"id": chat_id})
        return cast("Chat | None", data["chat"])

    async def chat_for(self, assistant_id: str, channel: str,
                       subject: str | None = None) -> Chat:
        """The chat of this assistant with the caller (or ``subject``) on ``channel``,
        created on first use."""
        data = await self.execute(
            documents.CHAT_FOR, {"a": assistant_id, "c": channel, "s": subject})
        return cast(Chat, data["chatFor"])

    async def chats_page(self, filter: Mapping[str, Any] | None = None, *, first: int = 50,
                         after: str | None = None) -> ChatPage:
        """One page of the chats the caller may read (``filter``: a ``ChatFilter``)."""
        data = await self.execute(
            documents.CHATS,
            {"f": dict(filter) if filter else None, "first": first, "after": after})
        connection = data["chats"]
        return {"chats": [edge["node"] for edge in connection["edges"]],
                "end_cursor": connection["pageInfo"]["endCursor"],
                "has_next_page": connection["pageInfo"]["hasNextPage"]}

    async def chats(self, filter: Mapping[str, Any] | None = None, *,
                    page_size: int = 50) -> AsyncIterator[Chat]:
        """Every chat matching ``filter``, page after page (until a page says it is the
        last, or gives no cursor or one already followed: no page is asked for twice)."""
        after: str | None = None
        followed: set[str] = set()
        while True:
            page = await self.chats_page(filter, first=page_size, after=after)
            for chat in page["chats"]:
                yield chat
            cursor = page["end_cursor"]
            if not page["has_next_page"] or not cursor or cursor in followed:
                return
            followed.add(cursor)
            after = cursor

    # ---- messages --------------------------------------------------------------------

    async def append(self, chat_id: str, messages: Sequence[MessageInput | Mapping[str, Any]],
                     *, append_id: str | None = None,
                     parent_id: str | None = None) -> AppendReceipt:
        """Append a batch atomically. ``append_id`` makes a re-send harmless (one is made
        here when not given, so this call's own retries are)."""
        data = await self.execute(
            documents.APPEND_MESSAGES,
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
            documents.MESSAGES,
            {"c": chat_id, "last": last, "b": branch, "all": all_branches})
        return [edge["node"] for edge in data["messages"]["edges"]]

    async def model_context(self, chat_id: str, *, limit: int | None = 50,
                            max_tokens: int | None = None, include_thinking: bool = False,
                            memory_scopes: Sequence[str] | None = None,
                            files: str = "URL") -> list[Message]:
        """What the agent should send its model (see the service's ``modelContext``).

        ``files`` says how the files its messages reference come: ``"URL"`` (a signed,
        short-lived ``url`` on each file part), ``"INLINE"`` (a ``data:`` URL, and a
        text file's contents as ``text``) or ``"NONE"`` (left out)."""
        data = await self.execute(
            documents.MODEL_CONTEXT,
            {"c": chat_id, "l": limit, "t": max_tokens, "th": include_thinking,
             "ms": list(memory_scopes) if memory_scopes is not None else None,
             "f": files})
        return cast(list[Message], data["modelContext"])

    async def search(self, query: str, *, first: int = 20, chat_id: str | None = None,
                     assistant_id: str | None = None, window: int = 2) -> list[SearchHit]:
        """Full-text search over the messages the caller may read, best match first."""
        data = await self.execute(
            documents.SEARCH_MESSAGES,
            {"q": query, "f": first, "c": chat_id, "a": assistant_id, "w": window})
        return cast(list[SearchHit], data["searchMessages"])

    # ---- files -----------------------------------------------------------------------

    @property
    def files_url(self) -> str:
        """The service's upload address (``/files`` beside the GraphQL endpoint)."""
        base = self.url.rstrip("/")
        return base.removesuffix("/graphql") + "/files"

    async def upload(self, file: FileSource, *, filename: str | None = None,
                     media_type: str | None = None) -> UploadedFile:
        """Store a file (a path, or bytes with a ``filename``) and return its description;
        messages reference it by ``id`` (see :func:`~chatql_client.files.file_part`).

        ``media_type`` is guessed from the name when not given. Refusals raise
        :class:`~chatql_client.errors.ChatqlError` with the service's code
        (``PAYLOAD_TOO_LARGE``, ``UNSUPPORTED_MEDIA_TYPE``, ``QUOTA_EXCEEDED`` …). An
        upload that got no answer is sent again: at worst a second copy is kept, which
        the service drops once nothing references it (the bytes are stored once)."""
        source = upload_source(file, filename, media_type)

        async def attempt() -> dict[str, Any]:
            self.requests_sent += 1
            try:
                response = await self._http.post(
                    self.files_url, params={"filename": source.filename},
                    content=source.body(), headers={"content-type": source.media_type})
            except httpx.TransportError as exc:
                raise NoAnswer(f"{type(exc).__name__}: {exc}") from exc
            if response.status_code >= 500:
                raise NoAnswer(f"HTTP {response.status_code}: {response.text[:200]}")
            try:
                answer = response.json()
            except ValueError:
                answer = None
            if response.status_code != 201 or not isinstance(answer, dict):
                errors = answer.get("errors") if isinstance(answer, dict) else None
                if errors:
                    raise ChatqlError.from_error(errors[0])
                raise ChatqlError(f"HTTP {response.status_code}: {response.text[:200]}",
                                  f"HTTP_{response.status_code}")
            return answer

        return cast(UploadedFile, await self.with_retries(attempt))

    async def file_limits(self) -> FileLimits:
        """What an upload may be here: ``maxBytes``, the ``mediaTypes`` accepted, and the
        tenant's ``quotaBytes`` and ``usedBytes`` (None without a quota). Check a file
        against them before sending it rather than learning the limit from a refusal."""
        data = await self.execute(documents.FILE_LIMITS)
        return cast(FileLimits, data["fileLimits"])

    # ---- memory ----------------------------------------------------------------------

    async def write_memory(self, content: str, *, scope: str = "_global", pinned: bool = False,
                           subject: str | None = None,
                           write_id: str | None = None) -> MemoryEntry:
        """Remember something about the caller (or ``subject``); ``write_id`` (made here
        when not given) makes retries return the same entry."""
        data = await self.execute(
            documents.WRITE_MEMORY,
            {"i": {"scope": scope, "content": content, "pinned": pinned, "subject": subject,
                   "writeId": write_id or uuid.uuid4().hex}})
        return cast(MemoryEntry, data["writeMemory"])

    async def recent_memory(self, scopes: Sequence[str] = ("_global",), *, limit: int = 20,
                            subject: str | None = None) -> list[MemoryEntry]:
        data = await self.execute(
            documents.RECENT_MEMORY,
            {"s": list(scopes), "l": limit, "sub": subject})
        return cast(list[MemoryEntry], data["recentMemory"])

    async def search_memory(self, query: str, scopes: Sequence[str] = ("_global",), *,
                            first: int = 20, subject: str | None = None) -> list[MemoryHit]:
        data = await self.execute(
            documents.SEARCH_MEMORY,
            {"q": query, "s": list(scopes), "f": first, "sub": subject})
        return cast(list[MemoryHit], data["searchMemory"])

    async def update_memory(self, entry_id: str, *, content: str | None = None,
                            pinned: bool | None = None) -> MemoryEntry:
        data = await self.execute(
            documents.UPDATE_MEMORY,
            {"id": entry_id, "i": {"content": content, "pinned": pinned}})
        return cast(MemoryEntry, data["updateMemory"])

    async def delete_memory(self, entry_id: str) -> bool:
        data = await self.execute(documents.DELETE_MEMORY, {"id": entry_id})
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
        data = await self.execute(documents.STOP_STREAM, {"c": chat_id})
        return bool(data["stopStream"])

    async def regenerate(self, message_id: str) -> Chat:
        """Make that USER message the chat's active leaf again, so the chat awaits a new
        answer (earlier answers stay as its siblings)."""
        data = await self.execute(documents.REGENERATE, {"id": message_id})
        return cast(Chat, data["regenerate"])

    async def serve(self, assistant_id: str, handler: Handler, **options: Any) -> None:
        """Answer every chat of ``assistant_id`` that awaits a reply, until cancelled
        (see :class:`~chatql_client.agent_loop.AgentLoop` for the options)."""
        await AgentLoop(self, assistant_id, handler, **options).run()


from chatql_client.agent_loop import AgentLoop, Handler  # noqa: E402
from chatql_client.subscriptions import Subscription  # noqa: E402
from chatql_client.writer import StreamWriter  # noqa: E402
