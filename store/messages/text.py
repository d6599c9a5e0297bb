"""The words of a message: what a person reads of its props.

A message's text is its ``content`` when that is a string, the text parts of a
``content`` list (``{"type": "text", "text": …}``, as the AI SDK and multimodal inputs
send them) joined in order, or its ``text`` when that is a string. Anything else (a
tool call's arguments, a card, a file alone) has no text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["message_text"]


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
