"""The stream reducer: how chunks merge into messages, with no I/O.

One set of rules serves the producer side and the subscriber side:

- :func:`apply_chunks` takes a producer's ``pushChunks`` batch, checks it, gives
  every chunk its ``seq``, a chunk id when it has none and the service message id,
  and applies it to the buffered :class:`StreamState` — all of the batch or none
  of it. It returns the chunks to publish (wire-shaped :class:`ChunkEvent` dicts).
- :func:`apply_event` applies one published chunk to a subscriber's view (a dict of
  :class:`MessageState` by service id). The broker keeps such a view to answer late
  joiners with a snapshot, so "the persisted message is what a subscriber shows"
  holds by construction and is property-tested against an independent client.

Delta rules: a delta chunk edits message ``messageId`` at ``deltaPath`` (dotted;
digit segments index lists; default ``content``; the empty path is the whole props).
The value is the chunk's ``props`` entry named by the path's last segment (the whole
``props`` for the empty path). ``append`` concatenates strings or extends lists —
string onto string, list onto list, so that queued appends can be coalesced without
loss — creating the value when missing; ``replace``/``set`` put the value, creating
missing objects on the way; ``merge`` shallow-merges an object into the object there
(creating it when missing). Anything else is :class:`~store.errors.InvalidDelta`.

A chunk's ``tokens`` (a whole number >= 0) sets its message's token count; the last
value wins and a chunk without one leaves the count as it was. Counts stay on the
producer side (the buffer and the persisted message); subscribers' chunks omit them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from chatql.store.errors import InvalidArgument, InvalidDelta
from chatql.store.ids import new_id
from chatql.store.limits import MAX_TOKENS, NAME_CHARS, TYPE_CHARS, check_length

__all__ = [
    "DELTA_ACTIONS",
    "ChunkEvent",
    "ChunkIn",
    "MessageState",
    "PushOutcome",
    "StreamState",
    "Undo",
    "apply_chunks",
    "apply_delta",
    "apply_event",
    "copy_json",
    "snapshot_events",
]

DELTA_ACTIONS = ("append", "replace", "merge", "set")
_ROLES = ("USER", "ASSISTANT", "SYSTEM", "TOOL")
_DEFAULT_PATH = "content"


class ChunkEvent(TypedDict):
    """One chunk as subscribers receive it (the GraphQL ``Chunk`` in wire names)."""

    streamId: str
    seq: int
    chunkId: str
    messageId: str | None
    blockId: str | None
    threadId: str | None
    type: str
    role: str | None
    props: Any
    delta: bool
    deltaPath: str | None
    deltaAction: str | None
    #: The first ``seq`` this chunk stands for: ``seq`` itself, unless a subscriber's
    #: queue merged queued deltas into it (then the first merged chunk's ``seq``), or
    #: 1 on a snapshot chunk, which stands for the whole stream so far.
    fromSeq: int
    #: True on the chunks of a late-join or resync snapshot: they replace the
    #: client's state for their messages instead of applying to it.
    snapshot: bool


@dataclass(slots=True)
class ChunkIn:
    """A chunk as the producer pushes it (``ChunkInput``); read, never changed.

    Not frozen: a push builds up to 1,000 of them, and a frozen dataclass's
    ``__init__`` costs several times as much.
    """

    type: str
    chunk_id: str | None = None
    message_id: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    role: str | None = None
    props: Any = None
    delta: bool = False
    delta_path: str | None = None
    delta_action: str | None = None
    tokens: int | None = None


@dataclass(slots=True)
class MessageState:
    """A message as merged so far."""

    id: str
    type: str
    role: str
    props: dict[str, Any]
    block_id: str | None = None
    thread_id: str | None = None
    tokens: int | None = None

    def copy(self) -> MessageState:
        return MessageState(self.id, self.type, self.role, copy_json(self.props),
                            self.block_id, self.thread_id, self.tokens)


@dataclass(slots=True)
class StreamState:
    """Everything the reducer keeps for one stream; messages in first-arrival order."""

    stream_id: str
    seq: int = 0
    messages: dict[str, MessageState] = field(default_factory=dict)
    #: producer message id -> service message id
    aliases: dict[str, str] = field(default_factory=dict)
    seen_chunks: set[str] = field(default_factory=set)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """What one accepted batch did."""

    events: list[ChunkEvent]
    duplicates: int
    #: What the batch added to the state besides its messages: producer message id ->
    #: service message id, and the producer's chunk ids (a shared backend saves them).
    aliases: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    #: Token counts the batch set: service message id -> count (the last one wins).
    tokens: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> int:
        return len(self.events)


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (much cheaper than :func:`copy.deepcopy`)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def _check_chunk(chunk: ChunkIn, index: int) -> None:
    where = f"chunk {index}"
    check_length(chunk.type, f"{where}: type", TYPE_CHARS)
    if chunk.role is not None and chunk.role not in _ROLES:
        raise InvalidArgument(f"{where}: role must be one of {', '.join(_ROLES)}")
    if chunk.props is not None and not isinstance(chunk.props, dict):
        raise InvalidArgument(f"{where}: props must be a JSON object")
    for name in ("chunk_id", "message_id", "block_id", "thread_id"):
        value = getattr(chunk, name)
        if value is not None:
            check_length(value, f"{where}: {name}", NAME_CHARS)
    tokens = chunk.tokens
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_TOKENS
    ):
        raise InvalidArgument(f"{where}: tokens must be a whole number from 0 to {MAX_TOKENS}")
    if chunk.delta and chunk.type != "event":
        action = chunk.delta_action or "append"
        if action not in DELTA_ACTIONS:
            raise InvalidDelta(
                f"{where}: unknown deltaAction {action!r}; use one of {', '.join(DELTA_ACTIONS)}"
            )


def _split(path: str | None) -> list[str]:
    if path is None:
        path = _DEFAULT_PATH
    return path.split(".") if path else []


def _index(container: list[Any], segment: str, path: str) -> int:
    if not (segment.isascii() and segment.isdigit()) or int(segment) >= len(container):
        raise InvalidDelta(f"deltaPath {path!r}: {segment!r} is not an index of that list")
    return int(segment)


Undo = list[Callable[[], None]]
_MISSING: Any = object()


def _put(container: Any, key: Any, value: Any, undo: Undo | None) -> None:
    """``container[key] = value``, remembering how to take it back."""
    if undo is not None:
        if isinstance(container, dict):
            old = container.get(key, _MISSING)
            if old is _MISSING:
                undo.append(lambda: container.pop(key, None))
            else:
                undo.append(lambda: container.__setitem__(key, old))
        else:
            old = container[key]
            undo.append(lambda: container.__setitem__(key, old))
    container[key] = value


def _append_text(container: Any, key: Any, value: str, undo: Undo | None) -> None:
    """Append in place: with the container's reference dropped first, CPython grows the
    string where it lies instead of copying it, so a long message built from many
    small appends costs linear, not quadratic, time."""
    size = len(container[key])
    if undo is not None:
        undo.append(lambda: container.__setitem__(key, container[key][:size]))
    if isinstance(container, dict):
        text = container.pop(key)
    else:
        text = container[key]
        container[key] = None
    text += value
    container[key] = text


def apply_delta(props: dict[str, Any], path: str | None, action: str | None,
                chunk_props: dict[str, Any] | None, undo: Undo | None = None) -> None:
    """Apply one delta to ``props`` in place; raises InvalidDelta.

    Every change is recorded in ``undo`` (when given) so the caller can take a failed
    batch back; without it ``props`` may be half-changed after an error.
    """
    action = action or "append"
    segments = _split(path)
    shown = _DEFAULT_PATH if path is None else path
    chunk_props = chunk_props or {}
    if not segments:
        if action not in ("merge", "replace", "set"):
            raise InvalidDelta("append needs a deltaPath: the message props are an object")
        if undo is not None:
            saved = dict(props)

            def restore() -> None:
                props.clear()
                props.update(saved)

            undo.append(restore)
        if action != "merge":
            props.clear()
        props.update(copy_json(chunk_props))
        return
    last = segments[-1]
    if last not in chunk_props:
        raise InvalidDelta(f"deltaPath {shown!r}: the chunk's props have no {last!r} entry")
    value = copy_json(chunk_props[last])
    container: Any = props
    for segment in segments[:-1]:
        if isinstance(container, dict):
            child = container.get(segment)
            if child is None:
                child = {}
                _put(container, segment, child, undo)
            container = child
        elif isinstance(container, list):
            container = container[_index(container, segment, shown)]
        else:
            raise InvalidDelta(f"deltaPath {shown!r} runs through a {type(container).__name__}")
    key: Any
    if isinstance(container, dict):
        key = last
    elif isinstance(container, list):
        key = _index(container, last, shown)
    else:
        raise InvalidDelta(f"deltaPath {shown!r} runs through a {type(container).__name__}")
    # Only the type is kept: a reference to the current value would stop the in-place
    # string append below.
    current_type: type[Any] = type(
        container.get(key) if isinstance(container, dict) else container[key]
    )
    missing = current_type is type(None)
    if action == "append":
        if isinstance(value, str) and (missing or current_type is str):
            if missing:
                _put(container, key, value, undo)
            else:
                _append_text(container, key, value, undo)
        elif isinstance(value, list) and (missing or current_type is list):
            if missing:
                _put(container, key, value, undo)
            else:
                items = container[key]
                size = len(items)
                if undo is not None:
                    undo.append(lambda: items.__delitem__(slice(size, None)))
                items.extend(value)
        else:
            raise InvalidDelta(
                f"deltaPath {shown!r}: cannot append a {type(value).__name__}"
                f" to a {current_type.__name__}"
            )
    elif action in ("replace", "set"):
        _put(container, key, value, undo)
    elif action == "merge":
        if not isinstance(value, dict) or not (missing or current_type is dict):
            raise InvalidDelta(f"deltaPath {shown!r}: merge needs an object into an object")
        current = container.get(key) if isinstance(container, dict) else container[key]
        _put(container, key, {**(current or {}), **value}, undo)
    else:
        raise InvalidDelta(f"unknown deltaAction {action!r}")


def _merge_into(message: MessageState | None, event: ChunkEvent,
                undo: Undo | None = None) -> MessageState:
    """``message`` (changed in place, or None when new) after ``event``."""
    props = event["props"] or {}
    if message is None:
        message = MessageState(
            id=event["messageId"] or "",
            type=event["type"],
            role=event["role"] or "ASSISTANT",
            props={} if event["delta"] else copy_json(props),
            block_id=event["blockId"],
            thread_id=event["threadId"],
        )
        if not event["delta"]:
            return message
    elif not event["delta"]:
        if undo is not None:
            kept = message
            old_type, old_props = message.type, message.props

            def restore() -> None:
                kept.type, kept.props = old_type, old_props

            undo.append(restore)
        message.type = event["type"]
        message.props = copy_json(props)
        return message
    apply_delta(message.props, event["deltaPath"], event["deltaAction"], props, undo)
    return message


def apply_event(view: dict[str, MessageState], event: ChunkEvent, *,
                trusted: bool = False) -> None:
    """Apply one published chunk to a subscriber's view (events change nothing).

    On an invalid delta the view is left unchanged and InvalidDelta is raised. A
    ``trusted`` chunk (one the producer side already applied) is merged in place,
    without first copying the message: the broker's view does this for every chunk.
    """
    if event["type"] == "event" or event["messageId"] is None:
        return
    current = view.get(event["messageId"])
    if current is not None and not trusted:
        current = current.copy()
    view[event["messageId"]] = _merge_into(current, event)


def _forget_message(messages: dict[str, MessageState], key: str) -> Callable[[], None]:
    def forget() -> None:
        messages.pop(key, None)

    return forget


def _restore_tokens(message: MessageState, tokens: int | None) -> Callable[[], None]:
    def restore() -> None:
        message.tokens = tokens

    return restore


def _plain(chunk: ChunkIn) -> bool:
    """True when :func:`_check_chunk` has nothing to say about ``chunk`` (the usual
    case, checked without building any message); False sends it to the full check."""
    kind = chunk.type
    if type(kind) is not str or not 0 < len(kind) <= TYPE_CHARS:
        return False
    if chunk.role is not None and chunk.role not in _ROLES:
        return False
    if chunk.props is not None and type(chunk.props) is not dict:
        return False
    for name in (chunk.chunk_id, chunk.message_id, chunk.block_id, chunk.thread_id):
        if name is not None and (type(name) is not str or not 0 < len(name) <= NAME_CHARS):
            return False
    tokens = chunk.tokens
    if tokens is not None and (type(tokens) is not int or not 0 <= tokens <= MAX_TOKENS):
        return False
    action = chunk.delta_action
    return not (action and chunk.delta and kind != "event" and action not in DELTA_ACTIONS)


def _join_text(props: dict[str, Any], pieces: list[str], undo: Undo) -> None:
    """Apply consecutive text appends at the default path as one append.

    The caller made sure the value there is text or absent (or null), so every one of
    the appends would have succeeded and their result is the concatenation; one undo
    entry takes them all back.
    """
    added = pieces[0] if len(pieces) == 1 else "".join(pieces)
    old = props.get(_DEFAULT_PATH, _MISSING)
    if old is _MISSING:
        undo.append(lambda: props.pop(_DEFAULT_PATH, None))
        props[_DEFAULT_PATH] = added
    elif old is None:
        undo.append(lambda: props.__setitem__(_DEFAULT_PATH, None))
        props[_DEFAULT_PATH] = added
    else:
        del old  # the only other reference: the append below stays in place
        _append_text(props, _DEFAULT_PATH, added, undo)


def _uncommit(state: StreamState, seq: int, aliases: dict[str, str],
              seen: set[str]) -> Callable[[], None]:
    def uncommit() -> None:
        state.seq = seq
        for alias in aliases:
            state.aliases.pop(alias, None)
        state.seen_chunks.difference_update(seen)
    return uncommit


def apply_chunks(
    state: StreamState,
    chunks: Sequence[ChunkIn],
    *,
    make_id: Callable[[], str] = new_id,
    keep_undo: Undo | None = None,
) -> PushOutcome:
    """Apply a batch to ``state``: all of it, or (on any error) none of it. With
    ``keep_undo``, the steps that take the applied batch back are added to it (run them
    in reverse order to refuse the batch after all: a check the caller makes of its
    result)."""
    for index, chunk in enumerate(chunks):
        if not _plain(chunk):
            _check_chunk(chunk, index)
    stream_id = state.stream_id
    messages = state.messages
    known_aliases = state.aliases
    seen_chunks = state.seen_chunks
    seq = state.seq
    # Changes go straight into the state (no copy: appends stay in place) and are
    # recorded here, to be taken back if any chunk of the batch fails.
    undo: Undo = []
    aliases: dict[str, str] = {}
    seen: set[str] = set()
    events: list[ChunkEvent] = []
    tokens: dict[str, int] = {}
    duplicates = 0
    # Producers stream text as many small appends to one message's content: such runs
    # are gathered here (the props they go into, and the pieces) and applied as one
    # append before anything else touches the state.
    joining: dict[str, Any] | None = None
    pieces: list[str] = []
    try:
        for chunk in chunks:
            chunk_id = chunk.chunk_id
            if chunk_id is not None:
                if chunk_id in seen_chunks or chunk_id in seen:
                    duplicates += 1
                    continue
                seen.add(chunk_id)
            seq += 1
            kind = chunk.type
            message_id: str | None
            if chunk.message_id is not None:
                message_id = aliases.get(chunk.message_id) or known_aliases.get(
                    chunk.message_id)
                if message_id is None and kind != "event":
                    message_id = aliases[chunk.message_id] = make_id()
            else:
                message_id = None if kind == "event" else make_id()
            is_delta = bool(chunk.delta) and kind != "event"
            action = (chunk.delta_action or "append") if is_delta else None
            props = chunk.props
            event: ChunkEvent = {
                "streamId": stream_id,
                "seq": seq,
                "chunkId": chunk_id if chunk_id is not None else f"{stream_id}.{seq}",
                "messageId": message_id,
                "blockId": chunk.block_id,
                "threadId": chunk.thread_id,
                "type": kind,
                "role": chunk.role,
                "props": props,
                "delta": is_delta,
                "deltaPath": chunk.delta_path if is_delta else None,
                "deltaAction": action,
                "fromSeq": seq,
                "snapshot": False,
            }
            events.append(event)
            if message_id is None or kind == "event":
                continue
            message = messages.get(message_id)
            if (
                action == "append" and message is not None and chunk.tokens is None
                and (chunk.delta_path is None or chunk.delta_path == _DEFAULT_PATH)
                and props is not None
                and type(text := props.get(_DEFAULT_PATH)) is str
            ):
                target = message.props
                if target is joining:
                    pieces.append(text)
                    continue
                current = type(target.get(_DEFAULT_PATH))
                if current is str or current is type(None):
                    if joining is not None:
                        _join_text(joining, pieces, undo)
                    joining, pieces = target, [text]
                    continue
            if joining is not None:
                _join_text(joining, pieces, undo)
                joining = None
            merged = _merge_into(message, event, undo)
            if message is None:
                messages[message_id] = merged
                undo.append(_forget_message(messages, message_id))
            if chunk.tokens is not None:
                undo.append(_restore_tokens(merged, merged.tokens))
                merged.tokens = tokens[message_id] = chunk.tokens
        if joining is not None:
            _join_text(joining, pieces, undo)
    except BaseException:
        for step in reversed(undo):
            step()
        raise
    # Nothing raised: commit the batch.
    if keep_undo is not None:
        keep_undo.extend(undo)
        keep_undo.append(_uncommit(state, state.seq, aliases, seen))
    state.seq = seq
    state.aliases.update(aliases)
    state.seen_chunks.update(seen)
    return PushOutcome(events=events, duplicates=duplicates, aliases=aliases, seen=seen,
                       tokens=tokens)


def snapshot_events(stream_id: str, seq: int,
                    messages: Iterable[MessageState]) -> list[ChunkEvent]:
    """The state so far as one non-delta chunk per message, each carrying ``seq``."""
    return [
        ChunkEvent(
            streamId=stream_id,
            seq=seq,
            chunkId=f"{stream_id}.snapshot.{seq}.{index}",
            messageId=message.id,
            blockId=message.block_id,
            threadId=message.thread_id,
            type=message.type,
            role=message.role,
            props=copy_json(message.props),
            delta=False,
            deltaPath=None,
            deltaAction=None,
            fromSeq=1,
            snapshot=True,
        )
        for index, message in enumerate(messages)
    ]
