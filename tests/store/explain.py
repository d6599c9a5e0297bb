"""What the database plans for a statement the product runs: EXPLAIN on both backends.

``plan_of`` runs a prepared statement (:mod:`store.db.prepared`) the way
:func:`store.db.prepared.fetch` does, prefixed with ``EXPLAIN`` (``EXPLAIN QUERY PLAN``
on SQLite), and returns the plan as one text; ``plan_of_query`` does the same for a
SQLAlchemy statement with its values bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy.sql import Executable

from chatql.store import clock
from chatql.store.db.database import Database
from chatql.store.db.prepared import PreparedStatement, moment_argument


def uses_index(plan: str, table: str, columns: str) -> bool:
    """Whether ``plan`` reads ``table`` through its index on ``columns`` (joined by
    ``_``): the index itself, or on a hash-partitioned table the partition's copy of it
    (``<table>_p<n>_<columns>_idx``)."""
    return re.search(rf"\b(ix_{table}_{columns}|{table}_p\d+_{columns}_idx)\b",
                     plan) is not None


def _prefix(db: Database) -> str:
    return "EXPLAIN (COSTS OFF) " if db.is_postgres else "EXPLAIN QUERY PLAN "


async def plan_of(db: Database, statement: PreparedStatement,
                  values: Mapping[str, Any]) -> str:
    moment = moment_argument(clock.now(), db.dialect)
    arguments = statement.arguments({**values, "now": moment})
    sql = _prefix(db) + statement.sql
    async with db.write() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        if db.is_postgres:
            rows = await driver.fetch(sql, *arguments)
            return "\n".join(row[0] for row in rows)
        cursor = await driver.execute(sql, arguments)
        try:
            return "\n".join(str(row[-1]) for row in await cursor.fetchall())
        finally:
            await cursor.close()


async def plan_of_query(db: Database, query: Executable) -> str:
    compiled = query.compile(dialect=db.engine.dialect,  # type: ignore[attr-defined]
                             compile_kwargs={"literal_binds": True})
    async with db.write() as conn:
        result = await conn.exec_driver_sql(_prefix(db) + str(compiled))
        return "\n".join(str(row[-1]) for row in result.all())
