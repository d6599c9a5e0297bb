"""A fast path for ``pushChunks``, the one mutation a producer sends thousands of times.

Executing ``pushChunks`` the ordinary way spends most of its time in graphql-core's
generic variable coercion and Strawberry's argument conversion, not in the stream.
Here a ``pushChunks`` document is parsed and validated against the schema once per
distinct text (then cached); each request's ``chunks`` variable is converted by the
``ChunkInput`` converter the resolver uses too (gql/schema/inputs.py, read from the schema
when the plan is made) and handed straight to the stream service, so a field added to
``ChunkInput`` is converted here as everywhere.

The document is compiled as every fast mutation is (gql/plans/mutation.py): anything
unusual — another operation, fragments on the root, directives, a variable with a
default, a value of an unexpected type — returns None before anything is pushed, and
the request runs the ordinary way. A push the stream service refused is answered here
with the error the executor would give (:func:`gql.errors.failed_root_field`), never run
a second time: a holder that lost its lease must not apply the batch on a second try
behind the caller's back.
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from chatql.gql.document_shapes import PlanCache, has_nul
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
from chatql.gql.settings import Settings
from chatql.store.errors import ChatqlError
from chatql.store.streams.reducer import ChunkIn

__all__ = ["PushChunks", "push_plan_for"]

_FIELD = "pushChunks"
_PLANS_KEPT = 256
_ARGUMENTS = frozenset({"streamId", "chunks"})


def push_plan_for(schema: Any, query: str | None, operation_name: str | None,
                  plans: PlanCache[MutationDocument]) -> MutationDocument | None:
    """The plan for a ``pushChunks`` document, kept in ``plans`` (the app's), or None."""
    # Plans are made from the schema's shapes: one cache entry per schema and document.
    return mutation_plan_for(query, _FIELD, (id(schema), operation_name), plans, lambda text:
                             compile_mutation(text, operation_name, schema, field=_FIELD,
                                              arguments=_ARGUMENTS, input_type="ChunkInput",
                                              record=ChunkIn))


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
    fields: ClassVar[tuple[str, ...]] = (_FIELD,)
    transports: ClassVar[frozenset[str]] = frozenset({"http", "ws"})
    summary: ClassVar[str] = "a producer's chunks handed straight to the stream service"

    def __init__(self, schema: Any, settings: Settings) -> None:
        self.schema = schema
        self.plans: PlanCache[MutationDocument] = PlanCache(_PLANS_KEPT)

    def compile(self, query: str, operation_name: str | None) -> MutationDocument | None:
        return push_plan_for(self.schema, query, operation_name, self.plans)

    async def run(self, plan: MutationDocument, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of the push, or None (the executor's)."""
        streams = call.context.services.streams
        if streams is None:
            return None
        values = argument_values(plan, call.variables or {})
        if values is None:
            return None
        stream_id, raw = graphql_id(values.get("streamId")), values.get("chunks")
        if stream_id is None or type(raw) is not list:
            return None
        chunks: list[ChunkIn] = []
        convert = plan.inputs.from_json
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
        return answer(self.schema, plan, result)
