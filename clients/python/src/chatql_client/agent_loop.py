"""The agent loop: answer every chat of one assistant that awaits a reply.

On start, and after every reconnect, the loop lists the assistant's chats awaiting a reply
(``chats(filter: {assistantId, awaitingReply: true})``, page after page) and, unless
retrying is off, those whose reply was cut off (``awaitingRetry: true``); meanwhile it
follows ``chatEvents`` over a WebSocket (``graphql-transport-ws``) and looks again at each
chat an event names. It lists again every ``relist_interval`` seconds as a safety net.

Claiming: the question is the chat's active leaf (a ``USER`` message). The loop counts the
question's answers so far (N), checks the question is still the active leaf, and opens
``startStream(requestId = R, parentId = question)`` with R the question's id (first answer)
or ``<question id>.<N>`` (a regeneration). Every worker computes the same R; the service
refuses a request id a stream of the chat already used (``CONFLICT``) and a second stream
(``STREAM_ACTIVE``), so exactly one worker answers and the others skip. The handler is then
called with the model's context (``modelContext``) and the writer.

Resuming: a chat whose run asked a person (a tool call needing approval, a question) and
whose decisions are all made awaits a reply again. The loop reads its ``resumption``,
starts a stream with the request id the service names for it (``<request id>.resume.<N>``:
exactly one worker's start succeeds) and calls the handler again with the decisions in
``s.resume`` — and as ``resume=`` when the handler has such a parameter. The model's
context already holds them: a denied call followed by its refusal, an answer as the
person's message.

Retrying: a reply cut off because its worker vanished (the service ended its stream
``INTERRUPTED`` when the heartbeats stopped, or when the service shut down) is answered
again, by whichever worker claims ``<question id>.retry.<N>`` first (exactly one start
succeeds), at most ``retries`` times per question (``CHATQL_AGENT_RETRIES``, default 2).
The new answer is a sibling of the cut-off one, which stays, marked interrupted. A reply
a person stopped is not retried, and neither is one whose retries are spent: Regenerate
asks again. To tell the two apart, every answer records a step when it starts (a resume
record is kept only for a stream that did not complete, with the reason the service
ended it). The handler's context is the conversation up to the question. A worker that
was not running when the reply was cut off finds it when it lists; a cut-off reply it
decided not to answer again (retries spent, a person stopped it) is not looked at again
until the chat's active leaf changes.

Cancelling :meth:`AgentLoop.run` ends every stream it has open ``INTERRUPTED`` before it
returns, waiting at most ``shutdown_timeout`` seconds for the service to take those ends.

Every wait has an end even when the service answers unexpectedly: the WebSocket
handshake has a deadline, and a page walk stops at a page that brings nothing new.

The loop outlives the service's refusals: a GraphQL error while following or listing
(``RATE_LIMITED``, an internal error, a database that timed out) is logged and the loop
tries again after a backoff, at least the ``retryAfter`` the service named. Only
``UNAUTHENTICATED`` and ``FORBIDDEN`` end :meth:`AgentLoop.run` (they raise): the
identity is wrong, and trying again would not mend it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from websockets.exceptions import WebSocketException

from chatql_client import subscriptions
from chatql_client.documents import (
    ACTIVE_LEAF,
    ANSWERS,
    AWAITED_LEAF,
    CHAT_EVENTS,
    CUT_OFF,
    RESUMPTION,
)
from chatql_client.errors import ChatqlError, ChatqlTransportError, StreamStopped
from chatql_client.types import Message

if TYPE_CHECKING:
    from chatql_client.client import ChatqlClient
    from chatql_client.writer import StreamWriter

__all__ = ["AgentLoop", "Handler"]

logger = logging.getLogger("chatql_client")

#: ``handler(context, s)``: the model's context (messages, oldest first) and the writer.
Handler = Callable[[list[Message], "StreamWriter"], Awaitable[Any]]

#: Codes that mean another worker has (or had) this question: skip it.
TAKEN = ("CONFLICT", "STREAM_ACTIVE")

#: Times a reply cut off by a vanished worker is answered again, unless the loop is told
#: otherwise (``retries=``) or ``CHATQL_AGENT_RETRIES`` says.
DEFAULT_RETRIES = 2
#: Cut-off replies remembered as not to be answered again (the oldest are forgotten,
#: and merely looked at once more when listed).
SETTLED_KEPT = 10_000
#: The step every answer records when it starts: kept (as a resume record) only when
#: the stream does not complete, with the reason the service ended it.
ANSWER_STEP = {"id": "chatql.answer", "type": "llm", "status": "running"}

#: Codes that end :meth:`AgentLoop.run`: the loop's identity is refused.
FATAL = ("UNAUTHENTICATED", "FORBIDDEN")

#: Seconds the service has to acknowledge the WebSocket (``connection_ack``), pings and
#: other messages before it included; past it the loop reconnects.
HANDSHAKE_TIMEOUT = subscriptions.HANDSHAKE_TIMEOUT


def _retries_from_env() -> int:
    raw = os.environ.get("CHATQL_AGENT_RETRIES", "").strip()
    if not raw:
        return DEFAULT_RETRIES
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"CHATQL_AGENT_RETRIES must be a whole number, not {raw!r}") from None
    if value < 0:
        raise ValueError("CHATQL_AGENT_RETRIES must be 0 or more")
    return value


def _retry_number(question_id: str, request_id: str | None) -> int | None:
    """The number of the retry that would answer again a reply under ``request_id``
    to the question ``question_id``: 1 after a first answer or a regeneration, N+1
    after retry N; None when ``request_id`` answers no such question (a resumption)."""
    if request_id is None:
        return None
    match = re.fullmatch(re.escape(question_id) + r"(?:\.[0-9]+|\.retry\.([0-9]+))?",
                         request_id)
    if match is None:
        return None
    return int(match[1]) + 1 if match[1] else 1


def _retry_after(exc: ChatqlError) -> float:
    """The seconds the service asked to wait (``extensions.retryAfter``), or 0."""
    try:
        return max(0.0, float(exc.extensions.get("retryAfter") or 0))
    except (TypeError, ValueError):
        return 0.0


def _parameters(handler: Handler) -> set[str]:
    try:
        return set(inspect.signature(handler).parameters)
    except (TypeError, ValueError):  # a callable without a signature Python can read
        return set()


class AgentLoop:
    """Runs ``handler`` for every chat of ``assistant_id`` awaiting a reply.

    ``concurrency`` bounds the answers in progress at once; ``context_limit`` and
    ``context_max_tokens`` bound ``modelContext`` (``context_files``: how it hands over
    files, ``"URL"``, ``"INLINE"`` or ``"NONE"``); ``relist_interval`` is how often the
    awaiting chats are listed again besides the events. ``shutdown_timeout`` is how long
    a cancelled :meth:`run` waits for its answers to end their streams: past it, it logs
    the answers still ending and returns (the service times their streams out).
    ``retries`` is how many times a reply cut off by a vanished worker is answered again
    (default: ``CHATQL_AGENT_RETRIES``, else 2; 0 turns retrying off).
    """

    def __init__(self, client: ChatqlClient, assistant_id: str, handler: Handler, *,
                 concurrency: int = 8, context_limit: int | None = 50,
                 context_max_tokens: int | None = None, include_thinking: bool = False,
                 relist_interval: float = 30.0, reconnect_delay: float = 0.5,
                 shutdown_timeout: float = 30.0, retries: int | None = None,
                 context_files: str = "URL") -> None:
        self.client = client
        self.assistant_id = assistant_id
        self.handler = handler
        self.context_limit = context_limit
        self.context_max_tokens = context_max_tokens
        #: How ``modelContext`` hands over files: ``"URL"``, ``"INLINE"`` or ``"NONE"``.
        self.context_files = context_files
        self.include_thinking = include_thinking
        self.relist_interval = relist_interval
        self.reconnect_delay = reconnect_delay
        self.shutdown_timeout = shutdown_timeout
        self.retries = _retries_from_env() if retries is None else retries
        if self.retries < 0:
            raise ValueError("retries must be 0 or more")
        self._slots = asyncio.Semaphore(concurrency)
        self._busy: set[str] = set()
        self._again: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        # Chats whose cut-off reply this loop decided not to answer again, with the leaf
        # it looked at: listed again (awaitingRetry), they are skipped until it changes.
        self._settled: OrderedDict[str, str] = OrderedDict()
        # A handler that names a ``resume`` parameter is given the decisions by name.
        self._takes_resume = "resume" in _parameters(handler)
        #: Answers this loop has written (stream ids), for tests and logs.
        self.answered: list[str] = []

    async def run(self) -> None:
        """Serve until cancelled; reconnects with backoff when the service goes away.

        Logs (INFO, on the ``chatql_client`` logger) at start the line of
        :meth:`describe`: an agent whose identity is in another tenant than the chats it
        should answer sees none of them, and would otherwise look dead."""
        logger.info("%s", self.describe())
        delay = self.reconnect_delay
        try:
            while True:
                try:
                    await self._follow()
                    delay = self.reconnect_delay
                except (OSError, WebSocketException, ChatqlTransportError, TimeoutError) as exc:
                    logger.info("agent loop %s: connection lost (%s); reconnecting",
                                self.assistant_id, exc)
                except ChatqlError as exc:
                    if exc.code in FATAL:
                        raise
                    delay = max(delay, _retry_after(exc))
                    logger.warning("agent loop %s: the service refused (%s); trying again "
                                   "in %.1f s", self.assistant_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        finally:
            self._stopping = True
            await self._stop_answers()

    async def _stop_answers(self) -> None:
        """Cancel the answers in progress (each ends its stream INTERRUPTED) and wait for
        them, ``shutdown_timeout`` seconds at most: a stream's end is retried while the
        service does not answer, which could otherwise hold the shutdown for minutes."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=self.shutdown_timeout)
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved: _answer logs its own failures
        if pending:
            logger.warning("agent loop %s: %d answer(s) still ending their stream after "
                           "%.1f s, left to finish on their own: %s", self.assistant_id,
                           len(pending), self.shutdown_timeout,
                           ", ".join(sorted(task.get_name() for task in pending)))

    def describe(self) -> str:
        """One line: the service, the assistant answered and the identity it acts as."""
        identity = self.client.identity
        return (f"chatql agent loop: answering assistant {self.assistant_id!r} at "
                f"{self.client.url} as {identity}; it sees only the chats of tenant "
                f"{identity.tenant_id or '?'!r}")

    # ---- events ----------------------------------------------------------------------

    async def _follow(self) -> None:
        async with self.client.subscribe(
                CHAT_EVENTS, {"f": {"assistantId": self.assistant_id}},
                handshake_timeout=HANDSHAKE_TIMEOUT) as events:
            await self._catch_up()
            loop = asyncio.get_running_loop()
            relist_at = loop.time() + self.relist_interval
            while True:
                try:
                    async with asyncio.timeout(max(0.0, relist_at - loop.time())):
                        data = await events.receive()
                except TimeoutError:
                    await self._catch_up()
                    relist_at = loop.time() + self.relist_interval
                    continue
                if data is None:
                    return
                event = data["chatEvents"]
                if event["type"] == "RESYNC":
                    await self._catch_up()
                elif event["type"] not in ("DELETED", "PURGED"):
                    self._consider(event["chatId"])

    async def _catch_up(self) -> None:
        async for chat in self.client.chats({"assistantId": self.assistant_id,
                                             "awaitingReply": True}):
            self._consider(chat["id"])
        if self.retries <= 0:
            return
        async for chat in self.client.chats({"assistantId": self.assistant_id,
                                             "awaitingRetry": True}):
            if self._settled.get(chat["id"]) != chat["activeLeafId"]:
                self._consider(chat["id"])

    def _settle(self, chat_id: str, leaf_id: str) -> None:
        """Remember that the cut-off reply ``leaf_id`` of the chat is not answered again."""
        self._settled[chat_id] = leaf_id
        self._settled.move_to_end(chat_id)
        while len(self._settled) > SETTLED_KEPT:
            self._settled.popitem(last=False)

    def _consider(self, chat_id: str) -> None:
        if self._stopping or not chat_id:
            return
        if chat_id in self._busy:
            # Looked at again once the current attempt is over (a new question may
            # have come while this one was answered).
            self._again.add(chat_id)
            return
        self._busy.add(chat_id)
        task = asyncio.create_task(self._answer(chat_id), name=f"answer {chat_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- one chat --------------------------------------------------------------------

    async def _answer(self, chat_id: str) -> None:
        try:
            async with self._slots:
                await self._claim_and_run(chat_id)
        except asyncio.CancelledError:
            raise
        except StreamStopped:
            logger.info("chat %s: the answer was stopped", chat_id)
        except Exception:
            logger.exception("chat %s: the answer failed", chat_id)
        finally:
            self._busy.discard(chat_id)
            if chat_id in self._again:
                self._again.discard(chat_id)
                self._consider(chat_id)

    async def _leaf(self, chat_id: str) -> dict[str, Any] | None:
        """The chat's active leaf (id, role, sequence, status), or None."""
        chat = (await self.client.execute(AWAITED_LEAF, {"id": chat_id}))["chat"]
        if chat is None or chat["assistantId"] != self.assistant_id:
            return None
        edges = chat["messages"]["edges"]
        if not edges or edges[-1]["node"]["id"] != chat["activeLeafId"]:
            return None
        leaf: dict[str, Any] = edges[-1]["node"]
        return leaf

    async def _answers(self, chat_id: str, question: dict[str, Any]) -> int:
        """How many answers the question has (its children, on every branch).

        Pages go back from the newest until one reaches the question. A page that says
        there are older ones but brings no message, no cursor or a cursor already followed
        ends the walk too (logged): following it would ask for the same pages for ever.
        The count is then at most the true one, and a start under a request id already
        used is refused (``CONFLICT``), so the question is skipped, never answered twice.
        """
        count = 0
        before: str | None = None
        followed: set[str] = set()
        while True:
            page = (await self.client.execute(ANSWERS, {"c": chat_id, "before": before}))
            connection = page["messages"]
            nodes = [edge["node"] for edge in connection["edges"]]
            count += sum(1 for node in nodes if node["parentId"] == question["id"])
            reached = any(node["sequence"] <= question["sequence"] for node in nodes)
            if reached or not connection["pageInfo"]["hasPreviousPage"]:
                return count
            cursor = connection["pageInfo"]["startCursor"]
            if not nodes or not cursor or cursor in followed:
                logger.warning("chat %s: the message pages before %r bring nothing new "
                               "(startCursor %r); %d answer(s) of %s counted", chat_id,
                               before, cursor, count, question["id"])
                return count
            followed.add(cursor)
            before = cursor

    async def _claim_and_run(self, chat_id: str) -> None:
        client = self.client
        leaf = await self._leaf(chat_id)
        if leaf is None or leaf["role"] != "USER":
            if not await self._resume(chat_id) and leaf is not None \
                    and leaf["status"] == "INTERRUPTED":
                await self._retry(chat_id)
            return
        question = leaf
        answers = await self._answers(chat_id, question)
        # Counted first, checked after: an answer that landed in between has moved the
        # active leaf, so a stale count is never used.
        chat = (await client.execute(ACTIVE_LEAF, {"id": chat_id}))["chat"]
        if chat is None or chat["activeLeafId"] != question["id"]:
            return
        request_id = question["id"] if answers == 0 else f"{question['id']}.{answers}"
        writer = client.stream(chat_id, request_id=request_id, parent_id=question["id"],
                               assistant_id=self.assistant_id)
        async with AsyncExitStack() as stack:
            try:
                s = await stack.enter_async_context(writer)
            except ChatqlError as exc:
                if exc.code in TAKEN:
                    logger.debug("chat %s: %s taken elsewhere (%s)", chat_id, request_id,
                                 exc.code)
                    return
                raise
            await self._run_handler(chat_id, s)
        self.answered.append(writer.stream_id)

    async def _run_handler(self, chat_id: str, s: StreamWriter,
                           question_id: str | None = None) -> None:
        # Kept only if the stream does not complete: why it ended tells a reply a
        # person stopped from one whose worker vanished (see the module's Retrying).
        await s.step(ANSWER_STEP)
        context = await self.client.model_context(chat_id, limit=self.context_limit,
                                                  max_tokens=self.context_max_tokens,
                                                  include_thinking=self.include_thinking,
                                                  files=self.context_files)
        if question_id is not None:
            # A retry: the cut-off reply on the active branch is not part of the turn.
            ids = [message["id"] for message in context]
            if question_id in ids:
                context = context[:ids.index(question_id) + 1]
        if s.resume and self._takes_resume:
            await self.handler(context, s, resume=s.resume)  # type: ignore[call-arg]
        else:
            await self.handler(context, s)

    async def _resume(self, chat_id: str) -> bool:
        """Resume a run whose person-in-the-loop decisions are all made: claim the
        resumption's request id (exactly one worker's start succeeds) and run the
        handler again, with the decisions in ``s.resume``. False: nothing to resume."""
        client = self.client
        chat = (await client.execute(RESUMPTION, {"id": chat_id}))["chat"]
        if chat is None or chat["assistantId"] != self.assistant_id or not chat["resumption"]:
            return False
        resumption = chat["resumption"]
        writer = client.stream(chat_id, request_id=resumption["requestId"],
                               assistant_id=self.assistant_id)
        writer.resume = list(resumption["decisions"])
        async with AsyncExitStack() as stack:
            try:
                s = await stack.enter_async_context(writer)
            except ChatqlError as exc:
                if exc.code in TAKEN:
                    logger.debug("chat %s: %s taken elsewhere (%s)", chat_id,
                                 resumption["requestId"], exc.code)
                    return True
                raise
            await self._run_handler(chat_id, s)
        self.answered.append(writer.stream_id)
        return True

    async def _retry(self, chat_id: str) -> None:
        """Answer again a reply cut off by a vanished worker (see the module's
        Retrying): the active branch ends with one stream's INTERRUPTED reply to a
        question, the service ended that stream for want of its producer, and the
        question has retries left. Exactly one worker's claim of the retry succeeds."""
        if self.retries <= 0:
            return
        client = self.client
        data = await client.execute(CUT_OFF, {"id": chat_id})
        chat = data["chat"]
        if chat is None or chat["assistantId"] != self.assistant_id:
            return
        nodes = [edge["node"] for edge in chat["messages"]["edges"]]
        if (not nodes or nodes[-1]["id"] != chat["activeLeafId"]
                or nodes[-1]["role"] == "USER" or nodes[-1]["status"] != "INTERRUPTED"):
            return
        asked = [i for i, node in enumerate(nodes) if node["role"] == "USER"]
        if not asked:
            return
        question, reply = nodes[asked[-1]], nodes[asked[-1] + 1:]
        cut_off = reply[-1]["requestId"]
        number = _retry_number(question["id"], cut_off)
        if number is None or any(node["requestId"] != cut_off for node in reply):
            # More than one stream answered (a resumption), or the reply answers no
            # question of its own: not retried.
            self._settle(chat_id, nodes[-1]["id"])
            return
        vanished = any(record["requestId"] == cut_off and record["error"]
                       for record in data["resumeRecords"])
        if not vanished:
            # A person stopped it (or it predates the step): Regenerate asks again.
            self._settle(chat_id, nodes[-1]["id"])
            return
        if number > self.retries:
            logger.info("chat %s: the reply to %s was cut off again; %d retries spent, "
                        "left for Regenerate", chat_id, question["id"], self.retries)
            self._settle(chat_id, nodes[-1]["id"])
            return
        request_id = f"{question['id']}.retry.{number}"
        writer = client.stream(chat_id, request_id=request_id, parent_id=question["id"],
                               assistant_id=self.assistant_id)
        async with AsyncExitStack() as stack:
            try:
                s = await stack.enter_async_context(writer)
            except ChatqlError as exc:
                if exc.code in TAKEN:
                    logger.debug("chat %s: %s taken elsewhere (%s)", chat_id, request_id,
                                 exc.code)
                    return
                raise
            logger.info("chat %s: answering %s again (retry %d of %d): its reply was cut "
                        "off", chat_id, question["id"], number, self.retries)
            await self._run_handler(chat_id, s, question_id=question["id"])
        self.answered.append(writer.stream_id)
