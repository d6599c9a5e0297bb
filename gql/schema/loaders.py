"""The request's DataLoaders: what a list of chats (or of messages) would otherwise read
one by one.

Each loader lives on the request's :class:`~gql.context.Context` (made on first use) and
batches the keys asked for in one tick of the event loop into one store call. They
depend on the store only, so the types that resolve through them (``Chat.lastMessage``,
``Chat.usage``, ``Message.myFeedback``, ``Message.feedbackSummary``, ``Feedback.message``)
import them without importing the resolvers of any concept.
"""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from chatql.gql.context import Info
from chatql.store.chats import usage as store_usage
from chatql.store.lists import chat_lists as store_lists
from chatql.store.messages import feedback as store_feedback
from chatql.store.records import Feedback, Message, UsageTotals

__all__ = ["chat_usage_loader", "feedback_summary_loader", "last_message_loader",
           "message_loader", "my_feedback_loader"]

_LAST_MESSAGE = "last_message"
_CHAT_USAGE = "chat_usage"
_MY_FEEDBACK = "my_feedback"
_FEEDBACK_SUMMARY = "feedback_summary"
_MESSAGE = "message"
_NOBODY = store_feedback.FeedbackSummary()


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


def my_feedback_loader(info: Info) -> DataLoader[str, Feedback | None]:
    """This request's loader of the caller's own feedback on messages (one query per
    batch: a page of messages reads it once)."""
    loaders = info.context.loaders
    loader: DataLoader[str, Feedback | None] | None = loaders.get(_MY_FEEDBACK)
    if loader is None:
        db, who = info.context.db, info.context.identity

        async def load(message_ids: list[str]) -> list[Feedback | None]:
            # Only messages the caller has already been shown reach Message.myFeedback.
            found = await store_feedback.feedback_of(db, who, message_ids)
            return [found.get(message_id) for message_id in message_ids]

        loader = DataLoader(load_fn=load)
        loaders[_MY_FEEDBACK] = loader
    return loader


def feedback_summary_loader(info: Info) -> DataLoader[str, store_feedback.FeedbackSummary]:
    """This request's loader of messages' up and down counts (one query per batch)."""
    loaders = info.context.loaders
    loader: DataLoader[str, store_feedback.FeedbackSummary] | None = loaders.get(
        _FEEDBACK_SUMMARY)
    if loader is None:
        db, who = info.context.db, info.context.identity

        async def load(message_ids: list[str]) -> list[store_feedback.FeedbackSummary]:
            found = await store_feedback.summaries(db, who, message_ids)
            return [found.get(message_id, _NOBODY) for message_id in message_ids]

        loader = DataLoader(load_fn=load)
        loaders[_FEEDBACK_SUMMARY] = loader
    return loader


def message_loader(info: Info) -> DataLoader[tuple[str, str], Message | None]:
    """This request's loader of messages by (chat id, message id) that the caller may
    read: a page of feedback reads its messages and questions in one query."""
    loaders = info.context.loaders
    loader: DataLoader[tuple[str, str], Message | None] | None = loaders.get(_MESSAGE)
    if loader is None:
        db, who = info.context.db, info.context.identity

        async def load(keys: list[tuple[str, str]]) -> list[Message | None]:
            found = await store_feedback.messages_by_id(db, who, keys)
            return [found.get(message_id) for _chat_id, message_id in keys]

        loader = DataLoader(load_fn=load)
        loaders[_MESSAGE] = loader
    return loader
