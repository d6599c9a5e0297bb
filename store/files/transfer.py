"""Files in exports and imports: the ``file`` lines of a chatql export, and its ``.tar``.

An export names the files its messages reference with one ``file`` line each, after the
chat line and before the messages::

    {"kind": "file", "id": "…", "filename": "chart.png", "mediaType": "image/png",
     "size": 1234, "sha256": "…", "width": 640, "height": 480, "createdAt": "…",
     "data": "<base64>"}          # inline: the bytes in the line
     "path": "files/<sha256>"}    # in a .tar: the bytes in that entry of the archive

A ``.tar`` export holds ``chat.jsonl`` (the export, its file lines carrying ``path``)
and one ``files/<sha256>`` entry per distinct content. It is written as it is sent: each
entry's size is known before its bytes are read (the JSON Lines are spooled first).

An import stores each file line's bytes again in the importing tenant — through the
same checks as an upload (types, size, quota), content addressed, so bytes the tenant
holds already are not stored twice — or reuses the importer's own file with the same
bytes, name and type. Files get new ids; :func:`remap_file_ids` rewrites the message
references to them, so the imported messages name the imported files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import tarfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import orjson
from sqlalchemy import select

from chatql.store.db.database import Database
from chatql.store.db.tables import files, message_files
from chatql.store.errors import InvalidArgument, PayloadTooLarge
from chatql.store.files.links import FILE_TYPE
from chatql.store.files.service import FileService, file_from_row
from chatql.store.ids import is_id
from chatql.store.records import File, Identity

__all__ = ["EXPORT_JSONL_NAME", "FILES_INLINE", "FILES_MODES", "FILES_NONE", "FILES_TAR",
           "FileLine", "chat_files", "decode_lines", "file_line", "import_files",
           "parse_file_line", "read_all", "read_tar", "remap_file_ids", "tar_stream"]

#: What an export does with files: ``none`` names them only in messages (the JSON
#: Lines as before), ``inline`` adds file lines with their bytes in base64, ``tar``
#: sends a ``.tar`` of the JSON Lines (file lines with ``path``) and the bytes.
FILES_NONE, FILES_INLINE, FILES_TAR = "none", "inline", "tar"
FILES_MODES = (FILES_NONE, FILES_INLINE, FILES_TAR)
#: The export's entry in a ``.tar``.
EXPORT_JSONL_NAME = "chat.jsonl"
_BLOCK = 512
_SHA256 = re.compile(r"[0-9a-f]{64}")
_READ_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class FileLine:
    """A checked ``file`` line: what the export said, and its bytes when inline."""

    id: str
    filename: str
    media_type: str
    sha256: str
    data: bytes | None
    path: str | None


def _content_path(sha256: str) -> str:
    return f"files/{sha256}"


def file_line(file: File, *, data: bytes | None = None) -> dict[str, Any]:
    """A file's line: with ``data`` its bytes inline, else the ``path`` of a .tar entry."""
    line: dict[str, Any] = {
        "kind": "file", "id": file.id, "filename": file.filename,
        "mediaType": file.media_type, "size": file.size, "sha256": file.sha256,
        "width": file.width, "height": file.height,
        "createdAt": file.created_at.isoformat(timespec="microseconds"),
    }
    if data is not None:
        line["data"] = base64.b64encode(data).decode()
    else:
        line["path"] = _content_path(file.sha256)
    return line


async def chat_files(db: Database, service: FileService, chat_id: str) -> list[File]:
    """The READY files the chat's messages reference whose bytes are in storage, oldest
    first (the chat's readability was checked by the caller)."""
    async with db.read() as conn:
        rows = (await conn.execute(
            select(files).where(files.c.state == "READY", files.c.id.in_(
                select(message_files.c.file_id).where(message_files.c.chat_id == chat_id)))
            .order_by(files.c.created_at, files.c.id))).all()
    found = [file_from_row(row) for row in rows]
    return [file for file in found if await service.storage.size(file.storage_key) is not None]


async def read_all(service: FileService, file: File) -> bytes:
    """A file's bytes in one piece (for an inline export line)."""
    return b"".join([chunk async for chunk in service.open(file)])


def _where(number: int) -> str:
    return f"line {number}"


def parse_file_line(line: Mapping[str, Any], number: int) -> FileLine:
    """A ``file`` line checked: an id, a name, a type, a SHA-256, and its bytes (base64
    ``data``) or the ``path`` of its .tar entry."""
    where = _where(number)
    values = {}
    for key in ("id", "filename", "mediaType", "sha256"):
        value = line.get(key)
        if not isinstance(value, str) or not value:
            raise InvalidArgument(f"{where}: field {key!r} must be a non-empty string")
        values[key] = value
    if not is_id(values["id"]):
        raise InvalidArgument(f"{where}: field 'id' must be a file id")
    if not _SHA256.fullmatch(values["sha256"]):
        raise InvalidArgument(f"{where}: field 'sha256' must be 64 lower-case hex digits")
    data: bytes | None = None
    path = line.get("path")
    raw = line.get("data")
    if raw is not None:
        if not isinstance(raw, str):
            raise InvalidArgument(f"{where}: field 'data' must be base64 text")
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument(f"{where}: field 'data' is not valid base64") from None
    elif path is not None and (not isinstance(path, str) or path != _content_path(
            values["sha256"])):
        raise InvalidArgument(f"{where}: field 'path' must be 'files/<sha256>'")
    if data is None and path is None:
        raise InvalidArgument(f"{where}: a file line needs its bytes ('data') or a 'path'")
    return FileLine(id=values["id"], filename=values["filename"],
                    media_type=values["mediaType"], sha256=values["sha256"], data=data,
                    path=path)


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), _READ_CHUNK):
        yield data[start:start + _READ_CHUNK]


async def _reusable(db: Database, who: Identity, line: FileLine) -> str | None:
    """The importer's own READY file with the line's bytes, name and type, if any."""
    async with db.read() as conn:
        found = await conn.scalar(select(files.c.id).where(
            files.c.tenant_id == who.tenant_id, files.c.uploader == who.user_id,
            files.c.state == "READY", files.c.sha256 == line.sha256,
            files.c.filename == line.filename, files.c.media_type == line.media_type)
            .order_by(files.c.created_at).limit(1))
    return None if found is None else str(found)


async def import_files(service: FileService, who: Identity, lines: Sequence[FileLine],
                       blobs: Mapping[str, bytes] | None = None) -> dict[str, str]:
    """Store the files ``lines`` name for ``who`` (their bytes inline, or in ``blobs``
    by SHA-256 from a .tar); the exported id → the imported id.

    Bytes whose SHA-256 is not the line's are INVALID_ARGUMENT; the upload limits apply
    as to any upload. Files stored before a later one fails stay as uploads nothing
    references, which the orphan sweep removes."""
    # Every file is checked before any is stored, so a bad one stores nothing.
    contents: dict[str, bytes] = {}
    for line in lines:
        data = line.data if line.data is not None else (blobs or {}).get(line.sha256)
        if data is None:
            raise InvalidArgument(f"file {line.id!r}: its bytes ({line.path}) are missing")
        if hashlib.sha256(data).hexdigest() != line.sha256:
            raise InvalidArgument(
                f"file {line.id!r}: its bytes do not have the sha256 the export names")
        if len(data) > service.limits.max_bytes:
            raise PayloadTooLarge(f"file {line.id!r} is larger than "
                                  f"{service.limits.max_bytes} bytes")
        service.check_kind(line.filename, line.media_type)
        contents[line.id] = data
    mapping: dict[str, str] = {}
    for line in lines:
        if line.id in mapping:
            continue
        reused = await _reusable(service.db, who, line)
        if reused is None:
            reused = (await service.ingest(who, filename=line.filename,
                                           media_type=line.media_type,
                                           chunks=_chunks(contents[line.id]))).id
        mapping[line.id] = reused
    return mapping


def _swap(holder: dict[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    named = holder.get("fileId")
    if isinstance(named, str) and named in mapping:
        return {**holder, "fileId": mapping[named]}
    return holder


def remap_file_ids(message_type: str, props: Any, mapping: Mapping[str, str]) -> Any:
    """``props`` with each file reference to a key of ``mapping`` naming its value."""
    if not mapping or not isinstance(props, dict):
        return props
    changed = _swap(props, mapping) if message_type == FILE_TYPE else props
    content = changed.get("content")
    if isinstance(content, list):
        changed = {**changed, "content": [
            _swap(part, mapping) if isinstance(part, dict) and part.get("type") == FILE_TYPE
            else part for part in content]}
    return changed


# ---- .tar --------------------------------------------------------------------------


def _header(name: str, size: int, mtime: float) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    return info.tobuf(format=tarfile.PAX_FORMAT)


def _padding(size: int) -> bytes:
    return b"\0" * (-size % _BLOCK)


async def tar_stream(service: FileService, jsonl: IO[bytes], jsonl_size: int,
                     exported: Sequence[File], *, mtime: float) -> AsyncIterator[bytes]:
    """A .tar of the spooled JSON Lines ``jsonl`` (``jsonl_size`` bytes) and the bytes
    of ``exported`` (each content once), written as it is read."""
    yield _header(EXPORT_JSONL_NAME, jsonl_size, mtime)
    jsonl.seek(0)
    while chunk := jsonl.read(_READ_CHUNK):
        yield chunk
    yield _padding(jsonl_size)
    seen: set[str] = set()
    for file in exported:
        if file.sha256 in seen:
            continue
        seen.add(file.sha256)
        yield _header(_content_path(file.sha256), file.size, mtime)
        sent = 0
        async for chunk in service.open(file):
            chunk = chunk[:file.size - sent]
            sent += len(chunk)
            yield chunk
        if sent < file.size:  # the object shrank under us: keep the archive readable
            yield b"\0" * (file.size - sent)
        yield _padding(file.size)
    yield b"\0" * (2 * _BLOCK)


def read_tar(body: IO[bytes]) -> tuple[list[Any], dict[str, bytes]]:
    """A .tar export's lines (``chat.jsonl``, decoded) and its file bytes by SHA-256;
    INVALID_ARGUMENT for a tar that is not one."""
    try:
        archive = tarfile.open(fileobj=body, mode="r:")  # noqa: SIM115 - closed below
    except tarfile.TarError as error:
        raise InvalidArgument(f"the body is not a .tar: {error}") from None
    lines: list[Any] | None = None
    blobs: dict[str, bytes] = {}
    with archive:
        try:
            for member in archive:
                if not member.isfile():
                    continue
                extracted = archive.extractfile(member)
                assert extracted is not None
                if member.name == EXPORT_JSONL_NAME:
                    lines = decode_lines(extracted.read())
                elif member.name.startswith("files/") and _SHA256.fullmatch(
                        member.name.removeprefix("files/")):
                    blobs[member.name.removeprefix("files/")] = extracted.read()
        except tarfile.TarError as error:
            raise InvalidArgument(f"the .tar is malformed: {error}") from None
    if lines is None:
        raise InvalidArgument(f"the .tar holds no {EXPORT_JSONL_NAME}")
    return lines, blobs


def decode_lines(body: bytes) -> list[Any]:
    """JSON Lines as a list (blank lines skipped); INVALID_ARGUMENT naming a bad line."""
    lines = []
    for number, raw in enumerate(io.BytesIO(body), start=1):
        if not raw.strip():
            continue
        try:
            lines.append(orjson.loads(raw))
        except orjson.JSONDecodeError as error:
            raise InvalidArgument(f"line {number}: not JSON ({error})") from None
    return lines
