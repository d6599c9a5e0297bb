"""Turning request credentials into an :class:`~store.records.Identity` (SPEC §10)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gql.settings import Settings
from store.records import Identity

__all__ = ["identity_from_credentials"]

_DEV_KEYS = {
    "user_id": "x-user-id",
    "team_id": "x-team-id",
    "tenant_id": "x-tenant-id",
    "roles": "x-roles",
}


def _lower_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).lower(): value for key, value in values.items()}


def identity_from_credentials(settings: Settings, credentials: Mapping[str, Any]) -> Identity:
    """The caller named by HTTP headers or a WebSocket ``connection_init`` payload.

    In ``dev`` mode the ``X-User-Id``, ``X-Team-Id``, ``X-Tenant-Id`` and ``X-Roles``
    keys are trusted as they are; a caller without a user id is ``dev`` in tenant
    ``default``.
    """
    values = _lower_keys(credentials)

    def text(key: str) -> str | None:
        value = values.get(_DEV_KEYS[key])
        if value is None:
            return None
        value = str(value).strip()
        return value or None

    roles = text("roles") or ""
    return Identity(
        user_id=text("user_id") or "dev",
        tenant_id=text("tenant_id") or "default",
        team_id=text("team_id"),
        roles=frozenset(role.strip() for role in roles.split(",") if role.strip()),
    )
