"""Conversation lifecycle: ``startOver``, ``compactChat`` and ``modelContext``."""

from __future__ import annotations

from typing import Annotated

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce, bring_back
from chatql.gql.schema.context_files import FileMode, with_files
from chatql.gql.schema.types import Message
from chatql.store.files.window import DEFAULT_CONTEXT_TEXT_BYTES, FILE_PART_TOKENS
from chatql.store.messages import lifecycle as store_lifecycle
from chatql.store.records import Message as StoreMessage

__all__ = ["LifecycleMutation", "LifecycleQuery"]


@strawberry.type
class LifecycleQuery:
    @strawberry.field(
        description=(
            "What an agent should send its model: the newest boundary's summary first "
            "(as a SYSTEM message), then the newest complete user-led turns that fit in "
            "`limit` messages and/or `maxTokens` tokens (at least one is required; the "
            "summary counts). Messages without a token count are estimated (one token per "
            "4 characters of the props JSON) and marked tokensEstimated. UI-only types "
            "(loading, action, error), FAILED messages, INTERRUPTED tool_call messages and "
            "(unless includeThinking) thinking messages are left out. A person's decisions "
            "are woven in: an approved tool call carries the approved arguments; a denied "
            "or expired one is followed by a TOOL tool_result {tool_call_id, denied: true, "
            "reason} unless the agent wrote a result; an answered question by a USER "
            "message holding the response. WINDOW_TOO_SMALL when the newest turn alone "
            "does not fit either bound. File references carry what `files` says (see "
            "FileMode); an estimate counts each file reference as "
            f"{FILE_PART_TOKENS} tokens, or, given INLINE, a text file as its text shown."
        )
    )
    async def model_context(
        self,
        info: Info,
        chat_id: strawberry.ID,
        limit: int | None = None,
        max_tokens: int | None = None,
        # Nullable as the contract has it; null means the default.
        include_thinking: bool | None = False,
        memory_scopes: Annotated[list[str] | None, strawberry.argument(
            description="Open the context with one SYSTEM message of type memory whose "
            "props.entries is the chat creator's recentMemory over these scopes "
            "([{id, scope, content, pinned}]); it counts as one message toward limit.",
        )] = None,
        files: Annotated[FileMode, strawberry.argument(
            description="How the files the messages reference are handed over: URL (the "
            "default) signed urls, INLINE their bytes (and text files' contents), NONE "
            "left out.",
        )] = FileMode.URL,
    ) -> list[Message]:
        service = info.context.services.files
        text_bytes = (DEFAULT_CONTEXT_TEXT_BYTES if service is None
                      else service.limits.context_text_bytes)

        async def window() -> list[StoreMessage]:
            return await store_lifecycle.model_context(
                info.context.db, info.context.identity, str(chat_id), limit,
                max_tokens=max_tokens, include_thinking=bool(include_thinking),
                memory_scopes=memory_scopes, files=files.value, file_text_bytes=text_bytes,
            )

        context = await window()
        if not context and await bring_back(info, str(chat_id)):
            context = await window()
        return await with_files(info.context, context, files)  # type: ignore[return-value]


@strawberry.type
class LifecycleMutation:
    @strawberry.mutation(
        description=(
            "Draw a boundary (role SYSTEM, type boundary): people still see what came "
            "before, the model does not. When the newest message already is a boundary, "
            "that one is returned."
        )
    )
    async def start_over(self, info: Info, chat_id: strawberry.ID) -> Message:
        await bring_back(info, str(chat_id))
        boundary = await store_lifecycle.start_over(
            info.context.db, info.context.identity, str(chat_id)
        )
        await announce(info, "MESSAGES", boundary.chat_id)
        return boundary  # type: ignore[return-value]

    @strawberry.mutation(
        description="Draw a boundary carrying `summary` (props.summary), a recap that stands "
        "in for everything before it."
    )
    async def compact_chat(self, info: Info, chat_id: strawberry.ID, summary: str) -> Message:
        await bring_back(info, str(chat_id))
        boundary = await store_lifecycle.compact_chat(
            info.context.db, info.context.identity, str(chat_id), summary
        )
        await announce(info, "MESSAGES", boundary.chat_id)
        return boundary  # type: ignore[return-value]
