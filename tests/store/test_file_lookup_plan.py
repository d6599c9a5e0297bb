"""A page's file lookup starts from the page's messages, however many files exist."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine

from chatql.store.db.tables import metadata
from chatql.store.files.service import _files_of_messages_statement


def test_sqlite_finds_a_pages_files_by_its_messages_not_by_every_ready_file(
        tmp_path: Any) -> None:
    """Without statistics SQLite would drive the lookup from the files' (state, age)
    index, reading every READY file in the database for each page; the statement keeps
    that index out, so it reads the page's links by message id and each file by key."""
    path = tmp_path / "plan.db"
    engine = create_engine(f"sqlite:///{path}")
    metadata.create_all(engine)
    engine.dispose()
    statement = _files_of_messages_statement(SimpleNamespace(dialect="sqlite",
                                                              statements={}))  # type: ignore[arg-type]
    with sqlite3.connect(path) as conn:
        plan = [row[3] for row in conn.execute(
            "EXPLAIN QUERY PLAN " + statement.sql,
            statement.arguments({"ids": json.dumps(["m1", "m2"]), "now": None}))]
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert searches[0].startswith("SEARCH message_files"), plan
    assert not any("ix_files_state" in step for step in plan), plan
    assert any(step.startswith("SEARCH files USING INDEX sqlite_autoindex_files_1 (id=?)")
               for step in plan), plan
