"""A live stream as the service holds it, and what its operations answer."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime

from chatql.store.chats.usage import UsageIn
from chatql.store.messages.message import NewMessage
from chatql.store.messages.resume import StepIn
from chatql.store.records import Identity, Message, ResumeRecord
from chatql.store.streams.reducer import StreamState

__all__ = ["PushResult", "StreamBuffer", "StreamInfo", "StreamResult"]


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A stream as the API shows it (``Stream``)."""

    id: str
    chat_id: str
    request_id: str | None
    status: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class StreamResult:
    """What the persist wrote (``StreamResult``)."""

    stream: StreamInfo
    messages: list[Message]
    resume: list[ResumeRecord]


@dataclass(frozen=True, slots=True)
class PushResult:
    accepted: int
    duplicates: int
    last_seq: int


@dataclass
class StreamBuffer:
    """One active (or ended, not yet persisted) stream: its reducer state and steps."""

    info: StreamInfo
    owner: Identity
    assistant_id: str | None
    state: StreamState
    user_input: NewMessage | None
    #: Wall-clock seconds of the start (durationMs across instances) and last push.
    started: float = field(default_factory=time.time)
    last_push: float = field(default_factory=time.time)
    steps: dict[str, StepIn] = field(default_factory=dict)
    buffered_bytes: int = 0
    allowed: set[Identity] = field(default_factory=set)
    end_status: str | None = None
    end_error: str | None = None
    #: The model usage its producer reported with endStream, recorded with the write.
    usage: UsageIn | None = None
    #: Where the stream's messages hang: None for the chat's active leaf at persist
    #: time; a message id to answer that message again (a new sibling answer).
    parent_id: str | None = None
    result: StreamResult | None = None
    persist_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    publish_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    retry_task: asyncio.Task[None] | None = None
