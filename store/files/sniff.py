"""What a file's first bytes say it is: the check that an image or a PDF is one, and
an image's width and height.

The types are recognised by ``puremagic`` (signatures, not a hand table) and images
measured by ``imagesize`` (headers only; the image is never decoded). Only the first
:data:`HEAD_BYTES` of an upload are kept for this.
"""

from __future__ import annotations

import io
import warnings

import imagesize
import puremagic

from chatql.store.errors import UnsupportedMediaType

__all__ = ["CHECKED_TYPES", "HEAD_BYTES", "INLINE_TYPES", "check_content", "normalise_type"]

#: How much of the start of an upload is kept to check and measure it (a JPEG's size
#: comes after its metadata, which may be long).
HEAD_BYTES = 256 * 1024

#: Declared types whose bytes must be what they claim.
CHECKED_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp",
                           "application/pdf"})
#: Types served inline (shown by the browser); everything else is an attachment. SVG is
#: an image that can run script, so it is never among them.
INLINE_TYPES = CHECKED_TYPES
#: Types whose width and height are recorded.
_MEASURED = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def normalise_type(media_type: str) -> str:
    """``media_type`` in lower case without parameters (``text/plain; charset=utf-8``
    is ``text/plain``)."""
    return media_type.split(";", 1)[0].strip().lower()


def _sniffed(head: bytes) -> set[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            matches = puremagic.magic_string(head)
    except (puremagic.PureError, ValueError):
        return set()
    return {normalise_type(match.mime_type) for match in matches if match.mime_type}


def check_content(media_type: str, head: bytes) -> tuple[int | None, int | None]:
    """Check that ``head`` (a file's first bytes) is what ``media_type`` says, for the
    :data:`CHECKED_TYPES`, and return an image's (width, height) — (None, None) for
    anything else. Raises :class:`~store.errors.UnsupportedMediaType` on a mismatch."""
    if media_type not in CHECKED_TYPES:
        return None, None
    if media_type not in _sniffed(head):
        raise UnsupportedMediaType(f"the file's bytes are not {media_type}")
    if media_type not in _MEASURED:
        return None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            width, height = imagesize.get(io.BytesIO(head))
    except Exception:  # a header imagesize cannot read: the size stays unknown
        return None, None
    if width <= 0 or height <= 0:
        return None, None
    return int(width), int(height)
