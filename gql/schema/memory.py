"""Agent memory: ``recentMemory``, ``memoryEntries``, ``searchMemory`` and the three
mutations that write, update and delete entries (``store.memory`` holds the rules)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.types import PageInfo
from chatql.store import memory as store_memory

__all__ = ["MemoryMutation", "MemoryQuery"]


@strawberry.type(description="Something an agent chose to remember about a person.")
class MemoryEntry:
    id: strawberry.ID
    scope: str = strawberry.field(description="A workspace or project key, or `_global`.")
    content: str
    pinned: bool
    subject: str = strawberry.field(description="The user the memory is about.")
    tenant_id: str
    created_by: str | None
    created_at: datetime
    updated_at: datetime


@strawberry.type
class MemoryEntryEdge:
    cursor: str
    node: MemoryEntry


@strawberry.type(description="A page of one scope's entries, pinned first then newest.")
class MemoryEntryConnection:
    edges: list[MemoryEntryEdge]
    page_info: PageInfo
    total_count: int = strawberry.field(description="Entries in the whole scope.")
    total_chars: int = strawberry.field(
        description="Characters of content in the whole scope (what the cap counts)."
    )


@strawberry.type(description="A memory entry matching a search, with its relevance.")
class MemoryHit:
    entry: MemoryEntry
    score: float = strawberry.field(
        description="Relevance (BM25-shaped; higher is better). Comparable within one search."
    )


@strawberry.input
class WriteMemoryInput:
    scope: str
    content: str
    pinned: bool = False
    subject: str | None = strawberry.field(
        default=None, description="Whom the entry is about; default the caller "
        "(another subject needs role agent or admin)."
    )
    write_id: str | None = strawberry.field(
        default=None, description="Makes the write idempotent: a retry with the same "
        "writeId and content returns the same entry; other content is CONFLICT."
    )


@strawberry.input
class UpdateMemoryInput:
    content: str | None = None
    pinned: bool | None = None


def _limits(info: Info) -> store_memory.MemoryLimits:
    settings = info.context.services.settings
    return store_memory.MemoryLimits(
        entry_chars=settings.memory_entry_chars, scope_chars=settings.memory_scope_chars
    )


@strawberry.type
class MemoryQuery:
    @strawberry.field(
        description=(
            "A person's memory across scopes: pinned entries first, then the most "
            "recently updated; limit is capped at 200. Another subject's memory needs "
            "role agent or admin (else: empty)."
        )
    )
    async def recent_memory(
        self,
        info: Info,
        scopes: list[str],
        limit: int | None = store_memory.DEFAULT_RECENT,
        subject: str | None = None,
    ) -> list[MemoryEntry]:
        entries = await store_memory.recent_memory(
            info.context.db, info.context.identity, scopes, limit=limit, subject=subject
        )
        return entries  # type: ignore[return-value]

    @strawberry.field(
        description=(
            "Every entry of one scope, pinned first then newest; keyset pages "
            "(first: default 20, at most 100) with signed cursors."
        )
    )
    async def memory_entries(
        self,
        info: Info,
        scope: str,
        subject: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> MemoryEntryConnection:
        who = info.context.identity
        signer = info.context.services.cursors
        bound = store_memory.cursor_scope(who, subject, store_memory.check_scope(scope))
        position = None if after is None else store_memory.position_from(
            signer.decode(bound, after))
        page = await store_memory.list_memory(
            info.context.db, who, scope, subject=subject, first=first, after=position
        )
        edges = [
            MemoryEntryEdge(
                cursor=signer.encode(bound, store_memory.position_of(entry)),
                node=entry,  # type: ignore[arg-type]
            )
            for entry in page.items
        ]
        return MemoryEntryConnection(
            edges=edges,
            page_info=PageInfo.of([edge.cursor for edge in edges], has_next=page.has_next,
                                  has_previous=page.has_previous),
            total_count=page.total_count,
            total_chars=page.total_chars,
        )

    @strawberry.field(
        description=(
            "Full-text search over a person's memory in the given scopes: every word "
            "must occur, best match first, near-ties most recently updated first. "
            "first is capped at 100."
        )
    )
    async def search_memory(
        self,
        info: Info,
        query: str,
        scopes: list[str],
        first: int | None = store_memory.DEFAULT_SEARCH,
        subject: str | None = None,
    ) -> list[MemoryHit]:
        hits = await store_memory.search_memory(
            info.context.db, info.context.identity, query, scopes, first=first,
            subject=subject,
        )
        return hits  # type: ignore[return-value]


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        description=(
            "Remember something about a person (default: the caller). MEMORY_FULL "
            "(with extensions.scopeChars and extensions.limit) when the scope's cap "
            "would be passed; nothing is written then."
        )
    )
    async def write_memory(self, info: Info, input: WriteMemoryInput) -> MemoryEntry:
        entry = await store_memory.write_memory(
            info.context.db, info.context.identity, scope=input.scope,
            content=input.content, pinned=input.pinned, subject=input.subject,
            write_id=input.write_id, limits=_limits(info),
        )
        return entry  # type: ignore[return-value]

    @strawberry.mutation(
        description="Replace an entry's content or pinned flag; keeps its id and createdAt."
    )
    async def update_memory(
        self, info: Info, id: strawberry.ID, input: UpdateMemoryInput
    ) -> MemoryEntry:
        entry = await store_memory.update_memory(
            info.context.db, info.context.identity, str(id), content=input.content,
            pinned=input.pinned, limits=_limits(info),
        )
        return entry  # type: ignore[return-value]

    @strawberry.mutation(description="Forget an entry.")
    async def delete_memory(self, info: Info, id: strawberry.ID) -> bool:
        return await store_memory.delete_memory(info.context.db, info.context.identity, str(id))
