"""The ``importChat`` mutation (the store side is ``store/imports.py``)."""

from __future__ import annotations

from enum import StrEnum

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce
from chatql.gql.schema.chat_type import Chat
from chatql.store.ids import new_id
from chatql.store.keeping import imports as store_imports

__all__ = ["ImportChatInput", "ImportFormat", "ImportMutation"]


@strawberry.enum(description="What an imported document is.")
class ImportFormat(StrEnum):
    CHATQL = "CHATQL"
    OPENAI = "OPENAI"


@strawberry.input(description="A chat to create from a document.")
class ImportChatInput:
    format: ImportFormat
    document: JSON = strawberry.field(
        description="CHATQL: the lines of a chatql export (chat line first) as a list; "
        "its file lines (an export with files=inline) are stored as files again. "
        'OPENAI: {"messages": [{role, content, tool_calls, tool_call_id, name}]}.'
    )
    chat_id: strawberry.ID | None = strawberry.field(
        default=None, description="The new chat's id (default: the export's, or generated)."
    )
    assistant_id: str | None = strawberry.field(
        default=None, description="Required for OPENAI; overrides the export's for CHATQL."
    )
    import_id: str | None = strawberry.field(
        default=None,
        description="Re-sending the same importId with the same input returns the same "
        "chat and writes nothing (like appendId).",
    )


@strawberry.type
class ImportMutation:
    @strawberry.mutation(
        description="Create a chat from a chatql export or an OpenAI-style conversation; "
        "all or nothing."
    )
    async def import_chat(self, info: Info, input: ImportChatInput) -> Chat:
        chat = await store_imports.import_chat(
            info.context.db,
            info.context.identity,
            format=input.format.value,
            document=input.document,
            import_id=input.import_id if input.import_id is not None else new_id(),
            chat_id=None if input.chat_id is None else str(input.chat_id),
            assistant_id=input.assistant_id,
            files=info.context.services.files,
        )
        await announce(info, "CREATED", chat.id)
        return chat  # type: ignore[return-value]
