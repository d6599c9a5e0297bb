"""What the file references of the model's window carry (``modelContext(files: …)``).

The store picks the window (with ``NONE`` it has already dropped the file parts and
``file`` messages); this adds to each reference the caller may read — a file the
message links (``Message.files``), still stored — where an agent finds it:

- ``URL``: ``url``, the signed short-lived address ``File.url`` gives;
- ``INLINE``: ``url``, the bytes as a ``data:<mediaType>;base64,…`` URL, and for a text
  file (``text/*``, JSON, XML, YAML …) ``text``, its contents decoded as UTF-8, cut at
  ``CHATQL_CONTEXT_FILE_TEXT_BYTES`` with a marker line saying how much is shown. A
  text file cut so gets its signed address as ``url`` instead of a data URL, as does
  any other file larger than ``CHATQL_CONTEXT_FILE_INLINE_BYTES``.

The fields go on the ``file`` part inside ``props.content``, or on the props of a
``file`` message. A reference to a file the caller may not read, or that is gone (its
bytes too), is left as stored: never an error.
"""

from __future__ import annotations

import base64
import codecs
from dataclasses import replace
from enum import StrEnum
from typing import Any

import strawberry

from chatql.gql.context import Context
from chatql.gql.schema.file_type import file_url
from chatql.store.files.links import FILE_TYPE, file_ids_in
from chatql.store.files.service import FileService
from chatql.store.files.window import is_file_part, is_text_type
from chatql.store.records import File, Message

__all__ = ["CUT_MARKER", "FileMode", "with_files"]

#: Ends the text of a text file cut at the limit.
CUT_MARKER = "\n[cut: {shown} of {size} bytes shown]"


@strawberry.enum(description=(
    "How modelContext hands over the files its messages reference. URL (the default): a"
    " signed, short-lived url on each file part. INLINE: the bytes as a data: url, and"
    " for a text file its contents as text (cut at CHATQL_CONTEXT_FILE_TEXT_BYTES, with"
    " a marker); a cut text file, or another file larger than"
    " CHATQL_CONTEXT_FILE_INLINE_BYTES, gets the signed url instead. NONE: file parts"
    " are dropped and messages of type file left out."))
class FileMode(StrEnum):
    INLINE = "INLINE"
    URL = "URL"
    NONE = "NONE"


async def with_files(context: Context, window: list[Message], mode: FileMode) -> list[Message]:
    """``window`` with its readable file references carrying what ``mode`` gives."""
    service = context.services.files
    if mode is FileMode.NONE or service is None:
        return window
    holders = [message.id for message in window
               if file_ids_in(message.type, message.props, strict=False)]
    if not holders:
        return window
    linked = await service.files_of_messages(holders)
    carried: dict[str, dict[str, str]] = {}
    shaped = []
    for message in window:
        readable = {file.id: file for file in linked.get(message.id, ())}
        if not readable:
            shaped.append(message)
            continue
        for file_id, file in readable.items():
            if file_id not in carried:
                carried[file_id] = await _carry(context, service, file, mode)
        shaped.append(replace(message, props=_filled(message, readable, carried)))
    return shaped


def _filled(message: Message, readable: dict[str, File],
            carried: dict[str, dict[str, str]]) -> dict[str, Any]:
    props = message.props

    def fill(holder: dict[str, Any]) -> dict[str, Any]:
        file_id = holder.get("fileId")
        if not isinstance(file_id, str) or file_id not in readable:
            return holder
        return {**holder, **carried[file_id]}

    if message.type == FILE_TYPE:
        props = fill(props)
    content = props.get("content")
    if isinstance(content, list):
        props = {**props, "content": [fill(part) if is_file_part(part) else part
                                      for part in content]}
    return props


async def _carry(context: Context, service: FileService, file: File,
                 mode: FileMode) -> dict[str, str]:
    """What a reference to ``file`` carries in ``mode``; nothing when its bytes are gone."""
    if mode is FileMode.URL:
        return {"url": file_url(context, file.id)}
    limits = service.limits
    text = is_text_type(file.media_type)
    limit = limits.context_text_bytes if text else limits.context_inline_bytes
    if file.size > limit and not text:
        return {"url": file_url(context, file.id)}
    try:
        data = await _read(service, file, min(file.size, limit))
    except FileNotFoundError:
        return {}
    if not text:
        return {"url": _data_url(file, data)}
    cut = file.size > limit
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    # Cut, a character split at the limit is held back rather than mangled.
    decoded = decoder.decode(data, final=not cut)
    if cut:
        shown = len(data) - len(decoder.getstate()[0])
        return {"url": file_url(context, file.id),
                "text": decoded + CUT_MARKER.format(shown=shown, size=file.size)}
    return {"url": _data_url(file, data), "text": decoded}


def _data_url(file: File, data: bytes) -> str:
    return f"data:{file.media_type};base64,{base64.b64encode(data).decode('ascii')}"


async def _read(service: FileService, file: File, wanted: int) -> bytes:
    """The first ``wanted`` bytes of the file (all of them when it is no larger)."""
    body = service.open(file)
    chunks: list[bytes] = []
    got = 0
    try:
        async for chunk in body:
            chunks.append(chunk)
            got += len(chunk)
            if got >= wanted:
                break
    finally:
        close = getattr(body, "aclose", None)
        if close is not None:
            await close()
    return b"".join(chunks)[:wanted]
