"""gql/schema/inputs.py: one conversion per input type, read from the schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from graphql import build_schema as graphql_schema

from chatql.gql.schema.inputs import InputConverter
from chatql.gql.schema.root import build_schema
from chatql.store.messages.message import NewMessage
from chatql.store.streams.reducer import ChunkIn

SCHEMA = build_schema()


@dataclass
class _Schema:
    """A schema as the converter reads it (the graphql-core schema Strawberry wraps)."""

    _schema: Any


def test_json_variables_convert_as_graphql_core_would_or_not_at_all() -> None:
    chunks = InputConverter(SCHEMA, "ChunkInput", ChunkIn)
    assert chunks.from_json({"type": "text", "messageId": "m", "delta": True,
                             "props": {"content": "x"}, "role": "TOOL"}) == ChunkIn(
        "text", None, "m", None, None, "TOOL", {"content": "x"}, True)
    # The schema's default (delta: false) for a field left out or null.
    assert chunks.from_json({"type": "t", "delta": None}).delta is False
    for declined in ({"messageId": "m"},                    # a required field missing
                     {"type": "t", "role": "ROBOT"},        # not an enum value
                     {"type": "t", "tokens": 2**31},        # beyond GraphQL's Int
                     {"type": "t", "weight": 1},            # a field the type lacks
                     {"type": 5}, "text"):
        assert chunks.from_json(declined) is None, declined
    messages = InputConverter(SCHEMA, "MessageInput", NewMessage)
    # An ID may be sent as a number; the record keeps its own defaults (status).
    assert messages.from_json({"role": "USER", "type": "t", "props": {}, "id": 7}) == (
        NewMessage(role="USER", type="t", props={}, id="7"))
    assert messages.from_json({"role": "USER", "type": "t", "props": None}) is None


def test_graphql_cores_coerced_values_become_the_same_records() -> None:
    # What the resolvers receive through Strawberry's input hook (enum members or
    # names, defaults filled, nulls for fields left out).
    converted = SCHEMA.inputs["ChunkInput"].from_coerced(
        {"type": "t", "role": "USER", "delta": False})
    assert isinstance(converted, ChunkIn) and converted.role == "USER"


def test_other_scalars_are_parsed_by_the_schemas_own_scalar() -> None:
    schema = graphql_schema("scalar Moment input T { at: Moment n: Int } "
                            "type Query { x(t: T): Int }")

    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("a moment is text")
        return ("moment", value)

    schema.type_map["Moment"].parse_value = parse  # type: ignore[attr-defined]

    @dataclass
    class Record:
        at: Any = None
        n: Any = None

    converter = InputConverter(_Schema(schema), "T", Record)
    assert converter.from_json({"at": "2026-12-02"}) == Record(at=("moment", "2026-12-02"))
    assert converter.from_json({"at": 5}) is None


def test_an_input_field_with_nowhere_to_go_stops_the_converter() -> None:
    @dataclass
    class Narrow:
        type: str

    with pytest.raises(TypeError, match=r"ChunkInput\.chunkId has no attribute"):
        InputConverter(SCHEMA, "ChunkInput", Narrow)
