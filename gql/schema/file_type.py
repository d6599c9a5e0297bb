"""The ``File`` type (a ``Node``), and the signed address its ``url`` gives.

A file's ``url`` is ``/files/{id}?expires=…&signature=…`` on the service itself, good for
``CHATQL_FILE_URL_TTL`` seconds (see gql/transport/files.py, which answers it): whoever
was shown the file may hand the address to a browser (an ``<img src>``) without
credentials, and it stops working soon after. The record keeps file ids, never
addresses.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

import strawberry
from strawberry.dataloader import DataLoader

from chatql.gql.context import Context, Info
from chatql.store.records import File as StoreFile

__all__ = ["READ_PURPOSE", "File", "Node", "file_url", "message_files_loader"]

#: What a download address is signed for (an upload address says ``upload``).
READ_PURPOSE = "read"
_MESSAGE_FILES = "message_files"


@strawberry.interface(description="An object with an id that names it across the service.")
class Node:
    id: strawberry.ID


def file_url(context: Context, file_id: str, *, purpose: str = READ_PURPOSE,
             path: str = "") -> str:
    """A signed address of the file on this service (absolute when the request's own
    address is known), good for the service's file address lifetime."""
    services = context.services
    assert services.files is not None
    expires = int(time.time() + services.files.limits.url_ttl)
    signature = services.files.signer.signature(purpose, file_id, expires)
    relative = f"/files/{quote(file_id, safe='')}{path}?expires={expires}&signature={signature}"
    request = context.request
    if request is None:
        return relative
    return str(request.base_url).rstrip("/") + relative


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
                      " default 15 minutes). Ask again for a fresh one; never store it.")
    def url(self, info: Info) -> str:
        return file_url(info.context, str(self.id))


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
