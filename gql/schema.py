"""The GraphQL schema, assembled from one module per concept."""

from __future__ import annotations

from strawberry.extensions import ValidationCache
from strawberry.tools import merge_types

from chatql.gql.archive import ArchiveMutation
from chatql.gql.chat_events import ChatEventSubscription
from chatql.gql.chat_lists import ChatListQuery
from chatql.gql.chats import ChatMutation, ChatQuery
from chatql.gql.errors import ChatqlSchema
from chatql.gql.execution import LeafFastPathExecutionContext
from chatql.gql.imports import ImportMutation
from chatql.gql.library_adapters import build_input_with
from chatql.gql.lifecycle import LifecycleMutation, LifecycleQuery
from chatql.gql.limits import DocumentParserCache, QueryLimits
from chatql.gql.memory import MemoryMutation, MemoryQuery
from chatql.gql.messages import MessageMutation, MessageQuery
from chatql.gql.search import SearchQuery
from chatql.gql.streams import (
    ChunkInput,
    StreamMutation,
    StreamQuery,
    StreamSubscription,
    chunk_from_input,
)
from chatql.gql.usage import UsageQuery

__all__ = ["Mutation", "Query", "Subscription", "schema"]

Query = merge_types(
    "Query",
    (ChatQuery, ChatListQuery, MessageQuery, SearchQuery, LifecycleQuery, StreamQuery,
     MemoryQuery, UsageQuery),
)
Mutation = merge_types(
    "Mutation",
    (ChatMutation, MessageMutation, LifecycleMutation, StreamMutation, MemoryMutation,
     ImportMutation, ArchiveMutation),
)
Subscription = merge_types("Subscription", (StreamSubscription, ChatEventSubscription))

# pushChunks carries up to 1,000 chunks: Strawberry builds each straight from
# graphql-core's coerced value (see chunk_from_input), not by its generic conversion.
# Set before the schema is built, which also builds input defaults with it.
build_input_with(ChunkInput, chunk_from_input)

# Extensions are built per request; the parse and validation caches they use live at
# module level (keyed by size), so every request shares them.
schema = ChatqlSchema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=[lambda: DocumentParserCache(maxsize=1024), lambda: ValidationCache(maxsize=1024),
                # Last: it checks variables after ValidationCache has validated.
                QueryLimits],
    execution_context_class=LeafFastPathExecutionContext,
)
