"""chatql's persistence layer: tables, migrations and the operations on them.

Nothing here knows about GraphQL or HTTP; every function takes a :class:`Database`
(and the caller's :class:`Identity`) and returns frozen records.
"""

from __future__ import annotations

from store import errors
from store.chat_lists import ChatListFilter, list_chats
from store.chats import create_chat, delete_chat, get_chat, purge_chat, restore_chat, update_chat
from store.cursors import CursorSigner, load_or_create_secret
from store.database import DEFAULT_DATABASE_URL, Database
from store.lifecycle import compact_chat, model_context, start_over
from store.messages import (
    MessageFilter,
    NewMessage,
    append_messages,
    delete_messages,
    get_message,
    list_messages,
    update_message,
)
from store.migrate import migrate
from store.records import AppendReceipt, Chat, Identity, Message, MessagePage, ResumeRecord
from store.search import SearchHit, search_messages

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
