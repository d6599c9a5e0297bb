"""What a fast mutation plan is made of: one root field, its arguments from variables or
literals, its input list converted as the resolver converts it, its result filled from
the schema's shape.

A mutation plan (``append``, ``push``) is a document compiled here once per distinct
text (:func:`compile_mutation`), then per request: :func:`argument_values` reads the
arguments as GraphQL would coerce them (or says it is not sure), the plan converts its
input list with :attr:`MutationDocument.inputs` and calls the store, and
:func:`answer` fills the selection — or, for a write that failed or cannot be answered
as the schema says, gives the error the executor would
(:func:`gql.errors.failed_root_field`). What is particular to each plan is only its
root field, its input type and the store call.

A document compiles only when it is one root field of a mutation, without fragments on
the root, directives or variables with defaults, with arguments that are variables or
literals holding none, and it validates against the schema (and the service's document
limits, when given). Anything else is the executor's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

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

from chatql.gql.document_shapes import MAX_FAST_DOCUMENT, PlanCache, sole_root_field
from chatql.gql.errors import failed_root_field
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.ops.limits import limit_rules
from chatql.gql.plans.shapes import NoShape, Refused, Shape, object_shape, result_type
from chatql.gql.schema.inputs import InputConverter

__all__ = ["Argument", "MutationDocument", "answer", "argument_values", "compile_mutation",
           "graphql_id", "mutation_plan_for"]

#: Limits as ``(max depth, max aliases, max tokens)``.
Limits = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Argument:
    """Where an argument's value comes from: a variable, else the document's literal."""

    variable: str | None
    literal: Any
    #: The variable is declared non-null (a null value is GraphQL's error, not ours).
    required: bool


@dataclass(frozen=True, slots=True)
class MutationDocument:
    """A compiled document of one mutation field."""

    response_key: str
    #: The root field, where a refused write's error is located.
    field: FieldNode
    #: Fills the selected result type from what the store gave back.
    result: Shape
    arguments: dict[str, Argument]
    #: The input list's values to the store's records, read from the schema the plan was
    #: made from (the converter the resolver uses too).
    inputs: InputConverter


class _HasVariable(Visitor):
    found = False

    def enter_variable(self, *_: Any) -> None:
        self.found = True


def _free_of_variables(node: ValueNode) -> bool:
    visitor = _HasVariable()
    visit(node, visitor)
    return not visitor.found


def compile_mutation(query: str, operation_name: str | None, schema: Any, *, field: str,
                     arguments: Collection[str], input_type: str, record: type,
                     limits: Limits | None = None) -> MutationDocument | None:
    """``query`` compiled for the mutation ``field`` taking ``arguments``, its input list
    of ``input_type`` converted to ``record``; None when it is not one the plan serves."""
    try:
        if limits is None:
            document = parse(query)
        else:
            document = parse(query, max_lexical_tokens=limits[2], max_comments=limits[2])
    except GraphQLError:
        return None
    found = sole_root_field(document, operation_name, OperationType.MUTATION, field)
    if found is None:
        return None
    operation, root = found
    declared = {}
    for definition in operation.variable_definitions or ():
        if definition.default_value is not None or definition.directives:
            return None
        declared[definition.variable.name.value] = isinstance(definition.type, NonNullTypeNode)
    taken: dict[str, Argument] = {}
    for argument in root.arguments or ():
        name, value = argument.name.value, argument.value
        if name not in arguments:
            return None
        if isinstance(value, VariableNode):
            variable = value.name.value
            taken[name] = Argument(variable, None, declared.get(variable, False))
        elif _free_of_variables(value):
            taken[name] = Argument(None, value_from_ast_untyped(value), True)
        else:
            return None
    # Validated last: only documents that can take the path pay for it, once.
    rules = specified_rules if limits is None else (*specified_rules,
                                                    *limit_rules(limits[0], limits[1]))
    if validate(graphql_core_schema(schema), document, rules):
        return None
    try:
        inputs = InputConverter(schema, input_type, record)
    except TypeError:  # an input field with nowhere to go: the resolver says so
        return None
    mutation = graphql_core_schema(schema).mutation_type
    assert mutation is not None and root.selection_set is not None
    try:
        result = object_shape(result_type(mutation.fields[field].type), root.selection_set)
    except NoShape:
        return None
    return MutationDocument(response_key=(root.alias or root.name).value, field=root,
                            result=result, arguments=taken, inputs=inputs)


def mutation_plan_for(query: str | None, field: str, key: tuple[Any, ...],
                      plans: PlanCache[MutationDocument],
                      make: Callable[[str], MutationDocument | None]
                      ) -> MutationDocument | None:
    """The compiled document for ``query``, kept in ``plans`` under ``(*key, query)``;
    None at once for a document not naming ``field``. Long documents go the ordinary
    way, through the document limits, and never fill the cache."""
    if not query or len(query) > MAX_FAST_DOCUMENT or field not in query:
        return None
    return plans.get((*key, query), lambda: make(query))


_ABSENT = object()


def argument_values(document: MutationDocument,
                    variables: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments' values as GraphQL would coerce them, or None (not sure they are)."""
    values: dict[str, Any] = {}
    for name, argument in document.arguments.items():
        if argument.variable is None:
            values[name] = argument.literal
            continue
        value = variables.get(argument.variable, _ABSENT)
        if value is _ABSENT or (value is None and argument.required):
            return None
        values[name] = value
    return values


def graphql_id(value: Any) -> str | None:
    """GraphQL's ``ID`` of a value (a string or a whole number), or None."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    return None


def answer(schema: Any, document: MutationDocument, result: Any) -> dict[str, Any]:
    """``{"data": …}`` of a write that succeeded, or — written, but not answerable as
    the schema says — the executor's error for it."""
    try:
        return {"data": {document.response_key: document.result(result)}}
    except Refused as error:
        return failed_root_field(schema, document.field, error)
