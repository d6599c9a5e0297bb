"""chatql's GraphQL layer: the Strawberry schema and the Starlette app around it."""

from __future__ import annotations

from chatql.gql.app import create_app
from chatql.gql.schema import build_schema
from chatql.gql.settings import Settings

__all__ = ["Settings", "build_schema", "create_app"]
