"""The reducer conformance suite (``conformance/reducer/*.json``) against ``store.streams.reducer``.

The same JSON cases run against the TypeScript reducer of ``clients/js``, so a case either
implementation disagrees with fails. Each case is a list of ``pushChunks`` batches (each
accepted whole — with its ``accepted``/``duplicates`` counts and the stream's ``seq`` — or
refused with an error code, leaving everything as it was) and the messages that result,
in first-arrival order. Every case also replays the published chunks through the
subscriber-side ``apply_event`` and expects the same messages.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from chatql.store.errors import InvalidArgument, InvalidDelta
from chatql.store.streams.reducer import (
    ChunkEvent,
    ChunkIn,
    MessageState,
    StreamState,
    apply_chunks,
    apply_event,
)

CASES_DIR = Path(__file__).resolve().parents[2] / "conformance" / "reducer"
CODES = {InvalidDelta: "INVALID_DELTA", InvalidArgument: "INVALID_ARGUMENT"}


def load_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            cases.append((f"{path.stem}: {case['name']}", case))
    return cases


CASES = load_cases()


def test_the_suite_is_large_enough() -> None:
    assert len(CASES) >= 200
    assert len({name for name, _ in CASES}) == len(CASES), "case names must be unique"


def to_chunk(raw: dict[str, Any]) -> ChunkIn:
    return ChunkIn(
        type=raw["type"],
        chunk_id=raw.get("chunkId"),
        message_id=raw.get("messageId"),
        block_id=raw.get("blockId"),
        thread_id=raw.get("threadId"),
        role=raw.get("role"),
        props=raw.get("props"),
        delta=bool(raw.get("delta")),
        delta_path=raw.get("deltaPath"),
        delta_action=raw.get("deltaAction"),
    )


def shown(messages: list[MessageState], producer_ids: dict[str, str]) -> list[dict[str, Any]]:
    return [{"id": producer_ids.get(m.id), "type": m.type, "role": m.role, "props": m.props,
             "blockId": m.block_id, "threadId": m.thread_id} for m in messages]


def expected(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": m["id"], "type": m["type"], "role": m.get("role", "ASSISTANT"),
             "props": m["props"], "blockId": m.get("blockId"), "threadId": m.get("threadId")}
            for m in case["messages"]]


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_case(name: str, case: dict[str, Any]) -> None:
    counter = itertools.count(1)
    state = StreamState(stream_id="s")
    view: dict[str, MessageState] = {}
    published: list[ChunkEvent] = []
    for step in case["steps"]:
        batch = [to_chunk(raw) for raw in step["batch"]]
        before = json.dumps(shown(list(state.messages.values()), {}), sort_keys=True)
        seq_before, seen_before = state.seq, set(state.seen_chunks)
        if "error" in step:
            with pytest.raises((InvalidDelta, InvalidArgument)) as raised:
                apply_chunks(state, batch, make_id=lambda: f"svc-{next(counter)}")
            assert CODES[type(raised.value)] == step["error"]
            # Refused whole: nothing changed.
            assert json.dumps(shown(list(state.messages.values()), {}), sort_keys=True) == before
            assert (state.seq, state.seen_chunks) == (seq_before, seen_before)
            continue
        outcome = apply_chunks(state, batch, make_id=lambda: f"svc-{next(counter)}")
        assert (outcome.accepted, outcome.duplicates) == (step["accepted"], step["duplicates"])
        if "seq" in step:
            assert state.seq == step["seq"]
        published.extend(outcome.events)
    producer_ids = {service: producer for producer, service in state.aliases.items()}
    want = expected(case)
    assert shown(list(state.messages.values()), producer_ids) == want
    for event in published:
        apply_event(view, event)
    assert shown(list(view.values()), producer_ids) == want
