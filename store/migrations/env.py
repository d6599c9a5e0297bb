"""Alembic environment: runs on the connection handed over by ``store.migrate``."""

from __future__ import annotations

from alembic import context

from chatql.store.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by the bare alembic CLI
    raise RuntimeError("run migrations through `chatql migrate`")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
