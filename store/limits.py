"""Length rules for ids, keys and names: defined once, checked the same way everywhere.

The database columns are sized to these (``store/tables.py``); every store module
checks a caller's value against them before anything is written, so an over-long
value is INVALID_ARGUMENT rather than a database error.
"""

from __future__ import annotations

from chatql.store.errors import InvalidArgument

__all__ = [
    "CHANNEL_CHARS",
    "ID_CHARS",
    "KEY_CHARS",
    "MAX_TAGS",
    "MAX_TOKENS",
    "MODE_CHARS",
    "NAME_CHARS",
    "TAG_CHARS",
    "TITLE_CHARS",
    "TYPE_CHARS",
    "check_length",
    "check_optional_name",
    "check_tokens",
]

#: Ids rows are keyed by (chats, messages, memory entries): 1-64 of letters, digits,
#: '_', '.', ':' and '-' (see :mod:`store.ids`).
ID_CHARS = 64
#: Keys a caller picks to make a write idempotent or to name a stream: appendId,
#: importId, streamId, writeId.
KEY_CHARS = 128
#: Names carried on rows: requestId, blockId, threadId, assistantId, step ids, subjects,
#: memory scopes, model names, identity claims.
NAME_CHARS = 200
#: A message's or chunk's type.
TYPE_CHARS = 64
#: A chat's mode.
MODE_CHARS = 32
#: A chat's channel.
CHANNEL_CHARS = 64
#: A chat's tags: how many, and each one's length.
MAX_TAGS = 20
TAG_CHARS = 64
#: A chat's title.
TITLE_CHARS = 1_000
#: Largest token count accepted (2^53: exact in every JSON client).
MAX_TOKENS = 2**53


def check_length(value: object, what: str, limit: int) -> str:
    """``value`` as a string of 1 to ``limit`` characters, else INVALID_ARGUMENT."""
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise InvalidArgument(f"{what} must be 1-{limit} characters")
    return value


def check_optional_name(value: str | None, what: str, limit: int = NAME_CHARS) -> str | None:
    """An optional name: None, or at most ``limit`` characters."""
    if value is not None and (not isinstance(value, str) or len(value) > limit):
        raise InvalidArgument(f"{what} must be at most {limit} characters")
    return value


def check_tokens(tokens: int | None, name: str = "tokens") -> None:
    """A token count is a whole number from 0 to 2^53 (exact in every JSON client)."""
    if tokens is None:
        return
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_TOKENS:
        raise InvalidArgument(f"{name} must be a whole number from 0 to {MAX_TOKENS}")
