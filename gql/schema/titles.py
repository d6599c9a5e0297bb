"""An agent names a chat: ``setChatTitle`` (the kit's ``s.set_title``).

A person names a chat with ``createChat``/``updateChat`` (``titleSource: USER``); a chat
nobody named takes its first question's words (``AUTO``, written with that message).
"""

from __future__ import annotations

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce, before_write
from chatql.gql.schema.chat_type import Chat
from chatql.store.chats import titles as store_titles

__all__ = ["TitleMutation"]


@strawberry.type
class TitleMutation:
    @strawberry.mutation(description=(
        "An agent names the chat (titleSource AGENT): the title replaces an automatic or"
        " an agent's title; a title a person gave stays, and the chat comes back"
        " unchanged. 1-1,000 characters on one line. Needs the right to stream into the"
        " chat (the agent or admin role)."))
    async def set_chat_title(self, info: Info, chat_id: strawberry.ID, title: str) -> Chat:
        before = await before_write(info, str(chat_id))
        chat = await store_titles.set_agent_title(info.context.db, info.context.identity,
                                                  str(chat_id), title)
        if before is None or (before.title, before.title_source) != (chat.title,
                                                                    chat.title_source):
            await announce(info, "UPDATED", chat.id, before=before)
        return chat  # type: ignore[return-value]
