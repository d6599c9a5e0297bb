"""Uploading files: what ``client.upload(...)`` sends and what it answers.

A file goes to the service's ``POST /files`` (beside the GraphQL endpoint) as a raw body
with its media type and ``?filename=``, under the client's identity. A path is streamed
from the disk in chunks (never read whole into memory); bytes are sent as they are. The
answer is the file's description (:class:`UploadedFile`); messages then reference the
file by its ``id``: a ``file`` part in a person's ``content``, or a ``file`` message
(:meth:`StreamWriter.file <chatql_client.writer.StreamWriter.file>`).
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypedDict

__all__ = ["FileSource", "UploadedFile", "file_part", "upload_source"]

#: A file to upload: a path, or its bytes.
FileSource = str | os.PathLike[str] | bytes | bytearray | memoryview
_CHUNK = 256 * 1024


class UploadedFile(TypedDict):
    """A stored file, as ``POST /files`` answers it."""

    id: str
    filename: str
    mediaType: str
    size: int
    sha256: str
    #: An image's size in pixels (None for anything else).
    width: int | None
    height: int | None
    createdAt: str


class UploadSource:
    """One file to send: its name, media type and a fresh body for every attempt."""

    def __init__(self, file: FileSource, filename: str | None,
                 media_type: str | None) -> None:
        if isinstance(file, bytes | bytearray | memoryview):
            if not filename:
                raise ValueError("bytes need a filename: upload(data, filename='…')")
            self.data: bytes | None = bytes(file)
            self.path: Path | None = None
            name = filename
        else:
            self.path = Path(file)
            self.data = None
            name = filename or self.path.name
        self.filename = name
        self.media_type = (media_type or mimetypes.guess_type(name)[0]
                           or "application/octet-stream")

    def body(self) -> bytes | AsyncIterator[bytes]:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return _read(self.path)


async def _read(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            yield chunk


def upload_source(file: FileSource, filename: str | None = None,
                  media_type: str | None = None) -> UploadSource:
    """What :meth:`ChatqlClient.upload <chatql_client.client.ChatqlClient.upload>` sends
    (the media type guessed from the name when not given)."""
    return UploadSource(file, filename, media_type)


def file_part(file: UploadedFile) -> dict[str, str]:
    """The ``content`` part (or ``file`` message props) that references ``file``."""
    return {"type": "file", "fileId": file["id"], "mediaType": file["mediaType"],
            "filename": file["filename"]}
