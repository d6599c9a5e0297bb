"""The kit's wire types (``chatql_client.types``) are what its documents exchange.

``clients/python/generate_types.py`` writes ``types.py`` from ``schema.graphql`` and the
kit's documents (``chatql_client.documents``); the file is committed. These tests run the
generator in memory and fail when the committed file differs, and check on their own
(with graphql-core's TypeInfo, not the generator's walk) that every field a document
selects of a wire type is a key of its TypedDict.
"""

from __future__ import annotations

import functools
import typing
from pathlib import Path
from types import ModuleType

import graphql
import pytest
from chatql_client import types
from chatql_client.types import Message

from tests.client.test_documents_valid import kit_documents
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "clients" / "python"
TYPES = KIT / "src" / "chatql_client" / "types.py"
LEAVES = KIT / "src" / "chatql_client" / "leaves.py"
STALE = ("clients/python/src/chatql_client/types.py is stale (schema.graphql or the kit's "
         "documents changed): run `make kit-types` and commit the result")


@functools.cache
def _generator() -> ModuleType:
    """clients/python/generate_types.py, imported without leaving bytecode beside it."""
    return load_script(KIT / "generate_types.py", "chatql_kit_generate_types")


def _sdl() -> str:
    return (ROOT / "schema.graphql").read_text(encoding="utf-8")


def _keys(typed_dict: type) -> set[str]:
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)  # type: ignore[attr-defined]


def selected_fields(documents: dict[str, str]) -> dict[str, set[str]]:
    """Every field the documents select, by the name of the type it is selected of."""
    schema = graphql.build_schema(_sdl())
    found: dict[str, set[str]] = {}

    class Fields(graphql.Visitor):
        def __init__(self, info: graphql.TypeInfo) -> None:
            super().__init__()
            self.info = info

        def enter_field(self, node: graphql.FieldNode, *_: object) -> None:
            parent = self.info.get_parent_type()
            assert parent is not None, node.name.value
            found.setdefault(parent.name, set()).add(node.name.value)

    for document in documents.values():
        info = graphql.TypeInfo(schema)
        graphql.visit(graphql.parse(document), graphql.TypeInfoVisitor(info, Fields(info)))
    return found


def missing_keys(documents: dict[str, str]) -> dict[str, set[str]]:
    """Fields a document selects of a wire type that its TypedDict lacks."""
    untyped = _generator().UNTYPED_FIELDS
    missing = {}
    for type_name, fields in selected_fields(documents).items():
        typed_dict = getattr(types, type_name, None)
        if typed_dict is None or not isinstance(typed_dict, type):
            continue
        lacking = {f for f in fields - _keys(typed_dict) if (type_name, f) not in untyped}
        if lacking:
            missing[type_name] = lacking
    return missing


def test_the_committed_types_match_the_schema_and_documents() -> None:
    generator = _generator()
    fresh = generator.render(_sdl(), generator.kit_documents())
    assert TYPES.read_text(encoding="utf-8") == fresh, STALE
    assert generator.COMMAND in fresh.splitlines()[1], "the header names the command"


def test_the_committed_leaves_match_the_schema() -> None:
    assert LEAVES.read_text(encoding="utf-8") == _generator().render_leaves(_sdl()), (
        STALE.replace("types.py", "leaves.py"))


def test_a_field_added_to_message_reaches_the_kit_with_no_edit() -> None:
    """A nullable field added to ``Message`` in the schema is selected by every document
    that reads a message and typed in ``types.Message``: regenerating is the whole change.
    Fields with arguments, objects and deprecated fields stay out of the selection."""
    generator = _generator()
    sdl = _sdl().replace("type Message {\n",
                         "type Message {\n  addedByThisTest: String\n"
                         "  old: String @deprecated(reason: \"gone\")\n"
                         "  sized(width: Int): String\n", 1)
    assert sdl != _sdl()
    leaves = generator.render_leaves(sdl)
    documents = generator.kit_documents(leaves=leaves)
    assert "addedByThisTest" in selected_fields(documents)["Message"]
    assert not {"old", "sized", "siblings", "files"} & selected_fields(documents)["Message"]
    assert "    addedByThisTest: str | None\n" in generator.render(sdl, documents)


def test_the_generator_reads_the_same_documents_as_the_validity_test() -> None:
    assert _generator().kit_documents() == kit_documents()


def test_every_field_a_document_selects_is_a_key_of_its_typed_dict() -> None:
    assert missing_keys(kit_documents()) == {}
    # Concretely, on Message: the shared selection and the agent loop's own reads.
    message_fields = selected_fields(kit_documents())["Message"]
    assert {"id", "parentId", "sequence", "tokens", "createdAt", "props"} <= message_fields
    assert message_fields <= _keys(Message)


def test_a_field_a_document_selects_but_the_typed_dict_lacks_is_found() -> None:
    """The check above is real: a document selecting one more field of Chat fails it,
    and the generator, run on that document, adds the key (so the drift test fails)."""
    documents = kit_documents()
    assert "updatedBy" not in _keys(types.Chat)
    documents["CHAT"] = documents["CHAT"].replace("createdAt", "createdAt updatedBy", 1)
    assert missing_keys(documents) == {"Chat": {"updatedBy"}}
    regenerated = _generator().render(_sdl(), documents)
    assert "    updatedBy: str | None\n" in regenerated
    assert regenerated != TYPES.read_text(encoding="utf-8")


def test_the_public_names_and_their_shapes() -> None:
    assert {"AppendReceipt", "Chat", "ChatPage", "MemoryEntry", "MemoryHit", "Message",
            "MessageInput", "SearchHit", "Stream", "StreamResult"} <= set(types.__all__)
    hints = typing.get_type_hints(Message)
    assert hints["role"] == typing.Literal["USER", "ASSISTANT", "SYSTEM", "TOOL"]
    assert hints["parentId"] == str | None and hints["sequence"] is int
    # Selected in parts (END_STREAM, the agent loop and the session read a few fields).
    assert Message.__required_keys__ == frozenset()
    # The input type: what the service requires, and nothing else, is required.
    assert types.MessageInput.__required_keys__ == {"role", "type", "props"}
    # startStream selects idleTimeout, endStream's stream does not.
    assert types.Stream.__optional_keys__ == {"idleTimeout"}
    assert types.AppendReceipt.__optional_keys__ == frozenset()
    assert typing.get_type_hints(types.ChatPage) == {
        "chats": list[types.Chat], "end_cursor": str | None, "has_next_page": bool}
    assert types.Message.__doc__ == "One message of a chat."
    assert "messages" not in _keys(types.Chat)  # UNTYPED_FIELDS: the agent loop's own read


@pytest.mark.parametrize(("document", "reason"), [
    ("query { chat(id: \"c\") { id usage { promptTokens } } }", "Chat.usage"),
    ("query { chat(id: \"c\") { leaf: activeLeafId } }", "aliased"),
    ("query { chat(id: \"c\") { __typename id } }", "meta field"),
])
def test_the_generator_refuses_what_it_cannot_type(document: str, reason: str) -> None:
    generator = _generator()
    documents = {**kit_documents(), "EXTRA": document}
    with pytest.raises(generator.GenerationError, match=reason):
        generator.render(_sdl(), documents)


def test_the_generator_refuses_an_unmapped_scalar_and_a_stale_untyped_entry() -> None:
    generator = _generator()
    sdl = _sdl().replace("DateTime", "Instant")
    with pytest.raises(generator.GenerationError, match="Instant"):
        generator.render(sdl, kit_documents())
    documents = {name: text for name, text in kit_documents().items()
                 if name not in ("AWAITED_LEAF", "CUT_OFF")}
    with pytest.raises(generator.GenerationError, match="UNTYPED_FIELDS"):
        generator.render(_sdl(), documents)
