"""An agent's reply, as the ecosystem's endpoints serve it (``/ai/chat``, ``/ag-ui``).

Each of those endpoints takes a person's message (or their decisions on what the agent
asked), writes it as chatql would, and answers with the agent's reply in its own
protocol. What they share lives here, so the rules are one:

- :func:`open_chat` appends the person's message (creating the chat on first use) and
  :func:`ask_again` makes a question the active leaf again — each subscribed to the
  chat's streams *before* writing, so the reply's start cannot be missed.
- :func:`decide` resolves the person's answers to interrupts, every id checked first
  (one the chat never issued decides nothing).
- :func:`follow` drives a :class:`Translator` with the chunks of the stream that
  answers: keep-alives while quiet, the protocol's failure when no agent starts within
  ``CHATQL_AGENT_REPLY_TIMEOUT`` seconds, its interruption when the server shuts down.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chatql.gql.context import Services
from chatql.store.chats.chat import create_chat, get_chat
from chatql.store.errors import Conflict, NotFound
from chatql.store.messages import interrupts as store_interrupts
from chatql.store.messages.message import NewMessage, append_messages, regenerate
from chatql.store.records import Identity, Interrupt
from chatql.store.streams.queue import SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent

__all__ = ["Answer", "Decided", "Translator", "ask_again", "decide", "follow", "open_chat"]

#: Seconds between keep-alives while the reply is quiet (keeps proxies from closing).
KEEPALIVE = 15.0


class Translator(Protocol):
    """One protocol's view of one reply: chatql chunks in, the protocol's frames out."""

    #: The chatql stream translated (None until the answering stream starts).
    stream_id: str | None
    finished: bool

    def feed(self, event: ChunkEvent) -> list[Any]: ...

    def end(self, status: str, error: Any = None) -> list[Any]: ...


async def open_chat(services: Services, who: Identity, chat_id: str, assistant: str,
                    question: NewMessage, append_id: str) -> SubscriberQueue:
    """Append the question (creating the chat on first use) and subscribe to the
    chat's streams — subscribed first, so the reply's start cannot be missed. The
    append is idempotent by ``append_id``: a retried request writes nothing twice."""
    streams = services.streams
    assert streams is not None
    created = False
    if await get_chat(services.db, who, chat_id) is None:
        try:
            await create_chat(services.db, who, id=chat_id, assistant_id=assistant)
            created = True
        except Conflict:
            # Taken by a chat this caller may not see (or made a moment ago).
            if await get_chat(services.db, who, chat_id) is None:
                raise NotFound(f"chat {chat_id!r} not found") from None
    queue = await streams.subscribe(chat_id)
    try:
        await append_messages(services.db, who, chat_id, append_id, [question])
    except BaseException:
        await streams.unsubscribe(chat_id, queue)
        raise
    if services.events is not None:
        if created:
            await services.events.publish("CREATED", chat_id, who.tenant_id)
        await services.events.publish("MESSAGES", chat_id, who.tenant_id)
    return queue


async def ask_again(services: Services, who: Identity, chat_id: str,
                    question_id: str) -> SubscriberQueue:
    """Make the question the active leaf again (the chat awaits a new answer) and
    subscribe to the chat's streams first."""
    streams = services.streams
    assert streams is not None
    queue = await streams.subscribe(chat_id)
    try:
        await regenerate(services.db, who, question_id)
    except BaseException:
        await streams.unsubscribe(chat_id, queue)
        raise
    if services.events is not None:
        await services.events.publish("UPDATED", chat_id, who.tenant_id)
    return queue


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to one interrupt, as a protocol carried it."""

    id: str
    approved: bool | None = None
    response: Any = None
    reason: str | None = None
    edited_arguments: Any = None


@dataclass(frozen=True, slots=True)
class Decided:
    """What :func:`decide` did: the interrupts answered (in the answers' order) and
    those of the chat still pending (then nothing resumes yet)."""

    answered: list[Interrupt]
    pending: list[Interrupt]


async def decide(services: Services, who: Identity, chat_id: str, answers: list[Answer],
                 kinds: tuple[str, ...] = store_interrupts.INTERRUPT_KINDS,
                 ) -> tuple[SubscriberQueue, Decided]:
    """Resolve the answers as ``resolveInterrupt`` would (same rights, decided once)
    and subscribe to the chat's streams before the first decision, so the resumed
    reply's start cannot be missed. Every id is checked first: one this chat never
    issued (or of a kind not in ``kinds``) is NOT_FOUND and nothing is decided."""
    streams = services.streams
    assert streams is not None
    asked: list[Interrupt] = []
    for answer in answers:
        try:
            interrupt: Interrupt | None = await store_interrupts.get_interrupt(
                services.db, who, answer.id)
        except NotFound:
            interrupt = None
        if interrupt is None or interrupt.chat_id != chat_id or interrupt.kind not in kinds:
            raise NotFound(f"interrupt {answer.id!r} was never requested in chat {chat_id!r}")
        asked.append(interrupt)
    queue = await streams.subscribe(chat_id)
    try:
        for answer in answers:
            resolved = await store_interrupts.resolve(
                services.db, who, answer.id, approved=answer.approved,
                edited_arguments=answer.edited_arguments, response=answer.response,
                reason=answer.reason)
            if resolved.changed and services.events is not None:
                await services.events.publish("INTERRUPT_RESOLVED", chat_id,
                                              resolved.tenant_id)
        pending = await store_interrupts.chat_interrupts(services.db, who, chat_id,
                                                         state="PENDING")
    except BaseException:
        await streams.unsubscribe(chat_id, queue)
        raise
    return queue, Decided(answered=asked, pending=pending)


async def follow(services: Services, chat_id: str, queue: SubscriberQueue,
                 translator: Translator, encode: Callable[[Any], bytes], *,
                 question_id: str | None = None,
                 keepalive: bytes = b": keep-alive\n\n") -> AsyncIterator[bytes]:
    """The encoded frames of one reply: the stream ``translator.stream_id`` (a reply
    joined live), or the first stream that starts answering ``question_id`` (one that
    names it as its parent, or names none — a resumption). Unsubscribes at the end."""
    streams = services.streams
    assert streams is not None
    loop = asyncio.get_running_loop()
    timeout = services.settings.agent_reply_timeout
    deadline = loop.time() + timeout
    # One read at a time, kept across keep-alives (never cancelled mid-wait).
    reading: asyncio.Task[list[ChunkEvent]] | None = None
    try:
        while not translator.finished:
            waiting = translator.stream_id is None
            wait = min(KEEPALIVE, deadline - loop.time()) if waiting else KEEPALIVE
            if wait <= 0:
                for frame in translator.end("failed", f"no agent answered within {timeout:g} s"):
                    yield encode(frame)
                break
            if reading is None:
                reading = asyncio.ensure_future(_next(queue))
            done, _ = await asyncio.wait({reading}, timeout=wait)
            if not done:
                yield keepalive
                continue
            events, reading = reading.result(), None
            if not events:
                # The subscription ended (the server is shutting down).
                for frame in translator.end("interrupted"):
                    yield encode(frame)
                break
            for event in events:
                if translator.stream_id is None:
                    if not _answers(event, question_id):
                        continue  # an earlier stream of the chat, still ending
                    translator.stream_id = event["streamId"]
                for frame in translator.feed(event):
                    yield encode(frame)
    finally:
        if reading is not None:
            reading.cancel()
        await streams.unsubscribe(chat_id, queue)


async def _next(queue: SubscriberQueue) -> list[ChunkEvent]:
    """The queue's next chunks; none once it is closed."""
    try:
        return await queue.get()
    except StopAsyncIteration:
        return []


def _answers(event: ChunkEvent, question_id: str | None) -> bool:
    """Whether ``event`` starts the stream that answers the question: one that names it
    as its parent, or one that hangs after the active leaf (names no parent). A
    snapshot's stream was there before the question was (the late-join replay of
    the chat's previous reply), so it is never the answer."""
    if event["type"] != "event" or event["snapshot"] or not isinstance(event["props"], dict):
        return False
    props = event["props"]
    if props.get("event") != "stream_start":
        return False
    parent = props.get("parentId")
    return parent is None or parent == question_id
