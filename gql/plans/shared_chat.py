"""A fast path for ``sharedChat``: a share link's page, read by everyone it is sent to.

A link of a long conversation is a few hundred messages, and the general executor
spends far longer walking their fields than the database spends finding them (one
statement: store/keeping/shares.py). Here a ``sharedChat`` document is parsed and
validated once per text, under the same rules and limits as the executor's, and its
selection becomes a shape read from the schema when the plan is made: each selected
field of ``SharedChat`` and ``SharedMessage`` must be a plain attribute of the store's
record (no arguments, no resolver of its own) whose value is a scalar, an enum, or
— for ``messages`` — a list of such objects, coerced by the field's own type as the
executor coerces it. Anything else (a field with a resolver, a directive, a shape not
seen here) has no plan, and a request whose answer is not the plain one — a link that
does not open, a variable that does not coerce, a value a type refuses — is declined
before its view is counted, so every error is the executor's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    parse,
    specified_rules,
)
from graphql.execution.values import get_argument_values, get_variable_values
from strawberry.schema.schema import validate_document

from chatql.gql.document_shapes import PlanCache, has_nul, plain_attribute, sole_root_field
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.ops.limits import limit_rules
from chatql.gql.plans.plan import Call
from chatql.gql.schema.share_types import reader_tenant
from chatql.gql.settings import Settings
from chatql.store.errors import ChatArchived, ChatqlError
from chatql.store.keeping import shares as store_shares

__all__ = ["SharedChatPlan"]

logger = logging.getLogger("chatql")

_PLANS_KEPT = 256
#: Longer documents are not worth a plan (and must not fill the cache).
_MAX_DOCUMENT = 4_000
_FIELD = "sharedChat"

#: One selected field: its response key and how its value is made from the record —
#: a constant (``__typename``), a leaf (attribute, coercer, nullable) or a list of
#: objects (attribute, the objects' shape).
_Leaf = tuple[str, Callable[[Any], Any], bool]
_Shape = tuple[tuple[str, str, Any], ...]


class _NoPlan(Exception):
    """The document is not one this plan serves."""


class _Decline(Exception):
    """This request must run the ordinary way."""


@dataclass(frozen=True, slots=True)
class _SharedPlan:
    operation: OperationDefinitionNode
    field: Any
    node: FieldNode
    response_key: str
    shape: _Shape


def _shape(kind: GraphQLObjectType, node: FieldNode, depth: int) -> _Shape:
    """How each field ``node`` selects on ``kind`` is made (see :data:`_Shape`)."""
    assert node.selection_set is not None
    made: list[tuple[str, str, Any]] = []
    for selection in node.selection_set.selections:
        if not isinstance(selection, FieldNode) or selection.directives or selection.arguments:
            raise _NoPlan
        key, name = (selection.alias or selection.name).value, selection.name.value
        if name == "__typename":
            made.append((key, "constant", kind.name))
            continue
        field_def = kind.fields.get(name)
        attribute = None if field_def is None else plain_attribute(field_def)
        if field_def is None or attribute is None:
            raise _NoPlan
        nullable = not isinstance(field_def.type, GraphQLNonNull)
        inner = field_def.type if nullable else field_def.type.of_type
        if isinstance(inner, GraphQLList):
            item = inner.of_type
            if (depth > 0 or not isinstance(item, GraphQLNonNull)
                    or not isinstance(item.of_type, GraphQLObjectType)
                    or selection.selection_set is None):
                raise _NoPlan
            made.append((key, "objects", (attribute, _shape(item.of_type, selection,
                                                            depth + 1))))
        elif isinstance(inner, GraphQLObjectType) or selection.selection_set is not None:
            raise _NoPlan
        else:
            made.append((key, "leaf", (attribute, inner.coerce_output_value, nullable)))
    return tuple(made)


def _compile(schema: GraphQLSchema, query: str, operation_name: str | None,
             settings: Settings) -> _SharedPlan | None:
    try:
        document = parse(query, max_lexical_tokens=settings.max_query_tokens,
                         max_comments=settings.max_query_tokens)
    except GraphQLError:
        return None
    found = sole_root_field(document, operation_name, OperationType.QUERY, _FIELD)
    if found is None:
        return None
    rules = (*specified_rules,
             *limit_rules(settings.max_query_depth, settings.max_query_aliases))
    if validate_document(schema, document, rules):
        return None
    operation, root = found
    query_type = schema.query_type
    assert query_type is not None
    field = query_type.fields[_FIELD]
    kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    if not isinstance(kind, GraphQLObjectType):
        return None
    try:
        shape = _shape(kind, root, 0)
    except _NoPlan:
        return None
    return _SharedPlan(operation=operation, field=field, node=root,
                       response_key=(root.alias or root.name).value, shape=shape)


def _fill(shape: _Shape, record: Any) -> dict[str, Any]:
    """The response object of ``record``; :class:`_Decline` where the executor would
    report an error (a null in a non-null field, a value its type refuses)."""
    out: dict[str, Any] = {}
    for key, how, what in shape:
        if how == "constant":
            out[key] = what
        elif how == "leaf":
            attribute, coerce, nullable = what
            value = getattr(record, attribute)
            if value is None:
                if not nullable:
                    raise _Decline
                out[key] = None
                continue
            coerced = coerce(value)
            if coerced is None:
                raise _Decline
            out[key] = coerced
        else:
            attribute, inner = what
            out[key] = [_fill(inner, item) for item in getattr(record, attribute)]
    return out


class SharedChatPlan:
    """The ``sharedChat`` plan: a link's branch filled from one statement's rows."""

    name: ClassVar[str] = "shared_chat"
    operation: ClassVar[str] = "query"
    fields: ClassVar[tuple[str, ...]] = (_FIELD,)
    transports: ClassVar[frozenset[str]] = frozenset({"http"})
    summary: ClassVar[str] = ("a share link's branch, filled from one statement's rows")

    def __init__(self, schema: Any, settings: Settings) -> None:
        self._schema = graphql_core_schema(schema)
        self._settings = settings
        self._plans: PlanCache[_SharedPlan] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str | None, operation_name: str | None) -> _SharedPlan | None:
        if not query or len(query) > _MAX_DOCUMENT or _FIELD not in query:
            return None
        return self._plans.get((query, operation_name), lambda: _compile(
            self._schema, query, operation_name, self._settings))

    async def run(self, plan: _SharedPlan, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of the link's read, or None (run it the ordinary way)."""
        variables = call.variables or {}
        if has_nul(variables):
            return None
        coerced = get_variable_values(self._schema, plan.operation.variable_definitions or (),
                                      variables, max_errors=1)
        if isinstance(coerced, list):
            return None
        token = get_argument_values(plan.field, plan.node, coerced).get("token")
        if not isinstance(token, str):
            return None
        context = call.context
        services = context.services
        try:
            shared = await store_shares.read_shared(
                services.db, token, tenant_id=reader_tenant(context), archive=services.archive)
            answer = _fill(plan.shape, shared)
        except (_Decline, ChatqlError, ChatArchived):
            return None
        except Exception:  # the ordinary path reports whatever this was, properly
            logger.debug("a shared chat read fell back", exc_info=True)
            return None
        if services.share_views is not None:
            services.share_views.count(shared.share_id)
        return {"data": {plan.response_key: answer}}
