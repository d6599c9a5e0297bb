"""Files over HTTP: ``POST /files`` (upload), ``GET /files/{id}`` (read) and
``PUT /files/{id}/upload`` (the local backend's two-phase upload address).

``POST /files`` identifies the caller exactly as ``/graphql`` does and takes either a
``multipart/form-data`` body (the first part with a filename is the file; its
``Content-Type`` is the media type) or a raw body with the media type in
``Content-Type`` and the name in ``?filename=``. The body is read as it streams in:
past ``CHATQL_FILE_MAX_BYTES`` (or when its ``Content-Length`` says it will be) the
service answers 413 at once and reads no more of it. It answers 201 with the file as
JSON: ``{id, filename, mediaType, size, sha256, width, height, createdAt}``.

``GET /files/{id}`` answers a signed address (``?expires=…&signature=…``, from
``File.url``; tampered or expired: 403) or, without one, a caller who may read the file
(as on ``/graphql``; else 404). An address a share link gave also names the link
(``?share=…``) and answers 404 once the link is revoked or expired, its chat deleted,
or the file no longer among the messages it shows. Files are served with
``X-Content-Type-Options: nosniff``, inline only for images other than SVG and for
PDFs, as attachments otherwise, and with a sandboxing ``Content-Security-Policy``
unless they are PDFs: an uploaded SVG or HTML file never runs in the service's origin.

Errors have the GraphQL error shape with a matching status: 400 ``INVALID_ARGUMENT``,
401 ``UNAUTHENTICATED``, 403 ``FORBIDDEN``, 404 ``NOT_FOUND``, 413 ``PAYLOAD_TOO_LARGE``
or ``QUOTA_EXCEEDED``, 415 ``UNSUPPORTED_MEDIA_TYPE``.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from sqlalchemy.engine import make_url
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Services
from chatql.gql.errors import code_for
from chatql.gql.schema.file_type import READ_PURPOSE, share_purpose
from chatql.gql.schema.files import UPLOAD_PURPOSE
from chatql.gql.settings import Settings
from chatql.gql.transport.bodylimit import error_body
from chatql.store.db.database import Database
from chatql.store.errors import (
    ChatqlError,
    Forbidden,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
)
from chatql.store.files.backends import storage_from_url
from chatql.store.files.service import FileLimits, FileService
from chatql.store.files.sniff import INLINE_TYPES, normalise_type
from chatql.store.keeping import shares as store_shares
from chatql.store.records import File

__all__ = ["file_routes", "file_service_for", "files_url_for"]

_STATUS = {"INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "FORBIDDEN": 403,
           "NOT_FOUND": 404, "PAYLOAD_TOO_LARGE": 413, "QUOTA_EXCEEDED": 413,
           "UNSUPPORTED_MEDIA_TYPE": 415, "PERSIST_FAILED": 503}
#: What a multipart body may carry besides the file: its boundaries, part headers and
#: small fields.
_MULTIPART_SLACK = 64 * 1024
_SANDBOX = "default-src 'none'; sandbox"


def files_url_for(settings: Settings) -> str:
    """``CHATQL_FILES_URL``, or its default: a ``files`` folder beside the SQLite
    database, ``./chatql-files`` for any other database."""
    if settings.files_url:
        return settings.files_url
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        folder = os.path.dirname(os.path.abspath(url.database))
        return f"file://{os.path.join(folder, 'files')}"
    return f"file://{os.path.abspath('chatql-files')}"


def file_limits_for(settings: Settings) -> FileLimits:
    """What an upload may be, as the settings say (what the service enforces, and what
    ``fileLimits`` and the pages' config tell clients)."""
    return FileLimits(max_bytes=settings.file_max_bytes,
                      types=frozenset(normalise_type(kind) for kind in settings.file_types),
                      quota_bytes=settings.file_quota_bytes, url_ttl=settings.file_url_ttl,
                      orphan_ttl=settings.file_orphan_ttl,
                      context_text_bytes=settings.context_file_text_bytes,
                      context_inline_bytes=settings.context_file_inline_bytes)


def file_service_for(settings: Settings, db: Database, secret: bytes) -> FileService:
    """The app's files, as its settings say."""
    return FileService(db, storage_from_url(files_url_for(settings)), secret,
                       file_limits_for(settings))


def _error(error: ChatqlError, *, close: bool = False) -> Response:
    code = code_for(error) or "INVALID_ARGUMENT"
    headers = {"Connection": "close"} if close else {}
    if code == "UNAUTHENTICATED":
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(str(error), code), status_code=_STATUS.get(code, 400),
                        headers=headers)


def _described(file: File) -> dict[str, Any]:
    return {"id": file.id, "filename": file.filename, "mediaType": file.media_type,
            "size": file.size, "sha256": file.sha256, "width": file.width,
            "height": file.height, "createdAt": file.created_at.isoformat()}


def _services(request: Request) -> tuple[Services, FileService]:
    services: Services = request.app.state.services
    assert services.files is not None
    return services, services.files


def _declared_length(request: Request) -> int | None:
    try:
        return int(request.headers["content-length"])
    except (KeyError, ValueError):
        return None


class _MultipartFile:
    """The first file of a ``multipart/form-data`` body, parsed as the body streams in."""

    def __init__(self, boundary: bytes, body: AsyncIterator[bytes]) -> None:
        self.body = body
        self.filename: str | None = None
        self.media_type: str | None = None
        self._headers: dict[str, str] = {}
        self._field = bytearray()
        self._value = bytearray()
        self._in_file = False
        self._file_seen = False
        self._file_done = False
        self._pending: list[bytes] = []
        self._other = 0
        self._parser = MultipartParser(boundary, callbacks={
            "on_part_begin": self._part_begin, "on_header_field": self._header_field,
            "on_header_value": self._header_value, "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished, "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        })

    def _part_begin(self) -> None:
        self._headers = {}

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._field.decode("latin-1").lower()] = self._value.decode("utf-8",
                                                                                  "replace")
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get("content-disposition", ""))
        if b"filename" in options and not self._file_seen:
            self._file_seen = self._in_file = True
            self.filename = options[b"filename"].decode("utf-8", "replace")
            self.media_type = self._headers.get("content-type") or "application/octet-stream"

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self._pending.append(bytes(data[start:end]))
            return
        self._other += end - start
        if self._other > _MULTIPART_SLACK:
            raise InvalidArgument("the form's fields besides the file are too large")

    def _part_end(self) -> None:
        if self._in_file:
            self._in_file = False
            self._file_done = True

    def _feed(self, chunk: bytes) -> None:
        try:
            self._parser.write(chunk)
        except MultipartParseError as error:
            raise InvalidArgument(f"the multipart body is malformed: {error}") from None

    async def start(self) -> None:
        """Read up to the file part's headers (INVALID_ARGUMENT when there is none)."""
        async for chunk in self.body:
            self._feed(chunk)
            if self._file_seen:
                return
        raise InvalidArgument("the multipart body has no file part")

    async def data(self) -> AsyncIterator[bytes]:
        """The file's bytes; then the rest of the body is read, and a body that ends
        before its closing boundary (a truncated upload) is INVALID_ARGUMENT."""
        while True:
            pending, self._pending = self._pending, []
            for piece in pending:
                yield piece
            if self._file_done:
                break
            chunk = await anext(self.body, None)
            if chunk is None:
                break
            self._feed(chunk)
        async for chunk in self.body:
            self._feed(chunk)
        if self._parser.state != MultipartState.END:
            raise InvalidArgument("the multipart body ends before its closing boundary")


async def upload_file(request: Request) -> Response:
    """``POST /files``."""
    services, files = _services(request)
    limit = files.limits.max_bytes
    try:
        who = identity_from_credentials(services.settings, dict(request.headers))
        content_type = request.headers.get("content-type", "")
        kind, options = parse_options_header(content_type)
        multipart = kind == b"multipart/form-data"
        body = _Body(request)
        declared = _declared_length(request)
        if declared is not None and declared > limit + (_MULTIPART_SLACK if multipart else 0):
            raise PayloadTooLarge(f"the file is larger than {limit} bytes")
        if multipart:
            boundary = options.get(b"boundary")
            if not boundary:
                raise InvalidArgument("the multipart body names no boundary")
            form = _MultipartFile(boundary, body.chunks())
            await form.start()
            filename, media_type, chunks = form.filename, form.media_type, form.data()
        else:
            filename = request.query_params.get("filename")
            media_type, chunks = content_type, body.chunks()
        stored = await files.ingest(who, filename=filename, media_type=media_type,
                                    chunks=chunks)
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is listening; nothing was kept
    except ChatqlError as error:
        # Refused mid-body: a little more is read (and dropped) so that a client still
        # sending reads the answer; past that the connection is closed, unread.
        try:
            drained = await body.discard(_DRAIN_BYTES)
        except ClientDisconnect:
            return Response(status_code=400)
        return _error(error, close=not drained)
    return JSONResponse(_described(stored), status_code=201)


#: How much of a refused body is read and dropped before answering: enough for a client
#: that sends a little too much to finish sending and read the refusal (many clients
#: report a connection closed under their upload as a network error instead).
_DRAIN_BYTES = 8 * 1024 * 1024


class _Body:
    """The request body as chunks, remembering whether it ended, so that what is left
    of a refused one can be dropped."""

    def __init__(self, request: Request) -> None:
        self._request = request
        self._started = False
        self.ended = False

    async def chunks(self) -> AsyncIterator[bytes]:
        self._started = True
        while not self.ended:
            message = await self._request.receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect
            # Marked before the chunk is handed on: a reader that stops at this chunk
            # leaves nothing behind to drop.
            self.ended = not message.get("more_body", False)
            chunk = message.get("body", b"")
            if chunk:
                yield chunk

    async def discard(self, budget: int) -> bool:
        """Reads and drops the rest of the body, at most ``budget`` bytes; whether it
        ended within them."""
        if self.ended:
            return True
        if not self._started:
            declared = _declared_length(self._request)
            if declared is None or declared > budget:
                return False
        self._started = True
        while budget >= 0:
            message = await self._request.receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect
            budget -= len(message.get("body", b""))
            if not message.get("more_body", False):
                self.ended = True
                return budget >= 0
        return False


def _disposition(file: File) -> str:
    inline = file.media_type in INLINE_TYPES
    ascii_name = file.filename.encode("ascii", "replace").decode().replace('"', "'")
    return (f"{'inline' if inline else 'attachment'}; filename=\"{ascii_name}\";"
            f" filename*=UTF-8''{quote(file.filename, safe='')}")


async def serve_file(request: Request) -> Response:
    """``GET /files/{id}``."""
    services, files = _services(request)
    file_id = request.path_params["file_id"]
    params = request.query_params
    try:
        share_id = params.get("share")
        if share_id is not None:
            # An address a share link gave: good while its signature is, and only
            # while the link still opens and shows the file.
            refused = files.signer.verify(share_purpose(share_id), file_id,
                                          params.get("expires"), params.get("signature"),
                                          now=time.time())
            if refused is not None:
                raise Forbidden(refused)
            found = await store_shares.shared_file(services.db, share_id, file_id)
        elif "signature" in params or "expires" in params:
            refused = files.signer.verify(READ_PURPOSE, file_id, params.get("expires"),
                                          params.get("signature"), now=time.time())
            if refused is not None:
                raise Forbidden(refused)
            found = await files.ready(file_id)
        else:
            who = identity_from_credentials(services.settings, dict(request.headers))
            found = await files.readable(who, file_id)
        if found is None:
            raise NotFound(f"file {file_id!r} not found")
    except ChatqlError as error:
        return _error(error)
    headers = {
        "Content-Disposition": _disposition(found),
        "X-Content-Type-Options": "nosniff",
        "ETag": f'"{found.sha256}"',
        "Cache-Control": "private, max-age=300",
        "Content-Length": str(found.size),
    }
    if found.media_type != "application/pdf":
        headers["Content-Security-Policy"] = _SANDBOX
    if request.headers.get("if-none-match") == headers["ETag"]:
        del headers["Content-Length"]
        return Response(status_code=304, headers=headers)
    media_type = found.media_type
    if media_type.startswith("text/") or media_type == "application/json":
        media_type += "; charset=utf-8"
    body = files.open(found)
    try:
        first = await anext(body, b"")
    except FileNotFoundError:
        return _error(NotFound(f"file {file_id!r} not found"))

    async def chunks() -> AsyncIterator[bytes]:
        yield first
        async for chunk in body:
            yield chunk

    return StreamingResponse(chunks(), headers=headers, media_type=media_type)


async def receive_upload(request: Request) -> Response:
    """``PUT /files/{id}/upload``: a two-phase upload's bytes, on the local backend."""
    _, files = _services(request)
    file_id = request.path_params["file_id"]
    params = request.query_params
    try:
        refused = files.signer.verify(UPLOAD_PURPOSE, file_id, params.get("expires"),
                                      params.get("signature"), now=time.time())
        if refused is not None:
            raise Forbidden(refused)
        pending = await files.pending(file_id)
        if pending is None:
            raise NotFound(f"upload {file_id!r} not found")
        declared = _declared_length(request)
        if declared is not None and declared > pending.size:
            return _error(PayloadTooLarge(
                f"the file is larger than its declared {pending.size} bytes"), close=True)
        await files.receive(pending, request.stream())
    except ClientDisconnect:
        return Response(status_code=400)
    except ChatqlError as error:
        return _error(error, close=True)
    return Response(status_code=204)


def file_routes() -> list[Route]:
    """The app's file routes."""
    return [Route("/files", upload_file, methods=["POST"]),
            Route("/files/{file_id}", serve_file, methods=["GET", "HEAD"]),
            Route("/files/{file_id}/upload", receive_upload, methods=["PUT"])]
