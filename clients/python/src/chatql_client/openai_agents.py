"""A conversation store for the OpenAI Agents SDK over one chatql chat.

    from agents import Agent, Runner
    from chatql_client.openai_agents import ChatqlSession

    session = ChatqlSession(chat_id, client)
    result = await Runner.run(agent, "Weather in Oslo?", session=session)

:class:`ChatqlSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``, ``session_id``, ``session_settings``)
without importing the SDK. Items are stored as chatql maps OpenAI messages when it imports
them, so people and other agents read the conversation as ordinary messages:

=======================================  ==============================================
Item                                     Message
=======================================  ==============================================
``{"role": "user", ...}``                ``USER`` ``user_input`` ``{content}``
``system`` / ``developer`` message       ``SYSTEM`` ``text`` ``{content}``
``assistant`` message                    ``ASSISTANT`` ``text`` ``{content}`` (its text)
``function_call``                        ``ASSISTANT`` ``tool_call`` ``{id, name,
                                         arguments}``
``function_call_output``                 ``TOOL`` ``tool_result`` ``{content,
                                         tool_call_id}``
``reasoning``                            ``ASSISTANT`` ``thinking`` ``{content}`` (its
                                         summary)
any other item                           ``ASSISTANT`` ``openai_item`` ``{type}``
=======================================  ==============================================

Every message keeps its item, as given, in ``metadata.openai_item``, so ``get_items``
returns exactly what was added. Messages written some other way (a person typing in the web
app, an agent streaming with the writer) are read back by the table above in reverse;
those that are no model input (``thinking`` without its item, events, errors, boundaries)
are left out, and so are ``FAILED`` messages.

The session is the chat's active branch after its newest boundary. ``clear_session``
draws a boundary (``startOver``): the agent starts afresh, while people still see the
whole conversation and nothing of the record is deleted. A boundary with a summary
(``compactChat``) comes back as a first ``system`` item carrying the summary.
``pop_item`` deletes the newest item's message (with anything after it on the branch).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chatql_client.adapters import _jsonable
from chatql_client.documents import SESSION_DELETE_MESSAGES, SESSION_PAGE, SESSION_START_OVER

if TYPE_CHECKING:
    from chatql_client.client import ChatqlClient

__all__ = ["ChatqlSession", "item_to_message", "message_to_item"]

ITEM_KEY = "openai_item"
_PAGE = 100
_APPEND_BATCH = 100


def _text_of(content: Any) -> Any:
    """An assistant message's content as text: its output text parts joined."""
    if isinstance(content, list):
        texts = [part.get("text") or part.get("refusal") or "" for part in content
                 if isinstance(part, Mapping)]
        return "".join(texts)
    return content


def item_to_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``MessageInput`` a session item is stored as (the item kept in its metadata)."""
    raw = _jsonable(dict(item))
    kind = raw.get("type")
    metadata = {ITEM_KEY: raw}
    if kind in (None, "message"):
        role = raw.get("role")
        content = raw.get("content")
        if role == "user":
            return {"role": "USER", "type": "user_input", "props": {"content": content},
                    "metadata": metadata}
        if role in ("system", "developer"):
            return {"role": "SYSTEM", "type": "text", "props": {"content": _text_of(content)},
                    "metadata": metadata}
        if role == "assistant":
            return {"role": "ASSISTANT", "type": "text",
                    "props": {"content": _text_of(content)}, "metadata": metadata}
    if kind == "function_call":
        return {"role": "ASSISTANT", "type": "tool_call",
                "props": {"id": raw.get("call_id"), "name": raw.get("name"),
                          "arguments": raw.get("arguments")}, "metadata": metadata}
    if kind == "function_call_output":
        return {"role": "TOOL", "type": "tool_result",
                "props": {"content": raw.get("output"), "tool_call_id": raw.get("call_id")},
                "metadata": metadata}
    if kind == "reasoning":
        summary = raw.get("summary") or []
        text = "\n\n".join(part.get("text", "") for part in summary
                           if isinstance(part, Mapping))
        return {"role": "ASSISTANT", "type": "thinking", "props": {"content": text},
                "metadata": metadata}
    return {"role": "ASSISTANT", "type": "openai_item", "props": {"type": kind},
            "metadata": metadata}


def message_to_item(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The session item a stored message stands for (None: no model input)."""
    metadata = message.get("metadata") or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get(ITEM_KEY), Mapping):
        return dict(metadata[ITEM_KEY])
    role, kind = message.get("role"), message.get("type")
    props = message.get("props") or {}
    if kind == "user_input" or (role == "USER" and kind == "text"):
        return {"role": "user", "content": props.get("content", "")}
    if kind == "text" and role == "SYSTEM":
        return {"role": "system", "content": props.get("content", "")}
    if kind == "text" and role == "ASSISTANT":
        return {"role": "assistant", "content": props.get("content", "")}
    if kind == "tool_call":
        arguments = props.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else _json_text(arguments)
        return {"type": "function_call", "call_id": props.get("id"),
                "name": props.get("name"), "arguments": arguments}
    if kind == "tool_result":
        output = props.get("content")
        return {"type": "function_call_output", "call_id": props.get("tool_call_id"),
                "output": output if isinstance(output, str) else _json_text(output)}
    return None


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _is_boundary(message: Mapping[str, Any]) -> bool:
    return message.get("type") == "boundary" and message.get("role") == "SYSTEM"


class ChatqlSession:
    """The OpenAI Agents SDK's ``Session`` over one chat (``session_id`` is the chat id)."""

    def __init__(self, chat_id: str, client: ChatqlClient, *,
                 session_settings: Any = None) -> None:
        self.session_id = chat_id
        self.chat_id = chat_id
        self.client = client
        self.session_settings = session_settings

    async def _newest_first(self) -> Any:
        """The active branch's messages, newest first, down to the newest boundary."""
        before: str | None = None
        while True:
            data = await self.client.execute(SESSION_PAGE, {"c": self.chat_id, "last": _PAGE,
                                                           "before": before})
            page = data["messages"]
            for edge in reversed(page["edges"]):
                yield edge["node"]
                if _is_boundary(edge["node"]):
                    return
            info = page["pageInfo"]
            if not info["hasPreviousPage"] or not info["startCursor"]:
                return
            before = info["startCursor"]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation since the newest boundary, oldest first (the newest ``limit``)."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        items: list[Any] = []
        async for message in self._newest_first():
            if limit is not None and len(items) >= limit:
                break
            if _is_boundary(message):
                summary = (message.get("props") or {}).get("summary")
                if summary:
                    items.append({"role": "system", "content": summary})
                break
            if message.get("status") == "FAILED":
                continue
            item = message_to_item(message)
            if item is not None:
                items.append(item)
        items.reverse()
        return items

    async def add_items(self, items: Sequence[Any]) -> None:
        """Append the items, in order, at the chat's active leaf."""
        messages = [item_to_message(item if isinstance(item, Mapping) else _jsonable(item))
                    for item in items]
        for start in range(0, len(messages), _APPEND_BATCH):
            await self.client.append(self.chat_id, messages[start:start + _APPEND_BATCH],
                                     append_id=uuid.uuid4().hex)

    async def pop_item(self) -> Any | None:
        """Delete the newest item's message and return the item (None when empty)."""
        async for message in self._newest_first():
            if _is_boundary(message):
                return None
            if message.get("status") == "FAILED":
                continue
            item = message_to_item(message)
            if item is not None:
                await self.client.execute(SESSION_DELETE_MESSAGES,
                                          {"c": self.chat_id, "ids": [message["id"]]})
                return item
        return None

    async def clear_session(self) -> None:
        """Start over: a boundary hides everything before it from the agent, not from people."""
        await self.client.execute(SESSION_START_OVER, {"c": self.chat_id})
