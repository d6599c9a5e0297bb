"""Token usage over GraphQL: ``Chat.usage`` and the ``usage`` report."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import strawberry

from chatql.gql.context import Info
from chatql.store.chats import usage as store_usage

__all__ = ["UsageGroup", "UsageInput", "UsageQuery", "UsageRow"]



@strawberry.enum(description="How the usage report groups its rows.")
class UsageGroup(StrEnum):
    DAY = "DAY"
    ASSISTANT = "ASSISTANT"
    USER = "USER"


@strawberry.type(description="Usage of one day (UTC), assistant or chat creator.")
class UsageRow:
    key: str = strawberry.field(
        description="The UTC date YYYY-MM-DD, the assistant id, or the chat creator's user id."
    )
    prompt_tokens: int
    completion_tokens: int
    requests: int = strawberry.field(description="How many requests reported usage.")


@strawberry.input(description="What one model request cost, as the producer reports it.")
class UsageInput:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None

    def to_store(self) -> store_usage.UsageIn:
        return store_usage.UsageIn(prompt_tokens=self.prompt_tokens,
                                   completion_tokens=self.completion_tokens, model=self.model)


@strawberry.type
class UsageQuery:
    @strawberry.field(
        description=(
            "Usage recorded in [startTime, endTime) over the chats the caller may read, "
            "grouped by UTC day, assistant or chat creator; rows ordered by key."
        )
    )
    async def usage(
        self,
        info: Info,
        start_time: datetime,
        end_time: datetime,
        assistant_id: str | None = None,
        # Nullable as the contract has it; null means the default.
        group_by: UsageGroup | None = UsageGroup.DAY,
    ) -> list[UsageRow]:
        rows = await store_usage.usage_report(
            info.context.db, info.context.identity, start_time=start_time, end_time=end_time,
            assistant_id=assistant_id, group_by=(group_by or UsageGroup.DAY).value,
        )
        return rows  # type: ignore[return-value]
