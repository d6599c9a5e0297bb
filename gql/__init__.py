"""chatql's GraphQL layer: the Strawberry schema and the Starlette app around it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatql.gql.app import create_app
    from chatql.gql.schema.root import build_schema
    from chatql.gql.settings import Settings

__all__ = ["Settings", "build_schema", "create_app"]

# Loaded when first used: the command line (``chatql --help``, ``chatql migrate``) and
# the settings do not need the app, the schema and every resolver imported first.
_HOMES = {"Settings": "chatql.gql.settings", "build_schema": "chatql.gql.schema.root",
          "create_app": "chatql.gql.app"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
