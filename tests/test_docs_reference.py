"""The site's generated reference pages must never drift from what they describe.

- ``docs/reference/schema/`` is written from ``schema.graphql`` by
  ``docs/reference/_generate_schema.py``;
- ``docs/reference/ts/`` is written from the TypeScript client's sources by TypeDoc
  (``npm run docs:reference`` in ``clients/js``), which needs Node.js: without it that
  check is skipped, except in CI, which requires Node.js.

``make reference`` rewrites both (commit the result), as ``chatql export-schema`` rewrites
``schema.graphql`` (tests/gql/test_schema_file.py).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
JS = ROOT / "clients" / "js"
STALE = "the generated reference is stale: run `make reference` and commit the result"


@functools.cache
def _generator() -> ModuleType:
    """docs/reference/_generate_schema.py, imported without leaving bytecode in docs/."""
    return load_script(REFERENCE / "_generate_schema.py", "chatql_docs_generate_schema")


def _tree(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): path.read_text(encoding="utf-8")
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _assert_same(committed: Path, fresh: Path) -> None:
    old, new = _tree(committed), _tree(fresh)
    assert sorted(old) == sorted(new), f"{STALE} (pages added or removed)"
    changed = [name for name in old if old[name] != new[name]]
    assert not changed, f"{STALE}: {changed} under {committed.relative_to(ROOT)}"


_LINK = re.compile(r"\]\((?P<page>[\w.-]*?)(?:#(?P<anchor>[\w-]+))?\)")


def _dangling_links(pages: dict[str, str]) -> list[str]:
    """Links between the pages to a page or a ``{#anchor}`` that is not there."""
    dangling = []
    for name, text in pages.items():
        for link in _LINK.finditer(text):
            page = link["page"] or name
            anchor = link["anchor"]
            if page not in pages or (anchor and f"{{#{anchor}}}" not in pages[page]):
                dangling.append(f"{name}: {link[0]}")
    return dangling


def test_schema_reference_matches_the_schema(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-B", str(REFERENCE / "_generate_schema.py"), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _assert_same(REFERENCE / "schema", tmp_path)


def test_schema_reference_covers_every_operation_and_type() -> None:
    generator = _generator()
    sdl = (ROOT / "schema.graphql").read_text(encoding="utf-8")
    pages = generator.render(sdl)
    assert not _dangling_links(pages)
    every_page = "".join(pages.values())
    declared = re.findall(r"^(?:type|input|enum|scalar|interface|union) (\w+)", sdl, re.M)
    roots = {"Query", "Mutation", "Subscription"}
    missing = [name for name in declared
               if name not in roots and f"## `{name}` {{#{name.lower()}}}" not in every_page]
    assert not missing, missing
    assert "## `createChat` {#createchat}" in pages["mutations.md"]
    assert "## `chatStream` {#chatstream}" in pages["subscriptions.md"]
    assert "| `timezone` | [`String`](scalars.md#string) | `\"UTC\"` |" in pages["queries.md"]


def test_schema_reference_renders_every_kind_and_deprecation() -> None:
    pages = _generator().render('''
        """Anything with an id."""
        interface Node { id: ID! }
        "A book."
        type Book implements Node {
          id: ID!
          "Upper case | or not."
          title(upper: Boolean = false, "Cut here." max: Int): String
            @deprecated(reason: "Use `name`.")
          name: String
        }
        union Found = Book
        enum Color { RED GREEN @deprecated }
        input BookInput { title: String = "x", color: Color = RED, tags: [String!] = [] }
        "Cache the field."
        directive @cached(ttl: Int = 60) on FIELD_DEFINITION | OBJECT
        type Query { book(id: ID!, input: BookInput): Book  found: [Found!]! }
    ''')
    assert sorted(pages) == ["directives.md", "enums.md", "index.md", "inputs.md",
                             "interfaces.md", "objects.md", "queries.md", "scalars.md",
                             "unions.md"]
    assert not _dangling_links(pages)
    objects = pages["objects.md"]
    assert "Implements [`Node`](interfaces.md#node)." in objects
    assert ("| [`title(…)`](#book-title) | [`String`](scalars.md#string) | **Deprecated:** "
            "Use `name`.<br><br>Upper case \\| or not. |") in objects
    assert "### `Book.title` {#book-title}" in objects
    assert "title(upper: Boolean = false, max: Int): String" in objects
    assert '!!! warning "Deprecated"\n\n    Use `name`.' in objects
    assert "| `max` | [`Int`](scalars.md#int) |  | Cut here. |" in objects
    assert "Implemented by [`Book`](objects.md#book)." in pages["interfaces.md"]
    assert "One of [`Book`](objects.md#book)." in pages["unions.md"]
    assert "| `GREEN` | **Deprecated:** No longer supported |" in pages["enums.md"]
    inputs = pages["inputs.md"]
    assert "| `color` | [`Color`](enums.md#color) | `RED` |  |" in inputs
    assert "| `tags` | [`[String!]`](scalars.md#string) | `[]` |  |" in inputs
    assert "directive @cached(ttl: Int = 60) on FIELD_DEFINITION | OBJECT" in pages[
        "directives.md"]
    assert "[`found`](queries.md#found)" in pages["index.md"]


def test_generator_removes_pages_of_kinds_gone(tmp_path: Path) -> None:
    generator = _generator()
    (tmp_path / "unions.md").write_text("old")
    (tmp_path / "notes.txt").write_text("kept")
    generator.write(tmp_path, generator.render("type Query { ok: Boolean }"))
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "index.md", "notes.txt", "queries.md", "scalars.md"]


def _require_typedoc() -> str:
    npm = shutil.which("npm")
    reason = None
    if npm is None:
        reason = "Node.js (npm) is not installed: the TypeScript reference is not checked"
    elif not (JS / "node_modules" / "typedoc").is_dir():
        reason = ("clients/js has no node_modules/typedoc (run `make js-install`): the "
                  "TypeScript reference is not checked")
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI requires it: {reason}")
        pytest.skip(reason)
    assert npm is not None
    return npm


@pytest.mark.slow
def test_typescript_reference_matches_the_sources(tmp_path: Path) -> None:
    npm = _require_typedoc()
    out = tmp_path / "ts"
    done = subprocess.run(
        [npm, "run", "--silent", "docs:reference", "--", "--out", str(out)],
        cwd=JS, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_same(REFERENCE / "ts", out)
