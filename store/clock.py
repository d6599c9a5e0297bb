"""The store's clock: the one moment every reader of expiry and every writer of a time
asks. Callers that must follow a test's moved clock look it up as ``clock.now()``."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now"]


def now() -> datetime:
    """The current moment, in UTC."""
    return datetime.now(UTC)
