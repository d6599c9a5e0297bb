"""A fast path for ``appendMessages``, the mutation every chat sends for every message.

Executing ``appendMessages`` the ordinary way spends about as long in the view and in
graphql-core's generic variable coercion and Strawberry's argument conversion as in
the store. Here an ``appendMessages`` document is compiled as every fast mutation is
(gql/plans/mutation.py: parsed and validated with the service's document limits once
per distinct text, then cached); each request's arguments — from its variables or from
literals in the document — are converted by the ``MessageInput`` converter the resolver
uses too (gql/schema/inputs.py, read from the schema when the plan is made) and handed
straight to the store, so a field added to ``MessageInput`` is converted here as
everywhere.

Anything unusual — another operation, fragments, directives, variables with
defaults or left out, a value of an unexpected type, NUL anywhere — returns None
before anything is written and the request runs the ordinary way. Once the store was
called, a failure is never followed by a second attempt: it is answered here with the
error the executor would give (:func:`gql.errors.failed_root_field`), for the one
attempt the caller made. The only exception is a chat whose messages are in the
archive: the store refuses it before writing, and the ordinary path brings the chat
back and appends.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chatql.gql.document_shapes import PlanCache
from chatql.gql.errors import failed_root_field
from chatql.gql.plans.mutation import (
    MutationDocument,
    answer,
    argument_values,
    compile_mutation,
    graphql_id,
    mutation_plan_for,
)
from chatql.gql.plans.plan import Call
from chatql.gql.schema.announce import announce_append
from chatql.gql.settings import Settings
from chatql.store.errors import ChatArchived
from chatql.store.messages import message as store_messages

__all__ = ["AppendMessages", "append_plan_for"]

_FIELD = "appendMessages"
_PLANS_KEPT = 256
_ARGUMENTS = frozenset({"chatId", "appendId", "messages", "parentId"})


def append_plan_for(schema: Any, query: str | None, operation_name: str | None,
                    settings: Any, plans: PlanCache[MutationDocument]
                    ) -> MutationDocument | None:
    """The plan for an ``appendMessages`` document under ``settings``' limits, kept in
    ``plans`` (the app's), or None."""
    limits = (settings.max_query_depth, settings.max_query_aliases, settings.max_query_tokens)
    return mutation_plan_for(query, _FIELD, (id(schema), operation_name, limits), plans,
                             lambda text: compile_mutation(
                                 text, operation_name, schema, field=_FIELD,
                                 arguments=_ARGUMENTS, input_type="MessageInput",
                                 record=store_messages.NewMessage, limits=limits))


class AppendMessages:
    """The ``appendMessages`` plan: an idempotent append without the view's steps."""

    name: ClassVar[str] = "append"
    operation: ClassVar[str] = "mutation"
    fields: ClassVar[tuple[str, ...]] = (_FIELD,)
    transports: ClassVar[frozenset[str]] = frozenset({"http"})
    summary: ClassVar[str] = "an idempotent append written without the view's request steps"

    def __init__(self, schema: Any, settings: Settings) -> None:
        self.schema = schema
        self.settings = settings
        self.plans: PlanCache[MutationDocument] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> MutationDocument | None:
        return append_plan_for(self.schema, query, operation_name, self.settings, self.plans)

    async def run(self, plan: MutationDocument, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of the append, or None (the executor's).

        Only a request known to hold no NUL is taken (``call.nul_free``): the ordinary
        path, which refuses NUL, answers the others.
        """
        if not call.nul_free:
            return None
        values = argument_values(plan, call.variables or {})
        if values is None:
            return None
        chat_id, append_id = graphql_id(values.get("chatId")), values.get("appendId")
        parent_id = values.get("parentId")
        raw = values.get("messages")
        if chat_id is None or type(append_id) is not str or type(raw) is not list:
            return None
        if parent_id is not None:
            parent_id = graphql_id(parent_id)
            if parent_id is None:
                return None
        batch = []
        for item in raw:
            message = plan.inputs.from_json(item)
            if message is None:
                return None
            batch.append(message)
        context = call.context
        services = context.services
        try:
            # The archive check rides on the append's own lock read, as on the ordinary
            # path.
            receipt = await store_messages.append_messages(
                services.db, context.identity, chat_id, append_id, batch,
                parent_id=parent_id, stop_archived=services.archive is not None)
        except ChatArchived:
            return None  # nothing written: the ordinary path brings the chat back first
        except Exception as error:
            return failed_root_field(self.schema, plan.field, error)
        try:
            await announce_append(context, receipt)
        except Exception as error:
            return failed_root_field(self.schema, plan.field, error)
        return answer(self.schema, plan, receipt)
