"""The TypeScript ``ChatqlChatTransport`` shows an agent's file live as a reload does.

Runs ``clients/js/test/live-files`` (Vitest) against a real chatql server, on both
databases: an agent's ``file`` message in a live reply reaches the AI SDK as its ``file``
part ``{type: "file", mediaType, url}``, ``url`` a signed address (the ``file(id)``
query's) that serves the file's bytes, in the reply's order — the parts ``toUIMessages``
gives the stored reply (which adds the filename) — and a file the person may not read
stays a ``data-file`` part, as the stored reply shows it too.
"""

from __future__ import annotations

import asyncio
import os

from chatql.gql.settings import Settings
from tests.clients.node import JS_DIR, require_node
from tests.gql.test_streams_ws import serve


async def test_live_reply_shows_an_agents_file_as_a_file_part(settings: Settings) -> None:
    npx = require_node()
    async with serve(settings) as (server, _app):
        process = await asyncio.create_subprocess_exec(
            npx, "vitest", "run", "--config", "test/live-files/vitest.config.ts",
            "--reporter=verbose",
            cwd=JS_DIR, env={**os.environ, "CHATQL_LIVE_URL": f"http://{server}", "NO_COLOR": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    text = output.decode(errors="replace")
    assert process.returncode == 0, text
    assert "2 passed" in text, text
