"""Files in the model's window (``modelContext(files: …)``): which file references a
message holds, how the window counts them, and which files are text.

A file reference is a ``file`` part in a list ``content`` or a message of type ``file``
(see :mod:`store.files.links`). The window hands its files over in one of three modes:

- ``URL`` (the default): each readable file gets a signed, short-lived ``url``;
- ``INLINE``: each readable file gets its bytes as a ``data:`` URL, and a text file its
  contents as ``text`` (cut at a limit); past the limits a signed ``url`` instead;
- ``NONE``: file parts are dropped and messages of type ``file`` left out.

Counting: a file reference never counts as the characters of its JSON (nor of a data
URL): it counts :data:`FILE_PART_TOKENS`, except a text file given inline, which counts
as its text would (one token per 4 bytes shown, rounded up). Which bytes and addresses a
window carries is decided above the store (the GraphQL layer signs the addresses).
"""

from __future__ import annotations

from typing import Any

from chatql.store.files.links import FILE_TYPE

__all__ = ["DEFAULT_CONTEXT_INLINE_BYTES", "DEFAULT_CONTEXT_TEXT_BYTES", "FILE_MODES",
           "FILE_PART_TOKENS", "FILE_REFERENCE_KEYS", "is_file_part", "is_text_type",
           "text_tokens", "without_file_parts"]

#: How a window hands its files over (see the module doc).
FILE_MODES = ("INLINE", "URL", "NONE")
#: What a file reference counts toward ``maxTokens`` (a text file given inline aside):
#: about what a model takes for a mid-sized image; a producer that knows better reports
#: the message's ``tokens``.
FILE_PART_TOKENS = 256
#: Bytes of a text file's contents an INLINE window gives as text (the rest is cut).
DEFAULT_CONTEXT_TEXT_BYTES = 100 * 1024
#: Largest file (not text) an INLINE window gives as a data URL; larger: a signed URL.
DEFAULT_CONTEXT_INLINE_BYTES = 5 * 1024 * 1024
#: The props of a ``file`` message that name its file (the rest is counted as text).
FILE_REFERENCE_KEYS = ("fileId", "mediaType", "filename")

#: Media types read as text besides ``text/*`` (and ``+json`` / ``+xml`` suffixes).
_TEXT_TYPES = frozenset({
    "application/json", "application/x-ndjson", "application/ld+json", "application/xml",
    "application/yaml", "application/x-yaml", "application/toml", "application/javascript",
    "application/x-javascript", "application/ecmascript", "application/sql",
    "application/csv", "application/x-sh", "application/graphql",
})


def is_text_type(media_type: str) -> bool:
    """Whether files of ``media_type`` are text a model reads as such (images never:
    an SVG is handed over as an image)."""
    kind = media_type.split(";", 1)[0].strip().lower()
    if kind.startswith("text/"):
        return True
    if kind.startswith("image/"):
        return False
    return kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))


def is_file_part(part: Any) -> bool:
    """Whether a ``content`` list item is a file part (with a ``fileId`` or not)."""
    return isinstance(part, dict) and part.get("type") == FILE_TYPE


def without_file_parts(props: dict[str, Any]) -> dict[str, Any]:
    """``props`` with the file parts of a list ``content`` dropped (the same object when
    it holds none)."""
    content = props.get("content")
    if not isinstance(content, list) or not any(map(is_file_part, content)):
        return props
    return {**props, "content": [part for part in content if not is_file_part(part)]}


def text_tokens(size: int, text_bytes: int) -> int:
    """What a text file of ``size`` bytes given inline counts: one token per 4 bytes of
    what is shown (at most ``text_bytes``), rounded up."""
    return -(-min(size, text_bytes) // 4)
