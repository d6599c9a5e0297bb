"""chatql's GraphQL layer: the Strawberry schema and the Starlette app around it."""

from __future__ import annotations

from gql.app import create_app
from gql.schema import schema
from gql.settings import Settings

__all__ = ["Settings", "create_app", "schema"]
