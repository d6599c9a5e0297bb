"""A fast path for ``pushChunks``, the one mutation a producer sends thousands of times.

Executing ``pushChunks`` the ordinary way spends most of its time in graphql-core's
generic variable coercion and Strawberry's argument conversion, not in the stream.
Here a ``pushChunks`` document is parsed and validated against the schema once per
distinct text (then cached); each request's ``chunks`` variable is checked against the
``ChunkInput`` shape by hand and handed straight to the stream service. The shape is
read from the schema when the plan is made: if ``ChunkInput`` has a field this path
does not convert (one added later, say), no plan is made and every push runs the
ordinary way, so no field is ever skipped.

Anything unusual — another operation, fragments, directives, literal chunks, a value
of an unexpected type, or any error from the stream service — returns None and the
request runs the ordinary way. A push the stream service refused is never run twice:
the error is kept for the operation (:func:`gql.fast_lanes.keep_refusal`) and the
ordinary ``pushChunks`` resolver raises it instead of pushing again, so the caller sees exactly
the ordinary error for the attempt it made (a holder that lost its lease must not
apply the batch on a second try behind the caller's back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    OperationType,
    StringValueNode,
    ValueNode,
    VariableNode,
    parse,
    validate,
)

from chatql.gql.context import Context
from chatql.gql.document_shapes import (
    MAX_FAST_DOCUMENT,
    PlanCache,
    flat_root_field,
    has_nul,
    nests_within,
)
from chatql.gql.fast_lanes import clear_refusals, keep_refusal
from chatql.gql.library_adapters import graphql_core_schema
from chatql.store.errors import ChatqlError
from chatql.store.streams.reducer import ChunkIn

__all__ = ["PushPlan", "fast_push", "push_plan_for"]

_RESULT_FIELDS = frozenset({"accepted", "duplicates", "lastSeq", "__typename"})
_TEXT_FIELDS = ("chunkId", "messageId", "blockId", "threadId", "deltaPath", "deltaAction")
_CHUNK_FIELDS = frozenset({*_TEXT_FIELDS, "type", "role", "props", "delta", "tokens"})
_DELTA_FIELDS = frozenset({"type", "messageId", "delta", "props"})
_ROLES = frozenset({"USER", "ASSISTANT", "SYSTEM", "TOOL"})
# graphql-core refuses deeper variable values; keep the same limit here.
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class PushPlan:
    response_key: str
    fields: tuple[tuple[str, str], ...]
    stream_id: ValueNode
    chunks_variable: str


def _plan(query: str, operation_name: str | None, schema: Any) -> PushPlan | None:
    try:
        document = parse(query)
    except GraphQLError:
        return None
    shape = flat_root_field(document, operation_name, OperationType.MUTATION, "pushChunks",
                            _RESULT_FIELDS)
    if shape is None:
        return None
    _, root, fields = shape
    arguments = {argument.name.value: argument.value for argument in root.arguments or ()}
    chunks = arguments.get("chunks")
    stream_id = arguments.get("streamId")
    if not isinstance(chunks, VariableNode) or not isinstance(
        stream_id, (VariableNode, StringValueNode)
    ):
        return None
    # Validated last: only documents that can take the path pay for it, once.
    if not _converts_every_chunk_field(schema) or validate(graphql_core_schema(schema),
                                                           document):
        return None
    return PushPlan(
        response_key=(root.alias or root.name).value,
        fields=fields,
        stream_id=stream_id,
        chunks_variable=chunks.name.value,
    )


def _converts_every_chunk_field(schema: Any) -> bool:
    """True when :func:`_chunk` converts every field the schema's ``ChunkInput`` has."""
    shape = graphql_core_schema(schema).type_map.get("ChunkInput")
    return isinstance(shape, GraphQLInputObjectType) and _CHUNK_FIELDS.issuperset(
        shape.fields)


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


def _flat(props: dict[str, Any]) -> bool:
    """True when no value in ``props`` is an object or a list (no depth to check)."""
    # A loop, not all(): this runs for every chunk and a generator costs more.
    for item in props.values():  # noqa: SIM110
        if isinstance(item, (dict, list)):
            return False
    return True


def _chunk(value: Any) -> ChunkIn | None:
    """``value`` as a chunk when it has the ``ChunkInput`` shape, else None.

    Only the GraphQL types are checked here; the stream's own rules (lengths, delta
    actions, token range) are the reducer's, as on the ordinary path.
    """
    if not isinstance(value, dict):
        return None
    if value.keys() == _DELTA_FIELDS:
        # The shape of nearly every chunk a producer streams: a delta to one message.
        kind, message_id, delta, props = (value["type"], value["messageId"], value["delta"],
                                          value["props"])
        if type(kind) is str and type(message_id) is str and (
            delta is True or delta is False
        ) and type(props) is dict and _flat(props):
            return ChunkIn(kind, None, message_id, None, None, None, props, delta)
    if not _CHUNK_FIELDS.issuperset(value):
        return None
    get = value.get
    kind = get("type")
    chunk_id = get("chunkId")
    message_id = get("messageId")
    block_id = get("blockId")
    thread_id = get("threadId")
    delta_path = get("deltaPath")
    delta_action = get("deltaAction")
    if not isinstance(kind, str) or not (
        (chunk_id is None or isinstance(chunk_id, str))
        and (message_id is None or isinstance(message_id, str))
        and (block_id is None or isinstance(block_id, str))
        and (thread_id is None or isinstance(thread_id, str))
        and (delta_path is None or isinstance(delta_path, str))
        and (delta_action is None or isinstance(delta_action, str))
    ):
        return None
    role = get("role")
    if role is not None and role not in _ROLES:
        return None
    delta = get("delta", False)
    if delta is not None and delta is not True and delta is not False:
        return None
    tokens = get("tokens")
    # Int only (GraphQL's Int is 32-bit; anything else takes the ordinary path's error).
    if tokens is not None and (type(tokens) is not int or not 0 <= tokens < 2**31):
        return None
    props = get("props")
    # Most props are flat; only nested ones need the (recursive) depth check.
    if type(props) is dict:
        if not _flat(props) and not nests_within(props, _MAX_DEPTH):
            return None
    elif props is not None and not nests_within(props, _MAX_DEPTH):
        return None
    return ChunkIn(kind, chunk_id, message_id, block_id, thread_id, role, props,
                   delta is True, delta_path, delta_action, tokens)


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


async def fast_push(schema: Any, context: Context, query: str | None,
                    operation_name: str | None,
                    variables: dict[str, Any] | None, plans: PlanCache[PushPlan], *,
                    nul_free: bool = False) -> dict[str, Any] | None:
    """``{"data": …}`` of a ``pushChunks`` done the fast way, or None (run it normally).

    ``nul_free``: the caller knows that no string in ``variables`` holds NUL (JSON can
    only spell it ``\\u0000``, so a request body without that escape has none).
    """
    clear_refusals("pushChunks")
    plan = push_plan_for(schema, query, operation_name, plans)
    streams = context.services.streams
    if plan is None or streams is None:
        return None
    variables = variables or {}
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
    for item in raw:
        chunk = _chunk(item)
        if chunk is None:
            return None
        chunks.append(chunk)
    if "\x00" in stream_id or (not nul_free and _may_hold_nul(raw) and has_nul(raw)):
        # NUL is refused with INVALID_ARGUMENT by the document limits (Postgres cannot
        # store it): the ordinary path says so.
        return None
    try:
        result = await streams.push_chunks(context.identity, stream_id, chunks)
    except ChatqlError as error:
        keep_refusal("pushChunks", error)
        return None
    values = {"accepted": result.accepted, "duplicates": result.duplicates,
              "lastSeq": result.last_seq, "__typename": "PushResult"}
    return {"data": {plan.response_key: {key: values[name] for key, name in plan.fields}}}
