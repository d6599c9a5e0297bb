"""What the kit raises.

    ChatqlError                 the service answered a GraphQL error (``code`` is its
     │                          ``extensions.code``: NOT_FOUND, CONFLICT, STREAM_ACTIVE …)
     └── StreamStopped          the person pressed Stop (the service answered STREAM_CLOSED)
    ChatqlTransportError        the service could not be reached, or answered 5xx, after
                                every retry
    NoAnswer                    one attempt got no usable answer (what
                                ``ChatqlClient.post_once`` raises and
                                ``ChatqlClient.with_retries`` retries)
    StreamEndedError            a writer call after its stream ended
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ChatqlError", "ChatqlTransportError", "NoAnswer", "StreamEndedError",
           "StreamStopped"]


class ChatqlError(Exception):
    """A GraphQL error from the service; ``code`` is its ``extensions.code``."""

    def __init__(self, message: str, code: str | None = None,
                 extensions: Mapping[str, Any] | None = None,
                 path: list[Any] | None = None) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.message = message
        self.code = code
        self.extensions: dict[str, Any] = dict(extensions or {})
        self.path = path

    @classmethod
    def from_error(cls, error: Mapping[str, Any]) -> ChatqlError:
        """The exception for one entry of a response's ``errors``."""
        extensions = error.get("extensions") or {}
        code = extensions.get("code")
        kind = StreamStopped if code == "STREAM_CLOSED" else ChatqlError
        return kind(str(error.get("message", "")), code, extensions, error.get("path"))


class StreamStopped(ChatqlError):
    """The stream was ended by someone else (the person pressed Stop): stop producing."""


class ChatqlTransportError(Exception):
    """The request did not get an answer (network failure or a 5xx) after every retry."""


class NoAnswer(Exception):
    """One attempt got no usable answer (a transport failure or a 5xx): worth retrying.

    Raised by :meth:`~chatql_client.client.ChatqlClient.post_once`; never escapes the
    client's retrying calls, which raise :class:`ChatqlTransportError` once every retry
    got none."""


class StreamEndedError(RuntimeError):
    """A write to a stream that has already ended."""
