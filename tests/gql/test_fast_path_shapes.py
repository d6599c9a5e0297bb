"""The fast paths take their shapes from the schema when a plan is made.

A field added to ``ChunkInput`` that the ``pushChunks`` fast path does not convert
must send pushes the ordinary way (never silently dropped); a ``Chunk`` field that
published chunks do not carry must run its resolver the ordinary way.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import (
    FieldNode,
    GraphQLSchema,
    OperationDefinitionNode,
    extend_schema,
    parse,
)

from chatql.gql.document_shapes import PlanCache
from chatql.gql.plans.chat_stream import plan_for
from chatql.gql.plans.push import push_plan_for
from chatql.gql.plans.shapes import NoShape, Refused, object_shape
from chatql.gql.schema.root import build_schema
from tests.gql.wsclient import CHAT_STREAM

#: A schema as an app builds it, for the plans these tests make themselves.
schema = build_schema()

PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted duplicates lastSeq } }"""


@dataclass
class Schema:
    """A schema as the plans see it (Strawberry's wraps graphql-core's as ``_schema``)."""

    _schema: GraphQLSchema


def extended(sdl: str) -> Any:
    return Schema(extend_schema(schema._schema, parse(sdl)))


def test_a_chunk_input_field_the_push_fast_path_does_not_convert_disables_it() -> None:
    assert push_plan_for(schema, PUSH, None, PlanCache(16)) is not None
    for sdl in ("extend input ChunkInput { weight: Int! }",
                "extend input ChunkInput { weight: Int }"):
        assert push_plan_for(extended(sdl), PUSH, None, PlanCache(16)) is None, sdl
    # The real schema's plan is unaffected (one cache entry per schema).
    assert push_plan_for(schema, PUSH, None, PlanCache(16)) is not None


def test_a_chunk_field_published_chunks_do_not_carry_runs_the_ordinary_way() -> None:
    other = extended("extend type Chunk { tokens: Int }")
    # Its fields are all carried.
    assert plan_for(other, CHAT_STREAM, None, PlanCache(16)) is not None
    with_tokens = CHAT_STREAM.replace("fromSeq snapshot", "fromSeq snapshot tokens")
    assert plan_for(other, with_tokens, None, PlanCache(16)) is None
    assert plan_for(schema, CHAT_STREAM, None, PlanCache(16)) is not None


def _client_document(name: str) -> str:
    """An operation of ``@chatql/client`` as it sends it (the generated typed document,
    its selections shared as fragments)."""
    from tests.clients.node import JS_DIR

    source = (JS_DIR / "src" / "generated" / "operations.ts").read_text()
    start = source.index(f"export const {name}Document = new TypedDocumentString(`")
    body = source[source.index("`", start) + 1:]
    return body[:body.index("`")]


def test_the_client_s_own_documents_take_the_plans() -> None:
    """What the web app and every ``@chatql/client`` user send — the live stream, the
    live chat list, a producer's push and an append — is served by its plan, not by the
    executor (fragments are expanded as the executor would)."""
    from chatql.gql.plans.append import append_plan_for
    from chatql.gql.plans.chat_events import chat_events_plan_for
    from chatql.gql.settings import Settings

    assert plan_for(schema, _client_document("ChatStream"), None, PlanCache(4)) is not None
    assert push_plan_for(schema, _client_document("PushChunks"), None, PlanCache(4)) is not None
    settings = Settings()
    assert append_plan_for(schema, _client_document("AppendMessages"), None, settings,
                           PlanCache(4)) is not None
    assert chat_events_plan_for(schema, _client_document("ChatEvents"), None, PlanCache(4),
                                max_depth=settings.max_query_depth,
                                max_aliases=settings.max_query_aliases,
                                max_tokens=settings.max_query_tokens) is not None


def test_a_result_field_with_a_resolver_of_its_own_is_left_to_the_executor() -> None:
    grown = extended("extend type PushResult { note: String }")
    assert push_plan_for(grown, PUSH, None, PlanCache(16)) is not None
    noted = PUSH.replace("lastSeq }", "lastSeq note }")
    assert push_plan_for(grown, noted, None, PlanCache(16)) is None


@strawberry.enum
class Mood(enum.Enum):
    HAPPY = "happy"


@strawberry.type
class Inner:
    n: int


@strawberry.type
class Outer:
    name: str | None
    tags: list[str]
    mood: Mood
    inner: Inner | None
    count: int

    @strawberry.field
    def computed(self) -> int:
        return 1


VALUE = Outer(name="x", tags=["a", "b"], mood=Mood.HAPPY, inner=Inner(n=2), count=3)


@strawberry.type
class SmallQuery:
    @strawberry.field
    def outer(self) -> Outer:
        return VALUE


def test_the_shape_compiler_fills_an_object_as_the_executor_does() -> None:
    small = strawberry.Schema(SmallQuery)
    outer_type = small._schema.type_map["Outer"]

    def selection(text: str) -> Any:
        operation = parse("{ outer " + text + " }").definitions[0]
        assert isinstance(operation, OperationDefinitionNode)
        root = operation.selection_set.selections[0]
        assert isinstance(root, FieldNode) and root.selection_set is not None
        return root.selection_set

    text = "{ name tags mood inner { n t: __typename } c: count __typename }"
    fill = object_shape(outer_type, selection(text))
    executed = small.execute_sync("{ outer " + text + " }")
    assert executed.errors is None and executed.data is not None
    assert fill(VALUE) == executed.data["outer"]
    assert fill(Outer(name=None, tags=[], mood=Mood.HAPPY, inner=None, count=0))["inner"] is None
    # A field with a resolver of its own, or arguments, is the executor's.
    for text in ("{ computed }", "{ name @include(if: true) }", "{ inner }", "{ missing }"):
        try:
            object_shape(outer_type, selection(text))
        except NoShape:
            continue
        raise AssertionError(text)
    # A null where the type says non-null is refused, for the executor to report.
    try:
        fill(Outer(name="x", tags=None, mood=Mood.HAPPY, inner=None, count=0))  # type: ignore[arg-type]
    except Refused:
        pass
    else:
        raise AssertionError("a null list was filled")


def test_a_shape_collects_fragments_and_repeated_keys_as_the_executor_does() -> None:
    """Fragments on the type itself are expanded and a key selected twice is one field
    with both sub-selections, as the executor collects them; a fragment on another type
    or a directive is the executor's."""
    from graphql import FragmentDefinitionNode

    from chatql.gql.plans.shapes import Collector

    small = strawberry.Schema(SmallQuery)
    outer_type = small._schema.type_map["Outer"]

    def shape_of(text: str) -> Any:
        document = parse(text)
        operation = document.definitions[0]
        assert isinstance(operation, OperationDefinitionNode)
        root = operation.selection_set.selections[0]
        assert isinstance(root, FieldNode) and root.selection_set is not None
        fragments = {d.name.value: d for d in document.definitions
                     if isinstance(d, FragmentDefinitionNode)}
        return object_shape(outer_type, root.selection_set, collector=Collector(fragments))

    text = ("{ outer { name ...F inner { n } ... on Outer { inner { t: __typename } c: count }"
            " name ...F } } fragment F on Outer { count inner { n } mood }")
    executed = small.execute_sync(text)
    assert executed.errors is None and executed.data is not None
    filled = shape_of(text)(VALUE)
    assert filled == executed.data["outer"]
    assert list(filled) == list(executed.data["outer"])  # the executor's key order
    assert filled["inner"] == {"n": 2, "t": "Inner"}
    for other in ("{ outer { ... on Inner { n } } }", "{ outer { ...G } } fragment G on Outer "
                  "{ name @skip(if: false) }", "{ outer { ...Missing } }"):
        try:
            shape_of(other)
        except NoShape:
            continue
        raise AssertionError(other)


def test_a_reader_decides_how_a_shape_reads_its_source() -> None:
    """The same selection filled from a row by a reader of positions, and a field with
    a resolver answered by the reader that knows it; the rest is the executor's."""
    from graphql import GraphQLObjectType

    from chatql.gql.plans.shapes import Reader

    small = strawberry.Schema(SmallQuery)
    outer_type = small._schema.type_map["Outer"]
    positions = {"name": 0, "count": 1}

    class Rows(Reader):
        def plain(self, parent: GraphQLObjectType, field_def: Any, attribute: str,
                  named: Any, complete: Any) -> Any:
            at = positions[attribute]
            return lambda row: complete(row[at])

        def resolved(self, parent: GraphQLObjectType, name: str, field_def: Any,
                     nodes: Any, collector: Any, depth: int) -> Any:
            if name != "computed":
                raise NoShape
            return lambda row: row[2]

    operation = parse("{ outer { name count computed } }").definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    root = operation.selection_set.selections[0]
    assert isinstance(root, FieldNode) and root.selection_set is not None
    fill = object_shape(outer_type, root.selection_set, reader=Rows())
    assert fill(("x", 3, 7)) == {"name": "x", "count": 3, "computed": 7}
    try:
        fill((None, None, 7))
    except Refused:
        pass
    else:
        raise AssertionError("a null count was filled")


def _root_selection(document: str) -> list[str] | None:
    """What :func:`sole_root_field` makes of a ``chatStream`` document: the root field's
    selection written out (nested ``key{...}``), or None when it declines it."""
    from graphql import OperationType

    from chatql.gql.document_shapes import sole_root_field

    shape = sole_root_field(parse(document), None, OperationType.SUBSCRIPTION, "chatStream")
    if shape is None:
        return None

    def written(field: FieldNode) -> str:
        key = (field.alias or field.name).value
        if field.selection_set is None:
            return key
        inner = " ".join(written(f) for f in field.selection_set.selections
                         if isinstance(f, FieldNode))
        return f"{key}{{{inner}}}"

    _operation, root = shape
    assert root.selection_set is not None
    return [written(f) for f in root.selection_set.selections if isinstance(f, FieldNode)]


def test_a_fast_path_document_is_expanded_as_the_executor_collects_it() -> None:
    """The fast paths recognise a document with the collector the shapes use: fragments
    spread in order, a fragment spread twice collected once, a key selected twice merged
    with both sub-selections; directives and a key both a leaf and an object decline."""
    head = "subscription($c: ID!) { chatStream(chatId: $c) "
    assert _root_selection(
        head + "{ ...A seq ...A chunk { id } chunk { type } } }"
        " fragment A on Chunk { seq streamId }") == ["seq", "streamId", "chunk{id type}"]
    assert _root_selection(head + "{ ... on Chunk { seq } fromSeq } }") == ["seq", "fromSeq"]
    assert _root_selection(head + "{ ... on Chunk { seq @include(if: true) } } }") is None
    assert _root_selection(head + "{ ...A } } fragment A on Chunk @x { seq }") is None
    assert _root_selection(head + "{ ...Missing } }") is None
    assert _root_selection(head + "{ ...A chunk { id } } } fragment A on Chunk { chunk }") is None
