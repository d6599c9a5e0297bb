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
from functools import lru_cache

__all__ = ["EXPIRY_STEP", "FileUrlSigner", "expiry"]

_MAC_BYTES = 24
#: Addresses expire on a whole minute: a file shown again within the minute gets the same
#: address (so a browser's cache answers it, and its signature is made once).
EXPIRY_STEP = 60
#: Signatures remembered per signer (an address is signed again only for a new minute).
_SIGNATURES_KEPT = 8192


def expiry(now: float, ttl: float) -> int:
    """When an address made at ``now`` expires: at least ``ttl`` seconds later, on the
    next whole minute."""
    return (int(now + ttl) // EXPIRY_STEP + 1) * EXPIRY_STEP


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class FileUrlSigner:
    """Signs and checks file addresses with one key."""

    def __init__(self, secret: bytes) -> None:
        # A key of its own: a file signature is never a valid cursor MAC, or the reverse.
        key = hmac.new(secret, b"chatql:files", hashlib.sha256).digest()
        self._mac = hmac.new(key, digestmod=hashlib.sha256)
        self._remembered = lru_cache(maxsize=_SIGNATURES_KEPT)(self._signature)

    def signature(self, purpose: str, file_id: str, expires: int) -> str:
        """The signature of an address for ``purpose`` of ``file_id`` until ``expires``
        (remembered: the addresses of one minute share their expiry)."""
        return self._remembered(purpose, file_id, expires)

    def _signature(self, purpose: str, file_id: str, expires: int) -> str:
        """The signature of an address for ``purpose`` of ``file_id`` until ``expires``."""
        mac = self._mac.copy()
        mac.update(f"{purpose}\x00{file_id}\x00{expires}".encode())
        return _b64(mac.digest()[:_MAC_BYTES])

    def verify(self, purpose: str, file_id: str, expires: str | None, signature: str | None,
               *, now: float) -> str | None:
        """None when the address is good at ``now``; otherwise why not (safe to show)."""
        if not expires or not signature:
            return "the file address is not signed"
        try:
            moment = int(expires)
        except ValueError:
            return "the file address is not valid"
        if not hmac.compare_digest(signature, self._signature(purpose, file_id, moment)):
            return "the file address is not valid"
        if moment < now:
            return "the file address has expired"
        return None
