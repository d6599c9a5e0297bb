"""A fast path for ``appendMessages``, the mutation every chat sends for every message.

Executing ``appendMessages`` the ordinary way spends about as long in the view and in
graphql-core's generic variable coercion and Strawberry's argument conversion as in
the store. Here an ``appendMessages`` document is parsed and validated (with the
service's document limits) once per distinct text, then cached; each request's
arguments — from its variables or from literals in the document, read once when the
plan is made — are converted by the ``MessageInput`` converter the resolver uses too
(gql/schema/inputs.py, read from the schema when the plan is made) and handed straight to the
store, so a field added to ``MessageInput`` is converted here as everywhere.

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

from dataclasses import dataclass
from typing import Any, ClassVar

from graphql import (
    FieldNode,
    GraphQLError,
    NonNullTypeNode,
    OperationType,
    ValueNode,
    VariableNode,
    parse,
    specified_rules,
    validate,
    value_from_ast_untyped,
)
from graphql.language import Visitor, visit

from chatql.gql.document_shapes import (
    MAX_FAST_DOCUMENT,
    PlanCache,
    sole_root_field,
)
from chatql.gql.errors import failed_root_field
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.ops.limits import limit_rules
from chatql.gql.plans.plan import Call
from chatql.gql.plans.shapes import NoShape, Refused, Shape, object_shape, result_type
from chatql.gql.schema.announce import announce_append
from chatql.gql.schema.inputs import InputConverter
from chatql.gql.settings import Settings
from chatql.store.errors import ChatArchived
from chatql.store.messages import message as store_messages

__all__ = ["AppendMessages", "AppendPlan", "append_plan_for"]

_FIELD = "appendMessages"
_PLANS_KEPT = 256
_ARGUMENTS = frozenset({"chatId", "appendId", "messages", "parentId"})


@dataclass(frozen=True, slots=True)
class Argument:
    """Where an argument's value comes from: a variable, else the document's literal."""

    variable: str | None
    literal: Any
    #: The variable is declared non-null (a null value is GraphQL's error, not ours).
    required: bool


@dataclass(frozen=True, slots=True)
class AppendPlan:
    response_key: str
    #: The root field, where a refused append's error is located.
    field: FieldNode
    #: Fills the selected ``AppendReceipt`` from the store's receipt.
    receipt: Shape
    arguments: dict[str, Argument]
    #: ``MessageInput`` values to ``NewMessage``, read from the schema the plan was made
    #: from.
    messages: InputConverter


class _HasVariable(Visitor):
    found = False

    def enter_variable(self, *_: Any) -> None:
        self.found = True


def _literal_free_of_variables(node: ValueNode) -> bool:
    visitor = _HasVariable()
    visit(node, visitor)
    return not visitor.found


def _plan(query: str, operation_name: str | None, schema: Any,
          limits: tuple[int, int, int]) -> AppendPlan | None:
    max_depth, max_aliases, max_tokens = limits
    try:
        document = parse(query, max_lexical_tokens=max_tokens, max_comments=max_tokens)
    except GraphQLError:
        return None
    found = sole_root_field(document, operation_name, OperationType.MUTATION, _FIELD)
    if found is None:
        return None
    operation, root = found
    declared = {}
    for definition in operation.variable_definitions or ():
        if definition.default_value is not None or definition.directives:
            return None
        declared[definition.variable.name.value] = isinstance(definition.type, NonNullTypeNode)
    arguments: dict[str, Argument] = {}
    for argument in root.arguments or ():
        name, value = argument.name.value, argument.value
        if name not in _ARGUMENTS:
            return None
        if isinstance(value, VariableNode):
            variable = value.name.value
            arguments[name] = Argument(variable, None, declared.get(variable, False))
        elif _literal_free_of_variables(value):
            arguments[name] = Argument(None, value_from_ast_untyped(value), True)
        else:
            return None
    # Validated last: only documents that can take the path pay for it, once.
    rules = (*specified_rules, *limit_rules(max_depth, max_aliases))
    if validate(graphql_core_schema(schema), document, rules):
        return None
    try:
        converter = InputConverter(schema, "MessageInput", store_messages.NewMessage)
    except TypeError:  # a MessageInput field with nowhere to go: the resolver says so
        return None
    mutation = graphql_core_schema(schema).mutation_type
    assert mutation is not None and root.selection_set is not None
    try:
        receipt = object_shape(result_type(mutation.fields[_FIELD].type), root.selection_set)
    except NoShape:
        return None
    return AppendPlan(response_key=(root.alias or root.name).value, field=root, receipt=receipt,
                      arguments=arguments, messages=converter)


def append_plan_for(schema: Any, query: str | None, operation_name: str | None,
                    settings: Any, plans: PlanCache[AppendPlan]) -> AppendPlan | None:
    """The plan for an ``appendMessages`` document under ``settings``' limits, kept in
    ``plans`` (the app's), or None."""
    # Long documents go the ordinary way (and never fill the cache).
    if not query or len(query) > MAX_FAST_DOCUMENT or _FIELD not in query:
        return None
    limits = (settings.max_query_depth, settings.max_query_aliases, settings.max_query_tokens)
    key = (id(schema), query, operation_name, limits)
    return plans.get(key, lambda: _plan(query, operation_name, schema, limits))


def _id(value: Any) -> str | None:
    """GraphQL's ``ID`` of a variable's value (a string or a whole number), or None."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    return None


_ABSENT = object()


def _arguments(plan: AppendPlan, variables: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments' values as GraphQL would coerce them, or None (not sure they are)."""
    values: dict[str, Any] = {}
    for name, argument in plan.arguments.items():
        if argument.variable is None:
            values[name] = argument.literal
            continue
        value = variables.get(argument.variable, _ABSENT)
        if value is _ABSENT or (value is None and argument.required):
            return None
        values[name] = value
    return values


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
        self.plans: PlanCache[AppendPlan] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> AppendPlan | None:
        return append_plan_for(self.schema, query, operation_name, self.settings, self.plans)

    async def run(self, plan: AppendPlan, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of the append, or None (the executor's).

        Only a request known to hold no NUL is taken (``call.nul_free``): the ordinary
        path, which refuses NUL, answers the others.
        """
        if not call.nul_free:
            return None
        values = _arguments(plan, call.variables or {})
        if values is None:
            return None
        chat_id, append_id = _id(values.get("chatId")), values.get("appendId")
        parent_id = values.get("parentId")
        raw = values.get("messages")
        if chat_id is None or type(append_id) is not str or type(raw) is not list:
            return None
        if parent_id is not None:
            parent_id = _id(parent_id)
            if parent_id is None:
                return None
        batch = []
        for item in raw:
            message = plan.messages.from_json(item)
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
        try:
            return {"data": {plan.response_key: plan.receipt(receipt)}}
        except Refused as error:  # written, but not answerable as the schema says
            return failed_root_field(self.schema, plan.field, error)
