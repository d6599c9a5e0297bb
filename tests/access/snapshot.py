"""A fingerprint of everything in the store, to prove a request changed nothing."""

from __future__ import annotations

import hashlib

from sqlalchemy import select

from chatql.store.db.database import Database
from chatql.store.db.tables import metadata

__all__ = ["store_fingerprint"]


async def store_fingerprint(db: Database) -> tuple[tuple[tuple[str, int], ...], str]:
    """Row counts per table and one hash over every row of every table."""
    digest = hashlib.sha256()
    counts: list[tuple[str, int]] = []
    async with db.read() as conn:
        for table in metadata.sorted_tables:
            order = list(table.primary_key.columns) or list(table.columns)
            rows = (await conn.execute(select(table).order_by(*order))).all()
            counts.append((table.name, len(rows)))
            for row in rows:
                digest.update(repr(tuple(row)).encode())
    return tuple(counts), digest.hexdigest()
