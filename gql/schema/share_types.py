"""The types of share links: ``Share`` (what a chat's owner sees of a link),
``SharedChat`` and ``SharedMessage`` (all a link shows), ``ShareAudience``.

They sit below ``Chat`` (whose ``shares`` field lists a chat's links) and the resolvers
of gql/schema/shares.py. ``SharedChat`` and ``SharedMessage`` carry only the fields a
link may show: nothing on them leads back to the chat, its owner or its other branches.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import StrEnum
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader
from strawberry.scalars import JSON

from chatql.gql.context import Context, Info
from chatql.gql.schema.file_type import File, SharedFile, message_files_loader
from chatql.gql.schema.types import Role
from chatql.store.files.links import file_ids_in
from chatql.store.keeping import shares as store_shares
from chatql.store.records import File as StoreFile
from chatql.store.records import Share as StoreShare
from chatql.store.records import SharedChat as StoreSharedChat

__all__ = ["Share", "ShareAudience", "SharedChat", "SharedMessage", "reader_tenant",
           "remember_shown", "share_url", "shares_loader"]

#: Where the web app shows a link; the path the server serves it on.
SHARE_PATH = "/s/"


@strawberry.enum(description="Who may open a share link: PUBLIC, anyone with the link,"
                 " signed in or not; TENANT, identities of the chat's tenant.")
class ShareAudience(StrEnum):
    PUBLIC = "PUBLIC"
    TENANT = "TENANT"


_SHOWN = "shared_messages"


def remember_shown(context: Context, shared: StoreSharedChat) -> None:
    """Note which link showed each of ``shared``'s messages (this request only), so
    their files get addresses scoped to it."""
    shown: dict[int, tuple[Any, str]] = context.loaders.setdefault(_SHOWN, {})
    for message in shared.messages:
        shown[id(message)] = (message, shared.share_id)


def _shown_by(context: Context, message: Any) -> str | None:
    found = context.loaders.get(_SHOWN, {}).get(id(message))
    return None if found is None or found[0] is not message else str(found[1])


def reader_tenant(context: Context) -> str | None:
    """The tenant whose TENANT links the caller opens; None for a caller who named no one."""
    return None if context.anonymous else context.identity.tenant_id


def share_url(info: Info, token: str) -> str:
    """The web app's page of a link, absolute from the request's base URL."""
    request = info.context.request
    base = "" if request is None else str(request.base_url).rstrip("/")
    return f"{base}{SHARE_PATH}{token}"


@strawberry.type(description="A share link: a read-only snapshot of one branch of a chat."
                 " Only a hash of its token is kept, so token and url are given once, by"
                 " shareChat; listed later they are null.")
class Share:
    id: strawberry.ID
    token: str | None = strawberry.field(description="The link's secret (shareChat's answer"
                                         " only).")
    audience: ShareAudience
    created_at: datetime
    expires_at: datetime | None = strawberry.field(description="When the link stops"
                                                   " opening; null: never.")
    revoked_at: datetime | None
    views: int = strawberry.field(description="How often the link was read.")
    message_id: strawberry.ID = strawberry.field(description="The shared branch's last"
                                                 " message.")

    @strawberry.field(description="The web app's page of the link, /s/{token} on this"
                      " server (shareChat's answer only).")
    def url(self, info: Info) -> str | None:
        return None if self.token is None else share_url(info, self.token)


@strawberry.type(description="One message as a share link shows it.")
class SharedMessage:
    id: strawberry.ID
    role: Role
    type: str
    props: JSON
    created_at: datetime
    assistant_id: str | None

    @strawberry.field(description="The files the message references, in order, each with"
                      " a signed address scoped to the link: it works without credentials"
                      " for a short time (CHATQL_FILE_URL_TTL) and stops working (404) as"
                      " soon as the link is revoked or expires.")
    async def files(self, info: Info) -> list[File]:
        found: list[Any] = await message_files_loader(info).load(str(self.id))
        if len(found) > 1:
            order = {file_id: place for place, file_id in enumerate(
                file_ids_in(self.type, self.props, strict=False))}
            found.sort(key=lambda file: order.get(file.id, len(order)))
        share_id = _shown_by(info.context, self)
        if share_id is None:  # pragma: no cover - every SharedMessage comes from a link
            return []
        scoped: list[Any] = [SharedFile(**{name: getattr(file, name) for name in _FILE_FIELDS},
                                        share_id=share_id) for file in found]
        return scoped


@strawberry.type(description="What a share link shows: the chat's title and the shared"
                 " branch as it was when shared, oldest first.")
class SharedChat:
    title: str | None
    created_at: datetime = strawberry.field(description="When the link was made.")
    messages: list[SharedMessage]


_FILE_FIELDS = tuple(field.name for field in dataclasses.fields(StoreFile))
_SHARES = "shares"


def shares_loader(info: Info) -> DataLoader[str, list[StoreShare]]:
    """This request's loader of chats' links (one query per batch of chats)."""
    loaders = info.context.loaders
    loader: DataLoader[str, list[StoreShare]] | None = loaders.get(_SHARES)
    if loader is None:
        db, who = info.context.db, info.context.identity
        views = info.context.services.share_views

        async def load(chat_ids: list[str]) -> list[list[StoreShare]]:
            if views is not None:
                await views.flush()  # the views counted so far, on this instance too
            found = await store_shares.chat_shares(db, who, chat_ids)
            return [found[chat_id] for chat_id in chat_ids]

        loader = DataLoader(load_fn=load)
        loaders[_SHARES] = loader
    return loader
