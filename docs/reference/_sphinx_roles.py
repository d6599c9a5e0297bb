"""A Griffe extension for the Python kit's reference page (reference/python.md).

The kit's docstrings cross-reference with Sphinx roles (``:class:`~pkg.mod.Name```,
``:meth:`run```), which Markdown would show as they are written. This extension rewrites
each role as code: linked (an mkdocs-autorefs cross-reference) when the page documents the
target, which is what the package exports (``__all__``) and their documented public
members; plain otherwise, so no link is left dangling.

mkdocs.yml loads it with the Python handler's ``extensions`` option.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>class|meth|func|attr|exc|mod|obj|data|const|type):"
                  r"`(?P<body>[^`]+)`")
CALLABLE_ROLES = {"meth", "func"}


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """The object and, depth first, every member defined in it (not imported)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    """Sphinx cross-reference roles, as Markdown code or autorefs cross-references."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._rewrite(pkg)

    # Griffe before 1.14 names the same moment so; rewriting twice changes nothing.
    def on_package_loaded(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._rewrite(pkg)

    def _rewrite(self, pkg: griffe.Module) -> None:
        exported: dict[str, str] = {}
        for name in pkg.exports or ():
            member = pkg.members.get(str(name))
            if member is not None and member.is_alias:
                exported[member.target_path] = exported[member.path] = member.path
        for obj in _objects(pkg):
            if obj.docstring is None or ":" not in obj.docstring.value:
                continue
            obj.docstring.value = ROLE.sub(
                lambda match, scope=obj: self._replace(match, scope, pkg, exported),
                obj.docstring.value)

    def _replace(self, match: re.Match[str], scope: griffe.Object, pkg: griffe.Module,
                 exported: dict[str, str]) -> str:
        role, body = match["role"], match["body"].strip()
        titled = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        target = (titled["target"] if titled else body).strip()
        short = target.startswith("~")
        target = target.lstrip("~").removesuffix("()")
        if titled:
            shown = titled["title"]
        else:
            shown = target.rsplit(".", 1)[-1] if short else target
            if role in CALLABLE_ROLES:
                shown += "()"
        identifier = self._documented(self._full_path(target, scope), pkg, exported)
        return f"[`{shown}`][{identifier}]" if identifier else f"`{shown}`"

    @staticmethod
    def _full_path(target: str, scope: griffe.Object) -> str | None:
        head, _, rest = target.partition(".")
        try:
            path = scope.resolve(head)
        except griffe.NameResolutionError:
            return target if "." in target else None
        return f"{path}.{rest}" if rest else path

    @staticmethod
    def _documented(path: str | None, pkg: griffe.Module,
                    exported: dict[str, str]) -> str | None:
        """The identifier the page gives the object at ``path``, or None if it has none."""
        if path is None:
            return None
        for canonical, public in exported.items():
            if path != canonical and not path.startswith(canonical + "."):
                continue
            rest = path[len(canonical):]
            if any(part.startswith("_") for part in rest.split(".")[1:]):
                return None
            try:
                target = pkg[public[len(pkg.path) + 1:] + rest]
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None
            return public + rest if not rest or target.docstring else None
        return None
