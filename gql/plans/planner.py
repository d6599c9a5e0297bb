"""The request planner: every fast path is a plan registered here, asked through one door.

Most operations run on Strawberry's executor. A handful of documents are sent so often
— a page of messages, a producer's ``pushChunks``, a chat's ``appendMessages``, a live
sidebar's ``chatEvents``, a viewer's ``chatStream`` — that walking them field by field
costs more than the work itself. Each of those is a *plan*: made once per document
text, from the schema field it serves (its shapes, argument defaults and conversions
read from the schema when the plan is made), and run instead of the executor when a
request fits it. :data:`PLANS` names every plan, the root fields it serves and the
transports it runs on; nothing else answers an operation outside the executor.

Every transport asks the :class:`Planner` the app owns:

- HTTP: :meth:`Planner.lane_for` for the mutations (a plain POST answered before the
  view's request machinery), :meth:`Planner.execute` inside the view for the reads;
- Server-Sent Events: :meth:`Planner.sse_relay`;
- WebSocket, both subprotocols: :meth:`Planner.serve_socket` (see gql/transport/websocket.py).

A plan that does not fit a request returns None and the executor answers, so an error
always looks as the executor makes it. A plan can be switched off by name with
``CHATQL_DISABLED_PLANS`` (comma-separated; the executor then answers those
operations), and the planner counts what each plan answered (:attr:`Planner.served`),
which the differential tests read to prove that a plan still serves the documents it
was made for: a field added to a type either flows through its plan or fails them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from chatql.gql.auth import ConfigurationError
from chatql.gql.context import Context
from chatql.gql.document_shapes import PlanCache
from chatql.gql.fast_lanes import Lane
from chatql.gql.plans.append import AppendPlan, append_plan_for, fast_append
from chatql.gql.plans.chat_events import (
    ChatEventsPlan,
    ChatEventsRelay,
    chat_events_relay,
    serve_chat_events,
)
from chatql.gql.plans.compiled_reads import CompiledReads
from chatql.gql.plans.push import PushPlan, fast_push, push_plan_for
from chatql.gql.settings import Settings

__all__ = ["PLANS", "Planner", "RegisteredPlan"]


@dataclass(frozen=True, slots=True)
class RegisteredPlan:
    """One fast path: its name (for ``CHATQL_DISABLED_PLANS``), what it serves, where."""

    name: str
    #: ``query``, ``mutation`` or ``subscription``.
    operation: str
    #: The root fields whose documents the plan answers.
    fields: tuple[str, ...]
    #: ``http``, ``sse`` and/or ``ws`` (both WebSocket subprotocols).
    transports: frozenset[str]
    summary: str


#: Every plan chatql has. A new fast path is added here, or it does not exist.
PLANS: tuple[RegisteredPlan, ...] = (
    RegisteredPlan("reads", "query", ("messages", "chats", "chat"), frozenset({"http"}),
                   "pages of messages, the chat list and a chat with its newest message, "
                   "filled from one prepared statement"),
    RegisteredPlan("push", "mutation", ("pushChunks",), frozenset({"http", "ws"}),
                   "a producer's chunks handed straight to the stream service"),
    RegisteredPlan("append", "mutation", ("appendMessages",), frozenset({"http"}),
                   "an idempotent append written without the view's request steps"),
    RegisteredPlan("chat_events", "subscription", ("chatEvents",),
                   frozenset({"sse", "ws"}),
                   "the live chat list: each event serialised once per selection"),
    RegisteredPlan("chat_stream", "subscription", ("chatStream",), frozenset({"ws"}),
                   "a live stream: each run of chunks framed once for every subscriber"),
)
PLAN_NAMES = frozenset(plan.name for plan in PLANS)

_PUSH_PLANS_KEPT = 256
_APPEND_PLANS_KEPT = 256
_EVENT_PLANS_KEPT = 512
_STREAM_PLANS_KEPT = 512


class Planner:
    """The plans of one app: their caches, their switches and what they served."""

    def __init__(self, schema: Any, settings: Settings) -> None:
        unknown = sorted(set(settings.disabled_plans) - PLAN_NAMES)
        if unknown:
            raise ConfigurationError(
                f"CHATQL_DISABLED_PLANS names unknown plans {', '.join(unknown)}; "
                f"the plans are {', '.join(sorted(PLAN_NAMES))}")
        self.schema = schema
        self.settings = settings
        #: The plans in use; any other operation is the executor's. Read on every
        #: request, so a plan switched off here is off at once.
        self.enabled: frozenset[str] = PLAN_NAMES - set(settings.disabled_plans)
        #: How many operations each plan answered (the executor answered the rest).
        self.served: Counter[str] = Counter()
        self.reads = CompiledReads(schema, settings)
        self.push_plans: PlanCache[PushPlan] = PlanCache(_PUSH_PLANS_KEPT)
        self.append_plans: PlanCache[AppendPlan] = PlanCache(_APPEND_PLANS_KEPT)
        self.event_plans: PlanCache[ChatEventsPlan] = PlanCache(_EVENT_PLANS_KEPT)
        self.stream_plans: PlanCache[Any] = PlanCache(_STREAM_PLANS_KEPT)
        #: The operations a plain HTTP POST may take before the view (see
        #: gql/fast_lanes.py), with the plan each belongs to.
        self.lanes: tuple[tuple[str, Lane], ...] = (
            ("push", Lane((b"pushChunks",), self._push_plan, self.push)),
            ("append", Lane((b"appendMessages",), self._append_plan, self.append)),
            ("reads", Lane((b"messages", b"chat"), self.reads.plan_for, self._read)),
        )

    # -- HTTP ---------------------------------------------------------------------------

    def may_take_lane(self, body: bytes) -> bool:
        """Whether a plain POST's body names a mutation a lane in use answers (a cheap
        look before the body is parsed)."""
        return any(lane.may_serve(body) for name, lane in self.lanes if name in self.enabled)

    def lane_for(self, body: bytes, query: str, operation_name: str | None) -> Lane | None:
        """The lane whose plan fits this plain POST's document, or None."""
        for name, lane in self.lanes:
            if name in self.enabled and lane.may_serve(body) and (
                    lane.plan(query, operation_name) is not None):
                return lane
        return None

    async def execute(self, context: Context, query: str | None,
                      operation_name: str | None,
                      variables: dict[str, Any] | None) -> dict[str, Any] | None:
        """The ``data`` of one read a plan answers, or None (the executor's): for the
        reads lane, and inside the view for a read no lane took (a GET, a batch). A
        mutation's plan has its one door before the view (:meth:`lane_for`), and a
        mutation the lane declined is the executor's."""
        if "reads" in self.enabled and query:
            data = await self.reads.execute(context, query, operation_name, variables)
            if data is not None:
                self.served["reads"] += 1
                return data
        return None

    async def _read(self, context: Context, query: str | None, operation_name: str | None,
                    variables: dict[str, Any] | None, *,
                    nul_free: bool = False) -> dict[str, Any] | None:
        """``{"data": …}`` of a read its plan answered before the view, or None."""
        data = await self.execute(context, query, operation_name, variables)
        return None if data is None else {"data": data}

    def _push_plan(self, query: str | None, operation_name: str | None) -> PushPlan | None:
        return push_plan_for(self.schema, query, operation_name, self.push_plans)

    def _append_plan(self, query: str | None,
                     operation_name: str | None) -> AppendPlan | None:
        return append_plan_for(self.schema, query, operation_name, self.settings,
                               self.append_plans)

    async def push(self, context: Context, query: str | None, operation_name: str | None,
                   variables: dict[str, Any] | None, *,
                   nul_free: bool = False) -> dict[str, Any] | None:
        """``{"data": …}`` of a ``pushChunks`` its plan answered, or None."""
        if "push" not in self.enabled:
            return None
        answered = await fast_push(self.schema, context, query, operation_name, variables,
                                   self.push_plans, nul_free=nul_free)
        if answered is not None:
            self.served["push"] += 1
        return answered

    async def append(self, context: Context, query: str | None, operation_name: str | None,
                     variables: dict[str, Any] | None, *,
                     nul_free: bool = False) -> dict[str, Any] | None:
        """``{"data": …}`` of an ``appendMessages`` its plan answered, or None."""
        if "append" not in self.enabled:
            return None
        answered = await fast_append(self.schema, context, query, operation_name, variables,
                                     self.append_plans, nul_free=nul_free)
        if answered is not None:
            self.served["append"] += 1
        return answered

    # -- Server-Sent Events ------------------------------------------------------------

    def sse_relay(self, context: Context, query: str | None, operation_name: str | None,
                  variables: dict[str, Any] | None) -> ChatEventsRelay | None:
        """The relay of a ``chatEvents`` subscription over SSE, or None."""
        if "chat_events" not in self.enabled:
            return None
        relay = chat_events_relay(self.schema, context, query, operation_name, variables,
                                  self.event_plans)
        if relay is not None:
            self.served["chat_events"] += 1
        return relay

    # -- WebSocket ---------------------------------------------------------------------

    async def serve_chat_events(self, context: Context, query: str | None,
                                operation_name: str | None,
                                variables: dict[str, Any] | None,
                                envelope: Callable[[str], str],
                                send: Callable[[str], Awaitable[None]],
                                write: Callable[[str], bool] | None = None) -> bool:
        """Relay a ``chatEvents`` subscription on a socket until it ends; False (having
        done nothing) when the executor must run it."""
        if "chat_events" not in self.enabled:
            return False

        def counted() -> None:
            self.served["chat_events"] += 1

        return await serve_chat_events(self.schema, context, query, operation_name,
                                       variables, envelope, send, write, self.event_plans,
                                       on_relay=counted)
