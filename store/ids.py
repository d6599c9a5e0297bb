"""Identifier rules and generation for chats, messages and append ids."""

from __future__ import annotations

import os
import re
import time
from typing import TypeGuard

from chatql.store.errors import InvalidArgument
from chatql.store.limits import ID_CHARS, KEY_CHARS, check_length

__all__ = ["check_append_id", "check_chat_id", "check_message_id", "is_id", "new_id"]

_ID_RE = re.compile(rf"[A-Za-z0-9_.:-]{{1,{ID_CHARS}}}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id() -> str:
    """A 26-character, time-ordered, random id (ULID layout, lower-case Crockford).

    Time-ordered ids keep inserts at the right edge of primary-key indexes.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


def is_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` follows the id rule (1-64 of letters, digits, '_', '.', ':', '-')."""
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def _check_id(value: str, what: str) -> str:
    if not is_id(value):
        raise InvalidArgument(
            f"{what} must be 1-{ID_CHARS} characters of letters, digits, '_', '.', ':' or '-';"
            f" got {value!r:.80}"
        )
    return value


def check_chat_id(value: str) -> str:
    return _check_id(value, "chat id")


def check_message_id(value: str) -> str:
    return _check_id(value, "message id")


def check_append_id(value: str) -> str:
    check_length(value, "appendId", KEY_CHARS)
    if _CONTROL_RE.search(value):
        raise InvalidArgument("appendId must not contain control characters")
    if value != value.strip():
        raise InvalidArgument("appendId must not start or end with whitespace")
    return value
