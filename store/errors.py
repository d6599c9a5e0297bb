"""The errors the store raises for expected failures.

Every expected failure is a subclass of :class:`ChatqlError`; anything else escaping
the store is a bug. The GraphQL layer maps each class to its ``extensions.code`` in
one place (``gql/errors.py``)::

    ChatqlError
    ├── NotFound               the chat, message or record does not exist (or is hidden)
    ├── InvalidArgument        input rejected before anything was written
    │   ├── InvalidCursor      a cursor the service did not issue for these arguments
    │   ├── InvalidDelta       a stream chunk that cannot apply to the buffered state
    │   └── WindowTooSmall     the newest turn alone does not fit the model window
    ├── Conflict               the id is taken (or closed forever by a purge)
    │   └── AppendConflict     an append id re-used with different content
    ├── ChatClosed             the chat was purged; nothing can be appended any more
    ├── Expired                an interrupt's time to decide has passed
    ├── StreamError
    │   ├── StreamNotFound     no such stream
    │   ├── StreamClosed       the stream has ended; it takes no more input
    │   └── StreamActive       the chat already has an active stream
    ├── PayloadTooLarge        a batch, buffer or upload over its limit
    ├── UnsupportedMediaType   a file type the service does not take, or bytes that are not it
    ├── QuotaExceeded          an upload past its tenant's file quota
    ├── MemoryFull             a memory write would pass its scope's size cap
    ├── Unauthenticated        no valid identity
    ├── Forbidden              the identity may not do this
    └── PersistFailed          the database failed; the buffer is kept for a retry
"""

from __future__ import annotations

__all__ = [
    "AppendConflict",
    "ChatArchived",
    "ChatClosed",
    "ChatqlError",
    "Conflict",
    "Expired",
    "Forbidden",
    "InvalidArgument",
    "InvalidCursor",
    "InvalidDelta",
    "MemoryFull",
    "NotFound",
    "PayloadTooLarge",
    "PersistFailed",
    "QuotaExceeded",
    "StreamActive",
    "StreamClosed",
    "StreamError",
    "StreamNotFound",
    "Unauthenticated",
    "UnsupportedMediaType",
    "WindowTooSmall",
]


class ChatqlError(Exception):
    """Base class of every expected failure; ``str(error)`` is safe to show a client."""


class NotFound(ChatqlError):
    """The thing asked for does not exist, or the caller may not see it."""


class InvalidArgument(ChatqlError):
    """The input is malformed; nothing was written."""


class InvalidCursor(InvalidArgument):
    """A pagination cursor that was not issued for these arguments."""


class InvalidDelta(InvalidArgument):
    """A delta chunk that cannot be applied to the buffered message."""


class WindowTooSmall(InvalidArgument):
    """The newest complete turn does not fit into the requested model window."""


class Conflict(ChatqlError):
    """The id is already taken (or was closed forever by a purge)."""


class AppendConflict(Conflict):
    """The append id was already used for a batch with different content."""


class ChatClosed(ChatqlError):
    """The chat was purged: it accepts no appends, not even retries."""


class Expired(ChatqlError):
    """An interrupt's time to decide passed before the decision came; nothing changed."""


class StreamError(ChatqlError):
    """Base class of stream lifecycle failures."""


class StreamNotFound(StreamError):
    """No stream with that id (or no active stream in that chat)."""


class StreamClosed(StreamError):
    """The stream has ended and takes no more input."""


class StreamActive(StreamError):
    """The chat already has an active stream."""


class PayloadTooLarge(ChatqlError):
    """A batch, buffer or request over its configured limit."""


class UnsupportedMediaType(ChatqlError):
    """A file of a media type the service does not accept, or whose bytes are not of the
    type it declares (an image or PDF is checked); nothing was kept."""


class QuotaExceeded(ChatqlError):
    """The upload would take its tenant's stored files past the quota; nothing was kept."""


class MemoryFull(ChatqlError):
    """A memory write or update would take its (subject, scope) past the size cap.

    Nothing was written; ``scope_chars`` is what the scope holds now and ``limit`` the
    cap, so the agent can consolidate (update or delete entries) and retry.
    """

    def __init__(self, message: str, *, scope_chars: int, limit: int) -> None:
        super().__init__(message)
        self.scope_chars = scope_chars
        self.limit = limit

    def extensions(self) -> dict[str, int]:
        return {"scopeChars": self.scope_chars, "limit": self.limit}


class Unauthenticated(ChatqlError):
    """The request carries no valid identity."""


class Forbidden(ChatqlError):
    """The caller is known but may not do this."""


class PersistFailed(ChatqlError):
    """The database failed while persisting; the data is kept and will be retried."""


class ChatArchived(Exception):
    """Not an answer to a caller: a write found the chat's messages in the cold archive
    and stopped before writing; the caller restores the chat and writes again."""
