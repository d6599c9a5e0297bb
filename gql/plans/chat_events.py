"""A fast path for ``chatEvents``: one serialisation per event and selection, not one
GraphQL execution per event and subscriber.

Run the ordinary way, every event of every sidebar is a full execution of the
subscription's selection (~100 µs), and a write reaches as many sidebars as its chat
has readers. Here a ``chatEvents`` document is parsed and validated (with the same
rules and limits as the executor) once per distinct text, and its selection is turned
into a *plan*: the output keys in order, each with how its value is read and coerced.
The plan is derived from the schema when it is made — a field is taken only when its
value is the record's attribute (no arguments, no resolver of its own, no directive),
completed by the schema's own scalar and enum serialisers — so a field added later,
or one given a resolver (``usage``, ``messages``, ``lastMessage``), sends the
document the ordinary way.

The events service queues one event object per published event and outcome to every
subscriber it reaches (:mod:`store.events` decides access and the filter at delivery,
once per identity and filter), so the frame text is cached per event object and plan
and shared by all of them. Both WebSocket protocols take this path (``gql/transport/websocket.py``),
and so does Server-Sent Events (``graphql-sse``, ``gql/app.py``). Anything else —
fragments, directives, other root fields, variables that do not coerce, a filter the
resolver refuses, an events service that is not running — runs the ordinary way, so
errors look exactly as they always do. A value the schema's serialisers refuse (only a
corrupt row can hold one) is answered for that event by the general executor.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson
from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLError,
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    OperationDefinitionNode,
    OperationType,
    execute,
    parse,
    specified_rules,
)
from graphql.execution.values import get_argument_values, get_variable_values
from strawberry.schema.schema import validate_document
from strawberry.types.arguments import convert_arguments

from chatql.gql.context import Context
from chatql.gql.document_shapes import (
    MAX_FAST_DOCUMENT,
    PlanCache,
    has_nul,
    sole_root_field,
)
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.ops.limits import limit_rules
from chatql.gql.plans.plan import Call, Socket, text_frame
from chatql.gql.plans.shapes import NoShape, Refused, Shape, object_shape
from chatql.gql.schema.chat_events import ChatEvent
from chatql.gql.settings import Settings
from chatql.store.lists import events as store_events
from chatql.store.lists.chat_lists import ChatListFilter

__all__ = ["ChatEvents", "ChatEventsPlan", "ChatEventsRelay", "chat_events_plan_for"]

logger = logging.getLogger("chatql")

_FRAME_CACHE_SIZE = 64
_PLANS_KEPT = 512


class _NoPlan(Exception):
    """The document is not one this module serves."""


@dataclass(eq=False)
class ChatEventsPlan:
    """A validated ``chatEvents`` document reduced to what the fast path needs."""

    document: DocumentNode
    operation: OperationDefinitionNode
    node: FieldNode
    root_field: GraphQLField
    response_key: str
    #: Fills the event object from the resolver's value (the shape compiler's).
    shape: Shape
    #: Serialised payloads by event object, shared by every subscriber of this plan.
    frames: OrderedDict[int, tuple[store_events.ChatEvent, str]] = field(
        default_factory=OrderedDict)

    def payload(self, event: store_events.ChatEvent) -> str | None:
        """The ``{"data": {...}}`` text for ``event``, serialised once per plan (None:
        a value the schema refuses, for the executor to answer)."""
        key = id(event)
        cached = self.frames.get(key)
        if cached is not None and cached[0] is event:
            return cached[1]
        source = ChatEvent.from_store(event)
        try:
            data = {self.response_key: self.shape(source)}
            text = orjson.dumps({"data": data}).decode()
        except (Refused, TypeError):
            return None
        # Keeping the event referenced makes the id() key safe from reuse.
        self.frames[key] = (event, text)
        if len(self.frames) > _FRAME_CACHE_SIZE:
            self.frames.popitem(last=False)
        return text


def _unwrap(kind: Any) -> tuple[Any, bool]:
    nullable = not isinstance(kind, GraphQLNonNull)
    return (kind if nullable else kind.of_type), nullable


def _plan(schema: Any, document: DocumentNode, operation_name: str | None) -> ChatEventsPlan:
    found = sole_root_field(document, operation_name, OperationType.SUBSCRIPTION, "chatEvents")
    if found is None:
        raise _NoPlan
    operation, root = found
    if any(definition.directives for definition in operation.variable_definitions or ()):
        raise _NoPlan
    subscription = graphql_core_schema(schema).subscription_type
    if subscription is None:
        raise _NoPlan
    field_def = subscription.fields["chatEvents"]
    event_type, nullable = _unwrap(field_def.type)
    if nullable or not isinstance(event_type, GraphQLObjectType) or set(field_def.args) != {
            "filter"} or field_def.extensions.get("strawberry-definition") is None:
        raise _NoPlan
    assert root.selection_set is not None
    return ChatEventsPlan(document=document, operation=operation, node=root,
                          root_field=field_def,
                          response_key=(root.alias or root.name).value,
                          shape=object_shape(event_type, root.selection_set))


def chat_events_plan_for(schema: Any, query: str | None, operation_name: str | None,
                         plans: PlanCache[ChatEventsPlan], *, max_depth: int,
                         max_aliases: int, max_tokens: int) -> ChatEventsPlan | None:
    """The fast-path plan for ``query``, kept in ``plans`` (the app's), or None when it
    must run the ordinary way."""
    if not query or len(query) > MAX_FAST_DOCUMENT or "chatEvents" not in query:
        return None
    # Plans are made from the schema's shapes: one cache entry per schema, document
    # and limits (parsing and validation apply the limits the executor would).
    key = (id(schema), query, operation_name, max_depth, max_aliases, max_tokens)

    def make() -> ChatEventsPlan | None:
        try:
            document = parse(query, max_lexical_tokens=max_tokens, max_comments=max_tokens)
            rules = (*specified_rules, *limit_rules(max_depth, max_aliases))
            invalid = validate_document(graphql_core_schema(schema), document, rules)
            return None if invalid else _plan(schema, document, operation_name)
        except (GraphQLError, _NoPlan, NoShape):
            return None

    return plans.get(key, make)


def _list_filter(schema: Any, plan: ChatEventsPlan,
                 variables: dict[str, Any] | None) -> ChatListFilter | None:
    """The store filter the resolver would use, or None when the ordinary way must
    answer (a variable that does not coerce, a filter the resolver refuses)."""
    if variables and has_nul(variables):
        return None
    coerced = get_variable_values(graphql_core_schema(schema),
                                  plan.operation.variable_definitions or (), variables or {},
                                  max_errors=1)
    if isinstance(coerced, list):
        return None
    try:
        raw = get_argument_values(plan.root_field, plan.node, coerced)
        strawberry_field = plan.root_field.extensions["strawberry-definition"]
        converted = convert_arguments(raw, strawberry_field.arguments,
                                      scalar_registry=schema.schema_converter.scalar_registry,
                                      config=schema.config)
        chat_filter = converted.get("filter")
        list_filter = chat_filter.to_store() if chat_filter else ChatListFilter()
        list_filter.check()
    except Exception:  # whatever it is, the ordinary way answers it as it always does
        return None
    return None if list_filter.deleted else list_filter


async def _executed(schema: Any, plan: ChatEventsPlan, context: Context,
                    variables: dict[str, Any] | None,
                    event: store_events.ChatEvent) -> str:
    """One event answered by the general executor, errors coded as everywhere."""
    result = execute(graphql_core_schema(schema), plan.document,
                     root_value=ChatEvent.from_store(event),
                     context_value=context, variable_values=variables,
                     operation_name=plan.operation.name.value if plan.operation.name else None)
    if inspect.isawaitable(result):
        result = await result
    assert not isinstance(result, AsyncIterator)
    payload: dict[str, Any] = {"data": result.data}
    errors = list(result.errors or ())
    if errors:
        schema.process_errors(errors)
        payload["errors"] = [error.formatted for error in errors]
    return orjson.dumps(payload).decode()


@dataclass(eq=False)
class ChatEventsRelay:
    """A ``chatEvents`` operation this module serves: its plan and store filter."""

    schema: Any
    context: Context
    plan: ChatEventsPlan
    list_filter: ChatListFilter
    variables: dict[str, Any] | None

    def texts(self, sink: store_events.Sink | None = None) -> AsyncGenerator[str, None]:
        """The ``{"data": ...}`` text of each event until the subscription ends (what
        ``sink`` took at delivery is not yielded again). Iterate it in ``aclosing``:
        the subscription ends the moment its consumer does."""
        return self._texts(sink)

    async def _texts(self, sink: store_events.Sink | None) -> AsyncGenerator[str, None]:
        events = self.context.services.events
        assert events is not None
        subscriber = events.subscribe(self.context.identity, self.list_filter, sink)
        try:
            async for event in subscriber.events():
                text = self.plan.payload(event)
                if text is None:
                    text = await _executed(self.schema, self.plan, self.context,
                                           self.variables, event)
                yield text
        finally:
            events.unsubscribe(subscriber)

    async def serve(self, socket: Socket) -> None:
        """Send every event to ``socket`` until the subscription ends. Where the
        socket's transport takes frames straight away, an event is written from its
        delivery, without waking this task; the rest wait in the subscriber's queue."""
        sink = None
        frames = socket.frames
        if frames is not None:
            plan, completed, envelope = self.plan, socket.completed, socket.envelope

            def sink(event: store_events.ChatEvent) -> bool:
                if completed():
                    return True  # dropped, as the queued send below drops it
                text = plan.payload(event)
                return text is not None and frames.write(
                    text_frame(envelope(text).encode()))

        async with aclosing(self._texts(sink)) as texts:
            async for text in texts:
                if not socket.completed():
                    await socket.send(socket.envelope(text))


class ChatEvents:
    """The ``chatEvents`` plan: each event serialised once per selection."""

    name: ClassVar[str] = "chat_events"
    operation: ClassVar[str] = "subscription"
    fields: ClassVar[tuple[str, ...]] = ("chatEvents",)
    transports: ClassVar[frozenset[str]] = frozenset({"sse", "ws"})
    summary: ClassVar[str] = "the live chat list: each event serialised once per selection"

    def __init__(self, schema: Any, settings: Settings) -> None:
        self.schema = schema
        self.settings = settings
        self.plans: PlanCache[ChatEventsPlan] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> ChatEventsPlan | None:
        settings = self.settings
        return chat_events_plan_for(self.schema, query, operation_name, self.plans,
                                    max_depth=settings.max_query_depth,
                                    max_aliases=settings.max_query_aliases,
                                    max_tokens=settings.max_query_tokens)

    async def run(self, plan: ChatEventsPlan, call: Call) -> ChatEventsRelay | None:
        """The relay of the subscription, or None (the executor's); nothing is
        subscribed until the transport drives the relay."""
        if call.context.services.events is None:
            return None
        list_filter = _list_filter(self.schema, plan, call.variables)
        if list_filter is None:
            return None
        return ChatEventsRelay(self.schema, call.context, plan, list_filter, call.variables)
