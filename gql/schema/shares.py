"""Share links and forks: ``shareChat``, ``revokeShare``, ``sharedChat`` and ``forkChat``.

The rules are the store's (store/keeping/shares.py). ``sharedChat`` is the one field a
caller who names no one may ask (gql/ops/operations.py, ``OPEN_FIELDS``): such a
caller reaches PUBLIC links only, in ``dev`` mode as in ``jwt`` mode, and its reads are
counted for its client address by the ``shares`` rate limit.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce, bring_back
from chatql.gql.schema.chat_type import Chat
from chatql.gql.schema.share_types import (
    Share,
    ShareAudience,
    SharedChat,
    reader_tenant,
    remember_shown,
)
from chatql.store.errors import ChatArchived
from chatql.store.keeping import shares as store_shares
from chatql.store.records import Share as StoreShare

__all__ = ["ShareMutation", "ShareQuery"]


@strawberry.type
class ShareQuery:
    @strawberry.field(description=(
        "What a share link shows: the chat's title and the shared branch as it was when"
        " shared. PUBLIC links open without signing in; TENANT links to identities of the"
        " chat's tenant. A revoked, expired or unknown link is NOT_FOUND. Each read counts"
        " a view; reads are rate-limited (the shares class)."))
    async def shared_chat(self, info: Info, token: str) -> SharedChat | None:
        services = info.context.services
        shared = await store_shares.read_shared(
            info.context.db, token, tenant_id=reader_tenant(info.context), archive=services.archive)
        if services.share_views is not None:
            services.share_views.count(shared.share_id)
        remember_shown(info.context, shared)
        return shared  # type: ignore[return-value]


@strawberry.type
class ShareMutation:
    @strawberry.mutation(description=(
        "A share link to the branch ending at messageId (default: the active leaf) as it"
        " is now: later messages, on that branch or another, never show. Whoever may"
        " change the chat may share it. The answer carries the token and url, the only"
        " time they are shown."))
    async def share_chat(self, info: Info, chat_id: strawberry.ID,
                         message_id: strawberry.ID | None = None,
                         audience: ShareAudience = ShareAudience.TENANT,
                         expires_at: datetime | None = None) -> Share:
        async def share(stop_archived: bool) -> StoreShare:
            return await store_shares.share_chat(
                info.context.db, info.context.identity, str(chat_id),
                message_id=None if message_id is None else str(message_id),
                audience=audience.value, expires_at=expires_at, stop_archived=stop_archived)

        try:
            made = await share(info.context.services.archive is not None)
        except ChatArchived:
            await bring_back(info, str(chat_id))
            made = await share(False)
        return made  # type: ignore[return-value]

    @strawberry.mutation(description=(
        "Close a share link for good (its creator, or whoever may change the chat); it"
        " then reads as NOT_FOUND. Revoking again returns it as it is."))
    async def revoke_share(self, info: Info, id: strawberry.ID) -> Share:
        views = info.context.services.share_views
        if views is not None:
            await views.flush()  # the answer's views are the ones counted so far
        revoked = await store_shares.revoke_share(info.context.db, info.context.identity,
                                                  str(id))
        return revoked  # type: ignore[return-value]

    @strawberry.mutation(description=(
        "Continue a branch as a new chat of one's own: the one a share link shows"
        " (fromShare, its token) or one of a chat one may read (fromMessage, its last"
        " message). The messages are copied with new ids, in order; title and assistant"
        " come along. Exactly one of the two."))
    async def fork_chat(self, info: Info, from_share: str | None = None,
                        from_message: strawberry.ID | None = None) -> Chat:
        chat = await store_shares.fork_chat(
            info.context.db, info.context.identity, token=from_share,
            message_id=None if from_message is None else str(from_message),
            tenant_id=reader_tenant(info.context), archive=info.context.services.archive)
        await announce(info, "CREATED", chat.id)
        return chat  # type: ignore[return-value]
