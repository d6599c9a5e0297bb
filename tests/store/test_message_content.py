"""A message's content and rows are named once, by the table and the records.

Every writer (appends, edits, stream persists, forks, imports, archive restores)
builds a message's content and its row by column name from ``store.db.rows``, whose
builders are generated from the ``messages`` table and the ``Message`` record; the
export's line and the import's reader share one list of fields. These tests pin what
must not change while that holds — the append digests (an idempotent append is
recognised by them) and the export's bytes — and check each builder column by
column, by name, so a column added to the table is checked too.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from sqlalchemy import select

from chatql.store.chats.chat import create_chat
from chatql.store.db import rows
from chatql.store.db.database import Database
from chatql.store.db.tables import messages
from chatql.store.errors import InvalidArgument
from chatql.store.jsonutil import canonical_digest, dumps
from chatql.store.keeping import export
from chatql.store.keeping.export import chat_line, export_chat, message_line, open_export
from chatql.store.keeping.imports import ParsedChat, import_chat, parse_line
from chatql.store.keeping.shares import _kept, _shown
from chatql.store.messages.message import (
    NewMessage,
    append_messages,
    batch_digest,
    edit_message,
    message_from_row,
    new_contents,
    wire_name,
)
from chatql.store.records import Identity, Message, SharedMessage
from chatql.store.streams.buffer import StreamBuffer, StreamInfo
from chatql.store.streams.persist import _chain
from chatql.store.streams.reducer import MessageState, StreamState

AGENT = Identity(user_id="agent", tenant_id="acme", roles=frozenset({"agent"}))
STAMP = datetime(2026, 12, 7, 3, 14, 15, 926535, tzinfo=UTC)


def full_message(**changes: Any) -> NewMessage:
    """A new message with every field given."""
    values: dict[str, Any] = {
        "role": "ASSISTANT", "type": "text",
        "props": {"content": "réponse ✓", "n": [1, 2.5, None], "big": 2**60},
        "id": "m-1", "request_id": "req-1", "block_id": "b1", "thread_id": "t1",
        "assistant_id": "bot", "metadata": {"source": "harness"}, "status": "INTERRUPTED",
        "tokens": 4,
    }
    return NewMessage(**(values | changes))


def record(**changes: Any) -> Message:
    """A stored message with a distinct value in every column a record reads."""
    values = {column: f"{column}-value" for column in rows.RECORD_COLUMNS}
    values.update(sequence=7, props={"p": 1}, metadata={"m": 2}, tokens=9,
                  created_at=STAMP, updated_at=STAMP)
    return Message(**(values | changes))


# ---- what is content ---------------------------------------------------------------------


def test_content_is_every_column_but_the_writers_place() -> None:
    derived = tuple(column for column in rows.MESSAGE_COLUMNS
                    if column not in rows.PLACE_COLUMNS)
    assert derived == rows.CONTENT_COLUMNS
    assert set(rows.PLACE_COLUMNS) <= set(rows.MESSAGE_COLUMNS)
    # Today's content, in the order the positional code had it.
    assert rows.CONTENT_COLUMNS[:10] == (
        "request_id", "role", "type", "props", "block_id", "thread_id", "assistant_id",
        "status", "metadata", "tokens")
    # Every content column is a field of a new message and of a record.
    assert set(rows.CONTENT_COLUMNS) <= rows.field_names(NewMessage)
    assert set(rows.CONTENT_COLUMNS) <= rows.field_names(Message)


def test_content_is_read_by_name() -> None:
    make = rows.content_maker({"role", "type", "props", "assistant_id", "tokens"},
                              given=("status",), defaults=("assistant_id",))
    named = record(assistant_id="")
    [content] = make([named], status="DONE", assistant_id="fallback")
    values = dict(zip(rows.CONTENT_COLUMNS, content, strict=True))
    for column, value in values.items():
        expected = {"status": "DONE", "assistant_id": "fallback"}.get(
            column, getattr(named, column)
            if column in {"role", "type", "props", "tokens"} else None)
        assert value == expected, column
    [kept] = make([record()], status="DONE", assistant_id="fallback")
    assert dict(zip(rows.CONTENT_COLUMNS, kept, strict=True))["assistant_id"] == (
        "assistant_id-value")
    with pytest.raises(ValueError, match="not content columns"):
        rows.content_maker({"role"}, given=("chat_id",))
    with pytest.raises(ValueError, match="not content columns"):
        rows.content_maker({"role"}, defaults=("assistant_id",))


def test_an_appends_content_is_the_messages_fields() -> None:
    message = full_message(assistant_id=None)
    [content] = new_contents([message], assistant_id="default")
    for column, value in zip(rows.CONTENT_COLUMNS, content, strict=True):
        assert value == ("default" if column == "assistant_id" else getattr(message, column))
    [content] = new_contents([full_message()], assistant_id="default")
    assert content[rows.CONTENT_COLUMNS.index("assistant_id")] == "bot"


def test_a_persists_content_is_the_inputs_and_the_streams() -> None:
    state = StreamState("s1")
    state.messages["x"] = MessageState("x", "text", "ASSISTANT", {"t": 1}, "b", "th", 3)
    stream = StreamBuffer(
        info=StreamInfo(id="s1", chat_id="c1", request_id="req-s", status="ACTIVE",
                        started_at=STAMP),
        owner=AGENT, assistant_id="bot-s", state=state,
        user_input=full_message(assistant_id=None), end_status="FAILED")
    ids, contents = _chain(stream)
    given, streamed = (dict(zip(rows.CONTENT_COLUMNS, content, strict=True))
                       for content in contents)
    assert ids == ["m-1", "x"]
    for column in rows.CONTENT_COLUMNS:
        assert given[column] == {"assistant_id": "bot-s", "status": "FAILED"}.get(
            column, getattr(stream.user_input, column))
        stream_has = {"request_id": "req-s", "assistant_id": "bot-s", "status": "FAILED"}
        assert streamed[column] == stream_has.get(
            column, getattr(state.messages["x"], column, None))


def test_a_fork_copies_what_its_source_shows() -> None:
    original = record()
    shown = dict(zip(rows.CONTENT_COLUMNS, next(_shown([original])), strict=True))
    kept = dict(zip(rows.CONTENT_COLUMNS, next(_kept([original])), strict=True))
    link_shows = rows.field_names(SharedMessage)
    for column in rows.CONTENT_COLUMNS:
        assert shown[column] == ("COMPLETED" if column == "status" else getattr(
            original, column) if column in link_shows else None), column
        assert kept[column] == (None if column == "request_id"
                                else getattr(original, column)), column


# ---- rows and records --------------------------------------------------------------------


def test_chain_rows_records_and_copy_values_by_name() -> None:
    link = rows.Link("m-9", "m-8", 3, "m-1", 1)
    content = tuple(f"{column}!" for column in rows.CONTENT_COLUMNS)
    [row] = rows.chain_rows("c-1", 12, STAMP, [link], [content])
    named = dict(zip(rows.MESSAGE_COLUMNS, row, strict=True))
    for column, value in named.items():
        if column in rows.Link._fields:
            assert value == getattr(link, column)
        elif column in rows.CONTENT_COLUMNS:
            assert value == f"{column}!"
    assert (named["chat_id"], named["sequence"]) == ("c-1", 12)
    assert named["created_at"] == named["updated_at"] == STAMP

    [made] = rows.row_records([row])
    for field in dataclasses.fields(Message):
        expected = named.get(field.name, field.default)
        assert getattr(made, field.name) == expected, field.name

    json_row = tuple({"v": column} if column in ("props", "metadata") else named[column]
                     for column in rows.MESSAGE_COLUMNS)
    null_row = tuple(None if column in ("props", "metadata") else named[column]
                     for column in rows.MESSAGE_COLUMNS)
    copied, nulls = rows._copy_records([json_row, null_row])
    for index, column in enumerate(rows.MESSAGE_COLUMNS):
        if column in ("props", "metadata"):
            assert copied[index] == dumps({"v": column})
            assert nulls[index] == "null"  # JSON null, as the INSERT stores it
        else:
            assert copied[index] == nulls[index] == named[column]


def test_document_rows_need_the_place_and_leave_out_nullable_content() -> None:
    needed = {"id": "m-1", "sequence": 1, "role": "USER", "type": "text", "props": {},
              "status": "COMPLETED", "created_at": STAMP, "updated_at": STAMP,
              "parent_id": None, "depth": 1, "jump_id": "m-1", "jump_depth": 1}
    [row] = rows.document_rows("c-1", [needed])
    named = dict(zip(rows.MESSAGE_COLUMNS, row, strict=True))
    for column in rows.MESSAGE_COLUMNS:
        assert named[column] == ("c-1" if column == "chat_id" else needed.get(column))
    with pytest.raises(KeyError):
        rows.document_rows("c-1", [{k: v for k, v in needed.items() if k != "depth"}])


def test_builders_are_generated_from_the_columns() -> None:
    # The source of each generated builder names every column's position once.
    for builder in (rows._chain_rows, rows._records, rows._copy_values, rows._document_rows):
        assert builder.source.startswith(f"def {builder.__name__}(")  # type: ignore[attr-defined]


# ---- the append digest -------------------------------------------------------------------

#: Digests the positional wire() gave (before it was derived from the fields): an
#: append replayed with its appendId must digest the same to be recognised.
PINNED_DIGESTS = {
    "minimal": "a6c9d40f8fdd57da01c10abfdfcaaf1f20a3d64d6ff0226812557b4d0c3d589d",
    "full": "cece30c9d1159c75a29101e38e8c75c4a2b65cbdd0fbc5acb0f8d0d2020a89a9",
    "full-below-parent": "b99d50a8ee39bdac636939cfb2e703259e01b724a4e0f15f570e466d6b8de53e",
}


def pinned_batches() -> dict[str, list[NewMessage]]:
    full = [NewMessage(role="ASSISTANT", type="text",
                       props={"content": "réponse", "n": [1, 2.5, None]}, id="m-1",
                       request_id="req-1", block_id="b1", thread_id="t1",
                       assistant_id="bot", metadata={"source": "harness"},
                       status="INTERRUPTED", tokens=4),
            NewMessage(role="TOOL", type="tool_result", props={}, assistant_id="", tokens=0)]
    return {"minimal": [NewMessage(role="USER", type="text", props={"content": "hello ✓"})],
            "full": full}


def test_append_digests_stay_byte_identical() -> None:
    batches = pinned_batches()
    assert batch_digest(batches["minimal"]) == PINNED_DIGESTS["minimal"]
    assert batch_digest(batches["full"]) == PINNED_DIGESTS["full"]
    assert canonical_digest({
        "parentId": "p1", "messages": [message.wire() for message in batches["full"]],
    }) == PINNED_DIGESTS["full-below-parent"]


def test_the_wire_is_the_fields_in_camel_case_without_nulls_or_status() -> None:
    assert list(full_message().wire())[:10] == [
        "id", "role", "type", "props", "requestId", "blockId", "threadId", "assistantId",
        "metadata", "tokens"]
    # Every field given (any a later column adds too): each is on the wire but status.
    given = full_message()
    message = dataclasses.replace(given, **{
        field.name: "x" for field in dataclasses.fields(NewMessage)
        if getattr(given, field.name) is None})
    for field in dataclasses.fields(NewMessage):
        on_wire = wire_name(field.name) in message.wire()
        assert on_wire == (field.name != "status"), field.name
    assert NewMessage(role="USER", type="text", props={}).wire() == {
        "role": "USER", "type": "text", "props": {}}


async def test_a_replayed_append_is_recognised_by_its_digest(db: Database) -> None:
    chat = f"digest-{uuid.uuid4().hex[:10]}"
    await create_chat(db, AGENT, id=chat, assistant_id="bot")
    batch = [dataclasses.replace(message, id=None) for message in pinned_batches()["full"]]
    first = await append_messages(db, AGENT, chat, "append-1", batch)
    assert first.digest == batch_digest(batch)
    again = await append_messages(db, AGENT, chat, "append-1", batch)
    assert again.message_ids == first.message_ids


# ---- export and import -------------------------------------------------------------------

#: Message lines as the export wrote them before its fields were derived (props in
#: jsonb's key order, so Postgres gives them back as written).
PINNED_LINES = [
    b'{"kind":"message","id":"pin-m-1","sequence":1,"requestId":null,"role":"USER",'
    b'"type":"user_input","props":{},"blockId":null,"threadId":null,"assistantId":null,'
    b'"status":"COMPLETED","metadata":null,"createdAt":"2026-12-07T03:14:15.926535+00:00",'
    b'"updatedAt":"2026-12-07T03:14:15.926535+00:00","parentId":null,"tokens":null}\n',
    b'{"kind":"message","id":"pin-m-2","sequence":2,"requestId":"req-1","role":"ASSISTANT",'
    b'"type":"text","props":{"n":[1,2.5,null],"big":1152921504606846976,'
    b'"content":"r\xc3\xa9ponse \xe2\x9c\x93"},"blockId":"b1","threadId":"t1",'
    b'"assistantId":"bot","status":"INTERRUPTED","metadata":{"k":"v"},'
    b'"createdAt":"2026-12-07T03:14:15.926535+00:00",'
    b'"updatedAt":"2026-12-07T03:14:16.000005+00:00","parentId":"pin-m-1","tokens":42}\n',
]


def assert_pinned(line: bytes, pinned: bytes) -> None:
    """``line`` is ``pinned`` byte for byte, but for the fields of columns added since,
    which may only follow it (null here: the pinned messages never set them)."""
    head = pinned[:-2]  # without the closing "}\n"
    assert line[:len(head)] == head
    added = orjson.loads(b"{" + line[len(head) + 1:]) if line[len(head):] != b"}\n" else {}
    assert list(added) == [key for key, _column in export.MESSAGE_LINE_FIELDS[15:]]
    assert set(added.values()) <= {None}


def pinned_messages() -> list[Message]:
    later = datetime(2026, 12, 7, 3, 14, 16, 5, tzinfo=UTC)
    return [
        Message("pin-m-1", "c-1", 1, None, "USER", "user_input", {}, None, None, None,
                "COMPLETED", None, STAMP, STAMP),
        Message("pin-m-2", "c-1", 2, "req-1", "ASSISTANT", "text",
                {"n": [1, 2.5, None], "big": 2**60, "content": "réponse ✓"}, "b1", "t1",
                "bot", "INTERRUPTED", {"k": "v"}, STAMP, later, 42, False, "pin-m-1"),
    ]


def test_export_lines_stay_byte_identical() -> None:
    assert export._LINE_KEYS[:16] == (
        "kind", "id", "sequence", "requestId", "role", "type", "props", "blockId",
        "threadId", "assistantId", "status", "metadata", "createdAt", "updatedAt",
        "parentId", "tokens")
    for message, pinned in zip(pinned_messages(), PINNED_LINES, strict=True):
        line = message_line(message)
        assert_pinned(orjson.dumps(line) + b"\n", pinned)
        # The page reader's path: a row of the line's values as the driver gives them.
        row = [None if value is None else orjson.dumps(value).decode()
               if key in ("props", "metadata") else value for key, value in line.items()]
        assert_pinned(export._message_line_bytes(row), pinned)


def test_every_record_column_is_exported_and_read_back() -> None:
    assert set(export.MESSAGE_LINE_COLUMNS) == set(rows.RECORD_COLUMNS) - {"chat_id"}
    line = orjson.loads(orjson.dumps(message_line(pinned_messages()[1])))
    parsed = ParsedChat(chat={})
    parse_line(line, 2, parsed, 0)
    [row] = parsed.messages
    for column in export.MESSAGE_LINE_COLUMNS:
        assert row[column] == getattr(pinned_messages()[1], column), column


def test_an_imported_name_is_checked_against_its_columns_length() -> None:
    line = orjson.loads(PINNED_LINES[1])
    for key, column in export.MESSAGE_LINE_FIELDS:
        if column in ("request_id", "block_id", "thread_id", "assistant_id"):
            too_long = "x" * (messages.c[column].type.length + 1)
            with pytest.raises(InvalidArgument, match=f"line 3: field '{key}'"):
                parse_line({**line, key: too_long}, 3, ParsedChat(chat={}), 0)


async def test_an_export_of_an_import_is_byte_identical(db: Database) -> None:
    chat_id = f"pin-{uuid.uuid4().hex[:10]}"
    lines = [orjson.loads(line) for line in PINNED_LINES]
    suffix = uuid.uuid4().hex[:8]
    for line in lines:  # message ids are unique across the store
        line["id"] = f"{line['id']}-{suffix}"
        if line["parentId"] is not None:
            line["parentId"] = f"{line['parentId']}-{suffix}"
    header = chat_line(dataclasses.replace(
        await _chat_for_header(), id=chat_id, created_at=STAMP, updated_at=STAMP))
    await import_chat(db, AGENT, format="CHATQL", document=[header, *lines],
                      import_id=f"i-{uuid.uuid4().hex}", chat_id=chat_id)
    chat = await open_export(db, AGENT, chat_id)
    exported = b"".join([chunk async for chunk in export_chat(db, chat)]).splitlines(True)
    found = [line for line in exported if line.startswith(b'{"kind":"message"')]
    assert len(found) == len(PINNED_LINES)
    for line, pinned in zip(found, PINNED_LINES, strict=True):
        assert_pinned(line, pinned.replace(b'"pin-m-1"', f'"pin-m-1-{suffix}"'.encode())
                      .replace(b'"pin-m-2"', f'"pin-m-2-{suffix}"'.encode()))


async def _chat_for_header() -> Any:
    from chatql.store.records import Chat

    return Chat(id="x", title=None, assistant_id="bot", mode="chat", status="ACTIVE",
                public=False, share="PRIVATE", sort=0, last_message_at=None, metadata=None,
                created_at=STAMP, updated_at=STAMP, created_by="agent", updated_by="agent",
                team_id=None, tenant_id="acme")


# ---- edits -------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["props", "metadata"])
async def test_an_edit_copies_every_content_column(db: Database, change: str) -> None:
    chat = f"edit-{uuid.uuid4().hex[:10]}"
    await create_chat(db, AGENT, id=chat, assistant_id="bot")
    receipt = await append_messages(db, AGENT, chat, f"a-{uuid.uuid4().hex}",
                                     [full_message(id=None)])
    [original_id] = receipt.message_ids
    edited = await edit_message(db, AGENT, original_id, f"e-{uuid.uuid4().hex}",
                                **{change: {"edited": True}})
    async with db.read() as conn:
        original = message_from_row((await conn.execute(
            select(messages).where(messages.c.id == original_id))).one())
    for column in rows.CONTENT_COLUMNS:
        expected = getattr(original, column)
        if column == change:
            expected = {"edited": True}
        elif column == "status":
            expected = "COMPLETED"  # the copy is a whole message
        elif column == "tokens" and change == "props":
            expected = None  # new props carry no count of their own
        assert getattr(edited, column) == expected, column
    assert edited.parent_id == original.parent_id and edited.id != original.id
