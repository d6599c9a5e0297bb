"""Alembic migrations of the chatql schema; they run on SQLite and Postgres alike."""
