"""The stream modules of the store stay free of GraphQL and web code."""

from __future__ import annotations

import subprocess
import sys


def test_stream_modules_import_no_web_code() -> None:
    code = (
        "import sys, chatql.store.streams, chatql.store.streams.backends.memory\n"
        "import chatql.store.messages.resume\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('strawberry', 'starlette', 'uvicorn', 'graphql') or m.startswith('chatql.gql')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
