"""Files: uploads checked and stored once per tenant, read through the chats that
reference them, and removed when nothing does.

:class:`FileService` is the one door to files; a :class:`~store.files.backends.FileStorage`
only keeps bytes. How an upload goes:

1. Its bytes stream into a staging object (``uploads/<file id>``) while they are
   counted (past :attr:`FileLimits.max_bytes` the stream is refused at once: nothing
   more is read), hashed (SHA-256) and their start kept to check the declared type
   (an image or PDF must be one) and measure an image.
2. Under the tenant's lock (Postgres: an advisory transaction lock; SQLite: the one
   writer), the quota is checked (each distinct content counts once), the staging
   object becomes the content object ``objects/<tenant>/<sha[:2]>/<sha256>`` unless the
   tenant already holds those bytes, and the row is written READY, naming the object
   (``storage_key``).

   Where a move is a copy of every byte (an object store), a one-step upload is staged
   at its own key below the tenant's objects (``objects/<tenant>/files/<file id>``) and
   kept there when the tenant does not hold its bytes yet: the record names the object,
   and the same bytes are still stored once (a later upload of them is pointed at it,
   and its own staged copy removed). A two-phase upload's staging key is one a client
   can PUT to for as long as its URL lasts, so its verified bytes are never kept there:
   the file names the tenant's object of the same bytes, or they are copied to the
   content address, where no URL reaches them.

Anything that fails on the way removes the staging object; no row names it, so nothing
half-written is ever readable. The two-phase upload (:meth:`FileService.create_upload`,
then :meth:`FileService.complete_upload`) writes a PENDING row first, lets the client
put the bytes at the staging key (a presigned S3 URL, or the service's own upload
address), then verifies them as above: a size or hash that does not match the declared
ones deletes them.

Removal: a purge (or retention, or the trash's expiry) marks the files only the purged
chat referenced DELETED (:func:`store.files.links.release_chat_files`), as the sweeper
does uploads no message references and no live stream names after
:attr:`FileLimits.orphan_ttl` (:func:`store.files.links.file_referenced`);
:meth:`FileService.collect` then deletes each DELETED row's object — once no other live
row of the tenant names the same bytes — and the row, under the same tenant lock that
makes step 2 safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, exists, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.access import can_read_file
from chatql.store.clock import now
from chatql.store.db import prepared
from chatql.store.db.database import Database
from chatql.store.db.tables import files, message_files, stream_files
from chatql.store.errors import (
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    UnsupportedMediaType,
)
from chatql.store.files.backends import FileStorage, ThreadLane
from chatql.store.files.links import drop_ended_stream_links, file_referenced
from chatql.store.files.signing import FileUrlSigner
from chatql.store.files.sniff import HEAD_BYTES, check_content, normalise_type
from chatql.store.files.window import DEFAULT_CONTEXT_INLINE_BYTES, DEFAULT_CONTEXT_TEXT_BYTES
from chatql.store.ids import new_id
from chatql.store.limits import check_length
from chatql.store.records import File, Identity

__all__ = ["DEFAULT_FILE_TYPES", "FileLimits", "FileService", "PendingUpload", "content_key",
           "kept_key", "staging_key"]

#: Accepted media types unless configured otherwise. SVG and HTML are stored but always
#: served as attachments (never shown in the service's origin).
DEFAULT_FILE_TYPES: tuple[str, ...] = (
    "image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml",
    "application/pdf", "text/plain", "text/markdown", "text/csv", "text/html",
    "application/json",
)
FILENAME_CHARS = 255
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PLAIN_TENANT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
#: DELETED rows whose objects one :meth:`FileService.collect` call removes at most.
COLLECT_BATCH = 200


@dataclass(frozen=True)
class FileLimits:
    """What an upload may be (the app reads them from its settings)."""

    #: Largest file in bytes.
    max_bytes: int = 25 * 1024 * 1024
    #: Accepted media types (lower case, no parameters).
    types: frozenset[str] = field(default_factory=lambda: frozenset(DEFAULT_FILE_TYPES))
    #: Bytes a tenant's files may take in all (each distinct content once); 0: no limit.
    quota_bytes: int = 0
    #: Seconds a signed file address (and an upload address) stays good.
    url_ttl: float = 900.0
    #: Seconds an upload no message references is kept.
    orphan_ttl: float = 24 * 3600.0
    #: Bytes of a text file's contents ``modelContext(files: INLINE)`` gives as text.
    context_text_bytes: int = DEFAULT_CONTEXT_TEXT_BYTES
    #: Largest other file ``modelContext(files: INLINE)`` gives as a data URL.
    context_inline_bytes: int = DEFAULT_CONTEXT_INLINE_BYTES


@dataclass(frozen=True)
class PendingUpload:
    """A two-phase upload waiting for its bytes."""

    file: File
    #: Where the client PUTs the bytes: a presigned object-store URL, or None when the
    #: backend signs none (the service then offers its own address).
    upload_url: str | None
    expires_at: datetime


def _tenant_folder(tenant_id: str) -> str:
    return tenant_id if _PLAIN_TENANT.fullmatch(tenant_id) and tenant_id not in (
        ".", "..") else "~" + hashlib.sha256(tenant_id.encode()).hexdigest()[:32]


def content_key(tenant_id: str, sha256: str) -> str:
    """Where a tenant's bytes with this SHA-256 are kept."""
    return f"objects/{_tenant_folder(tenant_id)}/{sha256[:2]}/{sha256}"


def staging_key(file_id: str) -> str:
    """Where an upload's bytes wait until they are checked."""
    return f"uploads/{file_id}"


def kept_key(tenant_id: str, file_id: str) -> str:
    """Where a one-step upload is staged, and kept, on a storage whose moves copy."""
    return f"objects/{_tenant_folder(tenant_id)}/files/{file_id}"


#: The columns a :class:`store.records.File` is read from, in its field order.
FILE_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(File) if field.name in files.c)
_file_record = prepared.record_maker(File, FILE_COLUMNS)
#: Records remembered by their stored values (a READY file's row never changes, and a
#: page shows the same files read after read).
_RECORDS_KEPT = 4096
#: Messages whose files are remembered (see FileService.files_of_messages).
_LINKS_KEPT = 8192


def _files_of_messages_statement(db: Database) -> prepared.PreparedStatement:
    """Each READY file a message in the slot ``ids`` references: the message's id, then
    :data:`FILE_COLUMNS`. Unordered: an ``ORDER BY`` of the files' age would let SQLite
    walk every READY file by its (state, age) index instead of looking up the few
    messages asked for; the caller orders each message's few files."""
    key = ("files_of_messages", db.dialect)
    statement: prepared.PreparedStatement | None = db.statements.get(key)
    if statement is None:
        ready: Any = files.c.state == "READY"
        if db.dialect == "sqlite":
            # Without statistics SQLite's planner would walk every READY file of every
            # tenant by the (state, age) index and probe each one's links; a unary plus
            # keeps that index out of the plan, so the few messages' links are found
            # first and each file by its key.
            ready = text("+files.state = 'READY'")
        query = (select(message_files.c.message_id, *(files.c[name] for name in FILE_COLUMNS))
                 .join(files, files.c.id == message_files.c.file_id)
                 .where(prepared.ids_in(message_files.c.message_id, db.dialect), ready))
        statement = db.statements[key] = prepared.compile_prepared(query, db.dialect)
    return statement


def file_from_row(row: Any) -> File:
    return File(id=row.id, tenant_id=row.tenant_id, uploader=row.uploader,
                filename=row.filename, media_type=row.media_type, size=int(row.size),
                sha256=row.sha256, width=row.width, height=row.height,
                created_at=row.created_at, storage_key=row.storage_key, state=row.state)


def _hasher(digest: Any) -> Callable[[list[bytes]], None]:
    def hash_all(pieces: list[bytes]) -> None:
        for piece in pieces:
            digest.update(piece)  # without the GIL: the event loop runs meanwhile
    return hash_all


class _Intake:
    """Counts, hashes and keeps the start of the bytes streaming through it; past
    ``limit`` it refuses the stream (raising from inside it, so no more is read). The
    hashing runs in a worker thread, a batch at a time, beside the stream; the digest is
    complete when the stream has been read to its end."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = bytearray()
        self.too_large = False
        #: What the source itself raised (a client gone, a malformed body).
        self.failure: BaseException | None = None

    async def through(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        hashing = ThreadLane(_hasher(self.digest))
        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                self.size += len(chunk)
                if self.size > self.limit:
                    self.too_large = True
                    raise PayloadTooLarge(f"the file is larger than {self.limit} bytes")
                if len(self.head) < HEAD_BYTES:
                    self.head += chunk[:HEAD_BYTES - len(self.head)]
                await hashing.add(chunk)
                yield chunk
            await hashing.finish()
        except BaseException as error:
            await hashing.settle()
            if self.failure is None:
                self.failure = error
            raise

    def reraise(self) -> None:
        """Raise what refused the stream, as itself (the storage client may have wrapped
        it on the way out)."""
        if self.too_large:
            raise PayloadTooLarge(f"the file is larger than {self.limit} bytes")
        if self.failure is not None:
            raise self.failure


async def _used_bytes(conn: AsyncConnection, tenant_id: str) -> int:
    """What the quota counts: the sizes of a tenant's live contents, each once."""
    live = and_(files.c.tenant_id == tenant_id, files.c.state != "DELETED")
    contents = (select(files.c.sha256, func.max(files.c.size).label("size"))
                .where(live).group_by(files.c.sha256).subquery())
    return int(await conn.scalar(select(func.coalesce(func.sum(contents.c.size), 0))) or 0)


class FileService:
    """Uploads, reads and removal of files over one storage backend."""

    def __init__(self, db: Database, storage: FileStorage, secret: bytes,
                 limits: FileLimits | None = None) -> None:
        self.db = db
        self.storage = storage
        self.limits = limits or FileLimits()
        self.signer = FileUrlSigner(secret)
        #: Records by the stored values they were made from (see files_of_messages).
        self._records: dict[tuple[Any, ...], File] = {}
        #: Each message's files by message id, with the stored props they were found
        #: for (see files_of_messages).
        self._linked: dict[str, tuple[Any, tuple[File, ...]]] = {}

    # ---- checks ---------------------------------------------------------------------

    def check_kind(self, filename: str | None, media_type: str | None) -> tuple[str, str]:
        """The upload's filename (its last path segment) and media type, normalised;
        UNSUPPORTED_MEDIA_TYPE for a type not accepted."""
        name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not name:
            raise InvalidArgument("the file needs a filename")
        if any(ord(char) < 32 or ord(char) == 127 for char in name):
            raise InvalidArgument("the filename must not hold control characters")
        check_length(name, "filename", FILENAME_CHARS)
        kind = normalise_type(media_type or "")
        if not kind:
            raise UnsupportedMediaType("the file needs a media type")
        if kind not in self.limits.types:
            raise UnsupportedMediaType(f"files of type {kind!r} are not accepted")
        return name, kind

    # ---- one-step upload ------------------------------------------------------------

    async def ingest(self, who: Identity, *, filename: str | None, media_type: str | None,
                     chunks: AsyncIterator[bytes]) -> File:
        """Store an upload streamed in ``chunks`` (see the module's steps 1 and 2)."""
        name, kind = self.check_kind(filename, media_type)
        file_id = new_id()
        in_place = self.storage.moves_by_copy
        staged = kept_key(who.tenant_id, file_id) if in_place else staging_key(file_id)
        intake = _Intake(self.limits.max_bytes)
        kept: File | None = None
        try:
            try:
                await self.storage.write(staged, intake.through(chunks))
            except BaseException:
                intake.reraise()
                raise
            width, height = check_content(kind, bytes(intake.head))
            kept = await self._keep(
                who, staged, keep_staged=in_place, id=file_id, filename=name, media_type=kind,
                size=intake.size, sha256=intake.digest.hexdigest(), width=width,
                height=height)
            return kept
        finally:
            if kept is None or kept.storage_key != staged:
                await self.storage.delete(staged)

    async def _lock_tenant(self, conn: AsyncConnection, tenant_id: str) -> None:
        # SQLite's write transaction already excludes every other writer.
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                               {"key": f"chatql.files:{tenant_id}"})

    async def _check_quota(self, conn: AsyncConnection, tenant_id: str, sha256: str,
                           size: int) -> None:
        quota = self.limits.quota_bytes
        if quota <= 0:
            return
        live = and_(files.c.tenant_id == tenant_id, files.c.state != "DELETED")
        if await conn.scalar(select(exists().where(live, files.c.sha256 == sha256))):
            return  # the tenant holds these bytes already: they cost nothing more
        used = await _used_bytes(conn, tenant_id)
        if used + size > quota:
            raise QuotaExceeded(
                f"the upload ({size} bytes) would take the tenant's files past its quota"
                f" ({used} of {quota} bytes used)")

    async def _settle(self, conn: AsyncConnection, tenant_id: str, sha256: str, staged: str,
                      *, keep_staged: bool = False) -> str:
        """Under the tenant lock: the key of the tenant's object with these bytes, made
        of the staged ones when there is none. Where moves copy, that is a READY file's
        object when there is one, else (``keep_staged``) the staged object itself;
        otherwise the content object, which the staged bytes become unless it exists."""
        if self.storage.moves_by_copy:
            held = await conn.scalar(select(files.c.storage_key).where(
                files.c.tenant_id == tenant_id, files.c.sha256 == sha256,
                files.c.state == "READY").limit(1))
            if held is not None:
                return str(held)
            if keep_staged:
                return staged
        key = content_key(tenant_id, sha256)
        if await self.storage.size(key) is None:
            await self.storage.promote(staged, key)
        return key

    async def _keep(self, who: Identity, staged: str, *, keep_staged: bool,
                    **values: Any) -> File:
        async with self.db.write() as conn:
            await self._lock_tenant(conn, who.tenant_id)
            await self._check_quota(conn, who.tenant_id, values["sha256"], values["size"])
            key = await self._settle(conn, who.tenant_id, values["sha256"], staged,
                                     keep_staged=keep_staged)
            row = {**values, "tenant_id": who.tenant_id, "uploader": who.user_id,
                   "created_at": now(), "storage_key": key, "state": "READY"}
            await conn.execute(insert(files).values(**row))
        return File(**row)

    # ---- two-phase upload -----------------------------------------------------------

    async def create_upload(self, who: Identity, *, filename: str, media_type: str,
                            size: int, sha256: str) -> PendingUpload:
        """A PENDING file whose bytes the client PUTs to the returned address, then
        confirms with :meth:`complete_upload`."""
        name, kind = self.check_kind(filename, media_type)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidArgument("size must be a whole number of bytes")
        if size > self.limits.max_bytes:
            raise PayloadTooLarge(f"the file is larger than {self.limits.max_bytes} bytes")
        digest = (sha256 or "").strip().lower()
        if not _SHA256.fullmatch(digest):
            raise InvalidArgument("sha256 must be 64 hexadecimal digits")
        pending = File(id=new_id(), tenant_id=who.tenant_id, uploader=who.user_id,
                       filename=name, media_type=kind, size=size, sha256=digest, width=None,
                       height=None, created_at=now(),
                       storage_key=content_key(who.tenant_id, digest), state="PENDING")
        async with self.db.write() as conn:
            await self._lock_tenant(conn, who.tenant_id)
            await self._check_quota(conn, who.tenant_id, digest, size)
            await conn.execute(insert(files).values(**asdict(pending)))
        ttl = timedelta(seconds=self.limits.url_ttl)
        url = await self.storage.presign_put(staging_key(pending.id), ttl)
        return PendingUpload(file=pending, upload_url=url, expires_at=now() + ttl)

    async def pending(self, file_id: str) -> File | None:
        """A PENDING file (for the service's own upload address, which the signature
        authorises)."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(files).where(
                files.c.id == file_id, files.c.state == "PENDING"))).first()
        return None if row is None else file_from_row(row)

    async def receive(self, file: File, chunks: AsyncIterator[bytes]) -> None:
        """Store the bytes of a PENDING upload at its staging key (no more than its
        declared size)."""
        intake = _Intake(file.size)
        staged = staging_key(file.id)
        try:
            await self.storage.write(staged, intake.through(chunks))
        except BaseException:
            await self.storage.delete(staged)
            intake.reraise()
            raise

    async def complete_upload(self, who: Identity, file_id: str) -> File:
        """Check a two-phase upload's bytes against what was declared and make the file
        READY; a mismatch deletes the bytes and the file (INVALID_ARGUMENT, or
        UNSUPPORTED_MEDIA_TYPE for an image or PDF that is not one)."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(files).where(
                files.c.id == file_id, files.c.tenant_id == who.tenant_id,
                files.c.uploader == who.user_id, files.c.state != "DELETED"))).first()
        if row is None:
            raise NotFound(f"upload {file_id!r} not found")
        declared = file_from_row(row)
        if declared.state == "READY":
            return declared  # completed before: the same answer again
        staged = staging_key(file_id)
        if await self.storage.size(staged) is None:
            raise InvalidArgument(f"nothing has been uploaded for {file_id!r} yet")
        try:
            intake = _Intake(declared.size)
            try:
                async for _ in intake.through(self.storage.read(staged)):
                    pass
            except PayloadTooLarge:
                pass
            if intake.too_large or intake.size != declared.size:
                raise InvalidArgument("the uploaded bytes are not the declared size")
            if intake.digest.hexdigest() != declared.sha256:
                raise InvalidArgument("the uploaded bytes do not have the declared sha256")
            width, height = check_content(declared.media_type, bytes(intake.head))
        except (InvalidArgument, UnsupportedMediaType):
            await self._forget(declared)
            raise
        async with self.db.write() as conn:
            await self._lock_tenant(conn, who.tenant_id)
            key = await self._settle(conn, who.tenant_id, declared.sha256, staged)
            await conn.execute(update(files).where(files.c.id == file_id).values(
                state="READY", width=width, height=height, storage_key=key))
        await self.storage.delete(staged)
        return replace(declared, state="READY", width=width, height=height, storage_key=key)

    async def _forget(self, file: File) -> None:
        await self.storage.delete(staging_key(file.id))
        async with self.db.write() as conn:
            await conn.execute(update(files).where(files.c.id == file.id).values(
                state="DELETED"))

    # ---- reads ----------------------------------------------------------------------

    async def used_bytes(self, who: Identity) -> int:
        """The bytes ``who``'s tenant's files take against its quota: each distinct
        content once, uploads not yet complete included, deleted files not."""
        async with self.db.read() as conn:
            return await _used_bytes(conn, who.tenant_id)

    async def readable(self, who: Identity, file_id: str) -> File | None:
        """The file, if ``who`` may read it (see :func:`store.access.can_read_file`)."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(files).where(
                files.c.id == file_id, can_read_file(who, now())))).first()
        return None if row is None else file_from_row(row)

    async def ready(self, file_id: str) -> File | None:
        """A READY file by id alone (a signed address has already decided access)."""
        async with self.db.read() as conn:
            row = (await conn.execute(select(files).where(
                files.c.id == file_id, files.c.state == "READY"))).first()
        return None if row is None else file_from_row(row)

    def open(self, file: File) -> AsyncIterator[bytes]:
        """The file's bytes."""
        return self.storage.read(file.storage_key)

    async def files_of_messages(self, message_ids: Sequence[str],
                                props: Sequence[Any] | None = None) -> dict[str, list[File]]:
        """The READY files each message references (messages the caller was shown): one
        prepared statement whatever the number of messages (a page of them asks on
        every read).

        With ``props`` (each message's props as stored, in the same order), answers are
        remembered by message and props: a message's links are written with it and
        rewritten only when its props change, and a file a live message references is
        never deleted, so the same message with the same props names the same files —
        on any instance — and a page read again asks the store nothing."""
        found: dict[str, list[File]] = {}
        if not message_ids:
            return found
        linked = self._linked
        # Each message's props as stored, for those whose answer can be remembered.
        keys: dict[str, Any] = {}
        if props is not None:
            asked = []
            for message_id, stored in zip(message_ids, props, strict=True):
                if not isinstance(stored, (str, bytes)):
                    asked.append(message_id)
                    continue
                keys[message_id] = stored
                # By id, then the props compared: cheaper than hashing the props.
                known = linked.get(message_id)
                if known is None or known[0] != stored:
                    asked.append(message_id)
                elif known[1]:
                    found[message_id] = list(known[1])
            if not asked:
                return found
            message_ids = asked
        db = self.db
        rows = await prepared.fetch(db, _files_of_messages_statement(db), {
            "ids": prepared.ids_argument(db.dialect, message_ids)}, keys=len(message_ids))
        records = self._records
        for row in rows:
            stored = tuple(row[1:])
            record = records.get(stored)
            if record is None:
                if len(records) >= _RECORDS_KEPT:
                    records.clear()
                record = records[stored] = _file_record(stored)
            found.setdefault(row[0], []).append(record)
        for message_id in message_ids:
            listed = found.get(message_id, [])
            if len(listed) > 1:  # oldest first: the order Message.files keeps by default
                listed.sort(key=lambda file: (file.created_at, file.id))
            shown = keys.get(message_id)
            if shown is not None:
                if len(linked) >= _LINKS_KEPT:
                    linked.clear()
                linked[message_id] = (shown, tuple(listed))
        return found

    # ---- removal --------------------------------------------------------------------

    async def expire_orphans(self, at: datetime) -> int:
        """Mark DELETED the uploads older than the orphan time that no message references
        and no live stream names (PENDING ones included); how many. The links of streams
        that ended without being stored are removed first."""
        cutoff = at - timedelta(seconds=self.limits.orphan_ttl)
        referenced = file_referenced(files.c.id)
        async with self.db.write() as conn:
            await drop_ended_stream_links(conn)
            result = await conn.execute(update(files).where(
                files.c.state.in_(("READY", "PENDING")), files.c.created_at < cutoff,
                ~referenced).values(state="DELETED"))
        return int(result.rowcount or 0)

    async def collect(self, limit: int = COLLECT_BATCH) -> int:
        """Delete the objects of DELETED files (each once no live row of its tenant names
        the same bytes) and then the rows; how many rows went."""
        async with self.db.read() as conn:
            rows = (await conn.execute(select(files).where(files.c.state == "DELETED")
                                       .order_by(files.c.created_at).limit(limit))).all()
        gone = 0
        for row in rows:
            async with self.db.write() as conn:
                await self._lock_tenant(conn, row.tenant_id)
                if await conn.scalar(select(file_referenced(row.id))):
                    # Linked after all (a reference written as the file was released).
                    await conn.execute(update(files).where(files.c.id == row.id)
                                       .values(state="READY"))
                    continue
                shared = await conn.scalar(select(exists().where(
                    files.c.tenant_id == row.tenant_id, files.c.sha256 == row.sha256,
                    files.c.storage_key == row.storage_key,
                    files.c.state != "DELETED", files.c.id != row.id)))
                if not shared:
                    await self.storage.delete(row.storage_key)
                await self.storage.delete(staging_key(row.id))
                # Links of ended streams name it still (they count for nothing).
                await conn.execute(delete(stream_files).where(stream_files.c.file_id == row.id))
                await conn.execute(delete(files).where(files.c.id == row.id))
                gone += 1
        return gone
