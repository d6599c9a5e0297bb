"""The one shape compiler: a selection set on a schema type, made once into a function
that fills the response object from the value a resolver would have returned.

Every fast plan answers with objects the executor would have built: a receipt of
``appendMessages``, a ``pushChunks`` result, a ``chatEvents`` event. Rather than each
writing its answer by hand (and restating the type's field names), a plan compiles its
document's selection against the schema type its root field returns
(:func:`object_shape`), and fills the result from the resolver's value, field by field,
as the executor does:

- a field whose resolver is Strawberry's default one reads the value's attribute of the
  field's Python name (:func:`~chatql.gql.document_shapes.plain_attribute`); a field with
  its own resolver, arguments, directives, an interface or a union is not a shape's
  (:class:`NoShape`: the executor answers such documents);
- scalars and enums are serialised by the schema's own serialisers; lists are completed
  item by item; objects nest (to :data:`MAX_NESTING` levels);
- ``__typename`` is the type's name;
- a null where the type says non-null, or a value a serialiser refuses, is
  :class:`Refused` while filling: the executor's error to report.

A field added to the type is then answered by every plan that serves it, or the plan
declines the documents that select it; it never goes missing from one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    SelectionSetNode,
)
from graphql.pyutils import Undefined

from chatql.gql.document_shapes import plain_attribute

__all__ = ["MAX_NESTING", "NoShape", "Refused", "Shape", "object_shape", "result_type"]

#: How deep a shape's objects may nest (an event -> its chat -> the chat's objects).
MAX_NESTING = 4

#: Fills one response object from the resolver's value.
Shape = Callable[[Any], dict[str, Any]]


class NoShape(Exception):
    """The selection is not one a shape fills: the executor answers the document."""


class Refused(Exception):
    """A value the schema refuses where it stands: the executor reports it."""


def result_type(field_type: Any) -> GraphQLObjectType:
    """The object type a root field returns, non-null; NoShape for anything else."""
    if not isinstance(field_type, GraphQLNonNull) or not isinstance(
            field_type.of_type, GraphQLObjectType):
        raise NoShape
    return field_type.of_type


def object_shape(parent: GraphQLObjectType, selection_set: SelectionSetNode, *,
                 depth: int = 1) -> Shape:
    """The filler of one selection set on ``parent`` (fragments already expanded, see
    :func:`~chatql.gql.document_shapes.sole_root_field`): plain fields only, each
    response key once (merging repeated keys is the executor's business)."""
    if depth > MAX_NESTING or not selection_set.selections:
        raise NoShape
    fields: list[tuple[str, Callable[[Any], Any]]] = []
    seen: set[str] = set()
    for selection in selection_set.selections:
        if not isinstance(selection, FieldNode) or selection.directives or selection.arguments:
            raise NoShape
        key = (selection.alias or selection.name).value
        if key in seen:
            raise NoShape
        seen.add(key)
        name = selection.name.value
        if name == "__typename":
            if selection.selection_set is not None:
                raise NoShape
            fields.append((key, _constant(parent.name)))
            continue
        field_def = parent.fields.get(name)
        if field_def is None:
            raise NoShape
        attribute = plain_attribute(field_def)
        if attribute is None:
            raise NoShape
        named = field_def.type
        while isinstance(named, GraphQLNonNull | GraphQLList):
            named = named.of_type
        inner: Callable[[Any], Any]
        if isinstance(named, GraphQLScalarType | GraphQLEnumType):
            if selection.selection_set is not None:
                raise NoShape
            inner = _serialiser(named)
        elif isinstance(named, GraphQLObjectType) and selection.selection_set is not None:
            inner = object_shape(named, selection.selection_set, depth=depth + 1)
        else:
            raise NoShape  # interfaces and unions: the executor resolves their type
        fields.append((key, _reader(attribute, _completer(field_def.type, inner))))
    filled = tuple(fields)

    def fill(source: Any) -> dict[str, Any]:
        return {key: value(source) for key, value in filled}

    return fill


def _completer(kind: Any, inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Completes a value of ``kind`` as the executor does: nulls where allowed, lists
    item by item; a null in a non-null place is refused (the executor reports it)."""
    nullable = not isinstance(kind, GraphQLNonNull)
    unwrapped = kind if nullable else kind.of_type
    if isinstance(unwrapped, GraphQLList):
        item = _completer(unwrapped.of_type, inner)

        def complete_list(value: Any) -> Any:
            if value is None:
                if nullable:
                    return None
                raise Refused
            if isinstance(value, str | bytes | dict) or not hasattr(value, "__iter__"):
                raise Refused
            return [item(each) for each in value]

        return complete_list

    def complete(value: Any) -> Any:
        if value is None:
            if nullable:
                return None
            raise Refused
        return inner(value)

    return complete


def _serialiser(leaf: GraphQLScalarType | GraphQLEnumType) -> Callable[[Any], Any]:
    serialize = leaf.serialize

    def output(value: Any) -> Any:
        try:
            serialized = serialize(value)
        except Exception:
            raise Refused from None
        if serialized is None or serialized is Undefined:
            raise Refused
        return serialized

    return output


def _constant(value: str) -> Callable[[Any], str]:
    return lambda _source: value


def _reader(attribute: str, complete: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda source: complete(getattr(source, attribute))
