"""A fast path for ``chatStream``: each run of chunks framed once for every subscriber.

Strawberry runs a full GraphQL execution for every event of every subscriber, almost
all of the cost of a live stream (about 110 µs per chunk per subscriber, growing
linearly with subscribers). A ``chatStream`` subscription whose selection is plain
``Chunk`` fields is parsed and validated once per distinct document text; each
published chunk is projected onto the selection and serialised (orjson, to ``str``)
once per distinct document, shared by every subscriber that sent it. Anything else —
fragments the shape reader cannot flatten, directives, other root fields, any error, a
chat the caller may not read — goes the ordinary way, so errors look as they always do.

**Frames written once.** Server frames are not masked, so the frames of one run of
chunks (one operation id, one document) are the same bytes for every subscriber: they
are built once and written to each socket's transport directly when the transport
takes them now (:class:`~gql.plans.plan.Socket`); a subscriber waiting for more is even
written to from the topic's wake-up, without waking its task. A transport that does
not take them now gets them the ordinary way, which waits for the buffer to drain, so
a slow reader is coalesced or sent a snapshot by its queue as before.

**Subscribe checks shared while they wait.** Subscribes of one chat by the same caller
that arrive while its access check waits for a slot (at most ``_CONCURRENT_CHECKS`` run
at once) share that check, so thousands of subscribers arriving together cost a
handful of database reads; a check that has started is never joined, so every answer
comes from a read begun after the subscribe arrived.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson
from graphql import (
    DocumentNode,
    GraphQLError,
    OperationType,
    ValueNode,
    VariableNode,
    parse,
    validate,
    value_from_ast_untyped,
)

from chatql.gql.context import Context
from chatql.gql.document_shapes import MAX_FAST_DOCUMENT, PlanCache, flat_root_field
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.plans.plan import Call, FrameSink, Socket, text_frame
from chatql.gql.settings import Settings
from chatql.store.chats.chat import get_chat
from chatql.store.db.database import Database
from chatql.store.errors import ChatqlError
from chatql.store.ids import check_chat_id
from chatql.store.records import Chat, Identity
from chatql.store.streams import SubscriberQueue
from chatql.store.streams.reducer import ChunkEvent

__all__ = ["ChatStream", "ChatStreamPlan", "StreamRelay", "plan_for"]

logger = logging.getLogger("chatql.websocket")

_PLANS_KEPT = 512
_CHUNK_FIELDS = frozenset(ChunkEvent.__annotations__)
_FRAME_CACHE_SIZE = 4_096


@dataclass(eq=False)
class ChatStreamPlan:
    """A validated ``chatStream`` document reduced to what the fast path needs."""

    response_key: str
    fields: tuple[tuple[str, str], ...]
    chat_id: ValueNode
    after_seq: ValueNode | None
    defaults: dict[str, Any]
    #: Serialised payloads by event object, shared by every subscriber of this plan.
    frames: OrderedDict[int, tuple[ChunkEvent, str]] = field(default_factory=OrderedDict)

    def argument(self, node: ValueNode | None, variables: dict[str, Any]) -> Any:
        if node is None:
            return None
        if isinstance(node, VariableNode):
            name = node.name.value
            return variables[name] if name in variables else self.defaults.get(name)
        return value_from_ast_untyped(node)

    def payload(self, event: ChunkEvent) -> str:
        """The ``{"data": {...}}`` text for ``event``, serialised once per plan."""
        key = id(event)
        cached = self.frames.get(key)
        if cached is not None and cached[0] is event:
            return cached[1]
        projected = {
            response: "Chunk" if name == "__typename" else event[name]  # type: ignore[literal-required]
            for response, name in self.fields
        }
        try:
            text = orjson.dumps({"data": {self.response_key: projected}}).decode()
        except TypeError:  # integers beyond 64 bits in props
            text = json.dumps({"data": {self.response_key: projected}}, ensure_ascii=False)
        # Keeping the event referenced makes the id() key safe from reuse.
        self.frames[key] = (event, text)
        if len(self.frames) > _FRAME_CACHE_SIZE:
            self.frames.popitem(last=False)
        return text


def _selectable(schema: Any) -> frozenset[str]:
    """The ``Chunk`` fields of the schema that a published chunk carries as they are
    sent; any other field (one added later, say) makes the subscription run the
    ordinary way, where its resolver runs."""
    shape = graphql_core_schema(schema).type_map.get("Chunk")
    names = frozenset(getattr(shape, "fields", None) or ())
    return (names & _CHUNK_FIELDS) | {"__typename"}


def _plan(schema: Any, document: DocumentNode,
          operation_name: str | None) -> ChatStreamPlan | None:
    shape = flat_root_field(document, operation_name, OperationType.SUBSCRIPTION,
                            "chatStream", _selectable(schema))
    if shape is None:
        return None
    operation, root, fields = shape
    arguments = {argument.name.value: argument.value for argument in root.arguments or ()}
    defaults = {
        definition.variable.name.value: value_from_ast_untyped(definition.default_value)
        for definition in operation.variable_definitions or ()
        if definition.default_value is not None
    }
    return ChatStreamPlan(
        response_key=(root.alias or root.name).value,
        fields=fields,
        chat_id=arguments["chatId"],
        after_seq=arguments.get("afterSeq"),
        defaults=defaults,
    )


def plan_for(schema: Any, query: str, operation_name: str | None,
             plans: PlanCache[ChatStreamPlan]) -> ChatStreamPlan | None:
    """The fast-path plan for ``query``, kept in ``plans`` (the app's), or None when it
    must run the ordinary way."""
    if len(query) > MAX_FAST_DOCUMENT or "chatStream" not in query:
        return None

    def make() -> ChatStreamPlan | None:
        try:
            document = parse(query)
            return None if validate(graphql_core_schema(schema), document) else _plan(
                schema, document, operation_name)
        except GraphQLError:
            return None

    # Plans are made from the schema's shapes: one cache entry per schema and document.
    return plans.get((id(schema), query, operation_name), make)


#: Subscribe access checks run at once per event loop; the rest wait their turn here
#: rather than in the database pool, whose timeout would fail them when thousands of
#: subscribers arrive together.
_CONCURRENT_CHECKS = 8
_check_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def _checks() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    gate = _check_gates.get(loop)
    if gate is None:
        gate = _check_gates[loop] = asyncio.Semaphore(_CONCURRENT_CHECKS)
    return gate


#: Access checks waiting for their turn, by (chat, caller): a subscribe that arrives
#: while the same check is still waiting joins it instead of queueing one of its own,
#: so thousands of subscribers of one chat cost a handful of reads. A check that has
#: started is never joined: every answer comes from a read begun after the subscribe
#: arrived, so access is as current as if each had read on its own.
_waiting_checks: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, Identity], asyncio.Task[Chat | None]]] = (
    weakref.WeakKeyDictionary())


async def _visible_chat(db: Database, identity: Identity, chat_id: str) -> Chat | None:
    """``get_chat`` for a subscribe, shared with identical subscribes waiting with it."""
    loop = asyncio.get_running_loop()
    waiting = _waiting_checks.get(loop)
    if waiting is None:
        waiting = _waiting_checks[loop] = {}
    key = (chat_id, identity)
    check = waiting.get(key)
    if check is None:

        async def run() -> Chat | None:
            async with _checks():
                # From here on a new subscribe starts a read of its own.
                if waiting.get(key) is check:
                    del waiting[key]
                return await get_chat(db, identity, chat_id)

        # A task of its own: a subscriber that goes away does not cancel the others'
        # answer.
        check = waiting[key] = loop.create_task(run())

        def settled(done: asyncio.Task[Chat | None]) -> None:
            if waiting.get(key) is done:
                del waiting[key]
            if not done.cancelled():
                done.exception()  # retrieved: every subscriber waiting may have left

        check.add_done_callback(settled)
    return await asyncio.shield(check)


async def _open(context: Context, plan: ChatStreamPlan,
                variables: dict[str, Any] | None) -> tuple[str, SubscriberQueue] | None:
    """Subscribe when everything checks out; None sends the caller the ordinary way."""
    services = context.services
    if services.streams is None:
        return None
    try:
        chat_id = plan.argument(plan.chat_id, variables or {})
        after_seq = plan.argument(plan.after_seq, variables or {})
        if isinstance(chat_id, int) and not isinstance(chat_id, bool):
            chat_id = str(chat_id)
        if not isinstance(chat_id, str):
            return None
        if after_seq is not None and (
            not isinstance(after_seq, int) or isinstance(after_seq, bool) or after_seq < 0
        ):
            return None
        check_chat_id(chat_id)
        chat = await _visible_chat(services.db, context.identity, chat_id)
        if chat is None:
            return None
        return chat_id, await services.streams.subscribe(chat_id, after_seq)
    except (ChatqlError, KeyError):
        return None
    except Exception as error:
        # Anything else (the database pool timing out under thousands of subscribes,
        # the broker away): the ordinary way runs the subscription, so it is served
        # or answered with an error, never left silent.
        logger.warning("chatStream fast path failed (%s); running it the ordinary way",
                       error)
        return None


#: Framed runs of chunks, by plan, operation prefix and the chunks themselves: readers
#: at one position of a topic read the same run, so its frames are built once.
_FRAMED_RUNS_KEPT = 32
_framed_runs: OrderedDict[tuple[object, ...],
                          tuple[ChatStreamPlan, list[ChunkEvent], bytes]] = OrderedDict()


def _framed(plan: ChatStreamPlan, prefix: str, run: list[ChunkEvent]) -> bytes:
    """The text frames of ``run`` (``prefix`` + payload + ``}`` each), back to back."""
    key = (id(plan), prefix, *map(id, run))
    cached = _framed_runs.get(key)
    if cached is not None and cached[0] is plan:
        return cached[2]
    frames = b"".join(text_frame((prefix + plan.payload(event) + "}").encode())
                      for event in run)
    if run[0].get("snapshot"):
        # A snapshot is made for one subscriber: kept, it would only push shared runs out.
        return frames
    # The plan and the chunks stay referenced with it, so the ids in the key are not
    # reused while it is kept.
    _framed_runs[key] = (plan, run, frames)
    if len(_framed_runs) > _FRAMED_RUNS_KEPT:
        _framed_runs.popitem(last=False)
    return frames


class _RunSink:
    """Writes a run of chunks straight to the socket from the topic's wake-up (see
    :attr:`SubscriberQueue.sink`); a slotted object, smaller than a closure, since
    every subscriber holds one."""

    __slots__ = ("completed", "plan", "prefix", "writer")

    def __init__(self, plan: ChatStreamPlan, prefix: str, writer: FrameSink,
                 completed: Callable[[], bool]) -> None:
        self.plan = plan
        self.prefix = prefix
        self.writer = writer
        self.completed = completed

    def __call__(self, run: list[ChunkEvent]) -> bool:
        writer = self.writer
        return not self.completed() and writer.writable() and writer.write(
            _framed(self.plan, self.prefix, run))


@dataclass(eq=False)
class StreamRelay:
    """A ``chatStream`` subscription opened for one socket."""

    context: Context
    plan: ChatStreamPlan
    chat_id: str
    queue: SubscriberQueue

    async def serve(self, socket: Socket) -> None:
        """Send every chunk of the queue (nothing once the operation is completed)
        until the queue closes, then unsubscribe."""
        plan, queue, prefix, completed = self.plan, self.queue, socket.prefix, socket.completed
        streams = self.context.services.streams
        assert streams is not None
        frames = socket.frames
        if frames is not None:
            queue.sink = _RunSink(plan, prefix, frames, completed)
        try:
            async for run in queue.batches():
                if completed():
                    continue
                if frames is not None and frames.writable():
                    frames.write(_framed(plan, prefix, run))
                    continue
                for event in run:
                    if completed():
                        break
                    await socket.send(prefix + plan.payload(event) + "}")
        finally:
            queue.sink = None
            await streams.unsubscribe(self.chat_id, queue)


class ChatStream:
    """The ``chatStream`` plan: each run of chunks framed once for every subscriber."""

    name: ClassVar[str] = "chat_stream"
    operation: ClassVar[str] = "subscription"
    fields: ClassVar[tuple[str, ...]] = ("chatStream",)
    transports: ClassVar[frozenset[str]] = frozenset({"ws"})
    summary: ClassVar[str] = "a live stream: each run of chunks framed once for every subscriber"

    def __init__(self, schema: Any, settings: Settings) -> None:
        self.schema = schema
        self.plans: PlanCache[ChatStreamPlan] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> ChatStreamPlan | None:
        return plan_for(self.schema, query, operation_name, self.plans)

    async def run(self, plan: ChatStreamPlan, call: Call) -> StreamRelay | None:
        """The subscription, opened, or None (the executor's)."""
        opened = await _open(call.context, plan, call.variables)
        if opened is None:
            return None
        chat_id, queue = opened
        return StreamRelay(call.context, plan, chat_id, queue)
