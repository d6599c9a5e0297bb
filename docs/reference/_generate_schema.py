"""Write the GraphQL schema reference (docs/reference/schema/*.md) from schema.graphql.

    python docs/reference/_generate_schema.py [--schema schema.graphql] [--out DIR]

One page per kind: the root operations (queries, mutations, subscriptions), then the
object, interface, union, input, enum and scalar types and the schema's own directives
(a kind the schema has none of gets no page). Every type is a heading with a stable
anchor (its name in lower case); every type a field, an argument or a value names links
to that anchor. The pages are committed; ``make reference`` rewrites them and the test
suite fails when they no longer match the schema (tests/test_docs_reference.py).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from graphql import (
    GraphQLArgument,
    GraphQLDirective,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLType,
    GraphQLUnionType,
    Undefined,
    ast_from_value,
    build_schema,
    get_named_type,
    print_ast,
    specified_directives,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema.graphql"
OUT = ROOT / "docs" / "reference" / "schema"

HEADER = ("<!-- Generated from schema.graphql by docs/reference/_generate_schema.py: "
          "do not edit, run `make reference`. -->\n\n")
SIGNATURE_WIDTH = 80


@dataclass(frozen=True)
class Kind:
    """One page of the reference: the types of one kind."""

    file: str
    title: str
    intro: str
    test: Callable[[GraphQLNamedType], bool]


KINDS = (
    Kind("objects.md", "Object types",
         "The types the service answers with: each field's type, and the arguments of the "
         "fields that take some.",
         lambda t: isinstance(t, GraphQLObjectType)),
    Kind("interfaces.md", "Interfaces",
         "Fields shared by the object types that implement them.",
         lambda t: isinstance(t, GraphQLInterfaceType)),
    Kind("unions.md", "Unions",
         "A value of one of several object types; select with `... on Type`.",
         lambda t: isinstance(t, GraphQLUnionType)),
    Kind("inputs.md", "Input types",
         "The objects arguments take. A field with a default may be left out, and a "
         "nullable field without one may be left out or null.",
         lambda t: isinstance(t, GraphQLInputObjectType)),
    Kind("enums.md", "Enums",
         "Closed sets of values, written bare in a document (`status: ACTIVE`) and as "
         "strings in variables and responses.",
         lambda t: isinstance(t, GraphQLEnumType)),
    Kind("scalars.md", "Scalars",
         "The leaf values: GraphQL's built-in scalars the schema uses and its own.",
         lambda t: isinstance(t, GraphQLScalarType)),
)

OPERATIONS = (
    ("query", "queries.md", "Queries",
     "The fields of `Query`, the API's reads: send them as `query { … }` to `/graphql` "
     "over HTTP or a WebSocket."),
    ("mutation", "mutations.md", "Mutations",
     "The fields of `Mutation`, the API's writes: send them as `mutation { … }` to "
     "`/graphql` over HTTP POST or a WebSocket; the fields of one document run one after "
     "the other."),
    ("subscription", "subscriptions.md", "Subscriptions",
     "The fields of `Subscription`, live results: send them as `subscription { … }` to "
     "`/graphql` over a WebSocket (graphql-transport-ws or graphql-ws) or over HTTP with "
     "`Accept: text/event-stream` (Server-Sent Events)."),
)


def anchor(name: str) -> str:
    """The anchor of a type, a root field or a directive: its name in lower case."""
    return name.lower()


def field_anchor(owner: str, field: str) -> str:
    """The anchor of an object or interface field's arguments (type names have no '-')."""
    return f"{owner.lower()}-{field.lower()}"


class Reference:
    """The pages of one schema: which page holds each type, and how each is written."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema
        roots = {schema.query_type, schema.mutation_type, schema.subscription_type}
        self.root_names = {root.name for root in roots if root is not None}
        self.types = sorted(
            (t for name, t in schema.type_map.items()
             if not name.startswith("__") and name not in self.root_names),
            key=lambda t: t.name)
        self.page_of: dict[str, str] = {}
        for kind in KINDS:
            for named in self.types:
                if kind.test(named):
                    self.page_of[named.name] = kind.file
        self.directives = [d for d in schema.directives
                           if d.name not in {s.name for s in specified_directives}]

    # Types and values -----------------------------------------------------------------

    def type_link(self, of: GraphQLType, page: str) -> str:
        """The type as written in a document (``[Message!]!``), linked to its named type."""
        named = get_named_type(of)
        target = self.page_of[named.name]
        href = f"#{anchor(named.name)}" if target == page else f"{target}#{anchor(named.name)}"
        return f"[`{type_text(of)}`]({href})"

    def root_fields(self, operation: str) -> dict[str, GraphQLField]:
        root = getattr(self.schema, f"{operation}_type")
        return dict(root.fields) if root is not None else {}

    # Pages ------------------------------------------------------------------------------

    def pages(self) -> dict[str, str]:
        """Every page's file name and text."""
        pages: dict[str, str] = {}
        for operation, file, title, intro in OPERATIONS:
            fields = self.root_fields(operation)
            if fields:
                pages[file] = self.operation_page(file, title, intro, fields)
        for kind in KINDS:
            members = [t for t in self.types if self.page_of[t.name] == kind.file]
            if members:
                pages[kind.file] = self.kind_page(kind, members)
        if self.directives:
            pages["directives.md"] = self.directives_page()
        pages["index.md"] = self.index_page(pages)
        return pages

    def index_page(self, pages: dict[str, str]) -> str:
        lines = [HEADER, "# GraphQL schema\n\n",
                 "Every operation and type of the chatql GraphQL API, generated from the "
                 "schema the service serves (`chatql export-schema` prints it; the "
                 "repository keeps it as `schema.graphql`). The guides show the same API "
                 "by task.\n\n",
                 "| Page | What it lists |\n| --- | --- |\n"]
        for operation, file, title, _ in OPERATIONS:
            if file in pages:
                names = ", ".join(f"[`{name}`]({file}#{anchor(name)})"
                                  for name in self.root_fields(operation))
                lines.append(f"| [{title}]({file}) | {names} |\n")
        for kind in KINDS:
            if kind.file in pages:
                names = ", ".join(f"[`{t.name}`]({kind.file}#{anchor(t.name)})"
                                  for t in self.types if self.page_of[t.name] == kind.file)
                lines.append(f"| [{kind.title}]({kind.file}) | {names} |\n")
        if "directives.md" in pages:
            names = ", ".join(f"[`@{d.name}`](directives.md#{anchor(d.name)})"
                              for d in self.directives)
            lines.append(f"| [Directives](directives.md) | {names} |\n")
        return "".join(lines)

    def operation_page(self, page: str, title: str, intro: str,
                       fields: dict[str, GraphQLField]) -> str:
        parts = [HEADER, f"# {title}\n\n{intro}\n"]
        for name, field in fields.items():
            parts.append(f"\n## `{name}` {{#{anchor(name)}}}\n\n")
            parts.append(self.field_body(name, field, page))
        return "".join(parts)

    def field_body(self, name: str, field: GraphQLField, page: str) -> str:
        """A field with arguments: its signature, description, deprecation, arguments."""
        parts = [f"```graphql\n{signature(name, field)}\n```\n\n"]
        if field.deprecation_reason is not None:
            parts.append(deprecated_admonition(field.deprecation_reason))
        if field.description:
            parts.append(f"{field.description.strip()}\n\n")
        parts.append(f"Returns {self.type_link(field.type, page)}.\n")
        if field.args:
            parts.append("\n" + self.arguments_table(field.args, page))
        return "".join(parts)

    def arguments_table(self, args: dict[str, GraphQLArgument], page: str) -> str:
        rows = ["| Argument | Type | Default | Description |\n| --- | --- | --- | --- |\n"]
        for name, arg in args.items():
            rows.append(f"| `{name}` | {self.type_link(arg.type, page)} | "
                        f"{default_cell(arg)} | "
                        f"{cell(arg.description, arg.deprecation_reason)} |\n")
        return "".join(rows)

    def kind_page(self, kind: Kind, members: Iterable[GraphQLNamedType]) -> str:
        parts = [HEADER, f"# {kind.title}\n\n{kind.intro}\n"]
        for named in members:
            parts.append(f"\n## `{named.name}` {{#{anchor(named.name)}}}\n\n")
            if named.description:
                parts.append(f"{named.description.strip()}\n\n")
            if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
                parts.append(self.fields_section(named, kind.file))
            elif isinstance(named, GraphQLUnionType):
                members_text = ", ".join(self.type_link(t, kind.file) for t in named.types)
                parts.append(f"One of {members_text}.\n")
            elif isinstance(named, GraphQLInputObjectType):
                parts.append(self.input_fields_table(named.fields, kind.file))
            elif isinstance(named, GraphQLEnumType):
                parts.append(enum_table(named))
            elif isinstance(named, GraphQLScalarType):
                parts.append(scalar_text(named))
        return "".join(parts)

    def fields_section(self, named: GraphQLObjectType | GraphQLInterfaceType,
                       page: str) -> str:
        parts = []
        if named.interfaces:
            listed = ", ".join(self.type_link(i, page) for i in named.interfaces)
            parts.append(f"Implements {listed}.\n\n")
        if isinstance(named, GraphQLInterfaceType):
            implementations = self.schema.get_implementations(named)
            found = [*implementations.objects, *implementations.interfaces]
            if found:
                listed = ", ".join(self.type_link(t, page)
                                   for t in sorted(found, key=lambda t: t.name))
                parts.append(f"Implemented by {listed}.\n\n")
        rows = ["| Field | Type | Description |\n| --- | --- | --- |\n"]
        with_args = []
        for name, field in named.fields.items():
            if field.args:
                with_args.append((name, field))
                label = f"[`{name}(…)`](#{field_anchor(named.name, name)})"
                description = cell(field.description, field.deprecation_reason)
            else:
                label = f"`{name}`"
                description = cell(field.description, field.deprecation_reason)
            rows.append(f"| {label} | {self.type_link(field.type, page)} | {description} |\n")
        parts.append("".join(rows))
        for name, field in with_args:
            parts.append(f"\n### `{named.name}.{name}` "
                         f"{{#{field_anchor(named.name, name)}}}\n\n")
            parts.append(self.field_body(name, field, page))
        return "".join(parts)

    def input_fields_table(self, fields: dict[str, GraphQLInputField], page: str) -> str:
        rows = ["| Field | Type | Default | Description |\n| --- | --- | --- | --- |\n"]
        for name, field in fields.items():
            rows.append(f"| `{name}` | {self.type_link(field.type, page)} | "
                        f"{default_cell(field)} | "
                        f"{cell(field.description, field.deprecation_reason)} |\n")
        return "".join(rows)

    def directives_page(self) -> str:
        parts = [HEADER, "# Directives\n\n",
                 "The schema's own directives (besides GraphQL's `@include`, `@skip`, "
                 "`@deprecated`, `@specifiedBy` and `@oneOf`).\n"]
        for directive in self.directives:
            parts.append(f"\n## `@{directive.name}` {{#{anchor(directive.name)}}}\n\n")
            parts.append(f"```graphql\n{directive_signature(directive)}\n```\n\n")
            if directive.description:
                parts.append(f"{directive.description.strip()}\n\n")
            if directive.args:
                parts.append(self.arguments_table(directive.args, "directives.md"))
        return "".join(parts)


# Text helpers ---------------------------------------------------------------------------


def type_text(of: GraphQLType) -> str:
    if isinstance(of, GraphQLNonNull):
        return f"{type_text(of.of_type)}!"
    if isinstance(of, GraphQLList):
        return f"[{type_text(of.of_type)}]"
    assert isinstance(of, GraphQLNamedType)
    return of.name


def default_text(value: GraphQLArgument | GraphQLInputField) -> str | None:
    """The default as written in the schema (``null``, ``"UTC"``, ``DAY``), or None."""
    node = value.ast_node
    if node is not None:
        return print_ast(node.default_value) if node.default_value is not None else None
    if value.default_value is Undefined:
        return None
    printed = ast_from_value(value.default_value, value.type)
    return print_ast(printed) if printed is not None else None


def default_cell(value: GraphQLArgument | GraphQLInputField) -> str:
    text = default_text(value)
    return "" if text is None else code_span(text)


def argument_text(name: str, arg: GraphQLArgument) -> str:
    default = default_text(arg)
    suffix = "" if default is None else f" = {default}"
    return f"{name}: {type_text(arg.type)}{suffix}"


def signature(name: str, field: GraphQLField) -> str:
    """The field as the schema declares it, its arguments on one line when they fit."""
    args = [argument_text(arg_name, arg) for arg_name, arg in field.args.items()]
    returns = type_text(field.type)
    line = f"{name}({', '.join(args)}): {returns}" if args else f"{name}: {returns}"
    if len(line) <= SIGNATURE_WIDTH:
        return line
    inner = "".join(f"  {arg}\n" for arg in args)
    return f"{name}(\n{inner}): {returns}"


def directive_signature(directive: GraphQLDirective) -> str:
    args = ", ".join(argument_text(name, arg) for name, arg in directive.args.items())
    head = f"directive @{directive.name}" + (f"({args})" if args else "")
    repeatable = " repeatable" if directive.is_repeatable else ""
    locations = " | ".join(location.name for location in directive.locations)
    return f"{head}{repeatable} on {locations}"


def deprecated_admonition(reason: str) -> str:
    body = reason.strip() or "No longer supported."
    indented = "\n".join(f"    {line}" if line else "" for line in body.splitlines())
    return f'!!! warning "Deprecated"\n\n{indented}\n\n'


def cell(description: str | None, deprecation: str | None = None) -> str:
    """A description for a table cell: one line, pipes escaped, paragraphs kept apart."""
    parts = []
    if deprecation is not None:
        parts.append(f"**Deprecated:** {deprecation.strip() or 'no longer supported.'}")
    if description:
        parts.append(description.strip())
    text = "<br><br>".join(parts)
    paragraphs = re.split(r"\n\s*\n", text)
    return "<br><br>".join(" ".join(p.split()) for p in map(escape_pipes, paragraphs))


def escape_pipes(text: str) -> str:
    """Pipes outside code spans, escaped so they do not end the table cell."""
    pieces = re.split(r"(`+[^`]*`+)", text)
    return "".join(piece if piece.startswith("`") else piece.replace("|", r"\|")
                   for piece in pieces)


def code_span(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", r"\|")


def enum_table(enum: GraphQLEnumType) -> str:
    rows = ["| Value | Description |\n| --- | --- |\n"]
    for name, value in enum.values.items():
        rows.append(f"| `{name}` | {cell(value.description, value.deprecation_reason)} |\n")
    return "".join(rows)


def scalar_text(scalar: GraphQLScalarType) -> str:
    lines = []
    if scalar.specified_by_url:
        lines.append(f"Specified by <{scalar.specified_by_url}>.\n")
    return "".join(lines)


# Entry points ---------------------------------------------------------------------------


def render(sdl: str) -> dict[str, str]:
    """The reference pages of a schema (its SDL): file name to text."""
    pages = Reference(build_schema(sdl)).pages()
    return {name: re.sub(r"\n{3,}", "\n\n", text) for name, text in pages.items()}


def write(out: Path, pages: dict[str, str]) -> None:
    """Write the pages into ``out``, removing the pages of kinds the schema no longer has."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", type=Path, default=SCHEMA, help="the SDL to read")
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write")
    options = parser.parse_args(argv)
    write(options.out, render(options.schema.read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()
