"""chatql's persistence layer: tables, migrations and the operations on them.

Nothing here knows about GraphQL or HTTP; every function takes a :class:`Database`
(and the caller's :class:`Identity`) and returns frozen records.
"""

from __future__ import annotations

from chatql.store import errors
from chatql.store.chats.chat import (
    create_chat,
    delete_chat,
    get_chat,
    purge_chat,
    restore_chat,
    update_chat,
)
from chatql.store.chats.lists import ChatListFilter, list_chats
from chatql.store.cursors import CursorSigner, load_or_create_secret
from chatql.store.db.database import DEFAULT_DATABASE_URL, Database
from chatql.store.db.migrate import migrate
from chatql.store.messages.lifecycle import compact_chat, model_context, start_over
from chatql.store.messages.message import (
    MessageFilter,
    NewMessage,
    append_messages,
    delete_messages,
    get_message,
    list_messages,
    update_message,
)
from chatql.store.messages.search import SearchHit, search_messages
from chatql.store.records import AppendReceipt, Chat, Identity, Message, MessagePage, ResumeRecord

__all__ = [
    "DEFAULT_DATABASE_URL",
    "AppendReceipt",
    "Chat",
    "ChatListFilter",
    "CursorSigner",
    "Database",
    "Identity",
    "Message",
    "MessageFilter",
    "MessagePage",
    "NewMessage",
    "ResumeRecord",
    "SearchHit",
    "append_messages",
    "compact_chat",
    "create_chat",
    "delete_chat",
    "delete_messages",
    "errors",
    "get_chat",
    "get_message",
    "list_chats",
    "list_messages",
    "load_or_create_secret",
    "migrate",
    "model_context",
    "purge_chat",
    "restore_chat",
    "search_messages",
    "start_over",
    "update_chat",
    "update_message",
]
