"""The words of a message — what a person reads of its props — and of a search query.

A message's text is its ``content`` when that is a string, the text parts of a
``content`` list (``{"type": "text", "text": …}``, as the AI SDK and multimodal inputs
send them) joined in order, or its ``text`` when that is a string. Anything else (a
tool call's arguments, a card, a file alone) has no text.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from chatql.store.errors import InvalidArgument

__all__ = ["MAX_QUERY_CHARS", "MAX_TERMS", "RELEVANCE_TIE_TOLERANCE", "clean_query",
           "fts5_match", "message_text"]

#: The longest search query taken, in characters.
MAX_QUERY_CHARS = 1_000
#: More words than this are ignored: each one costs an index probe.
MAX_TERMS = 32
#: Relative score difference under which two hits count as equally relevant.
RELEVANCE_TIE_TOLERANCE = 0.02


def message_text(props: Any) -> str | None:
    """The text of a message with ``props``, or None when it has none."""
    if not isinstance(props, dict):
        return None
    content = props.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part if isinstance(part, str) else part.get("text")
                 for part in content
                 if isinstance(part, str) or (isinstance(part, dict)
                                              and part.get("type") == "text")]
        words = "".join(part for part in parts if isinstance(part, str))
        return words or None
    text = props.get("text")
    return text if isinstance(text, str) else None


def clean_query(query: str) -> str:
    """The query with control characters and unencodable code points made spaces."""
    # Lone surrogates (valid in JSON, not in UTF-8) and NUL would fail in the driver.
    query = query.encode("utf-8", "replace").decode("utf-8")
    query = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in query)
    query = query.strip()
    if not query:
        raise InvalidArgument("query must contain at least one non-blank character")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query must be at most {MAX_QUERY_CHARS} characters")
    return query


def fts5_match(query: str) -> str:
    """An FTS5 expression matching every token of ``query`` as plain text."""
    tokens = query.split()[:MAX_TERMS]
    return " ".join('"' + token.replace('"', '""') + '"' for token in tokens)
