"""What the read and write paths share below the resolvers: telling every live chat list
about a write that committed (:func:`announce` and its kin), and bringing an archived
chat's messages back before they are read or written (:func:`bring_back`).

These depend on the store and the request's context only, never on a GraphQL type, so
the types, the page builder and every concept's resolvers can call them.
"""

from __future__ import annotations

from chatql.gql.context import Context, Info
from chatql.store.keeping import archive as store_archive
from chatql.store.lists import events as store_events
from chatql.store.records import AppendReceipt
from chatql.store.records import Chat as StoreChat

__all__ = ["announce", "announce_append", "announce_to", "before_write",
           "before_write_of_message", "bring_back"]


async def announce(info: Info, type: store_events.ChatEventType, chat_id: str, *,
                   before: StoreChat | None = None) -> None:
    """Tell every live chat list about a write that just committed."""
    await announce_to(info.context, type, chat_id, before=before)


async def announce_to(context: Context, type: store_events.ChatEventType, chat_id: str, *,
                      before: StoreChat | None = None) -> None:
    """:func:`announce` for a write made outside a resolver (a fast path's)."""
    events = context.services.events
    if events is not None:
        tenant_id = before.tenant_id if before is not None else context.identity.tenant_id
        await events.publish(type, chat_id, tenant_id, before=before)


async def announce_append(context: Context, receipt: AppendReceipt) -> None:
    """Tell every live chat list about an append that just committed, with the chat as
    it committed (so the lists need not read it again)."""
    events = context.services.events
    if events is not None:
        await events.publish("MESSAGES", receipt.chat_id, context.identity.tenant_id,
                             after=receipt.chat, sequence=receipt.last_sequence)


async def before_write(info: Info, chat_id: str) -> StoreChat | None:
    """The chat before a write that may take it out of someone's list (sidebars on any
    instance decide with it whether they could see the chat before)."""
    events = info.context.services.events
    if events is None:
        return None
    return await store_events.load_chat(info.context.db, chat_id)


async def before_write_of_message(info: Info, message_id: str) -> StoreChat | None:
    """:func:`before_write` for the chat holding ``message_id`` (None when unknown)."""
    events = info.context.services.events
    if events is None:
        return None
    chat_id = await store_events.chat_of_message(info.context.db, message_id)
    return None if chat_id is None else await store_events.load_chat(info.context.db,
                                                                     chat_id)


async def bring_back(info: Info, chat_id: str) -> bool:
    """Restore ``chat_id`` from the archive when it is there (one key probe when not)."""
    services = info.context.services
    if services.archive is None or not await store_archive.is_archived(services.db, chat_id):
        return False
    await store_archive.restore_archive(services.db, services.archive, info.context.identity,
                                        chat_id)
    await announce(info, "UPDATED", chat_id)
    return True
