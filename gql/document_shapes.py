"""Recognising the narrow documents the fast paths serve (``pushChunks``, ``chatStream``).

A fast path only takes a document that is one operation of the expected type with one
root field of the expected name whose selection is plain leaf fields (no directives,
arguments or nested selections). Fragments — named ones spread in, inline ones — are
expanded first, as the executor collects fields: clients' generated documents share
their selections as fragments, and are served by the same plan as the document written
out. Everything else returns None here and runs the ordinary way, where every limit and
error applies. Documents are short (at most :data:`MAX_FAST_DOCUMENT` characters), so a
fast path never parses more than the ordinary path would.

Fields are collected by one :class:`Collector`, which the shape compiler
(``gql/plans/shapes.py``) uses too: a document is expanded here as its result is filled
there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Container, Hashable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLObjectType,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionNode,
    SelectionSetNode,
)
from strawberry.resolvers import is_default_resolver

__all__ = ["MAX_FAST_DOCUMENT", "Collector", "NoShape", "PlanCache", "flat_root_field",
           "has_nul", "leaf_selections", "nests_within", "plain_attribute", "sole_root_field"]

#: Longer documents are left to the ordinary path (and its limits).
MAX_FAST_DOCUMENT = 1_000


class NoShape(Exception):
    """The selection is not one a fast plan takes: the executor answers it."""


class Collector:
    """Groups a selection set's fields by response key, as the executor does:
    fragments expanded (each once per selection set), inline fragments and fragments
    only on the type itself, no directives anywhere (NoShape otherwise). Without a
    type (``parent`` None), type conditions are not checked: for a validated document,
    whose fragments are all possible where they are spread."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode] | None = None) -> None:
        self._fragments = fragments or {}

    def collect(self, parent: GraphQLObjectType | None,
                selection_sets: Sequence[SelectionSetNode]) -> dict[str, list[FieldNode]]:
        grouped: dict[str, list[FieldNode]] = {}
        for selection_set in selection_sets:
            self._into(parent, selection_set, grouped, set())
        return grouped

    def fields(self, parent: GraphQLObjectType, selection_sets: Sequence[SelectionSetNode]
               ) -> dict[str, tuple[str, list[FieldNode]]]:
        """The fields of ``selection_sets`` (those of one response key), keyed, each
        with its field name; a field given arguments is NoShape."""
        grouped = self.collect(parent, selection_sets)
        result: dict[str, tuple[str, list[FieldNode]]] = {}
        for key, fields in grouped.items():
            if any(field.arguments for field in fields):
                raise NoShape
            result[key] = (fields[0].name.value, fields)
        return result

    def _into(self, parent: GraphQLObjectType | None, selection_set: SelectionSetNode,
              grouped: dict[str, list[FieldNode]], seen: set[str]) -> None:
        for selection in selection_set.selections:
            if selection.directives:
                raise NoShape
            if isinstance(selection, FieldNode):
                grouped.setdefault((selection.alias or selection.name).value,
                                   []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if parent is not None and condition is not None and (
                        condition.name.value != parent.name):
                    raise NoShape
                self._into(parent, selection.selection_set, grouped, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in seen:
                    continue  # the executor collects a fragment once per selection set
                seen.add(name)
                fragment = self._fragments.get(name)
                if fragment is None or fragment.directives or (
                        parent is not None
                        and fragment.type_condition.name.value != parent.name):
                    raise NoShape
                self._into(parent, fragment.selection_set, grouped, seen)
            else:  # pragma: no cover - no other selection kinds exist
                raise NoShape


def sole_root_field(
    document: DocumentNode,
    operation_name: str | None,
    kind: OperationType,
    field_name: str,
) -> tuple[OperationDefinitionNode, FieldNode] | None:
    """The operation and its only root field, when the document has exactly that shape;
    the root field's selections with every fragment expanded."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {d.name.value: d for d in document.definitions
                 if isinstance(d, FragmentDefinitionNode)}
    if len(operations) + len(fragments) != len(document.definitions):
        return None
    if operation_name is not None:
        operations = [o for o in operations if o.name and o.name.value == operation_name]
    if len(operations) != 1:
        return None
    operation = operations[0]
    if operation.operation != kind or operation.directives:
        return None
    roots = operation.selection_set.selections
    if len(roots) != 1 or not isinstance(roots[0], FieldNode):
        return None
    root = roots[0]
    if root.name.value != field_name or root.directives or root.selection_set is None:
        return None
    if fragments or any(not isinstance(s, FieldNode) for s in root.selection_set.selections):
        expanded = _expanded(root, Collector(fragments))
        if expanded is None:
            return None
        root = expanded
    return operation, root


def _expanded(field: FieldNode, collector: Collector) -> FieldNode | None:
    """``field`` with its selections' fragments expanded in place (fields in the order
    the executor collects them; one field per response key, same-key selections merged),
    or None for what only the executor may decide: a directive, or a key selected both
    as a leaf and with a selection.

    A fragment's type condition is not checked: the document was validated, so every
    fragment is possible where it is spread, and the plans only take fields whose type
    is an object type, where a possible fragment always applies."""
    if field.selection_set is None:
        return field
    try:
        grouped = collector.collect(None, [field.selection_set])
    except NoShape:
        return None
    fields: list[FieldNode] = []
    for nodes in grouped.values():
        item = nodes[0]
        sets = [node.selection_set for node in nodes if node.selection_set is not None]
        if sets and len(sets) != len(nodes):
            return None
        if len(sets) > 1:
            item = _with_selections(item, tuple(s for each in sets for s in each.selections))
        expanded = _expanded(item, collector)
        if expanded is None:
            return None
        fields.append(expanded)
    return _with_selections(field, tuple(fields))


def _with_selections(field: FieldNode, selections: tuple[SelectionNode, ...]) -> FieldNode:
    return FieldNode(alias=field.alias, name=field.name, arguments=field.arguments,
                     directives=field.directives, loc=field.loc,
                     selection_set=SelectionSetNode(selections=selections))


def leaf_selections(
    root: FieldNode, allowed: Container[str], *, max_fields: int
) -> tuple[tuple[str, str], ...] | None:
    """``(response key, field name)`` of every selected field, when all are plain leaves
    among ``allowed`` and there are at most ``max_fields`` (aliases count)."""
    assert root.selection_set is not None
    fields: list[tuple[str, str]] = []
    for selection in root.selection_set.selections:
        if not isinstance(selection, FieldNode) or selection.directives or (
            selection.arguments or selection.selection_set
        ) or selection.name.value not in allowed:
            return None
        fields.append(((selection.alias or selection.name).value, selection.name.value))
    return tuple(fields) if len(fields) <= max_fields else None


def flat_root_field(
    document: DocumentNode,
    operation_name: str | None,
    kind: OperationType,
    field_name: str,
    allowed: Collection[str],
) -> tuple[OperationDefinitionNode, FieldNode, tuple[tuple[str, str], ...]] | None:
    """:func:`sole_root_field` whose selection is plain leaves among ``allowed`` (at most
    one per allowed name): the operation, the root field and :func:`leaf_selections`."""
    shape = sole_root_field(document, operation_name, kind, field_name)
    if shape is None:
        return None
    operation, root = shape
    fields = leaf_selections(root, allowed, max_fields=len(allowed))
    return None if fields is None else (operation, root, fields)


def plain_attribute(field_def: GraphQLField) -> str | None:
    """The record attribute a field's value is, when it is nothing more: no arguments,
    the resolver Strawberry makes for a field without one of its own, no permission
    classes or field extensions. None: the field's resolver must run (a plan leaves
    such a field to the executor)."""
    if field_def.args:
        return None
    resolver = field_def.resolve
    if resolver is None or not is_default_resolver(resolver):
        return None
    strawberry_field = field_def.extensions.get("strawberry-definition")
    python_name = getattr(strawberry_field, "python_name", None)
    if not python_name or getattr(strawberry_field, "permission_classes", None) or getattr(
            strawberry_field, "extensions", None):
        return None
    return str(python_name)


def has_nul(value: object) -> bool:
    """Whether any string (key or value) in ``value`` holds NUL (refused everywhere)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def nests_within(value: Any, limit: int) -> bool:
    """True when the JSON ``value`` nests no deeper than ``limit``."""
    if limit < 0:
        return False
    if isinstance(value, dict):
        return all(nests_within(item, limit - 1) for item in value.values())
    if isinstance(value, list):
        return all(nests_within(item, limit - 1) for item in value)
    return True


P = TypeVar("P")


class PlanCache(Generic[P]):
    """A fast path's plans (None: the document is not one it serves), the ``size`` most
    recently used kept."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._plans: OrderedDict[Hashable, P | None] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], P | None]) -> P | None:
        """The plan under ``key``, made by ``make`` the first time."""
        plans = self._plans
        if key in plans:
            plans.move_to_end(key)
            return plans[key]
        plan = plans[key] = make()
        if len(plans) > self._size:
            plans.popitem(last=False)
        return plan

