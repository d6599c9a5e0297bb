"""Full-text search over messages: ``Query.searchMessages``."""

from __future__ import annotations

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.chat_type import Chat
from chatql.gql.schema.types import Message
from chatql.store.messages import search as store_search

__all__ = ["SearchHit", "SearchQuery"]


@strawberry.type(description="A message matching a search, with its chat and context.")
class SearchHit:
    message: Message
    chat: Chat
    score: float = strawberry.field(
        description="Relevance (BM25-shaped; higher is better). Comparable within one search."
    )
    window: list[Message] = strawberry.field(
        description="Messages just before and after the hit in its chat, oldest first."
    )


@strawberry.type
class SearchQuery:
    @strawberry.field(
        description=(
            "Search what people and assistants said (user_input and text messages) in "
            "the chats you may read, best match first; near-ties newest first. "
            "first is capped at 100, window at 20."
        )
    )
    async def search_messages(
        self,
        info: Info,
        query: str,
        first: int | None = store_search.DEFAULT_FIRST,
        chat_id: strawberry.ID | None = None,
        assistant_id: str | None = None,
        include_subagents: bool | None = False,
        window: int | None = store_search.DEFAULT_WINDOW,
    ) -> list[SearchHit]:
        hits = await store_search.search_messages(
            info.context.db,
            info.context.identity,
            query,
            first=first,
            chat_id=None if chat_id is None else str(chat_id),
            assistant_id=assistant_id,
            include_subagents=bool(include_subagents),
            window=window,
        )
        return hits  # type: ignore[return-value]
