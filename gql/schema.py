"""The GraphQL schema, assembled from one module per concept."""

from __future__ import annotations

from strawberry.extensions import ValidationCache
from strawberry.tools import merge_types

from gql.archive import ArchiveMutation
from gql.chat_events import ChatEventSubscription
from gql.chat_lists import ChatListQuery
from gql.chats import ChatMutation, ChatQuery
from gql.errors import ChatqlSchema
from gql.execution import LeafFastPathExecutionContext
from gql.imports import ImportMutation
from gql.lifecycle import LifecycleMutation, LifecycleQuery
from gql.limits import DocumentParserCache, QueryLimits
from gql.memory import MemoryMutation, MemoryQuery
from gql.messages import MessageMutation, MessageQuery
from gql.search import SearchQuery
from gql.streams import StreamMutation, StreamQuery, StreamSubscription
from gql.usage import UsageQuery

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
