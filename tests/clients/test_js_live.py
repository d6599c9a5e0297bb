"""The TypeScript client against a real chatql server, on both databases.

Runs ``clients/js/test/live`` (Vitest): the npm ``graphql-sse`` client receives a live
``chatStream`` with ``afterSeq``; the stream follower, whose WebSocket is cut mid-stream,
resumes with ``afterSeq`` and ends with exactly the persisted messages; the AI SDK
``ChatTransport`` appends a person's message once and streams the reply as the real
``ai`` package reads it (abort stops the stream, a reload joins a live reply); the
assistant-ui history shows an edited question as branches, stores an edit as
``editMessage`` and a reload as ``regenerate`` by the page's ids, and the thread list pages,
renames, archives and deletes; the stream writer fed a ``streamText`` stream stores
the reply, fails on an error part and survives a lost push answer; the AI SDK's own
``DefaultChatTransport`` against ``POST /ai/chat`` stores the question, reads the reply
as ``toUIMessages`` of the stored chat shows it, regenerates it, and surfaces a bad
body's 400; the assistant-ui attachment adapter uploads with progress (a refused file
shows the service's message) and its message references the stored file, which
``toUIMessages`` shows — with an agent's file message — at signed addresses; the
feedback adapter's ratings read back as ``myFeedback``; an agent's file message in a live
reply over ``ChatqlChatTransport`` is the AI SDK's file part at its signed address, in
the reply's order — also while the reply is live when the agent uploaded the file under
an identity of its own — and a push naming a file the agent may not read is refused, the
reply failing with no file shown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os

from chatql.gql.settings import Settings
from tests.clients.node import JS_DIR, require_node
from tests.gql.test_streams_ws import serve


async def test_typescript_client_over_real_transports(settings: Settings) -> None:
    npx = require_node()
    # Small enough for the live tests to show an upload refused for its size.
    settings = dataclasses.replace(settings, file_max_bytes=1_000_000)
    async with serve(settings) as (server, _app):
        process = await asyncio.create_subprocess_exec(
            npx, "vitest", "run", "--config", "vitest.live.config.ts", "--reporter=verbose",
            cwd=JS_DIR, env={**os.environ, "CHATQL_LIVE_URL": f"http://{server}", "NO_COLOR": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    text = output.decode(errors="replace")
    assert process.returncode == 0, text
    assert "27 passed" in text, text
