"""Write the producer kit's wire types (``src/chatql_client/types.py``) from the service's
``schema.graphql`` and the kit's GraphQL documents (``src/chatql_client/documents.py``),
and the selections the documents share that the schema decides
(``src/chatql_client/leaves.py``).

    python clients/python/generate_types.py [--schema schema.graphql] [--documents FILE]
                                            [--out FILE]

``make kit-types`` runs it (and so does ``make reference``); the file is committed, and
tests/client/test_wire_types.py fails when it no longer matches what this writes.

The rules:

- One ``TypedDict`` per GraphQL type of :data:`WIRE_TYPES`, named as the type, with the
  type's schema description as its docstring and each field's as the key's.
- An output type's keys are the union of the fields the kit's documents select of it,
  wherever they do (at the root of an operation or nested), in the schema's field order:
  what the kit can receive, and nothing it never asks for. An input type's keys are all
  its fields: what the service accepts.
- A key is required when it is certain to be there: for an output type, when every
  selection of the type in the documents selects the field unconditionally (no
  ``@skip``/``@include``); for an input type, when the field is non-null and has no
  default (what the service requires). A class whose keys are mostly required is a plain
  ``TypedDict`` marking the others ``NotRequired``; any other is ``total=False``, marking
  the required ones ``Required`` (so every key of a shape the documents always select
  whole is required, and a type selected in parts has ``total=False``).
- Types: ``ID``, ``String`` and ``DateTime`` become ``str``, ``Int`` ``int``, ``Float``
  ``float``, ``Boolean`` ``bool``, ``JSON`` ``Any``; an enum a ``Literal`` of its values
  (an alias named as the enum); a list ``list[...]``; a nullable type ``X | None``; an
  object or input type the ``TypedDict`` of that name, which must be one of
  :data:`WIRE_TYPES` or the field listed in :data:`UNTYPED_FIELDS` (then left out).
- :data:`KIT_SHAPES` are the kit's own shapes (not GraphQL types) built from one
  document's answer; each key's type is the type of a path through that answer, so a
  renamed field fails here too.

``leaves.py`` holds, for each type of :data:`LEAF_TYPES`, the selection of its fields
that are scalars or enums, take no argument and are not deprecated, in the schema's order
(``MESSAGE_FIELDS``): the documents select a message through it, so a field added to
``Message`` is sent, received and typed with no edit to the kit. It is written first, and
the documents are read with it.

Anything else (an alias or ``__typename`` in a selection, a scalar with no mapping, a
type no document selects) stops the generator with the reason rather than writing a
guess.
"""

from __future__ import annotations

import argparse
import keyword
import re
import runpy
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import cast

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLNullableType,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLType,
    InlineFragmentNode,
    ListTypeNode,
    NamedTypeNode,
    NonNullTypeNode,
    OperationDefinitionNode,
    SelectionSetNode,
    TypeNode,
    Undefined,
    build_schema,
    get_named_type,
    is_leaf_type,
    parse,
)

KIT = Path(__file__).resolve().parent
ROOT = KIT.parents[1]
SCHEMA = ROOT / "schema.graphql"
DOCUMENTS = KIT / "src" / "chatql_client" / "documents.py"
OUT = KIT / "src" / "chatql_client" / "types.py"
LEAVES = DOCUMENTS.with_name("leaves.py")

#: The command that rewrites the file (named in its header and in the drift test).
COMMAND = "make kit-types"
HEADER = (
    "# Generated from schema.graphql and the kit's documents (chatql_client/documents.py)\n"
    "# by clients/python/generate_types.py: do not edit by hand, run `make kit-types`.\n")

#: The types whose plain fields ``leaves.py`` selects whole, each as ``<TYPE>_FIELDS``.
LEAF_TYPES = ("Message",)
LEAVES_HEADER = (
    "# Generated from schema.graphql by clients/python/generate_types.py: do not edit by\n"
    "# hand, run `make kit-types`.\n")

#: The GraphQL types the kit sends or receives whole, in the order they are written.
WIRE_TYPES = ("Message", "MessageInput", "Decision", "Interrupt", "Resumption", "Chat",
              "AppendReceipt", "FileLimits", "MemoryEntry", "MemoryHit", "SearchHit", "Stream",
              "StreamResult")

#: Fields a document selects of a wire type whose own type has no TypedDict, left out of
#: it, each with the reason. An entry no document needs any more fails the generator.
UNTYPED_FIELDS = {
    ("Chat", "messages"): "only the agent loop's AWAITED_LEAF and CUT_OFF select it, to "
                          "read the chat's newest messages as plain JSON; no call returns it",
}

#: ``scalar name -> annotation``.
SCALARS = {"ID": "str", "String": "str", "DateTime": "str", "Int": "int", "Float": "float",
           "Boolean": "bool", "JSON": "Any"}

WIDTH = 100


@dataclass(frozen=True)
class KitShape:
    """A shape of the kit's own: keys (as the kit spells them) read from paths through
    the answer of one document (field names from the operation's root)."""

    document: str
    description: str
    keys: tuple[tuple[str, str], ...]


#: The kit's own shapes, by class name (written where :data:`ORDER` places them).
KIT_SHAPES = {
    "ChatPage": KitShape(
        "CHATS",
        "One page of chats, as :meth:`ChatqlClient.chats_page` returns it: the nodes of "
        "the ``chats`` connection and its page info, under the kit's own keys.",
        (("chats", "chats.edges.node"), ("end_cursor", "chats.pageInfo.endCursor"),
         ("has_next_page", "chats.pageInfo.hasNextPage"))),
}

#: Every class written, in order.
ORDER = ("Message", "MessageInput", "Decision", "Interrupt", "Resumption", "Chat",
         "ChatPage", "AppendReceipt", "FileLimits", "MemoryEntry", "MemoryHit", "SearchHit",
         "Stream", "StreamResult")

MODULE_DOC = """\
The JSON shapes the kit sends and receives (GraphQL field names, as the service
spells them), generated from the service's schema and the kit's documents
(:mod:`chatql_client.documents`).

Each class is named as its GraphQL type and holds the fields the kit's documents select
of it (an input type: all its fields). A key another selection of the type may leave out
is not required. ``ChatPage`` is the kit's own: :meth:`ChatqlClient.chats_page` builds it
from a ``chats`` connection. Enums are ``Literal`` aliases named as the enum.\
"""


class GenerationError(Exception):
    """The schema and documents do not fit the rules (the message says why)."""


@dataclass(frozen=True)
class Key:
    name: str
    annotation: str
    required: bool
    description: str | None


@dataclass(frozen=True)
class Shape:
    name: str
    description: str
    keys: tuple[Key, ...]


# Reading the documents ------------------------------------------------------------------


def kit_documents(path: Path = DOCUMENTS, leaves: str | None = None) -> dict[str, str]:
    """The documents of the kit's documents module, by constant name: each upper-case
    string constant not ending in ``_FIELDS`` (the rule of test_documents_valid). The
    module is run from its file, with ``leaves`` (the text of ``leaves.py``; by default
    the file beside it) as the module it imports the generated selections from, so the
    kit need not be installed."""
    package = "_chatql_kit_documents"
    leaves_module = ModuleType(f"{package}.leaves")
    text = leaves if leaves is not None else path.with_name("leaves.py").read_text("utf-8")
    exec(compile(text, str(path.with_name("leaves.py")), "exec"), vars(leaves_module))
    parent = ModuleType(package)
    parent.__path__ = []
    saved = {name: sys.modules.get(name) for name in (package, leaves_module.__name__)}
    sys.modules.update({package: parent, leaves_module.__name__: leaves_module})
    try:
        namespace = runpy.run_path(str(path), run_name=f"{package}.documents")
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return {name: value for name, value in namespace.items()
            if name.isupper() and isinstance(value, str) and not name.endswith("_FIELDS")}


def leaf_fields(schema: GraphQLSchema, type_name: str) -> list[str]:
    """The fields of an object type that are scalars or enums, take no argument and are
    not deprecated, in the schema's order."""
    named = schema.get_type(type_name)
    if not isinstance(named, GraphQLObjectType):
        raise GenerationError(f"schema.graphql has no object type {type_name}")
    fields: dict[str, GraphQLField] = named.fields
    return [name for name, field in fields.items()
            if is_leaf_type(get_named_type(field.type)) and not field.args
            and field.deprecation_reason is None]


def render_leaves(sdl: str) -> str:
    """The text of leaves.py for a schema (its SDL)."""
    schema = build_schema(sdl)
    parts = [LEAVES_HEADER, '"""Selections of the schema\'s plain fields that the kit\'s documents '
             'share."""\n']
    for type_name in LEAF_TYPES:
        constant = f"{re.sub(r'(?<!^)(?=[A-Z])', '_', type_name).upper()}_FIELDS"
        lines = textwrap.wrap(" ".join(leaf_fields(schema, type_name)), WIDTH - 8,
                              break_on_hyphens=False)
        parts.append(f"\n#: Every scalar and enum field of ``{type_name}``.\n{constant} = (\n"
                     + "".join(f'    "{line}{" " if i < len(lines) - 1 else ""}"\n'
                               for i, line in enumerate(lines)) + ")\n")
    return "".join(parts)


class Selections:
    """Every selection set of the documents, by the type it selects from: for each, the
    fields it selects, each True when selected unconditionally."""

    def __init__(self, schema: GraphQLSchema, documents: Mapping[str, str]) -> None:
        self.schema = schema
        self.sets: dict[str, list[dict[str, bool]]] = {}
        for name in sorted(documents):
            self._walk(name, parse(documents[name]))

    def _walk(self, name: str, document: DocumentNode) -> None:
        fragments = {d.name.value: d for d in document.definitions
                     if isinstance(d, FragmentDefinitionNode)}
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode):
                root = self.schema.get_root_type(definition.operation)
                if root is None:
                    raise GenerationError(f"{name}: the schema has no {definition.operation.value}")
                self._visit(name, root, definition.selection_set, fragments)

    def _visit(self, name: str, parent: GraphQLNamedType, selection_set: SelectionSetNode,
               fragments: dict[str, FragmentDefinitionNode]) -> None:
        fields: dict[str, bool] = {}
        self._collect(name, parent, selection_set, fragments, fields, True)
        self.sets.setdefault(parent.name, []).append(fields)

    def _collect(self, name: str, parent: GraphQLNamedType, selection_set: SelectionSetNode,
                 fragments: dict[str, FragmentDefinitionNode], fields: dict[str, bool],
                 certain: bool) -> None:
        for selection in selection_set.selections:
            sure = certain and not selection.directives
            if isinstance(selection, FieldNode):
                field_name = selection.name.value
                if selection.alias is not None or field_name.startswith("__"):
                    raise GenerationError(
                        f"{name}: {parent.name}.{field_name} is aliased or a meta field; "
                        "the generator keys the types by field name")
                if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
                    raise GenerationError(f"{name}: selects {field_name} of {parent.name}")
                if field_name not in parent.fields:
                    raise GenerationError(f"{name}: {parent.name} has no field {field_name}")
                fields[field_name] = fields.get(field_name, False) or sure
                if selection.selection_set is not None:
                    self._visit(name, get_named_type(parent.fields[field_name].type),
                                selection.selection_set, fragments)
                continue
            if isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = selection.selection_set
            else:
                assert isinstance(selection, FragmentSpreadNode)
                fragment = fragments[selection.name.value]
                condition, inner = fragment.type_condition, fragment.selection_set
            if condition is None or condition.name.value == parent.name:
                self._collect(name, parent, inner, fragments, fields, sure)
            else:
                narrower = self.schema.get_type(condition.name.value)
                assert narrower is not None
                self._visit(name, narrower, inner, fragments)


# Building the shapes --------------------------------------------------------------------


class Generator:
    def __init__(self, schema: GraphQLSchema, documents: Mapping[str, str]) -> None:
        self.schema = schema
        self.documents = documents
        self.selections = Selections(schema, documents)
        self.enums: dict[str, GraphQLEnumType] = {}
        self.untyped_used: set[tuple[str, str]] = set()
        names = set(ORDER)
        if names != set(WIRE_TYPES) | set(KIT_SHAPES) or len(names) != len(ORDER):
            raise GenerationError("ORDER must list every wire type and kit shape once")

    def annotation(self, of: GraphQLType) -> str:
        """The Python type of a GraphQL type (``X | None`` unless non-null)."""
        if isinstance(of, GraphQLNonNull):
            return self._inner(of.of_type)
        return f"{self._inner(of)} | None"

    def _inner(self, of: GraphQLType) -> str:
        if isinstance(of, GraphQLList):
            return f"list[{self.annotation(of.of_type)}]"
        if isinstance(of, GraphQLScalarType):
            if of.name not in SCALARS:
                raise GenerationError(f"no Python type for the scalar {of.name}: add it to "
                                      "SCALARS")
            return SCALARS[of.name]
        if isinstance(of, GraphQLEnumType):
            self.enums[of.name] = of
            return of.name
        assert isinstance(of, GraphQLNamedType)
        if of.name not in WIRE_TYPES:
            raise GenerationError(f"{of.name} has no TypedDict: add it to WIRE_TYPES")
        return of.name

    def shapes(self) -> list[Shape]:
        shapes = [self.kit_shape(name) if name in KIT_SHAPES else self.wire_shape(name)
                  for name in ORDER]
        unused = set(UNTYPED_FIELDS) - self.untyped_used
        if unused:
            raise GenerationError(f"UNTYPED_FIELDS lists fields no document selects: "
                                  f"{sorted(unused)}")
        clash = set(self.enums) & set(ORDER)
        if clash:
            raise GenerationError(f"enum and TypedDict names clash: {sorted(clash)}")
        return shapes

    def wire_shape(self, name: str) -> Shape:
        named = self.schema.get_type(name)
        if named is None:
            raise GenerationError(f"the schema has no type {name}")
        description = (named.description or f"The GraphQL type ``{name}``.").strip()
        if isinstance(named, GraphQLInputObjectType):
            if not self._taken_as_variable(name):
                raise GenerationError(f"no document takes the input type {name}")
            keys = tuple(
                Key(field_name, self.annotation(field.type),
                    isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined,
                    field.description)
                for field_name, field in named.fields.items())
            return Shape(name, description, keys)
        if not isinstance(named, GraphQLObjectType):
            raise GenerationError(f"{name} is neither an object nor an input type")
        sets = self.selections.sets.get(name)
        if not sets:
            raise GenerationError(f"no document selects the type {name}")
        selected = set().union(*sets)
        out = []
        for field_name, field in named.fields.items():
            if field_name not in selected:
                continue
            if (name, field_name) in UNTYPED_FIELDS:
                self.untyped_used.add((name, field_name))
                continue
            if isinstance(get_named_type(field.type),
                          GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType) \
                    and get_named_type(field.type).name not in WIRE_TYPES:
                raise GenerationError(
                    f"the documents select {name}.{field_name}, of type "
                    f"{get_named_type(field.type).name}, which has no TypedDict: add it to "
                    "WIRE_TYPES or the field to UNTYPED_FIELDS")
            required = all(fields.get(field_name, False) for fields in sets)
            out.append(Key(field_name, self.annotation(field.type), required,
                           field.description))
        return Shape(name, description, tuple(out))

    def _taken_as_variable(self, name: str) -> bool:
        def names(node: TypeNode) -> str:
            if isinstance(node, NonNullTypeNode | ListTypeNode):
                return names(node.type)
            assert isinstance(node, NamedTypeNode)
            return node.name.value

        for text in self.documents.values():
            for definition in parse(text).definitions:
                if isinstance(definition, OperationDefinitionNode) and any(
                        names(v.type) == name for v in definition.variable_definitions or ()):
                    return True
        return False

    def kit_shape(self, name: str) -> Shape:
        shape = KIT_SHAPES[name]
        if shape.document not in self.documents:
            raise GenerationError(f"{name}: the kit has no document {shape.document}")
        document = parse(self.documents[shape.document])
        keys = tuple(Key(key, self.annotation(self._path_type(shape.document, document, path)),
                         True, None)
                     for key, path in shape.keys)
        return Shape(name, shape.description, keys)

    def _path_type(self, document_name: str, document: DocumentNode,
                   path: str) -> GraphQLType:
        """The type of the value at ``path`` in the document's answer: each list on the
        way wraps what is under it (``chats.edges.node`` is ``[Chat!]!``)."""
        operation = next(d for d in document.definitions
                         if isinstance(d, OperationDefinitionNode))
        parent: GraphQLNamedType | None = self.schema.get_root_type(operation.operation)
        selection_set: SelectionSetNode | None = operation.selection_set
        found: GraphQLType | None = None
        for step in path.split("."):
            node = next((s for s in (selection_set.selections if selection_set else ())
                         if isinstance(s, FieldNode) and s.name.value == step), None)
            if node is None or not isinstance(parent, GraphQLObjectType):
                raise GenerationError(f"{document_name} selects no {path}")
            field_type = parent.fields[step].type
            found = field_type if found is None else _substitute(found, field_type)
            parent, selection_set = get_named_type(field_type), node.selection_set
        assert found is not None
        return found


def _substitute(outer: GraphQLType, inner: GraphQLType) -> GraphQLType:
    """``outer`` with ``inner`` in place of its named type: the type of a field of each
    value of ``outer`` (``[Edge!]!`` and ``Chat!`` give ``[Chat!]!``; a nullable value on
    the way makes what is under it nullable)."""
    if isinstance(outer, GraphQLNonNull):
        if isinstance(outer.of_type, GraphQLList):
            return GraphQLNonNull(cast(GraphQLNullableType, _substitute(outer.of_type, inner)))
        return inner
    if isinstance(outer, GraphQLList):
        return GraphQLList(_substitute(outer.of_type, inner))
    return inner.of_type if isinstance(inner, GraphQLNonNull) else inner


# Writing --------------------------------------------------------------------------------


def docstring(text: str, indent: str) -> str:
    """``text`` as a docstring at ``indent``, wrapped to the line length."""
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    one_line = f'{indent}"""{text}"""'
    if "\n" not in text and len(one_line) <= WIDTH:
        return one_line + "\n"
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    lines: list[str] = []
    for number, paragraph in enumerate(paragraphs):
        if number:
            lines.append("")
        first = '"""' if number == 0 else ""
        wrapped = textwrap.wrap(first + paragraph, WIDTH - len(indent) - 3,
                                break_long_words=False, break_on_hyphens=False)
        lines.extend(wrapped)
    lines[-1] += '"""'
    return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


def write_shape(shape: Shape) -> str:
    required = sum(key.required for key in shape.keys)
    # Mark the fewer keys: the optional ones in a total class, else the required ones.
    total = required * 2 > len(shape.keys)
    head = f"class {shape.name}(TypedDict{'' if total else ', total=False'}):"
    parts = [f"\n\n{head}\n", docstring(shape.description, "    "), "\n"]
    for key in shape.keys:
        if keyword.iskeyword(key.name) or key.name.startswith("__"):
            raise GenerationError(f"{shape.name}.{key.name} cannot be a class-syntax key")
        annotation = key.annotation
        if key.required != total:
            annotation = f"{'Required' if key.required else 'NotRequired'}[{annotation}]"
        parts.append(f"    {key.name}: {annotation}\n")
        if key.description:
            parts.append(docstring(key.description, "    "))
    return "".join(parts)


def write_enum(enum: GraphQLEnumType) -> str:
    values = ", ".join(f'"{value}"' for value in enum.values)
    line = f"{enum.name} = Literal[{values}]\n"
    if len(line) > WIDTH:
        inner = "".join(f'    "{value}",\n' for value in enum.values)
        line = f"{enum.name} = Literal[\n{inner}]\n"
    description = enum.description or f"The values of the GraphQL enum ``{enum.name}``."
    return "\n" + line + docstring(description, "")


def render_schema(schema: GraphQLSchema, documents: Mapping[str, str]) -> str:
    generator = Generator(schema, documents)
    shapes = generator.shapes()
    # The annotations are evaluated when the module is imported (no ``from __future__
    # import annotations``: with it, Python 3.11's TypedDict cannot see Required and
    # NotRequired), so a class may name only the classes before it.
    defined: set[str] = set()
    for shape in shapes:
        for key in shape.keys:
            later = set(re.findall(r"\w+", key.annotation)) & (set(ORDER) - defined)
            if later:
                raise GenerationError(f"{shape.name}.{key.name} names {sorted(later)}, "
                                      "written later: reorder ORDER")
        defined.add(shape.name)
    body = "".join(write_shape(shape) for shape in shapes)
    enums = "".join(write_enum(generator.enums[name]) for name in sorted(generator.enums))
    typing_names = {"TypedDict"}
    for name, needed in (("Any", ": Any" in body or "[Any" in body),
                         ("Literal", bool(enums)), ("NotRequired", "NotRequired[" in body),
                         ("Required", ": Required[" in body)):
        if needed:
            typing_names.add(name)
    exported = sorted([*ORDER, *generator.enums])
    all_lines = "".join(f'    "{name}",\n' for name in exported)
    return (f"{HEADER}\n{docstring(MODULE_DOC, '')}\n"
            f"from typing import {', '.join(sorted(typing_names))}\n\n"
            f"__all__ = [\n{all_lines}]\n{enums}{body}")


def render(sdl: str, documents: Mapping[str, str]) -> str:
    """The text of types.py for a schema (its SDL) and the kit's documents (by name)."""
    return render_schema(build_schema(sdl), documents)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", type=Path, default=SCHEMA, help="the SDL to read")
    parser.add_argument("--documents", type=Path, default=DOCUMENTS,
                        help="the kit's documents module")
    parser.add_argument("--out", type=Path, default=OUT, help="the file to write")
    parser.add_argument("--leaves", type=Path, default=LEAVES,
                        help="the generated selections module to write")
    options = parser.parse_args(argv)
    sdl = options.schema.read_text(encoding="utf-8")
    leaves = render_leaves(sdl)
    options.leaves.write_text(leaves, encoding="utf-8")
    text = render(sdl, kit_documents(options.documents, leaves))
    options.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
