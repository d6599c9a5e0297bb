"""File queries and mutations: a file by id, and the two-phase upload.

``POST /files`` (gql/transport/files.py) takes a file in one request. For large files on
S3 the bytes can skip the service: ``createUpload`` answers a presigned address the
client PUTs them to (on the local backend, the service's own
``PUT /files/{id}/upload`` address, signed the same way), and ``completeUpload`` checks
them against the declared size and SHA-256 before the file can be used.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.file_type import File, file_url
from chatql.store.errors import InvalidArgument
from chatql.store.files.service import FileService

__all__ = ["CreateUploadInput", "FileLimits", "FileMutation", "FileQuery", "Upload"]

UPLOAD_PURPOSE = "upload"


def _files(info: Info) -> FileService:
    files = info.context.services.files
    if files is None:  # pragma: no cover - every app has one
        raise InvalidArgument("this service keeps no files")
    return files


@strawberry.input(description="A file to upload in two steps: what it will be.")
class CreateUploadInput:
    filename: str
    media_type: str
    size: int = strawberry.field(description="In bytes.")
    sha256: str = strawberry.field(description="The SHA-256 of its bytes, in hex.")


@strawberry.type(description="Where to PUT a file's bytes, then call completeUpload.")
class Upload:
    file_id: strawberry.ID
    upload_url: str = strawberry.field(description="PUT the bytes here (no other"
                                       " credentials needed) before expiresAt.")
    headers: JSON = strawberry.field(description="Headers to send with the PUT.")
    expires_at: datetime


@strawberry.type(description="What an upload may be, as this service is configured:"
                 " POST /files and createUpload refuse anything else. Byte counts are"
                 " whole numbers (Float, as a limit may pass Int's 2^31).")
class FileLimits:
    max_bytes: float = strawberry.field(description="The largest file, in bytes"
                                        " (CHATQL_FILE_MAX_BYTES).")
    media_types: list[str] = strawberry.field(description="The media types accepted"
                                              " (CHATQL_FILE_TYPES).")
    quota_bytes: float | None = strawberry.field(
        description="The bytes the caller's tenant's files may take in all, each distinct"
        " content once (CHATQL_FILE_QUOTA_BYTES); null: no quota.")

    @strawberry.field(description="The bytes the caller's tenant's files take against the"
                      " quota now (uploads not yet completed included); null when there is"
                      " no quota.")
    async def used_bytes(self, info: Info) -> float | None:
        if self.quota_bytes is None:
            return None
        return float(await _files(info).used_bytes(info.context.identity))


@strawberry.type
class FileQuery:
    @strawberry.field(description="What an upload may be here: the largest file, the media"
                      " types, the tenant's quota. A client checks a file before sending it"
                      " rather than learning the limit from a refusal.")
    def file_limits(self, info: Info) -> FileLimits:
        limits = _files(info).limits
        return FileLimits(max_bytes=float(limits.max_bytes),
                          media_types=sorted(limits.types),
                          quota_bytes=float(limits.quota_bytes) if limits.quota_bytes > 0
                          else None)

    @strawberry.field(description="A file the caller may read (its own upload, or one a"
                      " message references in a chat it may read); null otherwise.")
    async def file(self, info: Info, id: strawberry.ID) -> File | None:
        found = await _files(info).readable(info.context.identity, str(id))
        return found  # type: ignore[return-value]


@strawberry.type
class FileMutation:
    @strawberry.mutation(description="Start a two-phase upload: PUT the bytes to uploadUrl,"
                         " then call completeUpload. Limits as for POST /files.")
    async def create_upload(self, info: Info, input: CreateUploadInput) -> Upload:
        files = _files(info)
        pending = await files.create_upload(
            info.context.identity, filename=input.filename, media_type=input.media_type,
            size=input.size, sha256=input.sha256)
        file_id = pending.file.id
        url = pending.upload_url or file_url(info.context, file_id, purpose=UPLOAD_PURPOSE,
                                             path="/upload")
        headers = cast(JSON, {"Content-Type": pending.file.media_type})
        return Upload(file_id=strawberry.ID(file_id), upload_url=url, headers=headers,
                      expires_at=pending.expires_at)

    @strawberry.mutation(description="Check an upload's bytes against its declared size and"
                         " SHA-256 (and an image's or PDF's type) and make the file usable;"
                         " a mismatch deletes the bytes (INVALID_ARGUMENT).")
    async def complete_upload(self, info: Info, id: strawberry.ID) -> File:
        done = await _files(info).complete_upload(info.context.identity, str(id))
        return done  # type: ignore[return-value]
