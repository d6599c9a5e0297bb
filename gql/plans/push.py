"""A fast path for ``pushChunks``, the one mutation a producer sends thousands of times.

Executing ``pushChunks`` the ordinary way spends most of its time in graphql-core's
generic variable coercion and Strawberry's argument conversion, not in the stream.
Here a ``pushChunks`` document is parsed and validated against the schema once per
distinct text (then cached); each request's ``chunks`` variable is converted by the
``ChunkInput`` converter the resolver uses too (gql/schema/inputs.py, read from the schema
when the plan is made) and handed straight to the stream service, so a field added to
``ChunkInput`` is converted here as everywhere.

Anything unusual — another operation, fragments, directives, literal chunks, a value
of an unexpected type — returns None before anything is pushed, and the request runs
the ordinary way. A push the stream service refused is answered here with the error the
executor would give (:func:`gql.errors.failed_root_field`), never run a second time: a
holder that lost its lease must not apply the batch on a second try behind the caller's
back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson
from graphql import (
    FieldNode,
    GraphQLError,
    OperationType,
    StringValueNode,
    ValueNode,
    VariableNode,
    parse,
    validate,
)

from chatql.gql.document_shapes import MAX_FAST_DOCUMENT, PlanCache, has_nul, sole_root_field
from chatql.gql.errors import failed_root_field
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.plans.plan import Call
from chatql.gql.plans.shapes import NoShape, Refused, Shape, object_shape, result_type
from chatql.gql.schema.inputs import InputConverter
from chatql.gql.settings import Settings
from chatql.store.errors import ChatqlError
from chatql.store.streams.reducer import ChunkIn

__all__ = ["PushChunks", "PushPlan", "push_plan_for"]

_PLANS_KEPT = 256

@dataclass(frozen=True, slots=True)
class PushPlan:
    response_key: str
    #: The root field, where a refused push's error is located.
    field: FieldNode
    #: Fills the selected ``PushResult`` from the stream service's result.
    result: Shape
    stream_id: ValueNode
    chunks_variable: str
    #: ``ChunkInput`` values to ``ChunkIn``, read from the schema the plan was made from.
    chunks: InputConverter


def _plan(query: str, operation_name: str | None, schema: Any) -> PushPlan | None:
    try:
        document = parse(query)
    except GraphQLError:
        return None
    found = sole_root_field(document, operation_name, OperationType.MUTATION, "pushChunks")
    if found is None:
        return None
    _, root = found
    arguments = {argument.name.value: argument.value for argument in root.arguments or ()}
    chunks = arguments.get("chunks")
    stream_id = arguments.get("streamId")
    if not isinstance(chunks, VariableNode) or not isinstance(
        stream_id, (VariableNode, StringValueNode)
    ):
        return None
    # Validated last: only documents that can take the path pay for it, once.
    if validate(graphql_core_schema(schema), document):
        return None
    try:
        converter = InputConverter(schema, "ChunkInput", ChunkIn)
    except TypeError:  # a ChunkInput field with nowhere to go: the resolver says so
        return None
    mutation = graphql_core_schema(schema).mutation_type
    assert mutation is not None and root.selection_set is not None
    try:
        result = object_shape(result_type(mutation.fields["pushChunks"].type),
                              root.selection_set)
    except NoShape:
        return None
    return PushPlan(
        response_key=(root.alias or root.name).value,
        field=root,
        result=result,
        stream_id=stream_id,
        chunks_variable=chunks.name.value,
        chunks=converter,
    )


def push_plan_for(schema: Any, query: str | None, operation_name: str | None,
                  plans: PlanCache[PushPlan]) -> PushPlan | None:
    """The plan for a ``pushChunks`` document, kept in ``plans`` (the app's), or None."""
    # A real pushChunks document is ~150 characters; long ones (comments, padding) go
    # the ordinary way, through the document limits, and never fill the cache.
    if not query or len(query) > MAX_FAST_DOCUMENT or "pushChunks" not in query:
        return None
    # Plans are made from the schema's shapes: one cache entry per schema and document.
    key = (id(schema), query, operation_name)
    return plans.get(key, lambda: _plan(query, operation_name, schema))


def _may_hold_nul(raw: list[Any]) -> bool:
    """False when no string in ``raw`` holds NUL; True means look closer.

    JSON can only spell NUL as an escape, and orjson writes it as one: one encoding of
    the whole batch and a byte search are far cheaper than walking every value.
    """
    try:
        encoded = orjson.dumps(raw)
    except TypeError:  # integers beyond 64 bits (accepted by the lenient reader)
        return True
    return b"\\u0000" in encoded


class PushChunks:
    """The ``pushChunks`` plan: a producer's chunks handed straight to the stream service."""

    name: ClassVar[str] = "push"
    operation: ClassVar[str] = "mutation"
    fields: ClassVar[tuple[str, ...]] = ("pushChunks",)
    transports: ClassVar[frozenset[str]] = frozenset({"http", "ws"})
    summary: ClassVar[str] = "a producer's chunks handed straight to the stream service"

    def __init__(self, schema: Any, settings: Settings) -> None:
        self.schema = schema
        self.plans: PlanCache[PushPlan] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> PushPlan | None:
        return push_plan_for(self.schema, query, operation_name, self.plans)

    async def run(self, plan: PushPlan, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of the push, or None (the executor's)."""
        streams = call.context.services.streams
        if streams is None:
            return None
        variables = call.variables or {}
        if isinstance(plan.stream_id, VariableNode):
            stream_id = variables.get(plan.stream_id.name.value)
        else:
            stream_id = plan.stream_id.value  # type: ignore[attr-defined]
        if isinstance(stream_id, int) and not isinstance(stream_id, bool):
            stream_id = str(stream_id)
        raw = variables.get(plan.chunks_variable)
        if not isinstance(stream_id, str) or not isinstance(raw, list):
            return None
        chunks: list[ChunkIn] = []
        convert = plan.chunks.from_json
        for item in raw:
            chunk = convert(item)
            if chunk is None:
                return None
            chunks.append(chunk)
        if "\x00" in stream_id or (not call.nul_free and _may_hold_nul(raw) and has_nul(raw)):
            # NUL is refused with INVALID_ARGUMENT by the document limits (Postgres cannot
            # store it): the ordinary path says so.
            return None
        try:
            result = await streams.push_chunks(call.context.identity, stream_id, chunks)
        except ChatqlError as error:
            return failed_root_field(self.schema, plan.field, error)
        try:
            return {"data": {plan.response_key: plan.result(result)}}
        except Refused as error:  # written, but not answerable as the schema says
            return failed_root_field(self.schema, plan.field, error)
