"""Compiled reads: pages and chats answered without field-by-field execution.

Front ends send the same few documents again and again — a page of messages
(``messages``), the chat list in its default shape (``chats(first, after)``), a
chat with its newest message (``chat(id) { … lastMessage { … } }``) and the inbox of
interrupts in its default filter (``interrupts(first, after)``) — and for a page
of messages the general executor spends far more time walking ~300 fields than the
database spends finding the rows. Here a document is turned, once per text, into a
*plan*: the page's arguments (as AST, coerced per request by graphql-core's own
functions, so defaults and variables mean exactly what they mean to the executor) and
the response's shape: the connection's keys, and its nodes as the one shape compiler
(:mod:`chatql.gql.plans.shapes`) makes them, reading each stored field from its column
of the row (:class:`_Rows`). A request with a plan runs one prepared statement
(:mod:`store.db.prepared`) and fills the shape from the rows in one pass. A page whose
messages ask ``files`` reads them in one more lookup for the whole page — the store call
``message_files_loader`` makes, ordered as ``Message.files`` orders them — and signs each
``url`` with the resolver's own :func:`~gql.schema.file_type.file_url`.

The general executor stays the reference. A document gets a plan only when it parses
and validates under the same rules and limits, and when everything it selects is
known here *and* still has the shape this module expects in the schema it was built
from (a field that gained arguments or a resolver, an argument or filter field the
module does not know, any directive): everything else is ``None`` and runs the
ordinary way. A request whose plan exists still takes the ordinary way whenever its
answer would be anything but a plain page — a variable or argument that fails to
coerce or check, a cursor that does not verify, an empty page of messages or chats
(absent chat or empty list; an empty inbox is a plain page), a value a scalar
refuses — so errors and their codes are always the executor's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, ClassVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLString,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    parse,
    specified_rules,
)
from graphql.execution.values import get_argument_values, get_variable_values
from strawberry.schema.schema import validate_document
from strawberry.types.base import get_object_definition

from chatql.gql.context import Context
from chatql.gql.document_shapes import PlanCache, has_nul, plain_attribute
from chatql.gql.library_adapters import graphql_core_schema
from chatql.gql.ops.limits import limit_rules
from chatql.gql.plans.plan import Call
from chatql.gql.plans.shapes import (
    Collector,
    NoShape,
    Reader,
    Refused,
    Shape,
    named_type,
    object_shape,
)
from chatql.gql.schema.chat_lists import _cursor_scope as chat_list_scope
from chatql.gql.schema.chat_type import Chat as ChatType
from chatql.gql.schema.file_type import File, base_url, signed_url
from chatql.gql.schema.interrupts import InterruptFilter
from chatql.gql.schema.pages import _branch_scope, _cursor_scope
from chatql.gql.schema.types import Message
from chatql.gql.settings import Settings
from chatql.store.db.prepared import (
    CHAT_COLUMNS,
    MESSAGE_COLUMNS,
    Attribute,
    chat_after,
    chat_attribute,
    chat_positions,
    fetch,
    inbox_positions,
    message_attribute,
)
from chatql.store.errors import ChatqlError
from chatql.store.files.links import file_ids_in, may_reference_files
from chatql.store.files.signing import expiry
from chatql.store.ids import check_chat_id, check_message_id
from chatql.store.lists.chat_lists import DEFAULT_CHAT_PAGE_SIZE, MAX_CHAT_PAGE_SIZE, ChatListFilter
from chatql.store.lists.chat_lists import _parse_position as parse_position
from chatql.store.lists.pages import ChatPageShape, chat_page_statement, chat_statement
from chatql.store.messages import interrupts as store_interrupts
from chatql.store.messages.interrupts import (
    INTERRUPT_COLUMNS,
    InboxPageShape,
    inbox_page_statement,
    interrupt_attribute,
)
from chatql.store.messages.message import MessageFilter, branch_rows, page_rows
from chatql.store.records import BranchPosition

__all__ = ["CompiledReads"]

logger = logging.getLogger("chatql")

_PLAN_CACHE_SIZE = 512
_SIGNED_CACHE_SIZE = 20_000
#: Filled file selections remembered (see CompiledReads._with_files).
#: How a prepared message row gives a message's props.
_PROPS = message_attribute("props")
_FILLED_KEPT = 4096
#: Outputs remembered per node field whose output is a function of the column's value
#: alone and which repeats across pages: times (see :func:`_bound`) and enums.
_REMEMBERED = {"time": 4096, "enum": 64}
_MISSING = object()
#: Longer documents are not worth a plan (and must not fill the cache).
_MAX_DOCUMENT = 4_000
_PAGE_ARGUMENTS = frozenset({"chatId", "filter", "first", "after", "last", "before", "branch",
                             "allBranches"})
_FILTER_FIELDS = {"requestId": "request_id", "role": "role", "blockId": "block_id",
                  "threadId": "thread_id", "type": "type"}
_CHAT_LIST_DEFAULTS: dict[str, Any] = {"filter": None, "orderBy": "LAST_MESSAGE_AT",
                                        "order": "DESC", "timezone": "UTC",
                                        "weekStart": "MONDAY"}
#: The inbox a document without a ``filter`` reads: the resolver's own default.
_INBOX_FILTER = InterruptFilter().to_store()
_INBOX_ARGUMENTS = frozenset({"first", "after"})
_CONNECTION_FIELDS = frozenset({"edges", "pageInfo"})
_EDGE_FIELDS = frozenset({"cursor", "node"})
_PAGE_INFO_FIELDS = {"hasNextPage": "next", "hasPreviousPage": "previous",
                     "startCursor": "start", "endCursor": "end"}

_BUILTIN_COERCERS = {scalar.name: scalar.coerce_output_value
                     for scalar in (GraphQLString, GraphQLID, GraphQLBoolean, GraphQLInt)}

# The query's and the connection's levels: a list of (response key, what); ``what`` is a
# type name string for __typename, or a level-specific item. Nodes are the shape
# compiler's (:func:`~chatql.gql.plans.shapes.object_shape`), reading page rows.
_Shape = list[tuple[str, Any]]


class _NoPlan(Exception):
    """The document is not one this module compiles."""


class _Fallback(Exception):
    """This request must run the ordinary way."""


@dataclass(frozen=True, slots=True)
class _PagePlan:
    kind: str  # the root field: "messages", "chats", "chat" or "interrupts"
    operation: OperationDefinitionNode
    root: _Shape  # ("__typename", name) or (key, None) for the page itself
    field: GraphQLField
    node: FieldNode
    connection: _Shape  # edges -> the edges' filler, pageInfo -> page-info shape
    needs_cursors: bool
    #: The columns each row is read with (a chat's, then its newest message's).
    columns: tuple[str, ...]
    message_columns: tuple[str, ...] = ()
    #: ``chat``: the chat object from its row.
    chat: Shape | None = None
    #: What a row's cursor encodes and what decides it (``messages`` across branches:
    #: the sequence; ``chats``: see :func:`chat_positions`; ``interrupts``:
    #: :func:`inbox_positions`).
    positions: tuple[Callable[[Any], Any], Callable[[Any], Any]] | None = None
    #: ``messages``: each ``Message.files`` the nodes ask for (a file's filler, by its
    #: slot: see :meth:`CompiledReads._with_files`), and where a row holds the message's
    #: id, type and props (what orders its files).
    files: tuple[Shape, ...] = ()
    file_source: tuple[int, int, int] = (0, 0, 0)


class _Columns:
    """The columns a plan reads, in the table's order: gathered while its selection is
    compiled the first time, then bound (the second time, each field reads its place)."""

    def __init__(self, order: tuple[str, ...], always: tuple[str, ...]) -> None:
        self._order = order
        self._wanted = set(always)
        self.bound: tuple[str, ...] | None = None

    def want(self, *names: str) -> None:
        self._wanted.update(names)

    def columns(self) -> tuple[str, ...]:
        return tuple(name for name in self._order if name in self._wanted)

    def bind(self) -> None:
        self.bound = self.columns()


def _unwrap(kind: Any) -> tuple[Any, bool]:
    nullable = not isinstance(kind, GraphQLNonNull)
    return (kind if nullable else kind.of_type), nullable


def _unbound(row: Any) -> Any:  # pragma: no cover - the first pass's fillers never run
    raise AssertionError("a plan filled before its columns were bound")


#: Scalars whose output coercion returns values of one Python type unchanged
#: (graphql-core's own String, ID, Boolean and 32-bit Int): the coercer is skipped for them.
_UNCHANGED = {"String": "str", "ID": "str", "Boolean": "bool", "Int": "int"}


def _kind(field_def: GraphQLField, stored: Attribute) -> str | None:
    """How a column's output may be made faster: "str", "bool" or "int" for
    graphql-core's own String/ID, Boolean and Int when the driver's value is the
    record's; "time" or "enum" where outputs are remembered; None otherwise."""
    leaf, _ = _unwrap(field_def.type)
    if isinstance(leaf, GraphQLEnumType):
        return "enum"
    if isinstance(leaf, GraphQLScalarType) and (
            leaf.coerce_output_value is _BUILTIN_COERCERS.get(leaf.name)):
        return None if stored.convert is not None else _UNCHANGED.get(leaf.name)
    return "time" if stored.time else None


def _bound(stored: Attribute, kind: str | None, complete: Callable[[Any], Any],
           index: int) -> Callable[[Any], Any]:
    """The response's value of a field stored as ``stored``, from a row whose column is
    at ``index`` (``complete``: the shape compiler's, from the record's value).

    Raises :class:`~chatql.gql.plans.shapes.Refused` where the executor would report an
    error (a null in a non-null field, a value the scalar refuses).
    """
    convert = stored.convert

    def output(raw: Any) -> Any:
        return complete(raw if convert is None else convert(raw))

    if stored.column is None:  # not stored: one value for every row
        constant = output(stored.constant)
        return lambda row: constant
    if kind == "str" or kind == "bool":
        same = str if kind == "str" else bool

        def plain(row: Any) -> Any:
            value = row[index]
            return value if type(value) is same else output(value)

        return plain
    if kind == "int":
        def integer(row: Any) -> Any:
            value = row[index]
            if type(value) is int and -2_147_483_648 <= value <= 2_147_483_647:
                return value
            return output(value)

        return integer
    if kind in _REMEMBERED:
        # An enum has a handful of values, and the same pages (so the same times) are
        # read again and again: each value's output is worked out once while remembered.
        # A time's output is a function of the stored instant alone (it is printed in
        # UTC), so the driver's value is the key.
        limit = _REMEMBERED[kind]
        remembered: dict[Any, Any] = {}

        def remembering(row: Any) -> Any:
            raw = row[index]
            known = remembered.get(raw, _MISSING)
            if known is not _MISSING:
                return known
            coerced = output(raw)
            if len(remembered) >= limit:
                remembered.clear()
            remembered[raw] = coerced
            return coerced

        return remembering
    return lambda row: output(row[index])


#: A field with a resolver of its own that a page row answers: (parent, field, its nodes,
#: the collector, depth) -> its output from the row.
_Resolved = Callable[[GraphQLObjectType, str, GraphQLField, list[FieldNode], Collector, int],
                     Callable[[Any], Any]]


class _Rows(Reader):
    """Reads an object's stored fields from a page row, whose columns (``columns``,
    once bound) start at ``offset``, each decoded as the record's attribute is
    (``attribute_of``); ``resolved`` answers the fields with resolvers it knows."""

    def __init__(self, attribute_of: Callable[[str], Attribute | None], columns: _Columns,
                 offset: int = 0, resolved: dict[str, _Resolved] | None = None) -> None:
        self._attribute_of = attribute_of
        self._columns = columns
        self._offset = offset
        self._resolved = resolved or {}

    def plain(self, parent: GraphQLObjectType, field_def: GraphQLField, attribute: str,
              named: Any, complete: Callable[[Any], Any]) -> Callable[[Any], Any]:
        stored = self._attribute_of(attribute)
        if stored is None or not isinstance(named, GraphQLScalarType | GraphQLEnumType):
            raise NoShape  # not a column of the row
        if stored.column is not None:
            self._columns.want(stored.column)
        bound = self._columns.bound
        if bound is None:
            return _unbound
        index = -1 if stored.column is None else self._offset + bound.index(stored.column)
        return _bound(stored, _kind(field_def, stored), complete, index)

    def resolved(self, parent: GraphQLObjectType, name: str, field_def: GraphQLField,
                 nodes: list[FieldNode], collector: Collector, depth: int
                 ) -> Callable[[Any], Any]:
        answer = self._resolved.get(name)
        if answer is None:
            raise NoShape
        return answer(parent, name, field_def, nodes, collector, depth)


class _FileRecords(Reader):
    """Reads a ``File`` from ``(record, files service, base URL)``: its stored fields
    from the record, ``url`` signed as the resolver signs it."""

    def plain(self, parent: GraphQLObjectType, field_def: GraphQLField, attribute: str,
              named: Any, complete: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda source: complete(getattr(source[0], attribute))

    def resolved(self, parent: GraphQLObjectType, name: str, field_def: GraphQLField,
                 nodes: list[FieldNode], collector: Collector, depth: int
                 ) -> Callable[[Any], Any]:
        leaf, nullable = _unwrap(field_def.type)
        if (name != "url" or nullable or leaf is not GraphQLString
                or not _resolver_of(field_def, File, "url")):
            raise NoShape
        return lambda source: signed_url(source[1], source[2], str(source[0].id))


_FILE_RECORDS = _FileRecords()


def _sets(nodes: list[FieldNode]) -> list[SelectionSetNode]:
    return [node.selection_set for node in nodes if node.selection_set is not None]


def _check_leaf(parent: GraphQLObjectType, name: str) -> None:
    """A connection field the plan answers itself must still be a plain scalar."""
    field_def = parent.fields.get(name)
    if field_def is None or plain_attribute(field_def) is None or not isinstance(
            named_type(field_def.type), GraphQLScalarType):
        raise _NoPlan


def _object(parent: GraphQLObjectType, name: str, *, plain: bool = True,
            listed: bool = False) -> GraphQLObjectType:
    field_def = parent.fields.get(name)
    if field_def is None or (plain and plain_attribute(field_def) is None):
        raise _NoPlan
    kind, nullable = _unwrap(field_def.type)
    if nullable:
        raise _NoPlan
    if listed:
        if not isinstance(kind, GraphQLList):
            raise _NoPlan
        kind, nullable = _unwrap(kind.of_type)
        if nullable:
            raise _NoPlan
    if not isinstance(kind, GraphQLObjectType):
        raise _NoPlan
    return kind


_ATTRIBUTES: dict[str, Callable[[str], Attribute | None]] = {
    "messages": message_attribute, "chats": chat_attribute, "chat": chat_attribute,
    "interrupts": interrupt_attribute}
#: Per root field: the table's columns, and those every row is read with (its cursor's).
_PROJECTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "messages": (MESSAGE_COLUMNS, ("id", "sequence")),
    "chats": (CHAT_COLUMNS, ("id", "activity_at")),
    "chat": (CHAT_COLUMNS, ("id",)),
    "interrupts": (INTERRUPT_COLUMNS, ("id", "requested_at")),
}


def _check_message_arguments(field_def: GraphQLField) -> None:
    if not set(field_def.args) <= _PAGE_ARGUMENTS:
        raise _NoPlan
    filter_type, _ = _unwrap(field_def.args["filter"].type) if "filter" in field_def.args else (
        None, True)
    if filter_type is not None and not set(filter_type.fields) <= set(_FILTER_FIELDS):
        raise _NoPlan


def _check_chat_list_arguments(field_def: GraphQLField, node: FieldNode) -> None:
    """Chat lists are compiled in their default shape only: no filter, newest activity
    first; the document may give ``first`` and ``after`` and nothing else."""
    if set(field_def.args) != set(_CHAT_LIST_DEFAULTS) | {"first", "after"}:
        raise _NoPlan
    for name, expected in _CHAT_LIST_DEFAULTS.items():
        default = field_def.args[name].default_value
        if getattr(default, "value", default) != expected:
            raise _NoPlan
    if any(argument.name.value not in ("first", "after") for argument in node.arguments or ()):
        raise _NoPlan


def _check_inbox_arguments(field_def: GraphQLField, node: FieldNode) -> None:
    """The inbox is compiled with its default filter only (the resolver's, when the
    argument's default is null): the document may give ``first`` and ``after``."""
    if set(field_def.args) != _INBOX_ARGUMENTS | {"filter"} or (
            field_def.args["filter"].default_value is not None):
        raise _NoPlan
    if any(argument.name.value not in _INBOX_ARGUMENTS for argument in node.arguments or ()):
        raise _NoPlan


def _compile_chat(operation: OperationDefinitionNode, root: _Shape, field_def: GraphQLField,
                  nodes: list[FieldNode], collector: Collector) -> _PagePlan:
    """``chat(id)``: its stored fields and ``lastMessage`` (its stored fields), from one
    row: the chat's columns, then its newest message's."""
    if set(field_def.args) != {"id"}:
        raise _NoPlan
    chat_type, nullable = _unwrap(field_def.type)
    if not nullable or not isinstance(chat_type, GraphQLObjectType):
        raise _NoPlan
    chat_columns = _Columns(*_PROJECTIONS["chat"])
    message_columns = _Columns(MESSAGE_COLUMNS, ("id",))
    asked: list[bool] = []

    def last_message(parent: GraphQLObjectType, name: str, last: GraphQLField,
                     fields: list[FieldNode], collector: Collector, depth: int
                     ) -> Callable[[Any], Any]:
        message_type, last_nullable = _unwrap(last.type)
        if ( not last_nullable
                or not isinstance(message_type, GraphQLObjectType)
                or not _resolver_of(last, ChatType, "last_message")):
            raise NoShape
        asked.append(True)
        at = len(chat_columns.bound or ())  # where the message's columns start: its id
        fill = object_shape(message_type, _sets(fields), collector=collector, depth=depth + 1,
                            reader=_Rows(message_attribute, message_columns, offset=at))
        if chat_columns.bound is None:
            return _unbound
        return lambda row: fill(row) if row[at] is not None else None

    def compile_chat() -> Shape:
        return object_shape(chat_type, _sets(nodes), collector=collector, reader=_Rows(
            chat_attribute, chat_columns, resolved={"lastMessage": last_message}))

    compile_chat()
    chat_columns.bind()
    message_columns.bind()
    chat = compile_chat()
    return _PagePlan(kind="chat", operation=operation, root=root, field=field_def,
                     node=nodes[0], connection=[], needs_cursors=False,
                     columns=chat_columns.columns(),
                     message_columns=message_columns.columns() if asked else (), chat=chat)


def _compile_page(schema: Any, document: DocumentNode,
                  operation_name: str | None) -> _PagePlan:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {d.name.value: d for d in document.definitions
                 if isinstance(d, FragmentDefinitionNode)}
    if len(operations) + len(fragments) != len(document.definitions):
        raise _NoPlan
    if operation_name is not None:
        operations = [o for o in operations if o.name and o.name.value == operation_name]
    if len(operations) != 1:
        raise _NoPlan
    operation = operations[0]
    if operation.operation != OperationType.QUERY or operation.directives or any(
        definition.directives for definition in operation.variable_definitions or ()
    ):
        raise _NoPlan
    query_type: GraphQLObjectType = schema.query_type
    collector = Collector(fragments)
    roots = collector.collect(query_type, [operation.selection_set])
    root: _Shape = []
    page: tuple[GraphQLField, list[FieldNode]] | None = None
    for key, nodes in roots.items():
        name = nodes[0].name.value
        if name == "__typename":
            root.append((key, query_type.name))
        elif name in _ATTRIBUTES and page is None and len(nodes) == 1:
            page = (query_type.fields[name], nodes)
            root.append((key, None))
        else:
            raise _NoPlan
    if page is None:
        raise _NoPlan
    field_def, nodes = page
    kind = nodes[0].name.value
    if kind == "chat":
        return _compile_chat(operation, root, field_def, nodes, collector)
    if kind == "messages":
        _check_message_arguments(field_def)
    elif kind == "interrupts":
        _check_inbox_arguments(field_def, nodes[0])
    else:
        _check_chat_list_arguments(field_def, nodes[0])
    connection_type, nullable = _unwrap(field_def.type)
    if nullable or not isinstance(connection_type, GraphQLObjectType):
        raise _NoPlan
    edge_type = _object(connection_type, "edges", listed=True)
    info_type = _object(connection_type, "pageInfo")
    node_type = _object(edge_type, "node")
    columns = _Columns(*_PROJECTIONS[kind])
    files: list[Shape] = []

    def message_files(parent: GraphQLObjectType, name: str, field: GraphQLField,
                      fields: list[FieldNode], collector: Collector, depth: int
                      ) -> Callable[[Any], Any]:
        """``Message.files`` as gql/schema/types.py resolves it (the loader's records, in
        the order the props name them): filled by :meth:`CompiledReads._with_files`."""
        if not _resolver_of(field, Message, "files"):
            raise NoShape
        file_type = _object(parent, name, plain=False, listed=True)
        files.append(object_shape(file_type, _sets(fields), reader=_FILE_RECORDS,
                                  collector=collector, depth=depth + 1))
        columns.want("id", "type", "props")
        return itemgetter(-1 - (len(files) - 1))

    rows = _Rows(_ATTRIBUTES[kind], columns,
                 resolved={"files": message_files} if kind == "messages" else None)

    def compile_connection() -> tuple[_Shape, bool]:
        files.clear()
        needs_cursors = False
        connection: _Shape = []
        for key, (name, fields) in collector.fields(connection_type, _sets(nodes)).items():
            if name == "__typename":
                connection.append((key, connection_type.name))
            elif name == "edges":
                edge: list[tuple[str, str, Any]] = []
                for edge_key, (edge_name, edge_fields) in collector.fields(
                        edge_type, _sets(fields)).items():
                    if edge_name == "__typename":
                        edge.append((edge_key, "constant", edge_type.name))
                    elif edge_name == "cursor":
                        _check_leaf(edge_type, "cursor")
                        needs_cursors = True
                        edge.append((edge_key, "cursor", None))
                    elif edge_name == "node":
                        edge.append((edge_key, "node", object_shape(
                            node_type, _sets(edge_fields), reader=rows, collector=collector)))
                    else:
                        raise _NoPlan
                connection.append((key, ("edges", _edges(edge))))
            elif name == "pageInfo":
                info: _Shape = []
                for info_key, (info_name, _) in collector.fields(info_type, _sets(fields)).items():
                    if info_name == "__typename":
                        info.append((info_key, info_type.name))
                    elif info_name in _PAGE_INFO_FIELDS:
                        _check_leaf(info_type, info_name)
                        needs_cursors = needs_cursors or info_name in ("startCursor",
                                                                       "endCursor")
                        info.append((info_key, ("info", _PAGE_INFO_FIELDS[info_name])))
                    else:
                        raise _NoPlan
                connection.append((key, ("pageInfo", info)))
            else:
                raise _NoPlan
        return connection, needs_cursors

    compile_connection()  # gathers the columns the nodes read
    columns.bind()
    connection, needs_cursors = compile_connection()
    read = columns.columns()
    if kind == "chats":
        positions = chat_positions(read)
    elif kind == "interrupts":
        positions = inbox_positions(read)
    else:
        sequence = itemgetter(read.index("sequence"))
        positions = (sequence, sequence)
    source = (read.index("id"), read.index("type"), read.index("props")) if files else (
        0, 0, 0)
    return _PagePlan(kind=kind, operation=operation, root=root, field=field_def, node=nodes[0],
                     connection=connection, needs_cursors=needs_cursors, columns=read,
                     positions=positions, files=tuple(files), file_source=source)


def _resolver_of(field_def: GraphQLField, owner: type, python_name: str) -> bool:
    """Whether ``field_def`` is still ``owner``'s field ``python_name`` with the resolver
    written there: no arguments, permission classes or field extensions."""
    strawberry_field = field_def.extensions.get("strawberry-definition")
    written = get_object_definition(owner, strict=True).get_field(python_name)
    written_resolver = None if written is None else written.base_resolver
    resolver = getattr(strawberry_field, "base_resolver", None)
    return (not field_def.args and written_resolver is not None and resolver is not None
            and getattr(strawberry_field, "python_name", None) == python_name
            and resolver.wrapped_func is written_resolver.wrapped_func
            and not getattr(strawberry_field, "permission_classes", None)
            and not getattr(strawberry_field, "extensions", None))


def _edges(parts: list[tuple[str, str, Any]]
           ) -> Callable[[list[Any], list[str]], list[dict[str, Any]]]:
    """A page's edges from its rows and their cursors: each part a constant (its
    ``__typename``), the row's cursor or its node's filler."""
    if [kind for _, kind, _ in parts] == ["cursor", "node"]:  # what most front ends ask
        (cursor_key, _, _), (node_key, _, fill) = parts
        return lambda page, cursors: [{cursor_key: cursor, node_key: fill(item)}
                                      for item, cursor in zip(page, cursors, strict=True)]

    def edges(page: list[Any], cursors: list[str]) -> list[dict[str, Any]]:
        built = []
        for index, item in enumerate(page):
            edge: dict[str, Any] = {}
            for key, kind, value in parts:
                edge[key] = (value if kind == "constant" else cursors[index] if kind == "cursor"
                             else value(item))
            built.append(edge)
        return built

    return edges


class CompiledReads:
    """The ``reads`` plan: pages of messages, the chat list, a chat with its newest
    message and the inbox of interrupts, each filled from one prepared statement. One
    per app (one schema, one set of limits); a document is compiled once."""

    name: ClassVar[str] = "reads"
    operation: ClassVar[str] = "query"
    fields: ClassVar[tuple[str, ...]] = ("messages", "chats", "chat", "interrupts")
    transports: ClassVar[frozenset[str]] = frozenset({"http"})
    summary: ClassVar[str] = ("pages of messages, the chat list, a chat with its newest "
                              "message and the inbox, filled from one prepared statement")

    def __init__(self, schema: Any, settings: Settings) -> None:
        self._schema = schema
        # Resolved once: every plan and every read validates and coerces against it.
        self._graphql_schema = graphql_core_schema(schema)
        self._settings = settings
        self._plans: PlanCache[_PagePlan] = PlanCache(_PLAN_CACHE_SIZE)
        # Cursors are a pure function of (key, scope, position): pages read again and
        # again (a chat's newest page) need not be signed again.
        self._signed: dict[tuple[Any, ...], str] = {}
        self._signer: Any = None
        # A file's filled selection is a pure function of (selection, file, base URL,
        # the minute its address expires): a page read again within the minute reuses it.
        self._filled: dict[tuple[Any, ...], Any] = {}

    def compile(self, query: str | None, operation_name: str | None) -> _PagePlan | None:
        """The cached plan for a document, or None when it must run the ordinary way."""
        if (not query or len(query) > _MAX_DOCUMENT
                or ("messages" not in query and "chat" not in query
                    and "interrupts" not in query)):
            return None
        return self._plans.get((query, operation_name),
                               lambda: self._make(query, operation_name))

    def _make(self, query: str, operation_name: str | None) -> _PagePlan | None:
        settings = self._settings
        graphql_schema = self._graphql_schema
        try:
            document = parse(query, max_lexical_tokens=settings.max_query_tokens,
                             max_comments=settings.max_query_tokens)
        except GraphQLError:
            return None
        rules = (*specified_rules,
                 *limit_rules(settings.max_query_depth, settings.max_query_aliases))
        if validate_document(graphql_schema, document, rules):
            return None
        try:
            return _compile_page(graphql_schema, document, operation_name)
        except (_NoPlan, NoShape):
            return None
        except Exception:  # a shape this module misjudged: the executor serves it
            logger.debug("no plan for a document", exc_info=True)
            return None

    async def run(self, plan: _PagePlan, call: Call) -> dict[str, Any] | None:
        """``{"data": …}`` of a compiled read, or None (run it the ordinary way)."""
        try:
            return {"data": await self._run(plan, call.context, call.variables or {})}
        except (_Fallback, Refused, ChatqlError):
            return None
        except Exception:  # the ordinary path reports whatever this was, properly
            logger.debug("compiled read fell back", exc_info=True)
            return None

    async def _run(self, plan: _PagePlan, context: Context,
                   variables: dict[str, Any]) -> dict[str, Any]:
        if has_nul(variables):
            raise _Fallback
        graphql_schema = self._graphql_schema
        coerced = get_variable_values(graphql_schema,
                                      plan.operation.variable_definitions or (), variables,
                                      max_errors=1)
        if isinstance(coerced, list):
            raise _Fallback
        arguments = get_argument_values(plan.field, plan.node, coerced)
        if plan.kind == "chat":
            chat = await self._chat(plan, context, arguments)
            return {key: chat if what is None else what for key, what in plan.root}
        read = (self._messages if plan.kind == "messages" else
                self._inbox if plan.kind == "interrupts" else self._chats)
        page, cursors, has_next, has_previous = await read(plan, context, arguments)
        if plan.files:
            page = await self._with_files(plan, context, page)
        flags = {"next": has_next, "previous": has_previous,
                 "start": cursors[0] if cursors else None,
                 "end": cursors[-1] if cursors else None}
        connection: dict[str, Any] = {}
        for key, what in plan.connection:
            if isinstance(what, str):
                connection[key] = what
            elif what[0] == "edges":
                connection[key] = what[1](page, cursors)
            else:
                connection[key] = {info_key: info if isinstance(info, str) else flags[info[1]]
                                   for info_key, info in what[1]}
        return {key: connection if what is None else what for key, what in plan.root}

    async def _chat(self, plan: _PagePlan, context: Context,
                    arguments: dict[str, Any]) -> dict[str, Any]:
        """One visible chat (and its newest message) as ``get_chat`` finds it."""
        chat_id = arguments.get("id")
        if not isinstance(chat_id, str):
            raise _Fallback
        check_chat_id(chat_id)
        db, who = context.db, context.identity
        statement = chat_statement(db, ChatPageShape.of(
            db, who, after=False, columns=plan.columns, message_columns=plan.message_columns))
        rows = await fetch(db, statement, {"chat": chat_id, "user": who.user_id,
                                           "tenant": who.tenant_id, "team": who.team_id})
        if len(rows) != 1:
            raise _Fallback  # null chat: the executor answers it
        assert plan.chat is not None
        return plan.chat(rows[0])

    async def _messages(self, plan: _PagePlan, context: Context, arguments: dict[str, Any]
                        ) -> tuple[list[Any], list[str], bool, bool]:
        """A message page as ``message_connection`` reads it: rows, cursors and flags."""
        chat_id = arguments.get("chatId")
        if not isinstance(chat_id, str):
            raise _Fallback
        check_chat_id(chat_id)
        given = arguments.get("filter") or {}
        filter_values = {name: given.get(wire) for wire, name in _FILTER_FIELDS.items()}
        role = filter_values["role"]
        if role is not None:
            filter_values["role"] = role.value
        # Sizes are checked by the store's page reader (a bad one is the executor's).
        first, last = arguments.get("first"), arguments.get("last")
        branch = arguments.get("branch")
        if arguments.get("allBranches") is not True:
            return await self._branch(plan, context, chat_id, filter_values, first, last,
                                      branch, arguments)
        if branch is not None:
            raise _Fallback
        store_filter = MessageFilter(**filter_values)
        scope = _cursor_scope(chat_id, store_filter)
        signer = context.services.cursors
        after = self._position(signer, scope, arguments.get("after"))
        before = self._position(signer, scope, arguments.get("before"))
        # A store error (no such chat, a bad size) is the executor's to tell.
        read = await page_rows(context.db, context.identity, chat_id, filter=store_filter,
                               first=first, after=after, last=last, before=before,
                               columns=plan.columns)
        if not read.rows:
            raise _Fallback  # empty, or archived: the executor brings its rows back
        page, has_previous, has_next = read.rows, read.has_previous, read.has_next
        cursors: list[str] = []
        if plan.needs_cursors:
            assert plan.positions is not None  # across branches: the sequence
            cursors = self._cursors(signer, scope, page, *plan.positions)
        return page, cursors, has_next, has_previous

    async def _branch(self, plan: _PagePlan, context: Context, chat_id: str,
                      filter_values: dict[str, Any], first: int | None, last: int | None,
                      branch: Any, arguments: dict[str, Any]
                      ) -> tuple[list[Any], list[str], bool, bool]:
        """A page along one branch, as ``list_branch`` reads it: rows, cursors, flags."""
        if branch is not None:
            if not isinstance(branch, str):
                raise _Fallback
            check_message_id(branch)
        store_filter = MessageFilter(**filter_values)
        scope = _branch_scope(chat_id, store_filter, branch)
        signer = context.services.cursors
        after = self._branch_position(signer, scope, arguments.get("after"))
        before = self._branch_position(signer, scope, arguments.get("before"))
        # A store error (no such chat or branch, a cursor off it) is the executor's.
        read = await branch_rows(context.db, context.identity, chat_id, branch=branch,
                                 filter=store_filter, first=first, after=after, last=last,
                                 before=before, columns=plan.columns)
        if not read.rows:
            raise _Fallback  # empty, or archived: the executor brings its rows back
        page, has_previous, has_next = read.rows, read.has_previous, read.has_next
        # A row: the message's columns, then its depth.
        message_id, depth, leaf = plan.columns.index("id"), len(plan.columns), read.branch_leaf
        cursors: list[str] = []
        if plan.needs_cursors:
            # A message on a branch: its id, its depth and the branch's end.
            cursors = self._cursors(signer, scope, page,
                                    lambda row: (row[message_id], row[depth], leaf),
                                    lambda row: [row[message_id], row[depth], leaf])
        return page, cursors, has_next, has_previous

    async def _chats(self, plan: _PagePlan, context: Context, arguments: dict[str, Any]
                     ) -> tuple[list[Any], list[str], bool, bool]:
        """A chat-list page as ``list_chats`` reads it (default order, no filter)."""
        who = context.identity
        scope = chat_list_scope(who, ChatListFilter(), "LAST_MESSAGE_AT", "DESC", "UTC",
                                "MONDAY")
        signer = context.services.cursors
        cursor = arguments.get("after")
        if cursor is not None and not isinstance(cursor, str):
            raise _Fallback
        start = None if cursor is None else parse_position(signer.decode(scope, cursor),
                                                            "LAST_MESSAGE_AT")
        first = arguments.get("first")
        if first is not None and first <= 0:
            raise _Fallback
        size = min(first or DEFAULT_CHAT_PAGE_SIZE, MAX_CHAT_PAGE_SIZE)
        db = context.db
        statement = chat_page_statement(db, ChatPageShape.of(
            db, who, after=start is not None, columns=plan.columns, limit=size + 1))
        values: dict[str, Any] = {"user": who.user_id, "tenant": who.tenant_id,
                                  "team": who.team_id}
        if start is not None:
            values.update(chat_after(start, db.dialect))
        rows = await fetch(db, statement, values)
        if not rows:
            raise _Fallback  # the executor asks the neighbour question on its own
        has_previous = start is not None and bool(rows[0][len(plan.columns)])
        page = list(rows[:size])
        assert plan.positions is not None
        cursors = (self._cursors(signer, scope, page, *plan.positions)
                   if plan.needs_cursors else [])
        return page, cursors, len(rows) > size, has_previous

    async def _inbox(self, plan: _PagePlan, context: Context, arguments: dict[str, Any]
                     ) -> tuple[list[Any], list[str], bool, bool]:
        """An inbox page as the ``interrupts`` resolver reads it (its default filter):
        the store's own query, its cursor scope and positions, its size rule."""
        who = context.identity
        scope = store_interrupts.cursor_scope(who, _INBOX_FILTER)
        signer = context.services.cursors
        cursor = arguments.get("after")
        if cursor is not None and not isinstance(cursor, str):
            raise _Fallback
        start = None if cursor is None else store_interrupts.position_from(
            signer.decode(scope, cursor))
        size = store_interrupts.inbox_size(arguments.get("first"))
        db = context.db
        statement = inbox_page_statement(db, InboxPageShape.of(
            db, who, interrupt_filter=_INBOX_FILTER, after=start is not None,
            columns=plan.columns, size=size))
        values: dict[str, Any] = {"user": who.user_id, "tenant": who.tenant_id,
                                  "team": who.team_id}
        if start is not None:
            values.update(chat_after(start, db.dialect))
        rows = await fetch(db, statement, values)
        page = list(rows[:size])
        assert plan.positions is not None
        cursors = (self._cursors(signer, scope, page, *plan.positions)
                   if plan.needs_cursors else [])
        return page, cursors, len(rows) > size, start is not None

    async def _with_files(self, plan: _PagePlan, context: Context,
                          page: list[Any]) -> list[Any]:
        """The page's rows, each followed by its nodes' ``files`` lists: one lookup for
        the messages whose props name a file, by the store call
        ``message_files_loader`` makes, each message's files ordered as ``Message.files``
        orders them."""
        at_id, at_type, at_props = plan.file_source
        service = context.services.files
        # Only messages whose props name a file can have any (most pages hold none).
        asked = {row[at_id]: row[at_props] for row in page
                 if may_reference_files(row[at_props])}
        found = {} if service is None or not asked else await service.files_of_messages(
            list(asked), list(asked.values()))
        fills = tuple(reversed(plan.files))
        if not found:
            return [(*row, *([] for _ in fills)) for row in page]
        request = context.request
        base = "" if request is None else base_url(request)
        read_props = _PROPS.convert if _PROPS is not None else None
        # The minute the addresses made now expire on, as signed_url signs them.
        expires = 0 if service is None else expiry(time.time(), service.limits.url_ttl)
        filled = self._filled
        if len(filled) > _FILLED_KEPT:
            filled.clear()
        rows = []
        for row in page:
            records = found.get(row[at_id], [])
            if len(records) > 1:
                props = row[at_props] if read_props is None else read_props(row[at_props])
                order = {file_id: place for place, file_id in enumerate(
                    file_ids_in(row[at_type], props, strict=False))}
                records = sorted(records, key=lambda file: order.get(file.id, len(order)))
            lists = []
            for fill in fills:
                listed = []
                for record in records:
                    key = (fill, record.id, base, expires)
                    value = filled.get(key)
                    if value is None:
                        value = filled[key] = fill((record, service, base))
                    listed.append(value)
                lists.append(listed)
            rows.append((*row, *lists))
        return rows

    def _cursors(self, signer: Any, scope: str, page: list[Any],
                 key_of: Callable[[Any], Any], position_of: Callable[[Any], Any]) -> list[str]:
        """The page's cursors, each signing ``position_of(row)`` (which ``key_of(row)``
        decides); a page read again reuses the ones signed before."""
        cache = self._signed
        if signer is not self._signer or len(cache) > _SIGNED_CACHE_SIZE:
            cache.clear()
            self._signer = signer
        cursors = []
        encode = None
        for row in page:
            key = (scope, key_of(row))
            cursor = cache.get(key)
            if cursor is None:
                if encode is None:
                    encode = signer.encoder(scope)
                cursor = cache[key] = encode(position_of(row))
            cursors.append(cursor)
        return cursors

    @staticmethod
    def _branch_position(signer: Any, scope: str, cursor: Any) -> BranchPosition | None:
        if cursor is None:
            return None
        if not isinstance(cursor, str):
            raise _Fallback
        position = signer.decode(scope, cursor)
        if (not isinstance(position, list) or len(position) != 3
                or not isinstance(position[0], str) or not isinstance(position[2], str)
                or not isinstance(position[1], int) or isinstance(position[1], bool)):
            raise _Fallback
        return BranchPosition(position[0], position[1], position[2])

    @staticmethod
    def _position(signer: Any, scope: str, cursor: Any) -> int | None:
        if cursor is None:
            return None
        if not isinstance(cursor, str):
            raise _Fallback
        position = signer.decode(scope, cursor)
        if not isinstance(position, int) or isinstance(position, bool):
            raise _Fallback
        return position
