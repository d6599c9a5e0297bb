"""Every GraphQL document the producer kit sends is valid against the service's schema.

The kit's documents live in one module, ``chatql_client.documents``; each upper-case
string constant there not ending in ``_FIELDS`` is a whole document. They are gathered by
introspecting that module, parsed with graphql-core and validated against
``schema.graphql`` (unknown fields and arguments, wrong or unused variables …). A second
test keeps the collection complete: no other kit module spells a document of its own.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import chatql_client
import graphql
from chatql_client import documents

ROOT = Path(__file__).resolve().parents[2]
KIT = Path(chatql_client.__file__).resolve().parent

#: Text that opens a GraphQL operation: ``query(``, ``mutation {``, ``subscription Name``.
OPERATION = re.compile(r"\b(query|mutation|subscription)\s*(\(|\{|[A-Z_a-z]\w*\s*[({])")


@cache
def schema() -> graphql.GraphQLSchema:
    return graphql.build_schema((ROOT / "schema.graphql").read_text())


def kit_documents() -> dict[str, str]:
    """The documents of ``chatql_client.documents``, by constant name."""
    return {name: value for name, value in vars(documents).items()
            if name.isupper() and isinstance(value, str) and not name.endswith("_FIELDS")}


def problems_of(document: str) -> list[str]:
    """Why ``document`` is not a valid operation of the schema (empty: it is)."""
    try:
        parsed = graphql.parse(document)
    except graphql.GraphQLError as error:
        return [f"does not parse: {error.message}"]
    found = [error.message for error in graphql.validate(schema(), parsed)]
    operations = [d for d in parsed.definitions
                  if isinstance(d, graphql.OperationDefinitionNode)]
    if len(operations) != 1 or len(parsed.definitions) != 1:
        found.append("is not exactly one operation")
    return found


def test_every_kit_document_is_valid_against_the_schema() -> None:
    found = kit_documents()
    # The kit's calls: chats, messages, memory, streams, the agent loop, the session.
    assert len(found) >= 26, sorted(found)
    assert {"CREATE_CHAT", "START_STREAM", "PUSH_CHUNKS", "END_STREAM", "CHAT_EVENTS",
            "SESSION_PAGE"} <= found.keys()
    invalid = {name: problems for name, document in sorted(found.items())
               if (problems := problems_of(document))}
    assert not invalid, "kit documents the schema rejects:\n" + "\n".join(
        f"  {name}: {'; '.join(problems)}" for name, problems in invalid.items())


def test_the_check_rejects_a_renamed_field_an_argument_and_a_variable() -> None:
    """The validation is real: a document one edit away from a kit document fails."""
    push = documents.PUSH_CHUNKS
    assert problems_of(push) == []
    assert any("lastSeq" in p for p in problems_of(push.replace("lastSeq", "lastSequence")))
    assert any("streamId" in p for p in problems_of(push.replace("streamId:", "stream:")))
    assert any("$chunks" in p for p in problems_of(
        push.replace("chunks: $chunks", "chunks: []")))
    assert problems_of(documents.CHAT.replace("activeLeafId", "activeLeaf"))
    broken = problems_of(documents.CHAT_EVENTS + " {")
    assert len(broken) == 1 and broken[0].startswith("does not parse")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal of a module, f-strings' literal parts joined with ``{}``."""
    found: list[tuple[int, str]] = []
    parts: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts.update(id(part) for part in node.values)
            text = "".join(str(part.value) if isinstance(part, ast.Constant) else "{}"
                           for part in node.values)
            found.append((node.lineno, text))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in parts):
            found.append((node.lineno, node.value))
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                      | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.add(first.value.lineno)
    return lines


def test_no_kit_module_but_documents_spells_a_graphql_document() -> None:
    """So the validation above sees every document the kit sends."""
    modules = sorted(KIT.glob("*.py"))
    assert {path.name for path in modules} >= {"client.py", "writer.py", "agent_loop.py",
                                               "openai_agents.py", "documents.py"}
    inline = []
    for path in modules:
        if path.name == "documents.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        skip = _docstrings(tree)
        inline += [f"{path.name}:{line}: {text[:70]!r}" for line, text in _strings(tree)
                   if line not in skip and OPERATION.search(text)]
    assert not inline, ("GraphQL documents outside chatql_client.documents (move them "
                        "there, so test_documents_valid checks them):\n" + "\n".join(inline))


def test_the_inline_document_check_finds_one() -> None:
    tree = ast.parse('X = 1\nasync def f(c):\n    await c.execute(f"query($id: ID!) '
                     '{{ chat(id: $id) {{ {FIELDS} }} }}")\n')
    assert [OPERATION.search(text) is not None for _, text in _strings(tree)] == [True]
