"""What keeps a long conversation usable for the model: boundaries and its context.

A *boundary* is an ordinary message (``role: SYSTEM``, ``type: boundary``) in the chat:
people keep seeing everything before it, the model is handed nothing before it.
``start_over`` draws one; ``compact_chat`` draws one that carries a summary standing
in for what came before (``props.summary``).

``model_context`` is what an agent sends its model, built with these decisions:

- Two bounds, either or both: ``limit`` counts messages, ``max_tokens`` bounds the sum
  of the messages' ``tokens``. A message without a reported count is estimated as one
  token per 4 characters of its props as compact, key-sorted JSON (rounded up); every
  returned message carries its count, estimated ones marked ``tokens_estimated``. The
  summary, when there is one, counts toward both bounds (its count is an estimate).
- The context opens with what the model must always have, in this order, each
  counted toward both bounds and never trimmed (the turns are, instead; an opening
  that alone exceeds a bound is ``WINDOW_TOO_SMALL``):

  - the system prompt: the chat's stored ``SYSTEM`` messages on the active branch
    (boundaries aside, before a boundary too: starting over does not make an agent
    forget its instructions), one as stored, several merged into one ``text`` message
    whose ``props.content`` joins their texts in order;
  - the memory message, when ``memory_scopes`` are given;
  - the summary, as a ``SYSTEM`` message of type ``text`` whose ``props.content`` is
    the summary; it keeps the boundary's id, sequence and times so it can be traced
    back.
- A turn is a ``USER`` message and everything after it up to the next ``USER``
  message. Messages after the boundary but before its first ``USER`` message (an
  assistant's greeting, say) form one more, oldest, unit, kept whole or not at all.
- ``loading``, ``action`` and ``error`` messages, every ``FAILED`` message, every
  ``INTERRUPTED`` ``tool_call`` (the model could never see its result, and provider
  APIs refuse an unanswered call) and, unless ``include_thinking``, ``thinking``
  messages are left out before turns are counted: they neither reach the model nor
  use up a bound.
- A person's decisions are part of what the model sees: an approved tool call carries
  the arguments the person approved (``editedArguments`` when they changed them); a
  denied or expired one is followed by a ``TOOL`` ``tool_result`` message
  ``{"tool_call_id", "denied": true, "reason"}`` unless the agent wrote a result for it;
  an answered question by a ``USER`` message holding the response (``content``: the
  response as text when it is a string, else as JSON); a declined or expired question
  by a ``USER`` message ``{"declined": true, "reason"}``.
- The newest turn that does not fit on its own (in either bound) is
  ``WINDOW_TOO_SMALL``; older turns that do not fit are simply left out.
- Files (``files``, one of :data:`~store.files.window.FILE_MODES`): with ``NONE`` the
  file parts of list contents are dropped and ``file`` messages left out before
  counting. An estimate never counts a file reference as the characters of its JSON:
  each counts :data:`~store.files.window.FILE_PART_TOKENS`, except, with ``INLINE``, a
  text file the message links, which counts one token per 4 bytes of the text shown
  (at most ``file_text_bytes``). What the window's files carry (addresses, bytes) is
  added above the store.

The chat is read backwards from its end in keyset pages (growing for token-bounded
windows) and reading stops as soon as a bound is reached, so a million-message chat
costs what its last turns cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.chats.chat import fetch_visible_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, files, message_files, messages
from chatql.store.errors import InvalidArgument, NotFound, WindowTooSmall
from chatql.store.files.links import FILE_TYPE
from chatql.store.files.window import (
    DEFAULT_CONTEXT_TEXT_BYTES,
    FILE_MODES,
    FILE_PART_TOKENS,
    FILE_REFERENCE_KEYS,
    is_file_part,
    is_text_type,
    text_tokens,
    without_file_parts,
)
from chatql.store.ids import check_chat_id
from chatql.store.jsonutil import canonical_json
from chatql.store.memory import memory_message
from chatql.store.messages import interrupts, tree
from chatql.store.messages.message import (
    NewMessage,
    insert_messages,
    lock_chat_for_append,
    message_from_row,
)
from chatql.store.records import Identity, Message

__all__ = [
    "BOUNDARY_TYPE",
    "MAX_SUMMARY_CHARS",
    "MODEL_HIDDEN_TYPES",
    "SYSTEM_PROMPT_SEPARATOR",
    "THINKING_TYPE",
    "TOOL_CALL_TYPE",
    "compact_chat",
    "estimate_tokens",
    "model_context",
    "start_over",
]

BOUNDARY_TYPE = "boundary"
#: UI-only message types that never reach the model.
MODEL_HIDDEN_TYPES = ("loading", "action", "error")
#: The model's own reasoning: left out unless asked for (``include_thinking``).
THINKING_TYPE = "thinking"
#: A tool call; left out when INTERRUPTED, as its result can never follow.
TOOL_CALL_TYPE = "tool_call"
MAX_SUMMARY_CHARS = 1_000_000
#: Between the texts of several system prompts merged into one message.
SYSTEM_PROMPT_SEPARATOR = "\n\n"
#: Rows read per backward step; at least the limit, so most contexts take one step.
_MIN_PAGE = 64
_MAX_PAGE = 1_000
#: Boundaries read per step while looking for the newest one on the active branch.
_BOUNDARY_PROBE = 20


async def start_over(db: Database, who: Identity, chat_id: str) -> Message:
    """Append a boundary, or return the newest message when it already is one.

    The check and the append happen under the chat's append lock, so two presses
    racing each other still leave one boundary.
    """
    check_chat_id(chat_id)
    async with db.write() as conn:
        last_sequence = await lock_chat_for_append(conn, who, chat_id)
        # The newest message of the active branch: its leaf.
        newest = (
            await conn.execute(
                select(messages).where(
                    messages.c.chat_id == chat_id,
                    messages.c.id == select(chats.c.active_leaf_id)
                    .where(chats.c.id == chat_id).scalar_subquery(),
                )
            )
        ).first()
        if newest is not None and newest.type == BOUNDARY_TYPE:
            return message_from_row(newest)
        return await _append_boundary(conn, chat_id, last_sequence, {})


async def compact_chat(db: Database, who: Identity, chat_id: str, summary: str) -> Message:
    """Append a boundary carrying ``summary``, which stands in for everything before it."""
    check_chat_id(chat_id)
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidArgument("summary must not be empty")
    if len(summary) > MAX_SUMMARY_CHARS:
        raise InvalidArgument(f"summary must be at most {MAX_SUMMARY_CHARS} characters")
    async with db.write() as conn:
        last_sequence = await lock_chat_for_append(conn, who, chat_id)
        return await _append_boundary(conn, chat_id, last_sequence, {"summary": summary})


async def _append_boundary(
    conn: AsyncConnection, chat_id: str, last_sequence: int, props: dict[str, Any]
) -> Message:
    [boundary] = await insert_messages(
        conn,
        chat_id,
        [NewMessage(role="SYSTEM", type=BOUNDARY_TYPE, props=props)],
        last_sequence=last_sequence,
    )
    return boundary


async def model_context(
    db: Database,
    who: Identity,
    chat_id: str,
    limit: int | None = None,
    *,
    max_tokens: int | None = None,
    include_thinking: bool = False,
    memory_scopes: Sequence[str] | None = None,
    files: str = "URL",
    file_text_bytes: int = DEFAULT_CONTEXT_TEXT_BYTES,
) -> list[Message]:
    """The messages an agent should send its model, oldest first (see module doc).

    With ``memory_scopes`` the context carries the chat creator's recent memory
    (``store.memory.memory_message``) after the system prompt; like the system prompt
    and the summary that follows it, it counts as one message toward ``limit`` and by
    its tokens (estimated) toward ``max_tokens``. ``files`` says how the window's files
    are counted (and, with ``NONE``, drops them; see the module doc).
    """
    check_chat_id(chat_id)
    if files not in FILE_MODES:
        raise InvalidArgument(f"files must be one of {', '.join(FILE_MODES)}")
    if limit is None and max_tokens is None:
        raise InvalidArgument("pass limit (messages), maxTokens (tokens) or both")
    if limit is not None and limit <= 0:
        raise InvalidArgument("limit must be a positive number of messages")
    if max_tokens is not None and max_tokens <= 0:
        raise InvalidArgument("maxTokens must be a positive number of tokens")
    async with db.read() as conn:
        chat = await fetch_visible_chat(conn, who, chat_id)
        if chat is None:
            raise NotFound(f"chat {chat_id!r} not found")
        memory = None if memory_scopes is None else await memory_message(
            conn, who, chat, memory_scopes)
        leaf = chat.active_leaf_id
        system = None if leaf is None else _system_message(
            await _system_prompts(conn, chat_id, leaf))
        row = None if leaf is None else await _newest_boundary(conn, chat_id, leaf)
        boundary = None if row is None else message_from_row(row)
        summary = _summary_message(boundary)
        window = _Window(limit, max_tokens)
        counter = _Counter(files, file_text_bytes)
        if system is not None:
            await counter.load(conn, [system.id])
        opening = [counter.count(m) for m in (system, memory, summary) if m is not None]
        if not window.fits(opening):
            raise WindowTooSmall(
                "the system prompt, the memory message and the compaction summary alone"
                " exceed the window; raise limit or maxTokens"
            )
        window.take(opening)
        hidden = [*MODEL_HIDDEN_TYPES, BOUNDARY_TYPE]
        if not include_thinking:
            hidden.append(THINKING_TYPE)
        if files == "NONE":
            hidden.append(FILE_TYPE)
        turns = [] if leaf is None else await _newest_turns(
            conn, chat_id, leaf, floor=0 if row is None else int(row.depth),
            window=window, hidden=hidden, counter=counter,
        )
    context = [message for turn in reversed(turns) for message in turn]
    return [*opening, *context]


def estimate_tokens(props: dict[str, Any]) -> int:
    """One token per 4 characters of the props as compact, key-sorted JSON, rounded up."""
    return -(-len(canonical_json(props)) // 4)


class _Counter:
    """Token counts of the window's messages as its file mode hands files over (see
    the module doc); with ``NONE`` it also drops the file parts."""

    def __init__(self, files: str, text_bytes: int) -> None:
        self.files = files
        self.text_bytes = text_bytes
        #: (message id, file id) -> tokens, for the text files an INLINE window gives.
        self.costs: dict[tuple[str, str], int] = {}

    async def load(self, conn: AsyncConnection, message_ids: list[str]) -> None:
        """Learn the sizes of the text files these messages link (INLINE only)."""
        if self.files != "INLINE" or not message_ids:
            return
        rows = (await conn.execute(
            select(message_files.c.message_id, files.c.id, files.c.media_type, files.c.size)
            .join(files, files.c.id == message_files.c.file_id)
            .where(message_files.c.message_id.in_(message_ids), files.c.state == "READY")
        )).all()
        for row in rows:
            if is_text_type(row.media_type):
                self.costs[(row.message_id, row.id)] = text_tokens(int(row.size),
                                                                   self.text_bytes)

    def count(self, message: Message) -> Message:
        """``message`` with a token count: its own, or the estimate (marked as such)."""
        if self.files == "NONE" and isinstance(message.props, dict):
            props = without_file_parts(message.props)
            if props is not message.props:
                message = replace(message, props=props)
        if message.tokens is not None:
            return message
        return replace(message, tokens=self._estimate(message), tokens_estimated=True)

    def _estimate(self, message: Message) -> int:
        props = message.props
        if not isinstance(props, dict):
            return estimate_tokens(props)
        references: list[Any] = []
        rest = props
        if message.type == FILE_TYPE:
            references.append(props.get("fileId"))
            rest = {key: value for key, value in props.items()
                    if key not in (*FILE_REFERENCE_KEYS, "url")}
        content = rest.get("content")
        if isinstance(content, list) and any(map(is_file_part, content)):
            references.extend(part.get("fileId") for part in content if is_file_part(part))
            rest = {**rest, "content": [part for part in content if not is_file_part(part)]}
        if not references:
            return estimate_tokens(props)
        return (estimate_tokens(rest) if rest else 0) + sum(
            self.costs.get((message.id, ref), FILE_PART_TOKENS) if isinstance(ref, str)
            else FILE_PART_TOKENS for ref in references)


class _Window:
    """What is left of the message and token bounds (None: that bound is not set)."""

    def __init__(self, limit: int | None, max_tokens: int | None) -> None:
        self.messages = limit
        self.tokens = max_tokens

    def fits(self, unit: list[Message]) -> bool:
        if self.messages is not None and len(unit) > self.messages:
            return False
        return self.tokens is None or sum(m.tokens or 0 for m in unit) <= self.tokens

    def take(self, unit: list[Message]) -> None:
        if self.messages is not None:
            self.messages -= len(unit)
        if self.tokens is not None:
            self.tokens -= sum(m.tokens or 0 for m in unit)

    def too_small(self, unit: list[Message]) -> WindowTooSmall:
        if self.messages is not None and len(unit) > self.messages:
            return WindowTooSmall(
                "the newest turn alone has more messages than the limit; raise the limit"
            )
        need = sum(m.tokens or 0 for m in unit)
        return WindowTooSmall(
            f"the newest turn alone needs at least {need} tokens, more than maxTokens"
            " leaves; raise maxTokens"
        )


async def _system_prompts(conn: AsyncConnection, chat_id: str, leaf: str) -> list[Message]:
    """The stored ``SYSTEM`` messages (boundaries aside) on the branch ending at
    ``leaf``, oldest first.

    The (chat_id, role, sequence) index lists the chat's few SYSTEM messages; each is
    checked to lie on the branch with one jump climb, so the branch is never read.
    """
    rows = (await conn.execute(
        select(messages)
        .where(messages.c.chat_id == chat_id, messages.c.role == "SYSTEM",
               messages.c.type != BOUNDARY_TYPE)
        .order_by(messages.c.sequence)
    )).all()
    found = []
    for row in rows:
        if row.type in MODEL_HIDDEN_TYPES or row.status == "FAILED":
            continue
        if await conn.scalar(tree.ancestor_at(leaf, int(row.depth), chat=chat_id,
                                               dialect=conn.dialect.name)) == row.id:
            found.append(message_from_row(row))
    return found


def _system_text(message: Message) -> str | None:
    for key in ("content", "text"):
        value = message.props.get(key)
        if isinstance(value, str):
            return value
    return None


def _system_message(prompts: list[Message]) -> Message | None:
    """One message standing for the system prompts: the only one as stored, or
    several merged into one ``text`` message whose content joins their texts in order
    (it keeps the first one's id, sequence and times; its token count is the sum of
    theirs when every one was reported, else an estimate)."""
    if len(prompts) <= 1:
        return prompts[0] if prompts else None
    texts = [text for text in map(_system_text, prompts) if text is not None]
    counts = [m.tokens for m in prompts]
    tokens = None if any(c is None for c in counts) else sum(c or 0 for c in counts)
    first = prompts[0]
    return replace(first, type="text", props={"content": SYSTEM_PROMPT_SEPARATOR.join(texts)},
                   tokens=tokens, updated_at=max(m.updated_at for m in prompts))


def _summary_message(boundary: Message | None) -> Message | None:
    if boundary is None:
        return None
    summary = boundary.props.get("summary")
    if not isinstance(summary, str) or not summary:
        return None
    return replace(boundary, role="SYSTEM", type="text", props={"content": summary},
                   tokens=None)


async def _newest_boundary(conn: AsyncConnection, chat_id: str, leaf: str) -> Any:
    """The newest boundary on the branch ending at ``leaf`` (a row), or None.

    The (chat_id, type, sequence) index lists the chat's boundaries newest first; each
    is checked to lie on the branch with one jump climb, so boundaries drawn on other
    branches cost a climb each and the branch itself is never read.
    """
    before: int | None = None
    while True:
        query = (
            select(messages)
            .where(messages.c.chat_id == chat_id, messages.c.type == BOUNDARY_TYPE)
            .order_by(messages.c.sequence.desc())
            .limit(_BOUNDARY_PROBE)
        )
        if before is not None:
            query = query.where(messages.c.sequence < before)
        rows = (await conn.execute(query)).all()
        for row in rows:
            if await conn.scalar(tree.ancestor_at(leaf, int(row.depth), chat=chat_id,
                                               dialect=conn.dialect.name)) == row.id:
                return row
        if len(rows) < _BOUNDARY_PROBE:
            return None
        before = rows[-1].sequence


def _for_model(row: Any, hidden: list[str]) -> bool:
    # SYSTEM messages open the context (see ``_system_message``) rather than a turn.
    if row.type in hidden or row.status == "FAILED" or row.role == "SYSTEM":
        return False
    # A tool call the model can never see answered (provider APIs refuse it).
    return not (row.type == TOOL_CALL_TYPE and row.status == "INTERRUPTED")


async def _newest_turns(
    conn: AsyncConnection, chat_id: str, leaf: str, *, floor: int, window: _Window,
    hidden: list[str], counter: _Counter,
) -> list[list[Message]]:
    """Whole turns of the branch ending at ``leaf`` below depth ``floor``, newest first.

    The branch is walked up from its leaf in steps; reading stops at the first turn
    that cannot fit (older ones are never needed), so the cost is that of the turns
    returned, whatever the chat's length.
    """
    turns: list[list[Message]] = []
    pending: list[Message] = []  # the turn being gathered, newest message first
    # Tool calls whose result the walk has passed (results come after their calls).
    answered: set[str | None] = set()
    if window.tokens is None and window.messages is not None:
        # A message count alone says how many rows to read: usually one step.
        page = min(max(window.messages + 1, _MIN_PAGE), _MAX_PAGE)
    else:
        # How many rows a token budget covers is unknown: start small, then grow.
        page = _MIN_PAGE
    start: str | None = leaf
    while start is not None:
        rows = (await conn.execute(tree.path_query(start, chat=chat_id, count=page,
                                                  floor=floor, dialect=conn.dialect.name))).all()
        asked = await interrupts.decided_for(conn, [row.id for row in rows
                                                    if interrupts.asks(row.type, row.props)])
        await counter.load(conn, [row.id for row in rows if _for_model(row, hidden)])
        for row in rows:
            if not _for_model(row, hidden):
                continue
            message = message_from_row(row)
            if row.role == "TOOL" or row.type == "tool_result":
                answered.add(_result_call(message.props))
            decided = asked.get(row.id)
            # Newest first: what the decision adds comes after the message that asked.
            for woven in ([] if decided is None else
                          interrupts.in_model_window(message, decided, answered)):
                pending.append(counter.count(woven))
                if not window.fits(pending):
                    return _finish(turns, window, pending)
                if woven.role == "USER":
                    unit = list(reversed(pending))
                    turns.append(unit)
                    window.take(unit)
                    pending = []
            if decided is not None:
                message = interrupts.as_decided(message, decided)
            pending.append(counter.count(message))
            if not window.fits(pending):
                # Even if this turn ends further back, it can no longer fit.
                return _finish(turns, window, pending)
            if pending[-1].role != "USER":
                continue
            unit = list(reversed(pending))
            turns.append(unit)
            window.take(unit)
            pending = []
        if len(rows) < page:
            break
        start = rows[-1].parent_id
        # Token-bounded windows read in growing steps: few round trips, little excess.
        page = min(page * 2, _MAX_PAGE)
    if pending:
        # Messages after the boundary that no USER message leads: one oldest unit.
        turns.append(list(reversed(pending)))
    return turns


def _result_call(props: Any) -> str | None:
    """The tool call a result answers, by the keys results name it with."""
    if not isinstance(props, dict):
        return None
    for key in ("tool_call_id", "toolCallId", "callId", "id"):
        value = props.get(key)
        if isinstance(value, str):
            return value
    return None


def _finish(turns: list[list[Message]], window: _Window,
            pending: list[Message]) -> list[list[Message]]:
    if not turns:
        raise window.too_small(pending)
    return turns
