"""The GraphQL schema, assembled from one module per concept.

:func:`build_schema` makes one for an app (the app factory calls it; nothing is built
when this module is imported), with that app's document limits.
"""

from __future__ import annotations

from strawberry.extensions import ValidationCache
from strawberry.tools import merge_types

from chatql.gql.errors import ChatqlSchema
from chatql.gql.library_adapters import build_input_with
from chatql.gql.ops.limits import DocumentParserCache, QueryLimits
from chatql.gql.schema.archive import ArchiveMutation
from chatql.gql.schema.chat_events import ChatEventSubscription
from chatql.gql.schema.chat_lists import ChatListQuery
from chatql.gql.schema.chats import ChatMutation, ChatQuery
from chatql.gql.schema.execution import LeafFastPathExecutionContext
from chatql.gql.schema.feedback import FeedbackMutation, FeedbackQuery
from chatql.gql.schema.files import FileMutation, FileQuery
from chatql.gql.schema.imports import ImportMutation
from chatql.gql.schema.inputs import InputConverter
from chatql.gql.schema.interrupts import InterruptMutation, InterruptQuery
from chatql.gql.schema.lifecycle import LifecycleMutation, LifecycleQuery
from chatql.gql.schema.memory import MemoryMutation, MemoryQuery
from chatql.gql.schema.messages import MessageMutation, MessageQuery
from chatql.gql.schema.search import SearchQuery
from chatql.gql.schema.shares import ShareMutation, ShareQuery
from chatql.gql.schema.streams import (
    ChunkInput,
    StreamMutation,
    StreamQuery,
    StreamSubscription,
    chunk_from_input,
)
from chatql.gql.schema.titles import TitleMutation
from chatql.gql.schema.types import MessageInput, message_from_input
from chatql.gql.schema.usage import UsageQuery
from chatql.gql.settings import Settings
from chatql.store.messages.message import NewMessage
from chatql.store.streams.reducer import ChunkIn

__all__ = ["Mutation", "Query", "Subscription", "build_schema"]

Query = merge_types(
    "Query",
    (ChatQuery, ChatListQuery, MessageQuery, SearchQuery, LifecycleQuery, StreamQuery,
     MemoryQuery, UsageQuery, InterruptQuery, ShareQuery, FeedbackQuery, FileQuery),
)
Mutation = merge_types(
    "Mutation",
    (ChatMutation, MessageMutation, LifecycleMutation, StreamMutation, MemoryMutation,
     ImportMutation, ArchiveMutation, InterruptMutation, ShareMutation, FeedbackMutation,
     TitleMutation, FileMutation),
)
Subscription = merge_types("Subscription", (StreamSubscription, ChatEventSubscription))



def build_schema(settings: Settings | None = None) -> ChatqlSchema:
    """The executable schema for an app with ``settings`` (default: the defaults)."""
    limits = settings or Settings()
    # The two inputs sent by the thousand (chunks, appended messages) are built by the
    # schema's own converters (gql/schema/inputs.py) rather than Strawberry's generic
    # conversion; the hooks are set before the schema is built, which also builds input
    # defaults with them.
    build_input_with(ChunkInput, chunk_from_input)
    build_input_with(MessageInput, message_from_input)
    # Extensions are built per request; the parse and validation caches they use are
    # Strawberry's (shared by size), so every request of every app shares them.
    schema = ChatqlSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[lambda: DocumentParserCache(maxsize=1024),
                    lambda: ValidationCache(maxsize=1024),
                    # Last: it checks variables after ValidationCache has validated.
                    lambda: QueryLimits(limits)],
        execution_context_class=LeafFastPathExecutionContext,
    )
    schema.inputs = {
        "ChunkInput": InputConverter(schema, "ChunkInput", ChunkIn),
        "MessageInput": InputConverter(schema, "MessageInput", NewMessage),
    }
    return schema
