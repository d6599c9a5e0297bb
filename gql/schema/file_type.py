"""The ``File`` type (a ``Node``), and the signed address its ``url`` gives.

A file's ``url`` is ``/files/{id}?expires=…&signature=…`` on the service itself, good for
``CHATQL_FILE_URL_TTL`` seconds, up to the next whole minute after (so a file shown again
within the minute has the same address, which a browser's cache answers; see
gql/transport/files.py, which answers it): whoever
was shown the file may hand the address to a browser (an ``<img src>``) without
credentials, and it stops working soon after. The record keeps file ids, never
addresses. A file shown through a share link (a :class:`SharedFile`) gets an address
scoped to the link, ``/files/{id}?share=…&expires=…&signature=…``: besides its
signature and lifetime, each read checks that the link still opens and still shows the
file, so revoking the link (or its expiry, or deleting the chat) closes it at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import strawberry
from strawberry.dataloader import DataLoader

from chatql.gql.context import Context, Info
from chatql.store.files.service import FileService
from chatql.store.files.signing import expiry
from chatql.store.records import File as StoreFile

__all__ = ["READ_PURPOSE", "File", "Node", "SharedFile", "base_url", "file_url",
           "message_files_loader", "share_purpose", "signed_url"]

#: What a download address is signed for (an upload address says ``upload``).
READ_PURPOSE = "read"
_MESSAGE_FILES = "message_files"


@strawberry.interface(description="An object with an id that names it across the service.")
class Node:
    id: strawberry.ID


def share_purpose(share_id: str) -> str:
    """What an address of a file shown by the link ``share_id`` is signed for."""
    return f"{READ_PURPOSE}:share:{share_id}"


@dataclass(frozen=True, slots=True)
class SharedFile(StoreFile):
    """A file as a share link shows it: its address is scoped to the link."""

    share_id: str = ""


def file_url(context: Context, file_id: str, *, purpose: str = READ_PURPOSE,
             path: str = "", share_id: str | None = None) -> str:
    """A signed address of the file on this service (absolute when the request's own
    address is known), good for the service's file address lifetime; with
    ``share_id``, scoped to that share link."""
    services = context.services
    assert services.files is not None
    request = context.request
    base = "" if request is None else base_url(request)
    return signed_url(services.files, base, file_id, purpose=purpose, path=path,
                      share_id=share_id)


#: Base addresses by what they are made of (see base_url).
_BASES: dict[tuple[Any, ...], str] = {}
_BASES_KEPT = 256


def base_url(request: Any) -> str:
    """The service's own address as the request reached it, without a trailing ``/``.

    Made by Starlette (``request.base_url``) from the scheme, the ``Host`` header, the
    server address and the root path, and remembered by those: making it costs more
    than a page's other work for its files."""
    scope = request.scope
    host = None
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value
            break
    key = (scope.get("scheme"), host, scope.get("server"),
           scope.get("app_root_path", scope.get("root_path", "")))
    found = _BASES.get(key)
    if found is None:
        if len(_BASES) >= _BASES_KEPT:
            _BASES.clear()
        found = _BASES[key] = str(request.base_url).rstrip("/")
    return found


def signed_url(files: FileService, base: str, file_id: str, *,
               purpose: str = READ_PURPOSE, path: str = "",
               share_id: str | None = None) -> str:
    """``/files/{id}{path}?expires=…&signature=…`` after ``base``: good for at least the
    service's file address lifetime, until the next whole minute after it (so one file
    keeps one address within a minute); with ``share_id``, scoped to that share link."""
    expires = expiry(time.time(), files.limits.url_ttl)
    scope = ""
    if share_id is not None:
        purpose = share_purpose(share_id)
        scope = f"share={quote(share_id, safe='')}&"
    signature = files.signer.signature(purpose, file_id, expires)
    return (f"{base}/files/{quote(file_id, safe='')}{path}?{scope}expires={expires}"
            f"&signature={signature}")


@strawberry.type(description="A file kept with the record: an image, a PDF, a text file."
                 " Messages reference it by id; its bytes are read at its url.")
class File(Node):
    filename: str
    media_type: str
    size: int = strawberry.field(description="In bytes.")
    sha256: str = strawberry.field(description="The SHA-256 of its bytes, in hex.")
    width: int | None = strawberry.field(description="An image's width in pixels.")
    height: int | None = strawberry.field(description="An image's height in pixels.")
    created_at: datetime

    @classmethod
    def is_type_of(cls, obj: Any, _info: Any) -> bool:
        # Resolvers hand the store's records straight over (see gql/schema/types.py).
        return isinstance(obj, cls | StoreFile)

    @strawberry.field(description="Where to read its bytes: a signed address that works"
                      " without credentials for a short time (CHATQL_FILE_URL_TTL,"
                      " default 15 minutes). Ask again for a fresh one; never store it."
                      " Shown through a share link, the address also stops working when"
                      " the link is revoked or expires.")
    def url(self, info: Info) -> str:
        share_id = self.share_id if isinstance(self, SharedFile) else None
        return file_url(info.context, str(self.id), share_id=share_id)


def message_files_loader(info: Info) -> DataLoader[str, list[StoreFile]]:
    """This request's loader of the files each message references (one query a batch;
    only messages the caller was shown reach ``Message.files``)."""
    loaders = info.context.loaders
    loader: DataLoader[str, list[StoreFile]] | None = loaders.get(_MESSAGE_FILES)
    if loader is None:
        files = info.context.services.files

        async def load(message_ids: list[str]) -> list[list[StoreFile]]:
            if files is None:
                return [[] for _ in message_ids]
            found = await files.files_of_messages(message_ids)
            return [found.get(message_id, []) for message_id in message_ids]

        loader = DataLoader(load_fn=load)
        loaders[_MESSAGE_FILES] = loader
    return loader
