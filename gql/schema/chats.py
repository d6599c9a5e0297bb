"""Chat queries and mutations: create, read, update, soft delete, restore, purge."""

from __future__ import annotations

from datetime import timedelta

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce, before_write
from chatql.gql.schema.chat_type import Chat
from chatql.gql.schema.types import CreateChatInput, UpdateChatInput
from chatql.store import clock
from chatql.store.chats import chat as store_chats
from chatql.store.errors import InvalidArgument
from chatql.store.ids import check_chat_id

__all__ = ["ChatMutation", "ChatQuery"]


@strawberry.type
class ChatQuery:
    @strawberry.field(description="The chat, or null when it is absent or not visible.")
    async def chat(self, info: Info, id: strawberry.ID) -> Chat | None:
        chat_id = str(id)
        check_chat_id(chat_id)
        chat = await store_chats.get_chat(info.context.db, info.context.identity, chat_id)
        return chat  # type: ignore[return-value]


@strawberry.type
class ChatMutation:
    @strawberry.mutation(description="Create a chat; the id is generated unless given.")
    async def create_chat(self, info: Info, input: CreateChatInput) -> Chat:
        if input.metadata is not None and not isinstance(input.metadata, dict):
            raise InvalidArgument("metadata must be a JSON object")
        expires_at = input.expires_at
        if input.temporary:
            if expires_at is not None:
                raise InvalidArgument("give either temporary or expiresAt, not both")
            ttl = info.context.services.settings.temporary_ttl
            expires_at = clock.now() + timedelta(seconds=ttl)
        chat = await store_chats.create_chat(
            info.context.db,
            info.context.identity,
            id=None if input.id is None else str(input.id),
            title=input.title,
            assistant_id=input.assistant_id,
            mode=input.mode,
            share=input.share.value,
            public=input.public,
            sort=input.sort,
            metadata=input.metadata,
            channel=input.channel,
            tags=input.tags,
            pinned=input.pinned,
            expires_at=expires_at,
        )
        await announce(info, "CREATED", chat.id)
        return chat  # type: ignore[return-value]

    @strawberry.mutation(
        description=(
            "THE chat of (tenant, assistant, channel, person), created on first use: the "
            "person is the caller, or `subject` when an agent or admin asks on someone's "
            "behalf. Concurrent first calls create one chat; after a purge the next call "
            "creates a new one; a soft-deleted one is restored."
        )
    )
    async def chat_for(self, info: Info, assistant_id: str, channel: str,
                       subject: str | None = None) -> Chat:
        chat, outcome = await store_chats.find_chat_for(
            info.context.db, info.context.identity,
            assistant_id=assistant_id, channel=channel, subject=subject,
        )
        if outcome is not None:  # made by this call, or brought back from the trash
            await announce(info, outcome, chat.id)
        return chat  # type: ignore[return-value]

    @strawberry.mutation(
        description="Change title, status, share, public, sort, metadata, tags, pinned "
        "or expiresAt."
    )
    async def update_chat(self, info: Info, id: strawberry.ID, input: UpdateChatInput) -> Chat:
        before = await before_write(info, str(id))
        chat = await store_chats.update_chat(
            info.context.db, info.context.identity, str(id), input.changes()
        )
        await announce(info, "UPDATED", chat.id, before=before)
        return chat  # type: ignore[return-value]

    @strawberry.mutation(description="Soft delete: hidden everywhere, data kept.")
    async def delete_chat(self, info: Info, id: strawberry.ID) -> bool:
        before = await before_write(info, str(id))
        deleted = await store_chats.delete_chat(info.context.db, info.context.identity, str(id))
        await announce(info, "DELETED", str(id), before=before)
        return deleted

    @strawberry.mutation(description="Undo a soft delete.")
    async def restore_chat(self, info: Info, id: strawberry.ID) -> Chat:
        chat = await store_chats.restore_chat(info.context.db, info.context.identity, str(id))
        await announce(info, "RESTORED", chat.id)
        return chat  # type: ignore[return-value]

    @strawberry.mutation(
        description="Remove the chat and its messages for good; its id is closed forever."
    )
    async def purge_chat(self, info: Info, id: strawberry.ID) -> bool:
        before = await before_write(info, str(id))
        purged = await store_chats.purge_chat(info.context.db, info.context.identity, str(id))
        if before is not None:  # an id closed again, or never used, changes no list
            await announce(info, "PURGED", str(id), before=before)
        return purged
