"""The layers hold: the import-linter contracts in pyproject.toml (the GraphQL layer's four
rooms in order, the store below the GraphQL layer and web frameworks, ``store.db`` below
the concepts it stores, the producer kit apart from the server) are all kept. Imports
placed inside functions count as much as those at the top of a module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    linted = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
        cwd=ROOT, capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "kept, 0 broken." in linted.stdout


def test_store_imports_no_web_code() -> None:
    # What the contracts say, seen at run time: importing the store loads no web code.
    code = (
        "import sys, chatql.store, chatql.store.db.migrate, chatql.store.cursors\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('strawberry', 'starlette', 'uvicorn') or m.startswith('chatql.gql')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
