"""The leaf fast path gives exactly the results and errors of graphql-core's own path."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import strawberry
from strawberry.scalars import JSON

from chatql.gql.schema.execution import LeafFastPathExecutionContext


@strawberry.enum
class Colour(StrEnum):
    RED = "RED"
    BLUE = "BLUE"


@dataclass(frozen=True)
class Record:
    """A store-style record: Strawberry reads it by attribute, like the real records."""

    plain_text: str | None
    colour: Any
    when: Any
    blob: Any
    must_have: Any


@strawberry.type
class Item:
    plain_text: str | None
    colour: Colour
    when: datetime
    blob: JSON | None
    must_have: int

    @strawberry.field
    def shout(self, times: int = 1) -> str:
        return (self.plain_text or "").upper() * times


@strawberry.type
class Query:
    @strawberry.field
    def items(self) -> list[Item | None]:
        at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        return [
            Record("a", "RED", at, {"k": [1, None]}, 1),  # type: ignore[list-item]
            Record(None, Colour.BLUE, at, None, 2),  # type: ignore[list-item]
            Record("c", "GREEN", at, None, 3),  # type: ignore[list-item] - not an enum value
            Record("d", "RED", "not a date", None, 4),  # type: ignore[list-item]
            Record("e", "RED", at, None, None),  # type: ignore[list-item] - null in Int!
        ]


DOCUMENT = """{ items { plainText colour when blob mustHave shout loud: shout(times: 2)
  ...F } } fragment F on Item { alias: plainText }"""


def run(context_class: Any) -> dict[str, Any]:
    schema = strawberry.Schema(query=Query, execution_context_class=context_class)
    result = schema.execute_sync(DOCUMENT)
    errors = sorted((str(e.message), tuple(e.path or ())) for e in result.errors or [])
    return {"data": result.data, "errors": errors}


def test_fast_path_matches_the_ordinary_path() -> None:
    fast = run(LeafFastPathExecutionContext)
    assert fast == run(None)
    # The records above hit each branch: values, nulls, a bad enum, a bad date, a
    # null in a non-null field; the errors must be there, not swallowed.
    assert fast["data"]["items"][0] == {
        "plainText": "a", "colour": "RED", "when": "2026-01-02T03:04:05+00:00",
        "blob": {"k": [1, None]}, "mustHave": 1, "shout": "A", "loud": "AA", "alias": "a"}
    assert fast["data"]["items"][1]["plainText"] is None
    assert fast["data"]["items"][2:] == [None, None, None]
    assert len(fast["errors"]) >= 3, fast


def test_plain_leaves_skip_resolve_info(monkeypatch: Any) -> None:
    from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext as Base

    built: list[str] = []
    original = Base.build_resolve_info

    def counting(self: Any, field_def: Any, field_nodes: Any, *args: Any) -> Any:
        built.append(field_nodes[0].name.value)
        return original(self, field_def, field_nodes, *args)

    monkeypatch.setattr(Base, "build_resolve_info", counting)
    run(None)
    ordinary = list(built)
    built.clear()
    run(LeafFastPathExecutionContext)
    # Only the resolver fields, the list itself and the fields that failed go the long way.
    assert "plainText" in ordinary and len(built) < len(ordinary) / 2
    assert {"items", "shout"} <= set(built)
