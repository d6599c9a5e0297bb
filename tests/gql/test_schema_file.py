"""schema.graphql is generated from the code and must never drift from it."""

from __future__ import annotations

from pathlib import Path

from chatql.gql.cli import schema_sdl

ROOT = Path(__file__).resolve().parents[2]


def test_schema_file_matches_code() -> None:
    committed = (ROOT / "schema.graphql").read_text()
    assert committed == schema_sdl(), "schema.graphql is stale: run `chatql export-schema`"


def test_normative_names_exist() -> None:
    sdl = schema_sdl()
    for fragment in (
        "chat(id: ID!): Chat",
        "messages(chatId: ID!, filter: MessageFilter",
        # Arguments with defaults may follow the normative ones.
        "appendMessages(chatId: ID!, appendId: String!, messages: [MessageInput!]!",
        "createChat(input: CreateChatInput!): Chat!",
        "updateChat(id: ID!, input: UpdateChatInput!): Chat!",
        "deleteChat(id: ID!): Boolean!",
        "restoreChat(id: ID!): Chat!",
        "purgeChat(id: ID!): Boolean!",
        "updateMessage(id: ID!, input: UpdateMessageInput!): Message!",
        "deleteMessages(chatId: ID!, ids: [ID!]!, withReplies: Boolean = false): Int!",
        "scalar JSON",
        "scalar DateTime",
    ):
        assert fragment in sdl, fragment
