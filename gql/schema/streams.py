"""Live streams over GraphQL: producer mutations, resume queries, ``chatStream``.

The resolvers only translate: streams, their fan-out and persist live behind
``store.streams.StreamService``. ``chatStream`` checks once that the caller may read
the chat, then relays what the service queues for it — stream after stream, each
bracketed by the service's stream_start/stream_end event chunks.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Any, cast

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.announce import bring_back
from chatql.gql.schema.inputs import converted_by_schema
from chatql.gql.schema.types import Message, MessageInput, Role, StreamStatus
from chatql.gql.schema.usage import UsageInput
from chatql.store.chats.chat import get_chat
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import check_chat_id
from chatql.store.messages import resume as store_resume
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.streams import StreamService
from chatql.store.streams.reducer import ChunkEvent, ChunkIn

__all__ = [
    "Chunk",
    "ChunkInput",
    "PushResult",
    "ResumeRecord",
    "StartStreamInput",
    "StepInput",
    "Stream",
    "StreamMutation",
    "StreamQuery",
    "StreamResult",
    "StreamSubscription",
    "chunk_from_input",
]


@strawberry.type(description="A live stream: one agent request's output in one chat.")
class Stream:
    id: strawberry.ID
    chat_id: strawberry.ID
    request_id: str | None
    status: str = strawberry.field(
        description="ACTIVE, COMPLETED, AWAITING_INPUT, INTERRUPTED or FAILED.")
    started_at: datetime

    @strawberry.field(description=(
        "The server's idle timeout in seconds: a stream with no push for this long ends"
        " INTERRUPTED. A pushChunks with no chunks is a heartbeat that keeps a quiet"
        " stream alive (send one every third of this). Null when the server never ends"
        " idle streams."))
    def idle_timeout(self, info: Info) -> float | None:
        streams = info.context.services.streams
        timeout = 0.0 if streams is None else streams.idle_timeout
        return timeout if timeout > 0 else None


@strawberry.type
class PushResult:
    accepted: int
    duplicates: int
    last_seq: int


@strawberry.type(description="A stored execution step of an interrupted or failed stream.")
class ResumeRecord:
    id: strawberry.ID
    chat_id: strawberry.ID
    request_id: str | None
    assistant_id: str | None
    stack_id: str | None
    stack_parent_id: str | None
    stack_depth: int
    type: str
    status: str
    input: JSON | None
    output: JSON | None
    space_snapshot: JSON | None
    error: str | None
    sequence: int
    metadata: JSON | None
    created_at: datetime
    updated_at: datetime = strawberry.field(
        description="When the record was written or last changed by updateResume.")


@strawberry.type(description="What endStream persisted.")
class StreamResult:
    stream: Stream
    messages: list[Message]
    resume: list[ResumeRecord]


@strawberry.type(description="One chunk of a live stream, with the service's message id.")
class Chunk:
    stream_id: strawberry.ID
    seq: int
    chunk_id: str
    message_id: strawberry.ID | None
    block_id: str | None
    thread_id: str | None
    type: str
    role: Role | None
    props: JSON | None
    delta: bool
    delta_path: str | None
    delta_action: str | None
    from_seq: int = strawberry.field(description=(
        "The first seq this chunk stands for: equal to seq, unless queued deltas of a"
        " slow subscriber were merged into it (then the first merged chunk's seq), or 1"
        " on a snapshot chunk. Within one stream a client that applies chunks in order"
        " sees fromSeq == previous seq + 1 on every chunk that is not a snapshot."))
    snapshot: bool = strawberry.field(description=(
        "True on the chunks of a late-join or resync snapshot: each replaces the"
        " client's state for its message (they all carry the seq the snapshot reflects)."))

    @classmethod
    def from_event(cls, event: ChunkEvent) -> Chunk:
        role = event["role"]
        return cls(
            stream_id=strawberry.ID(event["streamId"]),
            seq=event["seq"],
            chunk_id=event["chunkId"],
            message_id=None if event["messageId"] is None else strawberry.ID(event["messageId"]),
            block_id=event["blockId"],
            thread_id=event["threadId"],
            type=event["type"],
            role=None if role is None else Role(role),
            props=event["props"],
            delta=event["delta"],
            delta_path=event["deltaPath"],
            delta_action=event["deltaAction"],
            from_seq=event["fromSeq"],
            snapshot=event["snapshot"],
        )


@strawberry.input(description="A chunk as a producer pushes it (by the merging rules).")
class ChunkInput:
    type: str
    chunk_id: str | None = None
    message_id: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    role: Role | None = None
    props: JSON | None = None
    delta: bool | None = False
    delta_path: str | None = None
    delta_action: str | None = None
    tokens: int | None = strawberry.field(
        default=None,
        description="Sets the message's token count (last value wins; left out: unchanged).",
    )


#: Strawberry builds ``ChunkInput`` values as the store's ``ChunkIn`` with the schema's
#: converter (gql/schema/inputs.py): the resolvers receive ``ChunkIn``; ``gql/schema/root.py`` sets
#: the hook when it builds a schema.
chunk_from_input = converted_by_schema("ChunkInput")


@strawberry.input(description="An execution step, buffered (or updated by id) for resume.")
class StepInput:
    id: strawberry.ID
    type: str
    status: str = "running"
    assistant_id: str | None = None
    stack_id: str | None = None
    stack_parent_id: str | None = None
    stack_depth: int = 0
    input: JSON | None = None
    output: JSON | None = None
    space_snapshot: JSON | None = None
    error: str | None = None

    def to_store(self) -> StepIn:
        return StepIn(
            id=str(self.id), type=self.type, status=self.status,
            assistant_id=self.assistant_id, stack_id=self.stack_id,
            stack_parent_id=self.stack_parent_id, stack_depth=self.stack_depth,
            input=self.input, output=self.output, space_snapshot=self.space_snapshot,
            error=self.error,
        )


@strawberry.input
class StartStreamInput:
    chat_id: strawberry.ID
    request_id: str | None = None
    assistant_id: str | None = None
    stream_id: strawberry.ID | None = None
    input: MessageInput | None = None
    parent_id: strawberry.ID | None = strawberry.field(
        default=None, description="Answer this message (again): the stream's messages hang"
        " below it, beside any earlier answer, instead of after the active leaf.")


def _streams(info: Info) -> StreamService:
    service = info.context.services.streams
    if service is None:  # pragma: no cover - create_app always sets it
        raise RuntimeError("the stream service is not running")
    return service


@strawberry.type
class StreamQuery:
    @strawberry.field(description="A chat's resume records, oldest first.")
    async def resume_records(self, info: Info, chat_id: strawberry.ID) -> list[ResumeRecord]:
        records = await store_resume.resume_records(
            info.context.db, info.context.identity, str(chat_id))
        return records  # type: ignore[return-value]

    @strawberry.field(description="The chat's newest resume record: where to resume.")
    async def last_resume(self, info: Info, chat_id: strawberry.ID) -> ResumeRecord | None:
        record = await store_resume.last_resume(
            info.context.db, info.context.identity, str(chat_id))
        return record  # type: ignore[return-value]

    @strawberry.field(description="The resume records of one stack, oldest first.")
    async def resume_by_stack(self, info: Info, stack_id: str) -> list[ResumeRecord]:
        records = await store_resume.resume_by_stack(
            info.context.db, info.context.identity, stack_id)
        return records  # type: ignore[return-value]

    @strawberry.field(description="Stack ids from the delegation's root down to this stack.")
    async def stack_path(self, info: Info, stack_id: str) -> list[str]:
        return await store_resume.stack_path(info.context.db, info.context.identity, stack_id)


@strawberry.type
class StreamMutation:
    @strawberry.mutation(description="Open a stream in a chat (at most one active per chat).")
    async def start_stream(self, info: Info, input: StartStreamInput) -> Stream:
        await bring_back(info, str(input.chat_id))  # an archived chat returns first
        stream = await _streams(info).start_stream(
            info.context.identity,
            str(input.chat_id),
            request_id=input.request_id,
            assistant_id=input.assistant_id,
            stream_id=None if input.stream_id is None else str(input.stream_id),
            # MessageInput values arrive as the store's NewMessage (gql/schema/types.py).
            user_input=cast("NewMessage | None", input.input),
            parent_id=None if input.parent_id is None else str(input.parent_id),
        )
        return stream  # type: ignore[return-value]

    @strawberry.mutation(description="Push up to 1,000 chunks; accepted whole or not at all."
                         " No chunks is a heartbeat: it keeps the stream alive and"
                         " stores nothing.")
    async def push_chunks(self, info: Info, stream_id: strawberry.ID,
                          chunks: list[ChunkInput]) -> PushResult:
        # ChunkInput values arrive as the store's ChunkIn (see chunk_from_input).
        batch = cast("list[ChunkIn]", chunks)
        result = await _streams(info).push_chunks(info.context.identity, str(stream_id), batch)
        return result  # type: ignore[return-value]

    @strawberry.mutation(description="Buffer (or update by id) an execution step for resume.")
    async def record_step(self, info: Info, stream_id: strawberry.ID, step: StepInput) -> bool:
        return await _streams(info).record_step(
            info.context.identity, str(stream_id), step.to_store())

    @strawberry.mutation(
        description="End the stream and persist it in one write (idempotent); `usage` is "
        "recorded with it, once."
    )
    async def end_stream(self, info: Info, stream_id: strawberry.ID, status: StreamStatus,
                         error: str | None = None,
                         usage: UsageInput | None = None) -> StreamResult:
        result = await _streams(info).end_stream(
            info.context.identity, str(stream_id), status.value, error,
            None if usage is None else usage.to_store())
        return result  # type: ignore[return-value]

    @strawberry.mutation(
        description="Stop the chat's active stream (ends it INTERRUPTED); needs the right "
        "to write to the chat."
    )
    async def stop_stream(self, info: Info, chat_id: strawberry.ID) -> bool:
        return await _streams(info).stop_stream(info.context.identity, str(chat_id))

    @strawberry.mutation(description=(
        "Set a resume record's status and/or output (a runtime that resumed the run marks"
        " the step done); needs the right to append to its chat."))
    async def update_resume(self, info: Info, id: strawberry.ID, status: str | None = None,
                            output: JSON | None = None) -> ResumeRecord:
        record = await store_resume.update_resume(
            info.context.db, info.context.identity, str(id), status=status, output=output)
        return record  # type: ignore[return-value]

    @strawberry.mutation(description="Remove a chat's resume records; returns how many.")
    async def delete_resume(self, info: Info, chat_id: strawberry.ID) -> int:
        return await store_resume.delete_resume(
            info.context.db, info.context.identity, str(chat_id))


async def open_chat_stream(info: Info, chat_id: str, after_seq: int | None) -> Any:
    """Check access and subscribe; returns the subscriber's queue."""
    check_chat_id(chat_id)
    if after_seq is not None and after_seq < 0:
        raise InvalidArgument("afterSeq must not be negative")
    if await get_chat(info.context.db, info.context.identity, chat_id) is None:
        raise NotFound(f"chat {chat_id!r} not found")
    streams = info.context.services.streams
    assert streams is not None
    return await streams.subscribe(chat_id, after_seq)


@strawberry.type
class StreamSubscription:
    @strawberry.subscription(
        description="Every chunk of every stream of the chat, live; afterSeq resumes."
    )
    async def chat_stream(self, info: Info, chat_id: strawberry.ID,
                          after_seq: int | None = None) -> AsyncGenerator[Chunk, None]:
        queue = await open_chat_stream(info, str(chat_id), after_seq)
        streams = info.context.services.streams
        assert streams is not None
        try:
            async for event in queue.events():
                yield Chunk.from_event(event)
        finally:
            await streams.unsubscribe(str(chat_id), queue)
