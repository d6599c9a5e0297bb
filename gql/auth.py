"""Turning request credentials into an :class:`~store.records.Identity`.

Two modes, chosen by ``CHATQL_AUTH``:

- ``dev`` (default): the ``X-User-Id``, ``X-Team-Id``, ``X-Tenant-Id`` and ``X-Roles``
  headers (or the same keys in a WebSocket ``connection_init`` payload) are trusted as
  they are; a caller without a user id is ``dev`` in tenant ``default``.
- ``jwt``: ``Authorization: Bearer <token>``, verified with PyJWT. HS256 tokens are
  checked against ``CHATQL_JWT_SECRET``, RS256 tokens against ``CHATQL_JWT_PUBLIC_KEY``
  (PEM text, or the path of a PEM file); the algorithm a token names only picks which
  configured key to use, so a token can never choose an algorithm the service was not
  given a key for. ``exp``, ``sub`` and ``tenant_id`` are required; ``team_id`` and
  ``roles`` (a JSON list or a comma-separated string) are optional. ``aud`` and ``iss``
  are checked when ``CHATQL_JWT_AUDIENCE`` / ``CHATQL_JWT_ISSUER`` are set.

A missing or invalid token raises :class:`~store.errors.Unauthenticated`; the HTTP
endpoint turns that into a 401 answer with ``extensions.code`` ``UNAUTHENTICATED`` and
the WebSocket handler closes the socket with 4403.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt

from chatql.gql.settings import Settings
from chatql.store.errors import Unauthenticated
from chatql.store.limits import NAME_CHARS
from chatql.store.records import Identity

__all__ = [
    "AUTH_MODES",
    "CREDENTIAL_KEYS",
    "Authenticator",
    "ConfigurationError",
    "authenticator_for",
    "identity_from_credentials",
    "names_caller",
]

AUTH_MODES = ("dev", "jwt")
#: RFC 7518 §3.2: an HS256 key must be at least as long as the hash output.
MIN_HMAC_KEY_BYTES = 32
_MAX_TOKEN_CHARS = 8 * 1024
_MAX_CLAIM_CHARS = NAME_CHARS

_DEV_KEYS = {
    "user_id": "x-user-id",
    "team_id": "x-team-id",
    "tenant_id": "x-tenant-id",
    "roles": "x-roles",
}
#: Keys (lower case) that name a caller, in either mode.
CREDENTIAL_KEYS = frozenset({"authorization", *_DEV_KEYS.values()})


class ConfigurationError(ValueError):
    """The settings cannot work (raised when the app is built, never per request)."""


def _lower_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).lower(): value for key, value in values.items()}


def _roles(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        parts: list[Any] = value.split(",")
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        raise Unauthenticated("the roles claim must be a list or a comma-separated string")
    if not all(isinstance(part, str) for part in parts):
        raise Unauthenticated("every role must be a string")
    return frozenset(part.strip() for part in parts if part.strip())


def _load_public_key(text: str) -> str:
    """PEM text as given, or read from a file when the setting names one."""
    text = text.strip()
    if not text:
        return ""
    if "-----BEGIN" not in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ConfigurationError(
                "CHATQL_JWT_PUBLIC_KEY must be PEM text or the path of a PEM file"
            )
        text = path.read_text().strip()
    # Environment variables often carry the PEM on one line with literal "\n".
    return text.replace("\\n", "\n")


class Authenticator:
    """Verifies credentials for one :class:`Settings`; built once, at startup."""

    def __init__(self, settings: Settings) -> None:
        self.mode = settings.auth.strip().lower()
        if self.mode not in AUTH_MODES:
            raise ConfigurationError(
                f"CHATQL_AUTH must be one of {', '.join(AUTH_MODES)}, got {settings.auth!r}"
            )
        self._keys: dict[str, Any] = {}
        self._audience = settings.jwt_audience or None
        self._issuer = settings.jwt_issuer or None
        if self.mode != "jwt":
            return
        if settings.jwt_secret:
            if len(settings.jwt_secret.encode()) < MIN_HMAC_KEY_BYTES:
                raise ConfigurationError(
                    f"CHATQL_JWT_SECRET must be at least {MIN_HMAC_KEY_BYTES} bytes for HS256"
                )
            self._keys["HS256"] = settings.jwt_secret.encode()
        pem = _load_public_key(settings.jwt_public_key)
        if pem:
            try:
                self._keys["RS256"] = jwt.algorithms.RSAAlgorithm(
                    jwt.algorithms.RSAAlgorithm.SHA256
                ).prepare_key(pem)
            except Exception as error:
                raise ConfigurationError(
                    f"CHATQL_JWT_PUBLIC_KEY is not a usable RSA public key: {error}"
                ) from None
        if not self._keys:
            raise ConfigurationError(
                "CHATQL_AUTH=jwt needs CHATQL_JWT_SECRET (HS256) or "
                "CHATQL_JWT_PUBLIC_KEY (RS256)"
            )

    def identify(self, credentials: Mapping[str, Any]) -> Identity:
        """The caller named by HTTP headers or a ``connection_init`` payload."""
        values = _lower_keys(credentials)
        if self.mode == "jwt":
            return self._from_token(values.get("authorization"))
        return self._from_dev_headers(values)

    @staticmethod
    def _from_dev_headers(values: Mapping[str, Any]) -> Identity:
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

    def _from_token(self, header: Any) -> Identity:
        if not isinstance(header, str) or not header.strip():
            raise Unauthenticated("missing Authorization: Bearer <token>")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
        if len(token) > _MAX_TOKEN_CHARS:
            raise Unauthenticated("the bearer token is too long")
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError:
            raise Unauthenticated("the bearer token is not a JWT") from None
        key = self._keys.get(algorithm) if isinstance(algorithm, str) else None
        if key is None or not isinstance(algorithm, str):
            raise Unauthenticated(
                f"tokens must be signed with {' or '.join(sorted(self._keys))}"
            )
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self._audience,
                issuer=self._issuer,
                options={"require": ["exp", "sub", "tenant_id"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("the bearer token has expired") from None
        except jwt.MissingRequiredClaimError as error:
            raise Unauthenticated(f"the bearer token lacks the {error.claim!r} claim") from None
        except jwt.PyJWTError:
            # Bad signature, audience, issuer, dates or encoding: one answer for all,
            # so a caller cannot probe which check failed.
            raise Unauthenticated("the bearer token is invalid") from None
        return Identity(
            user_id=_claim(claims, "sub", required=True),
            tenant_id=_claim(claims, "tenant_id", required=True),
            team_id=_claim(claims, "team_id", required=False),
            roles=_roles(claims.get("roles")),
        )


def _claim(claims: Mapping[str, Any], name: str, *, required: bool) -> Any:
    value = claims.get(name)
    if not required and (value is None or value == ""):
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_CLAIM_CHARS:
        raise Unauthenticated(f"the {name!r} claim must be a non-empty string")
    return value.strip()


def names_caller(credentials: Mapping[str, Any]) -> bool:
    """Whether HTTP headers or a ``connection_init`` payload name a caller at all (any
    identity header or ``Authorization``). A request that names no one is anonymous:
    in ``dev`` mode it still acts as ``dev`` of tenant ``default``, in ``jwt`` mode it
    is refused, except for what anyone may read (a public share link)."""
    return any(str(key).lower() in CREDENTIAL_KEYS for key in credentials)


@functools.lru_cache(maxsize=8)
def authenticator_for(settings: Settings) -> Authenticator:
    """The (cached) authenticator of ``settings``; raises ConfigurationError if unusable."""
    return Authenticator(settings)


def identity_from_credentials(settings: Settings, credentials: Mapping[str, Any]) -> Identity:
    """The caller named by HTTP headers or a WebSocket ``connection_init`` payload.

    Raises :class:`~store.errors.Unauthenticated` in ``jwt`` mode when the token is
    missing or does not verify.
    """
    return authenticator_for(settings).identify(credentials)
