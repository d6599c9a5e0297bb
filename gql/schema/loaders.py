"""The request's DataLoaders: what a list of chats would otherwise read chat by chat.

Each loader lives on the request's :class:`~gql.context.Context` (made on first use) and
batches the keys asked for in one tick of the event loop into one store call. They
depend on the store only, so the types that resolve through them (``Chat.lastMessage``,
``Chat.usage``) import them without importing the resolvers of any concept.
"""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from chatql.gql.context import Info
from chatql.store.chats import lists as store_lists
from chatql.store.chats import usage as store_usage
from chatql.store.records import Message, UsageTotals

__all__ = ["chat_usage_loader", "last_message_loader"]

_LAST_MESSAGE = "last_message"
_CHAT_USAGE = "chat_usage"


def last_message_loader(info: Info) -> DataLoader[str, Message | None]:
    """This request's loader of each chat's newest message (one query per batch)."""
    loaders = info.context.loaders
    loader: DataLoader[str, Message | None] | None = loaders.get(_LAST_MESSAGE)
    if loader is None:
        db, who = info.context.db, info.context.identity

        async def load(chat_ids: list[str]) -> list[Message | None]:
            found = await store_lists.newest_messages(db, who, chat_ids)
            return [found.get(chat_id) for chat_id in chat_ids]

        loader = DataLoader(load_fn=load)
        loaders[_LAST_MESSAGE] = loader
    return loader


def chat_usage_loader(info: Info) -> DataLoader[str, UsageTotals]:
    """This request's loader of chats' usage (two queries per batch of chats)."""
    loaders = info.context.loaders
    loader: DataLoader[str, UsageTotals] | None = loaders.get(_CHAT_USAGE)
    if loader is None:
        db = info.context.db

        async def load(chat_ids: list[str]) -> list[UsageTotals]:
            # Only chats the caller has already been shown reach Chat.usage.
            found = await store_usage.chat_usage(db, chat_ids)
            return [found[chat_id] for chat_id in chat_ids]

        loader = DataLoader(load_fn=load)
        loaders[_CHAT_USAGE] = loader
    return loader
