"""Input conversion read from the schema: one converter per input type, for every path.

``ChunkInput`` becomes the store's ``ChunkIn`` and ``MessageInput`` its ``NewMessage``
on two paths: the resolvers (Strawberry hands them graphql-core's coerced value) and
the plans, which take a request's JSON variables before graphql-core sees them. Both
use the one :class:`InputConverter` made for the type from the schema: each field's
GraphQL name, the record attribute it fills (Strawberry's Python name), the check its
GraphQL type implies and its default are read from the schema when the converter is
made. A field added to the input type is therefore converted on every path, or — when
the record has no attribute for it — the schema refuses to build, rather than a path
quietly dropping it.

:meth:`InputConverter.from_json` is as strict as graphql-core's variable coercion
or stricter: a value it cannot vouch for gives None and the request takes the ordinary
way, where every error looks as it always does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from graphql import (
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLFloat,
    GraphQLID,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLString,
    Undefined,
)

from chatql.gql.document_shapes import nests_within
from chatql.gql.library_adapters import graphql_core_schema

__all__ = ["InputConverter"]

#: graphql-core refuses deeper variable values; a JSON value deeper than this is left to
#: the ordinary path.
MAX_JSON_DEPTH = 64
_INT_MIN, _INT_MAX = -(2**31), 2**31


class _Declined(Exception):
    """The value is not one this converter vouches for."""


def _string(value: Any) -> Any:
    if type(value) is not str:
        raise _Declined
    return value


def _identifier(value: Any) -> Any:
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    raise _Declined


def _integer(value: Any) -> Any:
    if type(value) is not int or not _INT_MIN <= value < _INT_MAX:
        raise _Declined
    return value


def _boolean(value: Any) -> Any:
    if value is not True and value is not False:
        raise _Declined
    return value


def _number(value: Any) -> Any:
    if type(value) is int or type(value) is float:
        return float(value)
    raise _Declined


def _json(value: Any) -> Any:
    if type(value) is dict:
        # Most values are flat objects: no depth to walk.
        for item in value.values():
            if isinstance(item, dict | list):
                break
        else:
            return value
    if not nests_within(value, MAX_JSON_DEPTH):
        raise _Declined
    return value


_BUILTIN: dict[str, Callable[[Any], Any]] = {
    GraphQLString.name: _string, GraphQLID.name: _identifier, GraphQLInt.name: _integer,
    GraphQLBoolean.name: _boolean, GraphQLFloat.name: _number,
}


def _enum(kind: GraphQLEnumType) -> Callable[[Any], Any]:
    # The value the store keeps is the enum value's own (a name, as the resolvers give it).
    values = {name: getattr(value.value, "value", value.value)
              for name, value in kind.values.items()}

    def check(value: Any) -> Any:
        if type(value) is not str or value not in values:
            raise _Declined
        return values[value]

    return check


def _check_for(kind: Any) -> Callable[[Any], Any]:
    if isinstance(kind, GraphQLEnumType):
        return _enum(kind)
    if isinstance(kind, GraphQLScalarType):
        builtin = _BUILTIN.get(kind.name)
        if builtin is not None:
            return builtin
        if kind.name == "JSON":  # its input is the value itself, nested as deep as taken
            return _json
        return _parsed_by(kind)
    raise TypeError(f"input fields of type {kind} have no conversion here")


def _parsed_by(kind: GraphQLScalarType) -> Callable[[Any], Any]:
    """Any other scalar (a date, say) converts a value as the schema's scalar does."""
    parse = kind.parse_value

    def check(value: Any) -> Any:
        try:
            parsed = parse(value)
        except Exception:
            raise _Declined from None
        if parsed is None or parsed is Undefined:
            raise _Declined
        return parsed

    return check


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str  # the GraphQL name
    attribute: str  # the record's attribute
    check: Callable[[Any], Any]
    required: bool  # non-null without a default
    nullable: bool
    #: An enum: graphql-core's coerced value may be a Python enum member.
    enum: bool
    #: What the record gets when the field is left out or null.
    absent: Any


_Steps = tuple[tuple[str, int, Callable[[Any], Any], bool], ...]
_UNSEEN: Any = object()


class InputConverter:
    """The conversion of one input type of ``schema`` into ``record`` instances."""

    def __init__(self, schema: Any, type_name: str, record: type) -> None:
        kind = graphql_core_schema(schema).type_map.get(type_name)
        if not isinstance(kind, GraphQLInputObjectType):
            raise TypeError(f"{type_name} is not an input type of the schema")
        defaults = {field.name: field.default for field in dataclasses.fields(record)
                    if field.default is not dataclasses.MISSING}
        attributes = {field.name for field in dataclasses.fields(record)}
        fields: dict[str, _Field] = {}
        for name, field in kind.fields.items():
            definition = field.extensions.get("strawberry-definition")
            attribute = getattr(definition, "python_name", None) or name
            if attribute not in attributes:
                raise TypeError(f"{type_name}.{name} has no attribute {attribute!r} on "
                                f"{record.__name__} to go to")
            nullable = not isinstance(field.type, GraphQLNonNull)
            inner = field.type if nullable else field.type.of_type
            check = _check_for(inner)
            default = field.default_value
            absent = defaults.get(attribute)
            if default is not Undefined and default is not None:
                absent = check(default)
            fields[name] = _Field(name, attribute, check,
                                  required=not nullable and default is Undefined,
                                  nullable=nullable, enum=isinstance(inner, GraphQLEnumType),
                                  absent=absent)
        self.type_name = type_name
        self.record = record
        self._fields = fields
        # Records are built positionally (a record of slots builds fastest that way):
        # the attributes in the record's order, each starting as its absent value.
        order = [field.name for field in dataclasses.fields(record)]
        self._index = {f.name: order.index(f.attribute) for f in fields.values()}
        self._base = [defaults.get(name) for name in order]
        for f in fields.values():
            self._base[order.index(f.attribute)] = f.absent
        self._required = frozenset(f.name for f in fields.values() if f.required)
        # The value's keys seen so far, each with what converting them takes, in order.
        self._by_keys: dict[tuple[str, ...], _Steps | None] = {}

    @property
    def field_names(self) -> frozenset[str]:
        """The GraphQL names of the input type's fields."""
        return frozenset(self._fields)

    def from_json(self, value: Any) -> Any | None:
        """``value`` (a request's JSON) as a record, or None when graphql-core might see
        it otherwise (a field the type lacks, a value of another type, a missing
        required field, JSON nested deeper than graphql-core takes)."""
        if type(value) is not dict:
            return None
        keys = tuple(value)
        steps = self._by_keys.get(keys, _UNSEEN)
        if steps is _UNSEEN:
            steps = self._steps(keys)
        if steps is None:
            return None
        values = self._base.copy()
        try:
            for name, index, check, nullable in steps:
                item = value[name]
                if item is None:
                    if not nullable:
                        return None
                    continue
                values[index] = check(item)
        except _Declined:
            return None
        return self.record(*values)

    def _steps(self, keys: tuple[str, ...]) -> _Steps | None:
        known = self._fields
        steps = (tuple((key, self._index[key], known[key].check, known[key].nullable)
                       for key in keys)
                 if all(key in known for key in keys) and self._required.issubset(keys)
                 else None)
        if len(self._by_keys) < 64:  # a producer's chunks repeat a few shapes
            self._by_keys[keys] = steps
        return steps

    def from_coerced(self, value: Mapping[str, Any]) -> Any:
        """graphql-core's coerced value (checked, defaults filled) as a record."""
        values = self._base.copy()
        fields, index = self._fields, self._index
        for name, item in value.items():
            if item is not None:
                values[index[name]] = getattr(item, "value", item) if fields[name].enum else item
        return self.record(*values)


def converted_by_schema(type_name: str) -> Callable[[type, Mapping[str, Any], Any], Any]:
    """Strawberry's input hook for ``type_name`` (see
    :func:`~chatql.gql.library_adapters.build_input_with`): each value is made by the
    converter the executing schema carries for the type (``ChatqlSchema.inputs``), from
    graphql-core's coerced value — in place of Strawberry's generic conversion, which
    for a thousand chunks is most of a push."""

    def build(_cls: type, value: Mapping[str, Any], context: Any) -> Any:
        info = context.info
        if info is None:  # only input defaults are built without a request
            raise TypeError(f"{type_name} values are built while executing a request")
        return info.schema.inputs[type_name].from_coerced(value)

    build.__name__ = build.__qualname__ = f"{type_name}_from_input"
    return build
