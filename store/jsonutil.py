"""JSON encoding shared by the store: fast, and canonical where a digest needs it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["canonical_digest", "canonical_json", "dumps", "loads"]


def dumps(value: Any) -> str:
    """Encode ``value`` as compact JSON text (orjson, falling back for huge integers)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


#: Decode JSON text (``str`` or ``bytes``): orjson's own function, called directly.
loads: Callable[[str | bytes], Any] = orjson.loads


def canonical_json(value: Any) -> str:
    """Canonical JSON: object keys sorted, no insignificant whitespace, text kept as is.

    Numbers keep the spelling Python's JSON encoder gives them (integers exactly,
    floats in their shortest round-tripping form), so the same value always digests the
    same.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def canonical_digest(value: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
