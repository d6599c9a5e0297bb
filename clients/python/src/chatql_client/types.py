"""The JSON shapes the kit sends and receives (GraphQL field names, as the service
spells them)."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["AppendReceipt", "Chat", "ChatPage", "MemoryEntry", "MemoryHit", "Message",
           "MessageInput", "SearchHit", "Stream", "StreamResult"]


class Message(TypedDict, total=False):
    id: str
    chatId: str
    requestId: str | None
    role: str
    type: str
    props: dict[str, Any]
    blockId: str | None
    threadId: str | None
    assistantId: str | None
    sequence: int
    status: str
    metadata: dict[str, Any] | None
    tokens: int | None
    parentId: str | None
    createdAt: str


class MessageInput(TypedDict, total=False):
    role: str
    type: str
    props: dict[str, Any]
    id: str
    requestId: str
    blockId: str
    threadId: str
    assistantId: str
    metadata: dict[str, Any]
    tokens: int


class Chat(TypedDict, total=False):
    id: str
    title: str | None
    assistantId: str
    mode: str
    status: str
    channel: str
    lastMessageAt: str | None
    activeLeafId: str | None
    metadata: dict[str, Any] | None
    createdAt: str
    createdBy: str | None


class ChatPage(TypedDict):
    chats: list[Chat]
    end_cursor: str | None
    has_next_page: bool


class AppendReceipt(TypedDict):
    chatId: str
    appendId: str
    messageIds: list[str]
    firstSequence: int
    lastSequence: int


class MemoryEntry(TypedDict, total=False):
    id: str
    scope: str
    content: str
    pinned: bool
    subject: str
    createdAt: str
    updatedAt: str


class MemoryHit(TypedDict):
    entry: MemoryEntry
    score: float


class SearchHit(TypedDict):
    message: Message
    chat: Chat
    score: float
    window: list[Message]


class Stream(TypedDict, total=False):
    id: str
    chatId: str
    requestId: str | None
    status: str
    idleTimeout: float


class StreamResult(TypedDict):
    stream: Stream
    messages: list[Message]
