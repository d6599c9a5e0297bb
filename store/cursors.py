"""Opaque, HMAC-signed pagination cursors bound to what they were issued for.

A cursor is ``base64url(json(position)) + "." + base64url(hmac)``; the MAC covers the
*scope* (for example the chat id and filter of a message list) as well as the
position, so a cursor replayed against another chat or filter fails verification.
The key is ``CHATQL_SECRET`` when set, otherwise one random key generated on first
use and kept in the database, so every instance on one database shares it and
cursors survive restarts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from chatql.store import jsonutil
from chatql.store.db.database import Database
from chatql.store.db.tables import service_state
from chatql.store.errors import InvalidCursor

__all__ = ["CursorSigner", "load_or_create_secret"]

_SECRET_KEY = "cursor_secret"
_MAC_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


#: The position of a list ordered by a moment, ties broken by id (newest first).
MomentPosition = tuple[datetime, str]


def moment_position_from(value: Any) -> MomentPosition:
    """The moment-and-id position a signed cursor carried; INVALID_CURSOR when it is
    not one."""
    try:
        at, item_id = value
        if not isinstance(item_id, str):
            raise ValueError
        moment = datetime.fromisoformat(at)
        if moment.tzinfo is None:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidCursor("the cursor is not valid for this list") from None
    return moment.astimezone(UTC), item_id


class CursorSigner:
    """Signs and verifies cursors with one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the cursor key must be at least 16 bytes")
        self._key = key

    def _mac(self, scope: str, body: str) -> bytes:
        message = f"{scope}\x00{body}".encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, scope: str, position: Any) -> str:
        body = _b64(jsonutil.dumps(position).encode())
        return f"{body}.{_b64(self._mac(scope, body))}"

    def encoder(self, scope: str) -> Callable[[Any], str]:
        """``encode`` for many positions of one scope (the key and scope hashed once)."""
        prefix = hmac.new(self._key, f"{scope}\x00".encode(), hashlib.sha256)

        def encode(position: Any) -> str:
            body = _b64(jsonutil.dumps(position).encode())
            mac = prefix.copy()
            mac.update(body.encode())
            return f"{body}.{_b64(mac.digest()[:_MAC_BYTES])}"

        return encode

    def decode(self, scope: str, cursor: str) -> Any:
        """The position inside ``cursor``; INVALID_CURSOR unless issued for ``scope``."""
        body, dot, mac = cursor.partition(".")
        try:
            # Compared as text: base64 ignores a final character's spare bits, and a
            # cursor altered there must not pass.
            if not dot or not hmac.compare_digest(mac, _b64(self._mac(scope, body))):
                raise InvalidCursor("the cursor is not valid for this list")
            return jsonutil.loads(_unb64(body))
        except (binascii.Error, ValueError, UnicodeError):
            raise InvalidCursor("the cursor is not valid for this list") from None


async def load_or_create_secret(db: Database) -> bytes:
    """The database's cursor key, created once (race-safe across instances)."""
    async with db.read() as conn:
        value = await conn.scalar(select(service_state.c.value).where(
            service_state.c.key == _SECRET_KEY))
    if value is None:
        try:
            async with db.write() as conn:
                await conn.execute(
                    insert(service_state).values(key=_SECRET_KEY, value=secrets.token_hex(32))
                )
        except IntegrityError:
            pass  # another instance won the race; use its key
        async with db.read() as conn:
            value = await conn.scalar(select(service_state.c.value).where(
                service_state.c.key == _SECRET_KEY))
    assert value is not None
    return bytes.fromhex(value)
