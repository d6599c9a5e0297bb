"""Signed, short-lived file addresses: ``/files/{id}?expires=…&signature=…``.

The signature is an HMAC-SHA256 over what the address is for (reading a file, or
uploading one's bytes), the file id and the expiry, with a key derived from the
service's secret (the cursor key), so every instance on one database signs alike and
an address cannot be stretched to another file, purpose or time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

__all__ = ["FileUrlSigner"]

_MAC_BYTES = 24


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class FileUrlSigner:
    """Signs and checks file addresses with one key."""

    def __init__(self, secret: bytes) -> None:
        # A key of its own: a file signature is never a valid cursor MAC, or the reverse.
        self._key = hmac.new(secret, b"chatql:files", hashlib.sha256).digest()

    def signature(self, purpose: str, file_id: str, expires: int) -> str:
        message = f"{purpose}\x00{file_id}\x00{expires}".encode()
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES])

    def verify(self, purpose: str, file_id: str, expires: str | None, signature: str | None,
               *, now: float) -> str | None:
        """None when the address is good at ``now``; otherwise why not (safe to show)."""
        if not expires or not signature:
            return "the file address is not signed"
        try:
            moment = int(expires)
        except ValueError:
            return "the file address is not valid"
        if not hmac.compare_digest(signature, self.signature(purpose, file_id, moment)):
            return "the file address is not valid"
        if moment < now:
            return "the file address has expired"
        return None
