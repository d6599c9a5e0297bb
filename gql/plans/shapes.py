"""The one shape compiler: a selection set on a schema type, made once into a function
that fills the response object from the value a resolver would have returned.

Every fast plan answers with objects the executor would have built: a receipt of
``appendMessages``, a ``pushChunks`` result, a ``chatEvents`` event, the nodes of a
compiled page. Rather than each writing its answer by hand (and restating the type's
field names), a plan compiles its document's selection against the schema type its root
field returns (:func:`object_shape`), and fills the result from the resolver's value,
field by field, as the executor does:

- fields are collected by response key as the executor collects them: fragments (whose
  type condition is the type itself) expanded once per selection set, a key selected
  twice merged into one field with the sub-selections of both;
- a field whose resolver is Strawberry's default one reads the value's attribute of the
  field's Python name (:func:`~chatql.gql.document_shapes.plain_attribute`); how it is
  read is the :class:`Reader`'s business — the attribute of a record by default, a
  column of a database row for compiled reads;
- a field with its own resolver is the reader's to answer (:meth:`Reader.resolved`); a
  reader that does not know it, arguments, directives, an interface or a union are not a
  shape's (:class:`NoShape`: the executor answers such documents);
- scalars and enums are serialised by the schema's own serialisers; lists are completed
  item by item; objects nest (to :data:`MAX_NESTING` levels);
- ``__typename`` is the type's name;
- a null where the type says non-null, or a value a serialiser refuses, is
  :class:`Refused` while filling: the executor's error to report.

A field added to the type is then answered by every plan that serves it, or the plan
declines the documents that select it; it never goes missing from one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    SelectionSetNode,
)
from graphql.pyutils import Undefined

from chatql.gql.document_shapes import Collector, NoShape, plain_attribute

__all__ = ["ATTRIBUTES", "MAX_NESTING", "Collector", "Leaf", "NoShape", "Reader", "Refused",
           "Shape", "completer", "named_type", "object_shape", "result_type", "serialiser"]

#: How deep a shape's objects may nest (an event -> its chat -> the chat's objects).
MAX_NESTING = 4

#: Fills one response object from the resolver's value.
Shape = Callable[[Any], dict[str, Any]]
#: Scalar and enum types: what a leaf field names.
Leaf = GraphQLScalarType | GraphQLEnumType


class Refused(Exception):
    """A value the schema refuses where it stands: the executor reports it."""


def result_type(field_type: Any) -> GraphQLObjectType:
    """The object type a root field returns, non-null; NoShape for anything else."""
    if not isinstance(field_type, GraphQLNonNull) or not isinstance(
            field_type.of_type, GraphQLObjectType):
        raise NoShape
    return field_type.of_type


def named_type(kind: Any) -> Any:
    """A field type without its non-null and list wrappers."""
    while isinstance(kind, GraphQLNonNull | GraphQLList):
        kind = kind.of_type
    return kind


class Reader:
    """How a shape reads its source's fields: by default (:data:`ATTRIBUTES`) the
    attribute of a record, which is what Strawberry's default resolver reads."""

    def plain(self, parent: GraphQLObjectType, field_def: GraphQLField, attribute: str,
              named: Any, complete: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The output of a field whose value is the source's ``attribute``, given
        ``complete`` (the value to its output: nulls, lists, serialisers, objects)."""
        return lambda source: complete(getattr(source, attribute))

    def resolved(self, parent: GraphQLObjectType, name: str, field_def: GraphQLField,
                 nodes: list[FieldNode], collector: Collector, depth: int
                 ) -> Callable[[Any], Any]:
        """The output of the field ``name``, which has a resolver of its own: the
        executor's, unless a reader knows it."""
        raise NoShape


#: Reads fields as Strawberry's default resolver does.
ATTRIBUTES = Reader()


def object_shape(parent: GraphQLObjectType,
                 selection: SelectionSetNode | Sequence[SelectionSetNode], *,
                 reader: Reader = ATTRIBUTES, collector: Collector | None = None,
                 depth: int = 1) -> Shape:
    """The filler of ``selection`` (one selection set, or those of one response key) on
    ``parent``, reading its source with ``reader``; fragments are expanded by
    ``collector`` (one without fragments when not given)."""
    sets = [selection] if isinstance(selection, SelectionSetNode) else list(selection)
    if depth > MAX_NESTING or not any(each.selections for each in sets):
        raise NoShape
    collector = collector or Collector()
    fields: list[tuple[str, Callable[[Any], Any]]] = []
    for key, (name, nodes) in collector.fields(parent, sets).items():
        if name == "__typename":
            fields.append((key, _constant(parent.name)))
            continue
        field_def = parent.fields.get(name)
        if field_def is None:
            raise NoShape
        attribute = plain_attribute(field_def)
        if attribute is None:
            fields.append((key, reader.resolved(parent, name, field_def, nodes, collector,
                                                depth)))
            continue
        named = named_type(field_def.type)
        children = [node.selection_set for node in nodes if node.selection_set is not None]
        inner: Callable[[Any], Any]
        if isinstance(named, GraphQLScalarType | GraphQLEnumType):
            if children:
                raise NoShape
            inner = serialiser(named)
        elif isinstance(named, GraphQLObjectType) and children:
            inner = object_shape(named, children, reader=reader, collector=collector,
                                 depth=depth + 1)
        else:
            raise NoShape  # interfaces and unions: the executor resolves their type
        fields.append((key, reader.plain(parent, field_def, attribute, named,
                                         completer(field_def.type, inner))))
    filled = tuple(fields)

    def fill(source: Any) -> dict[str, Any]:
        return {key: value(source) for key, value in filled}

    return fill


def completer(kind: Any, inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Completes a value of ``kind`` as the executor does: nulls where allowed, lists
    item by item; a null in a non-null place is refused (the executor reports it)."""
    nullable = not isinstance(kind, GraphQLNonNull)
    unwrapped = kind if nullable else kind.of_type
    if isinstance(unwrapped, GraphQLList):
        item = completer(unwrapped.of_type, inner)

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


def serialiser(leaf: Leaf) -> Callable[[Any], Any]:
    """A scalar's or enum's output of a value, by the schema's own serialiser."""
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
