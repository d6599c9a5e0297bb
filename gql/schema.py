"""The GraphQL schema, assembled from one module per concept."""

from __future__ import annotations

from strawberry.extensions import ParserCache, ValidationCache
from strawberry.tools import merge_types

from gql.chats import ChatMutation, ChatQuery
from gql.errors import ChatqlSchema
from gql.limits import QueryLimits
from gql.messages import MessageMutation, MessageQuery

__all__ = ["Mutation", "Query", "schema"]

Query = merge_types("Query", (ChatQuery, MessageQuery))
Mutation = merge_types("Mutation", (ChatMutation, MessageMutation))

# Extensions are built per request; the parse and validation caches they use live at
# module level (keyed by size), so every request shares them.
schema = ChatqlSchema(
    query=Query,
    mutation=Mutation,
    extensions=[lambda: ParserCache(maxsize=1024), lambda: ValidationCache(maxsize=1024),
                # Last: it checks variables after ValidationCache has validated.
                QueryLimits],
)
