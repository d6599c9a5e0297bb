"""The ``chatql`` command line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chatql.gql.cli import main
from chatql.store.db.database import Database
from chatql.store.db.migrate import current_revision, head_revision


def test_migrate_and_export_schema(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    subprocess.run([sys.executable, "-m", "chatql.gql.cli", "migrate", "--database-url", url],
                   check=True)

    async def revision() -> str | None:
        db = Database(url)
        try:
            return await current_revision(db)
        finally:
            await db.dispose()

    assert asyncio.run(revision()) == head_revision()
    out = tmp_path / "schema.graphql"
    subprocess.run([sys.executable, "-m", "chatql.gql.cli", "export-schema", "-o", str(out)],
                   check=True)
    assert "type Query" in out.read_text()


def test_serve_holds_websocket_messages_to_the_body_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import logging.config

    import uvicorn

    seen: dict[str, Any] = {}
    configured: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: seen.update(kwargs))
    # Served for real, the process's logging is configured once; here, in the test
    # process, it would stay configured for every later test.
    monkeypatch.setattr(logging.config, "dictConfig", configured.append)
    monkeypatch.setenv("CHATQL_MAX_BODY_BYTES", "12345")
    assert main(["serve"]) == 0
    assert seen["ws_max_size"] == 12345
    # uvicorn is given the logging the command applied, and its access line is off.
    assert configured == [seen["log_config"]] and seen["access_log"] is False
