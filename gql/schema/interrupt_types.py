"""The types of a person in the loop: ``Interrupt``, ``Decision`` and their enums.

They sit below ``Chat`` (whose ``interrupts`` and ``resumption`` fields return them)
and name ``Chat`` back only lazily, as the schema is built.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.types import Message
from chatql.store.chats import chat as store_chats
from chatql.store.messages import message as store_messages

if TYPE_CHECKING:
    from chatql.gql.schema.chat_type import Chat

__all__ = ["Decision", "Interrupt", "InterruptKind", "InterruptState", "Resumption"]


@strawberry.enum(description="What an interrupt asks: TOOL_APPROVAL (may this tool call"
                 " run, with these arguments?) or INPUT (a question with an answer to give).")
class InterruptKind(StrEnum):
    TOOL_APPROVAL = "TOOL_APPROVAL"
    INPUT = "INPUT"


@strawberry.enum(description="PENDING until decided; RESOLVED once decided; EXPIRED when"
                 " its expiresAt passed first (it counts as denied); CANCELLED when the"
                 " stream was stopped.")
class InterruptState(StrEnum):
    PENDING = "PENDING"
    RESOLVED = "RESOLVED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"


@strawberry.type(description="How a person answered an interrupt.")
class Decision:
    approved: bool | None = strawberry.field(
        description="For a tool approval: whether the call may run; false on a question"
        " declines it.")
    edited_arguments: JSON | None = strawberry.field(
        description="Arguments the person changed before approving; the call runs with"
        " these.")
    response: JSON | None = strawberry.field(description="The answer to a question.")
    reason: str | None
    decided_by: str
    decided_at: datetime


@strawberry.type(description="What a stream asked a person: a tool call awaiting approval,"
                 " or a question awaiting an answer. Kept with the chat; decided once.")
class Interrupt:
    id: strawberry.ID
    chat_id: strawberry.ID
    message_id: strawberry.ID = strawberry.field(
        description="The tool_call or question message that asked.")
    stream_id: strawberry.ID
    request_id: str | None
    assistant_id: str | None
    kind: InterruptKind
    state: InterruptState
    tool_call_id: str | None
    tool_name: str | None
    arguments: JSON | None = strawberry.field(
        description="The tool call's arguments (parsed when they are JSON text).")
    prompt: str | None = strawberry.field(description="The question, for INPUT.")
    response_schema: JSON | None = strawberry.field(
        description="The JSON Schema an answer must satisfy (INPUT).")
    reason: str | None = strawberry.field(description="Why the agent asks, as it said.")
    requested_at: datetime
    expires_at: datetime | None
    decision: Decision | None

    @strawberry.field(description="The chat it belongs to.")
    async def chat(self, info: Info) -> Annotated[
            Chat, strawberry.lazy("chatql.gql.schema.chat_type")] | None:
        found = await store_chats.get_chat(info.context.db, info.context.identity,
                                           str(self.chat_id))
        return found  # type: ignore[return-value]

    @strawberry.field(description="The tool_call or question message that asked.")
    async def message(self, info: Info) -> Message | None:
        found = await store_messages.get_message(info.context.db, info.context.identity,
                                                 str(self.message_id))
        return found  # type: ignore[return-value]


@strawberry.type(description="Decisions a worker has yet to resume: start the stream that"
                 " continues the run with requestId (exactly one worker's start succeeds).")
class Resumption:
    request_id: str = strawberry.field(
        description="The request id to claim with startStream: <request id>.resume.<N>.")
    decisions: list[Interrupt] = strawberry.field(
        description="The resolved and expired interrupts it resumes (an expired one"
        " counts as denied, reason expired), oldest first.")
