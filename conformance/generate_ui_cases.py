"""Writes ``conformance/ui/cases.json``: recorded replies and their UI message chunks.

Run from the repository root: ``.venv/bin/python conformance/generate_ui_cases.py``.
Each case is one reply's chunks exactly as subscribers receive them (made by the real
reducer from a producer's batches, framed by ``stream_start``/``stream_end``; a late join
gets the snapshot instead of the chunks before it), the UI message chunks the service's
``POST /ai/chat`` mapper (``gql.transport.ui_stream.UIMessageStream``) sends for them, and the final
UI message parts both front ends must end up with. The Python test fails when the file
drifts from what this script writes; the TypeScript test maps the same chunks with the
client's mapper and reads both chunk lists with the AI SDK into the same parts.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chatql.gql.transport.ui_stream import UIMessageStream  # noqa: E402
from chatql.store.streams.reducer import (  # noqa: E402
    ChunkEvent,
    ChunkIn,
    MessageState,
    StreamState,
    apply_chunks,
    snapshot_events,
)

OUT = ROOT / "conformance" / "ui" / "cases.json"
STREAM = "st1"


def event(state: StreamState, props: dict[str, Any]) -> ChunkEvent:
    seq = state.next_seq()
    return ChunkEvent(streamId=STREAM, seq=seq, chunkId=f"{STREAM}.{seq}", messageId=None,
                      blockId=None, threadId=None, type="event", role=None, props=props,
                      delta=False, deltaPath=None, deltaAction=None, fromSeq=seq,
                      snapshot=False)


def record(batches: list[list[ChunkIn]], end: dict[str, Any], *,
           join_after: int | None = None) -> list[ChunkEvent]:
    """The chunks a subscriber receives; with ``join_after`` it joins after that many
    batches and gets their snapshot first."""
    counter = itertools.count(1)
    state = StreamState(stream_id=STREAM)
    chunks = [event(state, {"event": "stream_start", "requestId": "r1"})]
    for index, batch in enumerate(batches):
        if join_after is not None and index == join_after:
            messages: list[MessageState] = list(state.messages.values())
            chunks = snapshot_events(STREAM, state.seq, messages)
        outcome = apply_chunks(state, batch, make_id=lambda: f"msg-{next(counter)}")
        chunks.extend(outcome.events)
    chunks.append(event(state, {"event": "stream_end", **end}))
    return chunks


def text(message_id: str, type: str, content: str, *, block: str = "b1",
         delta: bool = True) -> ChunkIn:
    return ChunkIn(type=type, message_id=message_id, block_id=block, props={"content": content},
                   delta=delta, delta_action="append" if delta else None)


def tool_args(message_id: str, piece: str) -> ChunkIn:
    return ChunkIn(type="tool_call", message_id=message_id, block_id="b1",
                   props={"arguments": piece}, delta=True, delta_path="arguments",
                   delta_action="append")


THINK_TOOL_TEXT = [
    [text("think", "thinking", "Let me look", delta=False)],
    [text("think", "thinking", " it up.")],
    [ChunkIn(type="tool_call", message_id="call", block_id="b1",
             props={"id": "call-1", "name": "weather", "arguments": ""})],
    [tool_args("call", '{"city":')],
    [tool_args("call", ' "Paris"}')],
    [ChunkIn(type="tool_result", message_id="result", role="TOOL", block_id="b1",
             props={"tool_call_id": "call-1", "content": {"temperature": 21}})],
    [text("answer", "text", "It is", block="b2", delta=False)],
    [text("answer", "text", " 21 °C", block="b2")],
    [text("more", "text", "Enjoy.", block="b2", delta=False)],
]

THINK_TOOL_TEXT_PARTS: list[dict[str, Any]] = [
    {"type": "reasoning", "text": "Let me look it up.", "state": "done"},
    {"type": "tool-weather", "toolCallId": "call-1", "state": "output-available",
     "input": {"city": "Paris"}, "output": {"temperature": 21}, "providerExecuted": True},
    {"type": "text", "text": "It is 21 °C", "state": "done"},
    {"type": "text", "text": "Enjoy.", "state": "done"},
]

CASES: list[tuple[str, list[ChunkEvent], list[dict[str, Any]]]] = [
    ("thinking, a tool call in pieces, its result, text in two blocks",
     record(THINK_TOOL_TEXT, {"status": "completed"}), THINK_TOOL_TEXT_PARTS),
    ("a late join: the snapshot, then the rest",
     record(THINK_TOOL_TEXT, {"status": "completed"}, join_after=4), THINK_TOOL_TEXT_PARTS),
    ("a stopped reply",
     record([[text("a", "text", "Once upon", delta=False)], [text("a", "text", " a time")]],
            {"status": "interrupted"}),
     [{"type": "text", "text": "Once upon a time", "state": "done"}]),
    ("a failed reply",
     record([[text("a", "text", "Work", delta=False)], [text("a", "text", "ing")]],
            {"status": "failed", "error": "the model is unavailable"}),
     [{"type": "text", "text": "Working", "state": "done"}]),
    ("a custom typed message is a data part, replaced when it changes",
     record([[text("a", "text", "Here is a chart.", delta=False)],
             [ChunkIn(type="chart", message_id="c", block_id="b1",
                      props={"kind": "bar", "values": [1]})],
             [ChunkIn(type="chart", message_id="c", block_id="b1", props={"values": [2]},
                      delta=True, delta_path="values", delta_action="append")]],
            {"status": "completed"}),
     [{"type": "text", "text": "Here is a chart.", "state": "done"},
      {"type": "data-chart", "id": "msg-2", "data": {"kind": "bar", "values": [1, 2]}}]),
    ("a tool call that asks for approval: the request names the interrupt (the call's id)",
     record([[text("a", "text", "I need your approval.", delta=False)],
             [ChunkIn(type="tool_call", message_id="call", block_id="b1",
                      props={"id": "call-7", "name": "send_email", "arguments": "",
                             "needsApproval": True})],
             [tool_args("call", '{"to": "ceo@acme.test"}')]],
            {"status": "awaiting_input"}),
     [{"type": "text", "text": "I need your approval.", "state": "done"},
      {"type": "tool-send_email", "toolCallId": "call-7", "state": "approval-requested",
       "input": {"to": "ceo@acme.test"}, "providerExecuted": True,
       "approval": {"id": "msg-2"}}]),
]


def python_chunks(chunks: list[ChunkEvent]) -> list[dict[str, Any]]:
    mapper = UIMessageStream(stream_id=STREAM)
    return [ui for chunk in chunks for ui in mapper.feed(chunk)]


def build() -> dict[str, Any]:
    return {"cases": [{"name": name, "chunks": chunks, "python": python_chunks(chunks),
                       "parts": parts} for name, chunks, parts in CASES]}


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {len(CASES)} cases to {OUT.relative_to(ROOT)}")
