"""``GET /chats/{id}/export`` and ``POST /chats/import``: a chat as streamed JSON Lines
(see ``store/keeping/export.py``), with its files when asked, and back.

The caller is identified exactly as on ``/graphql`` (dev headers or a bearer token)
and may export what it may read. ``?files=`` says what the export does with the files
the chat's messages reference (``store/files/transfer.py``):

- ``none`` (the default): the JSON Lines alone, the messages naming files by id — what
  this endpoint always sent; importing it in the same tenant links the files again;
- ``inline``: the JSON Lines with one ``file`` line per file, its bytes in base64;
- ``tar``: a ``.tar`` holding ``chat.jsonl`` (its file lines naming ``files/<sha256>``)
  and each content's bytes as ``files/<sha256>``.

``POST /chats/import`` takes either an export's JSON Lines (any ``Content-Type`` but
``application/x-tar``) or its ``.tar`` (``Content-Type: application/x-tar``), with
``?importId=`` (default: one derived from the body, so sending the same body again
makes nothing new), ``?chatId=`` and ``?assistantId=`` as ``importChat`` takes them,
and answers 201 with ``{"id": …}`` of the chat made. The body may be at most
:data:`IMPORT_FILES` times the file size limit plus the request body limit; it is
spooled to disk past a few MiB while it is read.

Errors found before the body starts answer with a GraphQL-shaped JSON body and a
matching status: 401 ``UNAUTHENTICATED``, 400 ``INVALID_ARGUMENT``, 404 ``NOT_FOUND``
(also for a chat the caller may not read), 409 ``CONFLICT``/``APPEND_CONFLICT``, 413
``PAYLOAD_TOO_LARGE``/``QUOTA_EXCEEDED``, 415 ``UNSUPPORTED_MEDIA_TYPE``.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import AsyncIterator, Sequence

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Services
from chatql.gql.errors import code_for
from chatql.gql.transport.bodylimit import error_body
from chatql.store.errors import ChatqlError, InvalidArgument, PayloadTooLarge, Unauthenticated
from chatql.store.files import transfer
from chatql.store.files.service import FileService
from chatql.store.keeping import export as store_export
from chatql.store.keeping import imports as store_imports
from chatql.store.records import File

__all__ = ["EXPORT_MEDIA_TYPE", "IMPORT_FILES", "TAR_MEDIA_TYPE", "export_endpoint",
           "import_endpoint"]

EXPORT_MEDIA_TYPE = "application/x-ndjson"
TAR_MEDIA_TYPE = "application/x-tar"
#: How many files at the file size limit an imported body may carry.
IMPORT_FILES = 32
_STATUS = {"UNAUTHENTICATED": 401, "INVALID_ARGUMENT": 400, "NOT_FOUND": 404,
           "CONFLICT": 409, "APPEND_CONFLICT": 409, "PAYLOAD_TOO_LARGE": 413,
           "QUOTA_EXCEEDED": 413, "UNSUPPORTED_MEDIA_TYPE": 415, "PERSIST_FAILED": 503}
#: Bytes of an export (or an import's body) kept in memory before spooling to disk.
_SPOOL_BYTES = 8 << 20


def _error(error: ChatqlError) -> Response:
    if isinstance(error, Unauthenticated):
        return JSONResponse(error_body(str(error), "UNAUTHENTICATED"), status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    code = code_for(error) or "INVALID_ARGUMENT"
    return JSONResponse(error_body(str(error), code), status_code=_STATUS.get(code, 400))


async def _inline_lines(files: FileService, exported: Sequence[File]) -> AsyncIterator[bytes]:
    for file in exported:
        data = await transfer.read_all(files, file)
        yield orjson.dumps(transfer.file_line(file, data=data)) + b"\n"


async def _path_lines(exported: Sequence[File]) -> AsyncIterator[bytes]:
    for file in exported:
        yield orjson.dumps(transfer.file_line(file)) + b"\n"


async def export_endpoint(request: Request) -> Response:
    services: Services = request.app.state.services
    mode = request.query_params.get("files", transfer.FILES_NONE)
    try:
        if mode not in transfer.FILES_MODES:
            raise InvalidArgument(f"files must be one of {', '.join(transfer.FILES_MODES)}")
        who = identity_from_credentials(services.settings, dict(request.headers))
        chat = await store_export.open_export(services.db, who, request.path_params["chat_id"])
        exported: list[File] = []
        if mode != transfer.FILES_NONE and services.files is not None:
            exported = await transfer.chat_files(services.db, services.files, chat.id)
    except ChatqlError as error:
        return _error(error)

    if mode == transfer.FILES_TAR and services.files is not None:
        # A tar entry's size comes before its bytes: the lines are spooled first.
        spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115
        try:
            async for chunk in store_export.export_chat(
                    services.db, chat, head=_path_lines(exported)):
                spool.write(chunk)
        except BaseException:
            spool.close()
            raise
        size = spool.tell()

        async def tarred() -> AsyncIterator[bytes]:
            try:
                assert services.files is not None
                async for chunk in transfer.tar_stream(services.files, spool, size, exported,
                                                       mtime=time.time()):
                    yield chunk
            finally:
                spool.close()

        return StreamingResponse(tarred(), media_type=TAR_MEDIA_TYPE, headers={
            "Content-Disposition": f'attachment; filename="chat-{chat.id}.tar"'})

    head = (_inline_lines(services.files, exported)
            if mode == transfer.FILES_INLINE and services.files is not None else None)
    filename = f"chat-{chat.id}.jsonl"
    return StreamingResponse(
        store_export.export_chat(services.db, chat, head=head), media_type=EXPORT_MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


async def import_endpoint(request: Request) -> Response:
    """``POST /chats/import``."""
    services: Services = request.app.state.services
    settings = services.settings
    limit = settings.max_body_bytes + IMPORT_FILES * settings.file_max_bytes
    params = request.query_params
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115
    try:
        who = identity_from_credentials(settings, dict(request.headers))
        digest = hashlib.sha256()
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise PayloadTooLarge(f"an import may be at most {limit} bytes")
            digest.update(chunk)
            spool.write(chunk)
        spool.seek(0)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        blobs: dict[str, bytes] = {}
        if kind == TAR_MEDIA_TYPE:
            lines, blobs = transfer.read_tar(spool)
        else:
            lines = transfer.decode_lines(spool.read())
        chat = await store_imports.import_chat(
            services.db, who, format="CHATQL", document=lines,
            import_id=params.get("importId") or f"body:{digest.hexdigest()[:48]}",
            chat_id=params.get("chatId"), assistant_id=params.get("assistantId"),
            files=services.files, blobs=blobs)
    except ClientDisconnect:
        return Response(status_code=400)
    except ChatqlError as error:
        return _error(error)
    finally:
        spool.close()
    if services.events is not None:
        await services.events.publish("CREATED", chat.id, chat.tenant_id)
    return JSONResponse({"id": chat.id}, status_code=201)
