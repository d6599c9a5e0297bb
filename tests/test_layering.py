"""The store never depends on the GraphQL layer or web frameworks."""

from __future__ import annotations

import subprocess
import sys


def test_store_imports_no_web_code() -> None:
    code = (
        "import sys, chatql.store, chatql.store.db.migrate, chatql.store.cursors\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('strawberry', 'starlette', 'uvicorn') or m.startswith('chatql.gql')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
