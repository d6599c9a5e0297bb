"""Finding Node.js and the installed ``clients/js`` packages for tests that run them.

Without them those tests are skipped with the reason; under CI (``CI=true``) they fail,
because CI installs both itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["JS_DIR", "ROOT", "require_node"]

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "clients" / "js"


def require_node(directory: Path = JS_DIR) -> str:
    """The ``npx`` to run; skips (fails under CI) when Node or the packages are missing."""
    npx = shutil.which("npx")
    problem = None
    if npx is None or shutil.which("node") is None:
        problem = "Node.js is not installed (npx/node not on PATH)"
    elif not (directory / "node_modules").is_dir():
        problem = f"npm packages are not installed: run `npm ci` in {directory.relative_to(ROOT)}"
    if problem is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI requires the JavaScript tests: {problem}")
        pytest.skip(problem)
    assert npx is not None
    return npx
