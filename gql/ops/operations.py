"""What a request asks for, told from its document once: the operation's type, its name
for metrics and logs, its rate-limit class, and whether anyone may ask it unsigned.

Metrics, request logs and rate limits need this before (and whether or not) the
executor or a fast plan runs the operation. Each distinct (document, operation name)
pair is parsed once and remembered; a document that does not parse, or names no
operation it holds, is told as ``unknown`` and the executor reports the error as usual.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import FieldNode, GraphQLError, OperationDefinitionNode, parse

__all__ = ["OPEN_FIELDS", "UNKNOWN", "OperationKind", "classify", "is_open", "limit_class"]

#: Documents remembered (the same few documents arrive over and over).
_KEPT = 1024
#: A document longer than this is never remembered (nor worth parsing twice).
_LONGEST_KEPT = 64 * 1024
#: Operation names kept as metric labels per process; later names count as ``other``.
_NAMES_KEPT = 500
#: Root query fields anyone may read without naming a caller (what a share link opens
#: decides itself who may see it); a query of only these counts as ``shares``.
OPEN_FIELDS = frozenset({"sharedChat"})


@dataclass(frozen=True, slots=True)
class OperationKind:
    """One operation as metrics, logs and limits see it."""

    #: ``query``, ``mutation``, ``subscription`` or ``unknown``.
    type: str
    #: The operation's name, or its root fields joined by ``,`` when it has none.
    name: str
    #: The rate-limit class: ``reads``, ``writes``, ``pushes``, ``shares`` or
    #: ``subscriptions``.
    limit_class: str
    #: Every root field is one of :data:`OPEN_FIELDS`: a caller who names no one may ask.
    open: bool = False


UNKNOWN = OperationKind("unknown", "unknown", "reads")

_known: dict[tuple[str, str | None], OperationKind] = {}
_names: set[str] = set()


def is_open(operation_type: str, fields: tuple[str, ...]) -> bool:
    """Whether an operation only reads :data:`OPEN_FIELDS` (``__typename`` aside)."""
    named = {field for field in fields if field != "__typename"}
    return operation_type == "query" and bool(named) and named <= OPEN_FIELDS


def limit_class(operation_type: str, fields: tuple[str, ...]) -> str:
    """The class an operation counts against."""
    if operation_type == "subscription":
        return "subscriptions"
    if operation_type == "mutation":
        return "pushes" if fields == ("pushChunks",) else "writes"
    return "shares" if is_open(operation_type, fields) else "reads"


def _label(name: str) -> str:
    # Caller-chosen names would make unbounded label sets; the first few hundred are kept.
    if name in _names:
        return name
    if len(_names) < _NAMES_KEPT:
        _names.add(name)
        return name
    return "other"


def _classify(query: str, operation_name: str | None) -> OperationKind:
    try:
        document = parse(query, no_location=True, max_tokens=20_000)
    except GraphQLError:
        return UNKNOWN
    operations = [node for node in document.definitions
                  if isinstance(node, OperationDefinitionNode)]
    chosen = None
    if operation_name is None:
        chosen = operations[0] if len(operations) == 1 else None
    else:
        chosen = next((node for node in operations
                       if node.name is not None and node.name.value == operation_name), None)
    if chosen is None:
        return UNKNOWN
    fields = tuple(selection.name.value if isinstance(selection, FieldNode) else "fragment"
                   for selection in chosen.selection_set.selections)
    kind = chosen.operation.value
    name = chosen.name.value if chosen.name is not None else ",".join(sorted(set(fields)))
    return OperationKind(kind, _label(name), limit_class(kind, fields), is_open(kind, fields))


def classify(query: str | None, operation_name: str | None) -> OperationKind:
    """The kind of the operation ``operation_name`` (or the only one) in ``query``."""
    if not query:
        return UNKNOWN
    key = (query, operation_name)
    known = _known.get(key)
    if known is None:
        known = _classify(query, operation_name)
        if len(query) <= _LONGEST_KEPT:
            if len(_known) >= _KEPT:
                _known.clear()
            _known[key] = known
    return known
