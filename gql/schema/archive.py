"""``archiveChat`` and ``restoreArchive``, and the transparent restore the message
reads, appends and stream starts go through (the store side is ``store/archive.py``)."""

from __future__ import annotations

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce
from chatql.gql.schema.chat_type import Chat
from chatql.store.errors import InvalidArgument
from chatql.store.keeping import archive as store_archive

__all__ = ["ArchiveMutation"]


def _archive(info: Info) -> store_archive.ChatArchive:
    archive = info.context.services.archive
    if archive is None:  # pragma: no cover - create_app always makes one
        raise InvalidArgument("no archive is configured")
    return archive


@strawberry.type
class ArchiveMutation:
    @strawberry.mutation(
        description="Move the chat's messages to the cold archive (verified before any "
        "row is deleted); the chat stays in lists with archivedAt set."
    )
    async def archive_chat(self, info: Info, id: strawberry.ID) -> Chat:
        chat = await store_archive.archive_chat(
            info.context.db, _archive(info), info.context.identity, str(id))
        await announce(info, "UPDATED", chat.id)
        return chat  # type: ignore[return-value]

    @strawberry.mutation(description="Bring an archived chat's messages back now.")
    async def restore_archive(self, info: Info, id: strawberry.ID) -> Chat:
        chat = await store_archive.restore_archive(
            info.context.db, _archive(info), info.context.identity, str(id))
        await announce(info, "UPDATED", chat.id)
        return chat  # type: ignore[return-value]
