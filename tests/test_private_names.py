"""Third-party private names and internals appear only in the two adapter modules.

Strawberry, graphql-core, uvicorn, websockets, Starlette, aiosqlite and SQLAlchemy may
change anything that is not their public API in any release. chatql's product code
reaches such internals only through ``gql/library_adapters.py`` and
``store/db/driver_adapters.py``, whose own tests pin what each internal is relied on to do,
so an upgrade that changes one fails there first, with a message naming it.

This test reads every product module (``gql/**/*.py`` but ``gql/static``,
``store/**/*.py``) with the AST and reports, outside the two adapter modules:

- an attribute (or a ``getattr``/``hasattr``/``setattr``/``delattr`` string) with one
  leading underscore that chatql's own code does not define — on ``self``/``cls`` of a
  class with a third-party base, one the class (or a chatql ancestor) does not define;
- a method or class attribute with one leading underscore that overrides one of a
  third-party base class, and any ``super()._name``;
- a name of :data:`KNOWN_INTERNALS` (the internals chatql has relied on, some of them
  without an underscore), whatever the receiver — for a leading-underscore one,
  ``self``/``cls`` of a class that defines it itself excepted;
- an import of a leading-underscore name or module of another package, or of a
  package's internal modules (:data:`INTERNAL_MODULES`);
- a keyword argument with a leading underscore passed to a third-party callable;
- an assignment, at import time, to an attribute of a third-party module or class.

Underscore names that some libraries document as public API, because their objects'
plain attribute names belong to the caller's data (a named tuple's ``_replace``, a
SQLAlchemy row's ``_mapping``), are listed in :data:`PUBLIC_UNDERSCORE_API`.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADAPTER_MODULES = frozenset({"gql/library_adapters.py", "store/db/driver_adapters.py"})

#: The internals product code has used, by name; whatever the receiver, they belong in
#: an adapter module.
KNOWN_INTERNALS: dict[str, str] = {
    "_schema": "strawberry.Schema's graphql-core schema",
    "_is_default": "Strawberry's mark on a resolver it generated",
    "_stream_result": "Strawberry's HTTP view: a subscription's stream",
    "_get_pre_execution_close_reason": "Strawberry's graphql-transport-ws close reasons",
    "_get_stream_transport_from_headers": "Strawberry's HTTP view: Accept -> transport",
    "connection_init_timeout_task": "Strawberry's graphql-transport-ws init timer",
    "__self__": "the object behind a bound method (uvicorn's protocol behind send)",
    "handshake_complete": "uvicorn's WebSocket protocol state",
    "close_sent": "uvicorn's WebSocket protocol state",
    "initial_response": "uvicorn's WebSocket protocol state",
    "expect_continuation_frame": "websockets' protocol framing state",
    "_thread": "aiosqlite's worker thread",
    "_execute": "aiosqlite's queue to its worker thread",
    "_conn": "aiosqlite's sqlite3 connection",
    "_connection": "aiosqlite's sqlite3 connection",
    "_tx": "aiosqlite's queue to its worker thread",
    "positiontup": "SQLAlchemy's compiled positional parameter order",
    "__strawberry_definition__": "Strawberry's type definition object",
}

#: Packages whose modules below these names are internal (their public API is above).
INTERNAL_MODULES = ("uvicorn.protocols", "uvicorn.lifespan", "uvicorn.loops")

#: Underscore names documented as public API.
PUBLIC_UNDERSCORE_API: dict[str, str] = {
    "_replace": "named tuples",
    "_asdict": "named tuples, SQLAlchemy rows",
    "_fields": "named tuples, SQLAlchemy rows",
    "_make": "named tuples",
    "_field_defaults": "named tuples",
    "_mapping": "SQLAlchemy rows",
    "_t": "SQLAlchemy rows",
    "_tuple": "SQLAlchemy rows",
}

_INTROSPECTING = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def _private(name: str) -> bool:
    """One leading underscore: a name the owner keeps to itself (dunders are not)."""
    return name.startswith("_") and not name.startswith("__")


def _module_name(relpath: str) -> str:
    parts = list(Path(relpath).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["chatql", *parts])


def _module_path(module: str) -> str | None:
    """The repository path of a chatql module (``chatql.gql.x`` -> ``gql/x.py``)."""
    parts = module.split(".")
    if parts[0] != "chatql" or len(parts) < 2:
        return None
    base = Path(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return base.with_suffix(".py").as_posix()


def _own_module(module: str) -> bool:
    return module == "chatql" or module.startswith("chatql.")


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names or module == "builtins"


@dataclass(frozen=True)
class Finding:
    """One third-party private name or internal used outside the adapter modules."""

    path: str
    line: int
    name: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} ({self.why})"


@dataclass
class _Class:
    module: str
    name: str
    bases: list[ast.expr]
    defined: set[str] = field(default_factory=set)


@dataclass
class _Module:
    relpath: str
    name: str
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, _Class] = field(default_factory=dict)


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` (None for anything but names and attributes)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _class_defined_names(node: ast.ClassDef) -> set[str]:
    """The names a class defines for itself: methods, class attributes, slots and what
    its methods assign to ``self``/``cls``."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                    if target.id == "__slots__" and item.value is not None:
                        for element in ast.walk(item.value):
                            if isinstance(element, ast.Constant) and isinstance(
                                    element.value, str):
                                names.add(element.value)
    for item in node.body:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        receivers = {"self", "cls"}
        if item.args.args:
            receivers.add(item.args.args[0].arg)
        for inner in ast.walk(item):
            assigned: list[ast.expr] = []
            if isinstance(inner, ast.Assign):
                assigned = list(inner.targets)
            elif isinstance(inner, ast.AnnAssign | ast.AugAssign):
                assigned = [inner.target]
            for target in assigned:
                for element in ast.walk(target):
                    if (isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name)
                            and element.value.id in receivers):
                        names.add(element.attr)
    return names


def _parse(relpath: str, source: str) -> _Module:
    tree = ast.parse(source, filename=relpath)
    module = _Module(relpath, _module_name(relpath), tree)
    package = module.name if relpath.endswith("__init__.py") else module.name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    module.imports[top] = top
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                origin = ".".join([*base, origin] if origin else base)
            for alias in node.names:
                module.imports[alias.asname or alias.name] = f"{origin}.{alias.name}"
        elif isinstance(node, ast.ClassDef):
            module.classes[node.name] = _Class(module.name, node.name, list(node.bases),
                                               _class_defined_names(node))
    return module


def _runtime(qualified: str) -> Any:
    """The object ``qualified`` names, imported (None when it cannot be)."""
    parts = qualified.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                value = getattr(value, attribute)
        except AttributeError:
            return None
        return value
    return None


def _inherited(name: str, bases: list[str]) -> bool:
    """Whether ``name`` is a library's: a known internal, or a private name one of the
    third-party ``bases`` has (any, when one cannot be imported to check)."""
    if name in KNOWN_INTERNALS:
        return True
    if not _private(name):
        return False
    for qualified in bases:
        base = None if qualified == "<unknown>" else _runtime(qualified)
        if base is None or hasattr(base, name):
            return True
    return False


class _Project:
    """Every scanned module, with what chatql defines itself."""

    def __init__(self, modules: Iterable[_Module]) -> None:
        self.modules = {module.name: module for module in modules}
        self.own_names: set[str] = set()
        for module in self.modules.values():
            for node in ast.walk(module.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self.own_names.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    self.own_names.add(node.id)
                elif isinstance(node, ast.arg):
                    self.own_names.add(node.arg)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr == "label" and node.args
                      and isinstance(node.args[0], ast.Constant)
                      and isinstance(node.args[0].value, str)):
                    self.own_names.add(node.args[0].value)  # a SQL column label
            for cls in module.classes.values():
                self.own_names |= cls.defined
        self.own_names -= KNOWN_INTERNALS.keys()

    def origin(self, module: _Module, dotted: list[str]) -> str | None:
        """Where ``dotted`` (a name in ``module``) comes from: a qualified name for an
        import, ``module.name`` for something the module defines, None for a local."""
        head = dotted[0]
        if head in module.imports:
            return ".".join([module.imports[head], *dotted[1:]])
        if head in module.classes:
            return ".".join([module.name, *dotted])
        if hasattr(builtins, head):
            return ".".join(["builtins", *dotted])
        return None

    def lineage(self, cls: _Class) -> tuple[set[str], list[str]]:
        """The names ``cls`` and its chatql ancestors define, and its third-party
        bases (qualified names)."""
        defined = set(cls.defined)
        foreign: list[str] = []
        module = self.modules.get(cls.module)
        for base in cls.bases:
            expression = base.value if isinstance(base, ast.Subscript) else base
            dotted = _dotted(expression)
            if dotted is None or module is None:
                foreign.append("<unknown>")
                continue
            origin = self.origin(module, dotted)
            if origin is None:
                foreign.append("<unknown>")
                continue
            owner_name, _, class_name = origin.rpartition(".")
            if _own_module(origin):
                owner = self.modules.get(owner_name)
                if owner is None and owner_name not in self.modules:
                    # A chatql class this scan did not read: read its module.
                    path = _module_path(owner_name)
                    if path is not None and (ROOT / path).is_file():
                        owner = _parse(path, (ROOT / path).read_text())
                        self.modules[owner.name] = owner
                ancestor = owner.classes.get(class_name) if owner else None
                if ancestor is not None:
                    more, bases = self.lineage(ancestor)
                    # What an ancestor overrides of a library's (in an adapter, say) is
                    # still the library's: a subclass may not use it as its own.
                    defined |= {name for name in more if not _inherited(name, bases)}
                    foreign += bases
            elif not _stdlib(origin):
                foreign.append(origin)
        return defined, foreign


class _Scanner(ast.NodeVisitor):
    def __init__(self, project: _Project, module: _Module) -> None:
        self.project = project
        self.module = module
        self.findings: list[Finding] = []
        # The innermost class: its defined names, third-party bases and receivers.
        self.classes: list[tuple[set[str], list[str]]] = []
        self.receivers: list[set[str]] = []
        self.depth = 0  # functions entered: 0 is import time

    def report(self, node: ast.AST, name: str, why: str) -> None:
        self.findings.append(Finding(self.module.relpath, getattr(node, "lineno", 0), name, why))

    def third_party(self, node: ast.expr) -> str | None:
        """The qualified name of a third-party import ``node`` is rooted at."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        origin = self.project.origin(self.module, dotted)
        if origin is None or _own_module(origin) or _stdlib(origin):
            return None
        return origin

    # -- classes and functions ------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        cls = self.module.classes.get(node.name) or _Class(
            self.module.name, node.name, list(node.bases), _class_defined_names(node))
        defined, foreign = self.project.lineage(cls)
        if foreign:
            self.overrides(node, foreign)
        for decorator in node.decorator_list:
            self.visit(decorator)
        for base in node.bases:
            self.visit(base)
        self.classes.append((defined, foreign))
        for item in node.body:
            self.visit(item)
        self.classes.pop()

    def overrides(self, node: ast.ClassDef, foreign: list[str]) -> None:
        """Report the class's private methods and attributes that a third-party base
        also has (or might have, when the base cannot be imported)."""
        bases = [_runtime(name) if name != "<unknown>" else None for name in foreign]
        for item in node.body:
            names: list[tuple[ast.AST, str]] = []
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.append((item, item.name))
            elif isinstance(item, ast.Assign | ast.AnnAssign):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                names += [(item, t.id) for t in targets if isinstance(t, ast.Name)]
            for where, name in names:
                if not _private(name) and name not in KNOWN_INTERNALS:
                    continue
                for qualified, base in zip(foreign, bases, strict=True):
                    if base is None:
                        self.report(where, name, f"defined on a subclass of {qualified}, "
                                    "which could not be imported to check")
                        break
                    if hasattr(base, name):
                        self.report(where, name, f"overrides {qualified}.{name}")
                        break

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        receivers: set[str] = set()
        if self.classes and node.args.args:
            receivers = {node.args.args[0].arg}
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self.receivers.append(receivers | (self.receivers[-1] if self.receivers else set()))
        self.depth += 1
        for item in node.body:
            self.visit(item)
        self.depth -= 1
        self.receivers.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    # -- names ----------------------------------------------------------------------

    def check(self, node: ast.AST, receiver: ast.expr, name: str) -> None:
        """``receiver.name`` (or its getattr spelling) at ``node``."""
        if name in KNOWN_INTERNALS and not _private(name):
            self.report(node, name, KNOWN_INTERNALS[name])
            return
        if not _private(name):
            return
        is_super = (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name)
                    and receiver.func.id == "super")
        is_self = (isinstance(receiver, ast.Name) and bool(self.receivers)
                   and receiver.id in self.receivers[-1])
        if (is_super or is_self) and self.classes:
            defined, foreign = self.classes[-1]
            if is_super:
                if foreign:
                    self.report(node, name, f"a private member of {', '.join(foreign)}")
                return
            if name in defined or not foreign:
                return  # the class's own (an override of a base's is reported above)
            self.report(node, name, KNOWN_INTERNALS.get(
                name, f"not defined by the class: a private member of {', '.join(foreign)}"))
            return
        if name in KNOWN_INTERNALS:
            self.report(node, name, KNOWN_INTERNALS[name])
            return
        origin = self.third_party(receiver)
        if origin is not None:
            self.report(node, name, f"a private member of {origin}")
            return
        if name in PUBLIC_UNDERSCORE_API or name in self.project.own_names:
            return
        self.report(node, name, "a private name chatql does not define")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.check(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id in _INTROSPECTING
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            self.check(node, node.args[0], node.args[1].value)
        origin = self.third_party(node.func)
        if origin is not None:
            for keyword in node.keywords:
                if keyword.arg is not None and _private(keyword.arg):
                    self.report(node, keyword.arg, f"a private parameter of {origin}")
        self.generic_visit(node)

    # -- imports and import-time patches ----------------------------------------------

    def imported(self, node: ast.AST, module: str, names: Iterable[str]) -> None:
        if _own_module(module):
            return
        parts = module.split(".")
        if any(_private(part) for part in parts):
            self.report(node, module, "a private module of another package")
        elif any(module == internal or module.startswith(internal + ".")
                 for internal in INTERNAL_MODULES):
            self.report(node, module, "an internal module of another package")
        for name in names:
            if _private(name) or name in KNOWN_INTERNALS:
                self.report(node, name, f"a private name of {module}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imported(node, alias.name, ())

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if not node.level:
            self.imported(node, node.module or "", [alias.name for alias in node.names])

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.depth == 0 and not self.classes:
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    root: ast.expr = target
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    origin = self.third_party(root)
                    if origin is not None:
                        self.report(node, ast.unparse(target),
                                    f"patches {origin} at import time")
        self.generic_visit(node)


def scan(sources: dict[str, str]) -> list[Finding]:
    """The findings in ``sources`` (repository path -> text), adapter modules aside."""
    modules = [_parse(path, text) for path, text in sources.items()]
    project = _Project(modules)
    findings: list[Finding] = []
    for module in modules:
        if module.relpath in ADAPTER_MODULES:
            continue
        scanner = _Scanner(project, module)
        scanner.visit(module.tree)
        findings += scanner.findings
    return sorted(findings, key=lambda f: (f.path, f.line, f.name))


def product_sources(root: Path = ROOT) -> dict[str, str]:
    """Every product module under ``root``: repository path -> text."""
    sources: dict[str, str] = {}
    for folder in ("gql", "store"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith("gql/static/"):
                continue
            sources[relative] = path.read_text()
    return sources


def _findings_in(snippet: str, path: str = "gql/snippet.py") -> list[str]:
    return [finding.name for finding in scan({path: snippet})]


def _iter_report(findings: list[Finding]) -> Iterator[str]:
    for finding in findings:
        yield f"  {finding}"


# -- the product code ---------------------------------------------------------------------


def test_product_code_reaches_library_internals_only_through_the_adapters() -> None:
    findings = scan(product_sources())
    assert not findings, (
        "third-party private names outside gql/library_adapters.py and "
        "store/db/driver_adapters.py (move each behind an adapter function):\n"
        + "\n".join(_iter_report(findings)))


#: What the adapter modules themselves rely on, each once: a new internal is a
#: deliberate change here, and private names stay at five or fewer in all. (The
#: uvicorn module is imported only to recognise the protocol behind ``send``.)
ADAPTER_INTERNALS = {
    "gql/library_adapters.py": ["_schema", "__self__",
                                "uvicorn.protocols.websockets.websockets_sansio_impl"],
    "store/db/driver_adapters.py": ["_execute", "_conn", "_thread"],
}


def test_the_adapter_modules_rely_on_five_private_names_at_most() -> None:
    modules = [_parse(path, text) for path, text in product_sources().items()]
    project = _Project(modules)
    found: dict[str, list[str]] = {}
    for module in modules:
        if module.relpath in ADAPTER_MODULES:
            scanner = _Scanner(project, module)
            scanner.visit(module.tree)
            found[module.relpath] = [finding.name for finding in scanner.findings]
    assert found == ADAPTER_INTERNALS, found
    names = [name for names in found.values() for name in names if "." not in name]
    assert len(names) <= 5, names


def test_the_adapter_modules_exist() -> None:
    # The scan exempts them by path: a rename must not exempt nothing silently.
    for path in ADAPTER_MODULES:
        assert (ROOT / path).is_file(), path


# -- the scanner itself --------------------------------------------------------------------


@pytest.mark.parametrize(("snippet", "expected"), [
    ("def f(schema):\n    return schema._schema.type_map\n", ["_schema"]),
    ("def f(schema):\n    return getattr(schema, '_schema')\n", ["_schema"]),
    ("def f(r):\n    return getattr(r, '_is_default', False)\n", ["_is_default"]),
    ("def f(conn):\n    conn._thread.daemon = True\n", ["_thread"]),
    ("def f(compiled):\n    return compiled.positiontup or ()\n", ["positiontup"]),
    ("def f(send):\n    return getattr(send, '__self__', None)\n", ["__self__"]),
    ("def f(p):\n    return p.handshake_complete and not p.close_sent\n",
     ["close_sent", "handshake_complete"]),
    ("def f(x):\n    return x._some_library_secret\n", ["_some_library_secret"]),
    ("import strawberry\n\n@strawberry.input\nclass In:\n    a: int\n\n\n"
     "In.__strawberry_definition__.from_input = lambda *a: None\n",
     ["__strawberry_definition__"]),
    ("import graphql\ngraphql.validate = None\n", ["graphql.validate"]),
    ("from strawberry.http.base import BaseView\nBaseView.timeout = 1\n",
     ["BaseView.timeout"]),
    ("from uvicorn.protocols.websockets.websockets_sansio_impl import "
     "WebSocketsSansIOProtocol\n", ["uvicorn.protocols.websockets.websockets_sansio_impl"]),
    ("from aiosqlite.core import _connection_worker_thread\n",
     ["_connection_worker_thread"]),
    ("import strawberry\n\ndef f():\n    return strawberry._private_helper\n",
     ["_private_helper"]),
    ("from strawberry.types import Info\n\ndef f(r, f):\n    return Info(_raw_info=r)\n",
     ["_raw_info"]),
    # A private member of an imported class, called as a function.
    ("from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (\n"
     "    BaseGraphQLTransportWSHandler)\n\n\ndef f(e):\n"
     "    return BaseGraphQLTransportWSHandler._get_pre_execution_close_reason(e)\n",
     ["_get_pre_execution_close_reason"]),
])
def test_the_scanner_finds(snippet: str, expected: list[str]) -> None:
    assert sorted(_findings_in(snippet)) == sorted(expected)


def test_the_scanner_finds_overrides_of_private_methods() -> None:
    snippet = (
        "from typing import Any\n"
        "from strawberry.asgi import GraphQL\n\n\n"
        "class View(GraphQL[Any, None]):\n"
        "    def __init__(self) -> None:\n"
        "        self._mine = 1\n\n"
        "    def _stream_result(self, request, result, transport):\n"
        "        return super()._stream_result(request, result, transport)\n\n"
        "    def _my_helper(self):\n"
        "        return self._mine + len(self._get_stream_transport_from_headers({}) or ())\n"
    )
    assert sorted(_findings_in(snippet)) == sorted(
        ["_stream_result", "_stream_result", "_get_stream_transport_from_headers"])


def test_the_scanner_finds_base_internals_used_on_self() -> None:
    snippet = (
        "import aiosqlite\n\n\n"
        "class Conn(aiosqlite.Connection):\n"
        "    async def run(self, fn):\n"
        "        return await self._execute(fn, self._conn)\n"
    )
    assert sorted(_findings_in(snippet)) == ["_conn", "_execute"]


def test_an_adapters_override_is_not_its_subclasses_own() -> None:
    adapter = ("from typing import Any\n"
               "from strawberry.asgi import GraphQL\n\n\n"
               "class Hooks(GraphQL[Any, None]):\n"
               "    def _stream_result(self, request, result, transport):\n"
               "        return super()._stream_result(request, result, transport)\n\n"
               "    def hook(self):\n        return self._helper()\n\n"
               "    def _helper(self):\n        return 1\n")
    product = ("from chatql.gql.library_adapters import Hooks\n\n\n"
               "class View(Hooks):\n"
               "    def run(self, request, result, transport):\n"
               "        return self.hook(), self._stream_result(request, result, transport)\n")
    findings = scan({"gql/library_adapters.py": adapter, "gql/view_snippet.py": product})
    assert [(f.path, f.name) for f in findings] == [("gql/view_snippet.py", "_stream_result")]


def test_the_scanner_finds_internals_through_chatql_ancestors() -> None:
    base = ("from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (\n"
            "    BaseGraphQLTransportWSHandler)\n\n\n"
            "class Ours(BaseGraphQLTransportWSHandler):\n"
            "    def own(self):\n        return 1\n")
    child = ("from chatql.gql.base_snippet import Ours\n\n\n"
             "class Child(Ours):\n"
             "    def more(self):\n"
             "        return self.own(), self.connection_init_timeout_task\n"
             "    @staticmethod\n"
             "    def _get_pre_execution_close_reason(error):\n        return None\n")
    findings = scan({"gql/base_snippet.py": base, "gql/child_snippet.py": child})
    assert sorted(f.name for f in findings) == [
        "_get_pre_execution_close_reason", "connection_init_timeout_task"]


@pytest.mark.parametrize("snippet", [
    # chatql's own private names, on any object.
    "class A:\n    def __init__(self):\n        self._shown = set()\n\n"
    "def f(member):\n    return member._shown\n",
    "class A:\n    __slots__ = ('_rows',)\n\n    def f(self, other):\n"
    "        return self._rows, other._rows\n",
    # A class of chatql's own may use what it defines, and what it does not (no
    # third-party base to take it from).
    "class A:\n    def f(self):\n        return self._later\n",
    # A subclass of a library class may add private names of its own.
    "from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext as C\n\n\n"
    "class E(C):\n    def _plan_for(self, a):\n        return self._plan_for(a)\n",
    # Documented public underscore API.
    "def f(row, parts):\n    return row._mapping, parts._replace(query='')\n",
    # A SQL column label chatql names itself.
    "def f(q, c):\n    s = q.add_columns(c.label('_step'))\n    return s.selected_columns._step\n",
    # chatql's own module-level private names, through the module.
    "from chatql.store import events\n\ndef f():\n    return events._helper\n\n"
    "def _helper():\n    return 1\n",
])
def test_the_scanner_lets_chatqls_own_names_be(snippet: str) -> None:
    assert _findings_in(snippet) == []


def test_the_adapter_modules_may_use_internals() -> None:
    snippet = "def f(schema):\n    return schema._schema\n"
    assert _findings_in(snippet, "gql/library_adapters.py") == []
    assert _findings_in(snippet, "store/db/driver_adapters.py") == []
    assert _findings_in(snippet, "store/other.py") == ["_schema"]
