"""The request planner: every fast plan is registered here and asked through one door.

Most operations run on Strawberry's executor. A handful of documents are sent so often —
a page of messages, a producer's ``pushChunks``, a chat's ``appendMessages``, a live
sidebar's ``chatEvents``, a viewer's ``chatStream``, a share link's ``sharedChat`` —
that walking them field by field costs more than the work itself. Each of those is a
:class:`~gql.plans.plan.Plan`, made once per document text from the schema field it
serves (its shapes, argument defaults and conversions read from the schema when the
document is compiled), and run instead of the executor when a request fits it.
:data:`PLANS` lists every plan; nothing else answers an operation outside the executor.

Every transport asks the app's :class:`Planner` the same way:
:meth:`Planner.find` gives the plan that compiled the document on that transport (or
None: the executor's), and :meth:`Planned.run` answers one request with it or declines.
A plain POST is offered to the plans before the view's request machinery (and, for a
read the lane did not see — a GET, a batch — inside the view); Server-Sent Events and
both WebSocket subprotocols offer their subscriptions (and a socket's ``pushChunks``).

A plan can be switched off by name with ``CHATQL_DISABLED_PLANS`` (comma-separated; the
executor then answers those operations), and the planner counts what each plan answered
(:attr:`Planner.served`), which the differential tests read to prove that a plan still
serves the documents it was made for: a field added to a type either flows through its
plan or fails them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from chatql.gql.auth import ConfigurationError
from chatql.gql.plans.append import AppendMessages
from chatql.gql.plans.chat_events import ChatEvents
from chatql.gql.plans.chat_stream import ChatStream
from chatql.gql.plans.compiled_reads import CompiledReads
from chatql.gql.plans.plan import TRANSPORTS, Answer, Call, Plan
from chatql.gql.plans.push import PushChunks
from chatql.gql.plans.shared_chat import SharedChatPlan
from chatql.gql.settings import Settings

__all__ = ["PLANS", "Planned", "Planner"]

#: Every plan chatql has, in the order a transport offers them a document. A new fast
#: path is added here, or it does not exist.
PLANS: tuple[type[Plan[Any]], ...] = (PushChunks, AppendMessages, CompiledReads, ChatEvents,
                                      ChatStream, SharedChatPlan)
PLAN_NAMES = frozenset(plan.name for plan in PLANS)


@dataclass(frozen=True, slots=True)
class Planned:
    """A document a plan compiled, ready to answer requests."""

    planner: Planner
    plan: Plan[Any]
    compiled: Any

    async def run(self, call: Call) -> Answer | None:
        """The plan's answer to ``call``, or None, having done nothing: the executor's."""
        answer = await self.plan.run(self.compiled, call)
        if answer is not None:
            self.planner.served[self.plan.name] += 1
        return answer


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
        #: Each plan, made for this app's schema and settings, by name.
        self.plans: dict[str, Plan[Any]] = {kind.name: kind(schema, settings)  # type: ignore[call-arg]
                                            for kind in PLANS}
        self._offered = {transport: tuple(plan for plan in self.plans.values()
                                          if transport in plan.transports)
                         for transport in TRANSPORTS}
        self._named = tuple((plan.name, tuple(field.encode() for field in plan.fields))
                            for plan in self._offered["http"])

    def may_answer(self, body: bytes) -> bool:
        """Whether a plain POST's body names a root field a plan in use on HTTP
        answers (a cheap look before the body is parsed)."""
        enabled = self.enabled
        return any(name in enabled and any(field in body for field in fields)
                   for name, fields in self._named)

    def find(self, transport: str, query: str | None, operation_name: str | None, *,
             operation: str | None = None) -> Planned | None:
        """The plan in use on ``transport`` (and for ``operation``, when given) that
        compiled the document, or None: the executor answers it."""
        if not query:
            return None
        enabled = self.enabled
        for plan in self._offered[transport]:
            if plan.name not in enabled or (operation is not None
                                            and plan.operation != operation):
                continue
            compiled = plan.compile(query, operation_name)
            if compiled is not None:
                return Planned(self, plan, compiled)
        return None
