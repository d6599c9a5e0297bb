"""What chatql offers MCP clients: six tools and one resource, each a GraphQL operation.

Every tool is one fixed GraphQL document, run in-process with the caller's context
(:mod:`chatql.gql.transport.mcp` runs it): the tool's arguments become the document's
variables and its data becomes the tool's result. So a tool answers exactly what the
same query or mutation answers over ``/graphql`` — the same access rules, defaults,
limits, archive restores and live-list events, the same error codes — and nothing about
chats, messages or memory is decided here.

==================  ===========================  =====================================
tool                GraphQL                      result (``structuredContent``)
==================  ===========================  =====================================
``list_chats``      ``chats``                    ``chats``, ``next_cursor``
``read_chat``       ``chat`` + ``messages``      ``chat``, ``messages``, ``next_cursor``
``search_messages`` ``searchMessages``           ``hits``
``search_memory``   ``searchMemory``             ``hits``
``remember``        ``writeMemory``              ``entry``
``append_message``  ``appendMessages``           ``chat_id``, ``message_id`` …
==================  ===========================  =====================================

The resource ``chatql://chats/{id}`` is the newest messages of a chat's active branch
as Markdown, read with ``read_chat``'s document. Arguments and results use snake_case
names; a message's ``text`` is what a person reads of its props
(:func:`~chatql.store.text.message_text`: null for a tool call, a card, a
file). The bounds in the input schemas are the store's own limits.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from chatql.gql.settings import Settings
from chatql.store.errors import NotFound
from chatql.store.limits import ID_CHARS, KEY_CHARS, NAME_CHARS
from chatql.store.lists.chat_lists import DEFAULT_CHAT_PAGE_SIZE, MAX_CHAT_PAGE_SIZE
from chatql.store.memory import GLOBAL_SCOPE, MAX_SCOPES, MAX_SEARCH
from chatql.store.messages.message import MAX_PAGE_SIZE
from chatql.store.messages.search import MAX_FIRST, MAX_WINDOW
from chatql.store.text import MAX_QUERY_CHARS, message_text

__all__ = [
    "APPEND_MESSAGE",
    "CHAT_URI_PREFIX",
    "CHAT_URI_TEMPLATE",
    "INSTRUCTIONS",
    "LIST_CHATS",
    "READ_CHAT",
    "REMEMBER",
    "RESOURCE_MESSAGES",
    "SEARCH_MEMORY",
    "SEARCH_MESSAGES",
    "TOOL_NAMES",
    "ChatSummary",
    "MessageView",
    "Operation",
    "ToolSpec",
    "chat_markdown",
    "chat_page_variables",
    "chat_summary",
    "chat_uri",
    "message_view",
    "tool_specs",
]

CHAT_URI_PREFIX = "chatql://chats/"
CHAT_URI_TEMPLATE = CHAT_URI_PREFIX + "{id}"
#: How many of a chat's newest messages its resource holds (read_chat pages further).
RESOURCE_MESSAGES = 100
TOOL_NAMES = ("list_chats", "read_chat", "search_messages", "search_memory", "remember",
              "append_message")

INSTRUCTIONS = """\
chatql keeps the conversations between people and AI assistants, and notes agents chose
to remember about people. Everything here is what the caller may see: their own chats,
chats shared with their team, and their own memory.
- Find what was said: search_messages (full text, best match first), then read_chat
  around a hit.
- Browse: list_chats (most recent activity first), read_chat (newest messages of a chat's
  current branch; pass next_cursor for older ones). Chats are also resources,
  chatql://chats/{id}, as Markdown.
- Durable facts about the person: search_memory before answering, remember to keep
  something for later conversations.
- append_message writes a USER or ASSISTANT text message into an existing chat; pass
  append_id to make a retry safe.
Errors name a code first: NOT_FOUND (no such chat, or not yours to read),
INVALID_ARGUMENT, FORBIDDEN, MEMORY_FULL, RATE_LIMITED."""


# -- results ------------------------------------------------------------------------------


class ChatSummary(TypedDict):
    """A chat as the tools show it."""

    id: str
    title: str | None
    assistant_id: str
    channel: str
    created_at: str
    last_message_at: str | None


class MessageView(TypedDict):
    """A message as the tools show it: who said what, when."""

    id: str
    role: str
    type: str
    text: str | None
    created_at: str


class SearchHitView(TypedDict):
    score: float
    chat: dict[str, Any]
    message: MessageView
    window: list[MessageView]


class MemoryEntryView(TypedDict):
    id: str
    scope: str
    content: str
    pinned: bool
    subject: str
    created_at: str
    updated_at: str


class AppendView(TypedDict):
    chat_id: str
    append_id: str
    message_id: str
    sequence: int


def chat_summary(chat: Mapping[str, Any]) -> ChatSummary:
    return ChatSummary(id=chat["id"], title=chat["title"], assistant_id=chat["assistantId"],
                       channel=chat["channel"], created_at=chat["createdAt"],
                       last_message_at=chat["lastMessageAt"])


def message_view(message: Mapping[str, Any]) -> MessageView:
    return MessageView(id=message["id"], role=message["role"], type=message["type"],
                       text=message_text(message["props"]), created_at=message["createdAt"])


def _entry_view(entry: Mapping[str, Any]) -> MemoryEntryView:
    return MemoryEntryView(id=entry["id"], scope=entry["scope"], content=entry["content"],
                           pinned=entry["pinned"], subject=entry["subject"],
                           created_at=entry["createdAt"], updated_at=entry["updatedAt"])


# -- the operations ---------------------------------------------------------------------

CHAT_FIELDS = "id title assistantId channel createdAt lastMessageAt"
MESSAGE_FIELDS = "id role type props createdAt"
ENTRY_FIELDS = "id scope content pinned subject createdAt updatedAt"


@dataclass(frozen=True, slots=True)
class Operation:
    """A GraphQL document and the operation in it that a tool runs."""

    name: str
    document: str


LIST_CHATS = Operation("McpListChats", f"""
query McpListChats($first: Int, $after: String, $filter: ChatFilter) {{
  chats(first: $first, after: $after, filter: $filter) {{
    edges {{ node {{ {CHAT_FIELDS} }} }}
    pageInfo {{ hasNextPage endCursor }}
  }}
}}""")
READ_CHAT = Operation("McpReadChat", f"""
query McpReadChat($chatId: ID!, $last: Int, $before: String) {{
  chat(id: $chatId) {{ {CHAT_FIELDS} }}
  messages(chatId: $chatId, last: $last, before: $before) {{
    edges {{ node {{ {MESSAGE_FIELDS} }} }}
    pageInfo {{ hasPreviousPage startCursor }}
  }}
}}""")
SEARCH_MESSAGES = Operation("McpSearchMessages", f"""
query McpSearchMessages($query: String!, $first: Int, $chatId: ID, $assistantId: String,
                        $window: Int) {{
  searchMessages(query: $query, first: $first, chatId: $chatId, assistantId: $assistantId,
                 window: $window) {{
    score
    chat {{ id title }}
    message {{ {MESSAGE_FIELDS} }}
    window {{ {MESSAGE_FIELDS} }}
  }}
}}""")
SEARCH_MEMORY = Operation("McpSearchMemory", f"""
query McpSearchMemory($query: String!, $scopes: [String!]!, $first: Int, $subject: String) {{
  searchMemory(query: $query, scopes: $scopes, first: $first, subject: $subject) {{
    score
    entry {{ {ENTRY_FIELDS} }}
  }}
}}""")
REMEMBER = Operation("McpRemember", f"""
mutation McpRemember($input: WriteMemoryInput!) {{
  writeMemory(input: $input) {{ {ENTRY_FIELDS} }}
}}""")
APPEND_MESSAGE = Operation("McpAppendMessage", """
mutation McpAppendMessage($chatId: ID!, $appendId: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chatId, appendId: $appendId, messages: $messages) {
    chatId appendId messageIds lastSequence
  }
}""")

#: The message type each role's text is stored as (what search and the UIs read).
_TEXT_TYPES = {"USER": "user_input", "ASSISTANT": "text"}


# -- the tools ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: what a model reads of it, and how it maps to its GraphQL operation."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    operation: Operation
    #: The tool's (validated) arguments as the operation's variables.
    variables: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: The operation's data as the tool's structured result.
    result: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
    read_only: bool = True
    idempotent: bool = True


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _limit(default: int, maximum: int, what: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": maximum, "default": default,
            "description": f"How many {what} to return (1-{maximum}, default {default})."}


_CHAT_ID = {"type": "string", "minLength": 1, "maxLength": ID_CHARS,
            "pattern": "^[A-Za-z0-9_.:-]+$",
            "description": "The chat's id, as list_chats or search_messages give it."}
_CURSOR = {"type": "string", "minLength": 1,
           "description": "next_cursor from the previous call, for the next page."}


def _list_chats_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    chat_filter = {key: arguments[name] for name, key in (("query", "keywords"),
                                                          ("assistant_id", "assistantId"))
                   if arguments.get(name) is not None}
    return {"first": arguments["limit"], "after": arguments.get("cursor"),
            "filter": chat_filter or None}


def _list_chats_result(data: Mapping[str, Any], _: Mapping[str, Any]) -> dict[str, Any]:
    connection = data["chats"]
    page = connection["pageInfo"]
    return {"chats": [chat_summary(edge["node"]) for edge in connection["edges"]],
            "next_cursor": page["endCursor"] if page["hasNextPage"] else None}


def chat_page_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``read_chat``'s arguments as its operation's variables."""
    return {"chatId": arguments["chat_id"], "last": arguments["limit"],
            "before": arguments.get("cursor")}


def _read_chat_result(data: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    if data["chat"] is None:
        # As the store says it of a chat that is absent or not the caller's to read.
        raise NotFound(f"chat {arguments['chat_id']!r} not found")
    connection = data["messages"]
    page = connection["pageInfo"]
    return {"chat": chat_summary(data["chat"]),
            "messages": [message_view(edge["node"]) for edge in connection["edges"]],
            "next_cursor": page["startCursor"] if page["hasPreviousPage"] else None}


def _search_messages_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"query": arguments["query"], "first": arguments["limit"],
            "chatId": arguments.get("chat_id"), "assistantId": arguments.get("assistant_id"),
            "window": arguments["window"]}


def _search_messages_result(data: Mapping[str, Any],
                            _: Mapping[str, Any]) -> dict[str, Any]:
    return {"hits": [SearchHitView(score=hit["score"], chat=dict(hit["chat"]),
                                   message=message_view(hit["message"]),
                                   window=[message_view(m) for m in hit["window"]])
                     for hit in data["searchMessages"]]}


def _search_memory_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"query": arguments["query"], "scopes": arguments["scopes"],
            "first": arguments["limit"], "subject": arguments.get("subject")}


def _search_memory_result(data: Mapping[str, Any], _: Mapping[str, Any]) -> dict[str, Any]:
    return {"hits": [{"score": hit["score"], "entry": _entry_view(hit["entry"])}
                     for hit in data["searchMemory"]]}


def _remember_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"input": {"scope": arguments["scope"],
                      "content": arguments["content"],
                      "pinned": arguments["pinned"],
                      "subject": arguments.get("subject"),
                      "writeId": arguments.get("write_id")}}


def _remember_result(data: Mapping[str, Any], _: Mapping[str, Any]) -> dict[str, Any]:
    return {"entry": _entry_view(data["writeMemory"])}


def _append_variables(arguments: Mapping[str, Any]) -> dict[str, Any]:
    role = arguments["role"]
    # Without an append id every call is a new message: a fresh key per call.
    append_id = arguments.get("append_id") or f"mcp:{uuid.uuid4().hex}"
    return {"chatId": arguments["chat_id"], "appendId": append_id,
            "messages": [{"role": role, "type": _TEXT_TYPES[role],
                          "props": {"content": arguments["text"]}}]}


def _append_result(data: Mapping[str, Any], _: Mapping[str, Any]) -> dict[str, Any]:
    receipt = data["appendMessages"]
    return dict(AppendView(chat_id=receipt["chatId"], append_id=receipt["appendId"],
                           message_id=receipt["messageIds"][-1],
                           sequence=receipt["lastSequence"]))


def tool_specs(settings: Settings) -> dict[str, ToolSpec]:
    """The tools, by name, with this app's limits in their input schemas."""
    search_query = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                    "description": "Words to look for; every word must occur (not case"
                    " sensitive, no query syntax)."}
    name_text = {"type": "string", "minLength": 1, "maxLength": NAME_CHARS}
    subject = {**name_text, "description": "Whose memory: a user id of the caller's tenant"
               " (default: the caller; another person's needs the agent or admin role)."}
    specs = [
        ToolSpec(
            name="list_chats",
            title="List chats",
            description=(
                "List the chats you may read, most recent activity first, a page at a"
                " time. Narrow by words in the title (query) or by assistant. Each chat"
                " has id, title, assistant_id, channel, created_at and last_message_at;"
                " pass next_cursor back as cursor for the next page. To find what was"
                " said inside chats, use search_messages."),
            input_schema=_object({
                "query": {"type": "string", "minLength": 1,
                          "description": "Words that must occur in the chat's title (not"
                          " case sensitive)."},
                "assistant_id": {**name_text,
                                 "description": "Only chats with this assistant."},
                "limit": _limit(DEFAULT_CHAT_PAGE_SIZE, MAX_CHAT_PAGE_SIZE, "chats"),
                "cursor": _CURSOR,
            }),
            operation=LIST_CHATS, variables=_list_chats_variables,
            result=_list_chats_result),
        ToolSpec(
            name="read_chat",
            title="Read a chat",
            description=(
                "Read a chat's messages along its current branch (what the people in it"
                " see), oldest to newest: the newest `limit` messages, each with id, role"
                " (USER, ASSISTANT, SYSTEM, TOOL), type, text and created_at (text is"
                " null for tool calls and other non-text messages). For older messages"
                " pass next_cursor back as cursor. A chat that does not exist or that you"
                " may not read is NOT_FOUND."),
            input_schema=_object({
                "chat_id": _CHAT_ID,
                "limit": _limit(30, MAX_PAGE_SIZE, "messages"),
                "cursor": {**_CURSOR, "description": "next_cursor from the previous call:"
                           " the messages before that page."},
            }, required=("chat_id",)),
            operation=READ_CHAT, variables=chat_page_variables, result=_read_chat_result),
        ToolSpec(
            name="search_messages",
            title="Search messages",
            description=(
                "Full-text search over what people and assistants said (user and"
                " assistant text) in every chat you may read, best match first. Each hit"
                " has its score, its chat (id, title), the message and a window of the"
                " messages just around it. Use read_chat with the chat id to read more."),
            input_schema=_object({
                "query": search_query,
                "limit": _limit(10, MAX_FIRST, "hits"),
                "chat_id": {**_CHAT_ID, "description": "Search only this chat."},
                "assistant_id": {**name_text,
                                 "description": "Search only chats with this assistant."},
                "window": {"type": "integer", "minimum": 0, "maximum": MAX_WINDOW,
                           "default": 1,
                           "description": "Messages to include before and after each hit"
                           f" (0-{MAX_WINDOW}, default 1)."},
            }, required=("query",)),
            operation=SEARCH_MESSAGES, variables=_search_messages_variables,
            result=_search_messages_result),
        ToolSpec(
            name="search_memory",
            title="Search memory",
            description=(
                "Search the notes agents remembered about a person (default: you), best"
                " match first; every word must occur. Notes live in scopes: a project or"
                f" workspace key, or {GLOBAL_SCOPE!r} for what applies everywhere (the"
                " default). Each hit has its score and the entry (id, scope, content,"
                " pinned, subject, created_at, updated_at)."),
            input_schema=_object({
                "query": search_query,
                "scopes": {"type": "array", "minItems": 1, "maxItems": MAX_SCOPES,
                           "items": name_text, "default": [GLOBAL_SCOPE],
                           "description": "The scopes to search (default"
                           f" [{GLOBAL_SCOPE!r}])."},
                "limit": _limit(10, MAX_SEARCH, "entries"),
                "subject": subject,
            }, required=("query",)),
            operation=SEARCH_MEMORY, variables=_search_memory_variables,
            result=_search_memory_result),
        ToolSpec(
            name="remember",
            title="Remember a note",
            description=(
                "Write a memory note about a person (default: you) that later"
                " conversations can find with search_memory: one self-contained fact or"
                " preference per note. A scope holds a limited amount of text; when a note"
                " would pass it the answer is MEMORY_FULL and nothing is written. Pass"
                " write_id to make a retry safe (the same write_id and content returns"
                " the same entry)."),
            input_schema=_object({
                "content": {"type": "string", "minLength": 1,
                            "maxLength": settings.memory_entry_chars,
                            "description": "The note, in plain words"
                            f" (at most {settings.memory_entry_chars} characters)."},
                "scope": {**name_text, "default": GLOBAL_SCOPE,
                          "description": "A project or workspace key, or"
                          f" {GLOBAL_SCOPE!r} (the default) for what applies everywhere."},
                "pinned": {"type": "boolean", "default": False,
                           "description": "Pinned notes come first in a person's memory."},
                "subject": subject,
                "write_id": {"type": "string", "minLength": 1, "maxLength": KEY_CHARS,
                             "description": "An idempotency key for this write."},
            }, required=("content",)),
            operation=REMEMBER, variables=_remember_variables, result=_remember_result,
            read_only=False, idempotent=False),
        ToolSpec(
            name="append_message",
            title="Append a message",
            description=(
                "Append one text message to an existing chat you may write to, after its"
                " newest message: role USER for the person's words, ASSISTANT for an"
                " assistant's answer. Returns the new message's id and sequence. Pass"
                " append_id (any unique key) to make a retry safe: the same append_id"
                " writes nothing twice."),
            input_schema=_object({
                "chat_id": _CHAT_ID,
                "role": {"type": "string", "enum": ["USER", "ASSISTANT"],
                         "description": "Who is speaking."},
                "text": {"type": "string", "minLength": 1, "description": "The message."},
                "append_id": {"type": "string", "minLength": 1, "maxLength": KEY_CHARS,
                              "description": "An idempotency key for this append."},
            }, required=("chat_id", "role", "text")),
            operation=APPEND_MESSAGE, variables=_append_variables, result=_append_result,
            read_only=False, idempotent=False),
    ]
    assert tuple(spec.name for spec in specs) == TOOL_NAMES
    return {spec.name: spec for spec in specs}


# -- the chat resource ------------------------------------------------------------------


def chat_uri(chat_id: str) -> str:
    return CHAT_URI_PREFIX + chat_id


def chat_markdown(chat: ChatSummary, messages: list[MessageView], *,
                  older: bool) -> str:
    """A chat's page as Markdown: a heading, what it is, then each message."""
    lines = [f"# {chat['title'] or 'Chat ' + chat['id']}", "",
             f"Chat `{chat['id']}` with assistant `{chat['assistant_id']}`"
             f" ({chat['channel']}), created {chat['created_at']}.", ""]
    if older:
        lines += [f"The newest {len(messages)} messages of its current branch; read_chat"
                  f" with chat_id `{chat['id']}` pages back to older ones.", ""]
    if not messages:
        lines += ["_No messages yet._", ""]
    for message in messages:
        kind = "" if message["type"] in _TEXT_TYPES.values() else f" · {message['type']}"
        lines += [f"## {message['role']} · {message['created_at']}{kind}", "",
                  message["text"] if message["text"] is not None else "_(no text)_", ""]
    return "\n".join(lines)
