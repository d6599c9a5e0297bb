"""chatql's persistence layer: tables, migrations and the operations on them.

Nothing here knows about GraphQL or HTTP; every function takes a :class:`Database`
(and the caller's :class:`Identity`) and returns frozen records.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatql.store import errors
    from chatql.store.chats.chat import (
        create_chat,
        delete_chat,
        get_chat,
        purge_chat,
        restore_chat,
        update_chat,
    )
    from chatql.store.cursors import CursorSigner, load_or_create_secret
    from chatql.store.db.database import DEFAULT_DATABASE_URL, Database
    from chatql.store.db.migrate import migrate
    from chatql.store.lists.chat_lists import ChatListFilter, list_chats
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
    from chatql.store.records import (
        AppendReceipt,
        Chat,
        Identity,
        Message,
        MessagePage,
        ResumeRecord,
    )

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

# Loaded when first used, so that a command or a migration importing one store module
# does not import them all.
_HOMES = {
    "append_messages": "chatql.store.messages.message",
    "AppendReceipt": "chatql.store.records",
    "Chat": "chatql.store.records",
    "ChatListFilter": "chatql.store.lists.chat_lists",
    "compact_chat": "chatql.store.messages.lifecycle",
    "create_chat": "chatql.store.chats.chat",
    "CursorSigner": "chatql.store.cursors",
    "Database": "chatql.store.db.database",
    "DEFAULT_DATABASE_URL": "chatql.store.db.database",
    "delete_chat": "chatql.store.chats.chat",
    "delete_messages": "chatql.store.messages.message",
    "errors": "chatql.store.errors",
    "get_chat": "chatql.store.chats.chat",
    "get_message": "chatql.store.messages.message",
    "Identity": "chatql.store.records",
    "list_chats": "chatql.store.lists.chat_lists",
    "list_messages": "chatql.store.messages.message",
    "load_or_create_secret": "chatql.store.cursors",
    "Message": "chatql.store.records",
    "MessageFilter": "chatql.store.messages.message",
    "MessagePage": "chatql.store.records",
    "migrate": "chatql.store.db.migrate",
    "model_context": "chatql.store.messages.lifecycle",
    "NewMessage": "chatql.store.messages.message",
    "purge_chat": "chatql.store.chats.chat",
    "restore_chat": "chatql.store.chats.chat",
    "ResumeRecord": "chatql.store.records",
    "search_messages": "chatql.store.messages.search",
    "SearchHit": "chatql.store.messages.search",
    "start_over": "chatql.store.messages.lifecycle",
    "update_chat": "chatql.store.chats.chat",
    "update_message": "chatql.store.messages.message",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(home)
    return module if home.endswith("." + name) else getattr(module, name)
