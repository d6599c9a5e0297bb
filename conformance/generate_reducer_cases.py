"""Writes ``conformance/reducer/generated.json``: random chunk sequences (fixed seed).

Run from the repository root: ``.venv/bin/python conformance/generate_reducer_cases.py``.
The expected results are those of ``store.streams.reducer`` at generation time; the cases pin
that behaviour (the Python test fails if it drifts) and hold the TypeScript reducer of
``clients/js`` to exactly the same results, including which batches are refused.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chatql.store.errors import InvalidArgument, InvalidDelta  # noqa: E402
from chatql.store.streams.reducer import ChunkIn, StreamState, apply_chunks  # noqa: E402

SEED = 20261201
CASE_COUNT = 160
MESSAGE_IDS = ["m1", "m2", "m3", None]
PATHS = [None, "content", "arguments", "a.b", "a", "l", "l.0", "l.1", "l.0.t", "o", ""]
ACTIONS = [None, None, "append", "append", "replace", "set", "merge", "merge"]
TYPES = ["text", "thinking", "tool_call", "event"]


def value(rng: random.Random, action: str | None) -> Any:
    if rng.random() < 0.85:
        # Mostly what the action takes, so that most batches apply.
        kind = {"merge": "dict", "replace": rng.choice(["str", "num", "dict", "null"]),
                "set": rng.choice(["str", "list", "dict"])}.get(action or "append", "str")
        if kind == "str" and rng.random() < 0.2:
            kind = "list"
    else:
        kind = rng.choice(["str", "list", "dict", "num", "null"])
    if kind == "str":
        return rng.choice(["", "a", "lo", " wörld", "🌍", "{\"x\":"])
    if kind == "list":
        return rng.choice([[], ["x"], [{"t": "p"}], [1, 2]])
    if kind == "dict":
        return rng.choice([{}, {"k": 1}, {"t": "q", "b": {"c": 2}}])
    if kind == "num":
        return rng.choice([0, 7, -1.5])
    return None


def chunk(rng: random.Random, ids: itertools.count[int]) -> dict[str, Any]:
    raw: dict[str, Any] = {"type": rng.choice(TYPES)}
    message_id = rng.choice(MESSAGE_IDS)
    if message_id is not None:
        raw["messageId"] = message_id
    if rng.random() < 0.3:
        raw["chunkId"] = f"c{rng.randint(1, 6)}"
    if rng.random() < 0.2:
        raw["blockId"] = rng.choice(["B1", "B2"])
        raw["threadId"] = rng.choice(["T1", "T2"])
    if rng.random() < 0.1:
        raw["role"] = rng.choice(["ASSISTANT", "TOOL"])
    if rng.random() < 0.7:
        raw["delta"] = True
        path = rng.choice(PATHS)
        if path is not None:
            raw["deltaPath"] = path
        action = "bogus" if rng.random() < 0.02 else rng.choice(ACTIONS)
        if action is not None:
            raw["deltaAction"] = action
        last = (path if path is not None else "content").split(".")[-1]
        if path == "":
            raw["props"] = rng.choice([{"content": "x"}, {"a": {"b": "y"}}, {"l": ["z"]}])
        elif rng.random() < 0.95:
            raw["props"] = {last: value(rng, action)}
    else:
        raw["props"] = rng.choice([{"content": "start"}, {"a": {"b": ""}}, {"l": [{"t": ""}]},
                                   {"o": {}}, {"arguments": ""}, {}])
    return raw


def to_chunk(raw: dict[str, Any]) -> ChunkIn:
    return ChunkIn(type=raw["type"], chunk_id=raw.get("chunkId"),
                   message_id=raw.get("messageId"), block_id=raw.get("blockId"),
                   thread_id=raw.get("threadId"), role=raw.get("role"),
                   props=raw.get("props"), delta=bool(raw.get("delta")),
                   delta_path=raw.get("deltaPath"), delta_action=raw.get("deltaAction"))


def make_case(rng: random.Random, number: int) -> dict[str, Any]:
    state = StreamState(stream_id="s")
    counter = itertools.count(1)
    steps = []
    for _ in range(rng.randint(1, 6)):
        batch = [chunk(rng, counter) for _ in range(rng.randint(1, 8))]
        try:
            outcome = apply_chunks(state, [to_chunk(c) for c in batch],
                                   make_id=lambda: f"svc-{next(counter)}")
        except InvalidDelta:
            steps.append({"batch": batch, "error": "INVALID_DELTA"})
            continue
        except InvalidArgument:
            steps.append({"batch": batch, "error": "INVALID_ARGUMENT"})
            continue
        steps.append({"batch": batch, "accepted": outcome.accepted,
                      "duplicates": outcome.duplicates, "seq": state.seq})
    producer = {service: name for name, service in state.aliases.items()}
    messages = [{"id": producer.get(m.id), "type": m.type, "role": m.role, "props": m.props,
                 "blockId": m.block_id, "threadId": m.thread_id}
                for m in state.messages.values()]
    return {"name": f"generated sequence {number}", "steps": steps, "messages": messages}


def main() -> None:
    rng = random.Random(SEED)
    cases = [make_case(rng, number) for number in range(1, CASE_COUNT + 1)]
    out = ROOT / "conformance" / "reducer" / "generated.json"
    description = ("Random chunk sequences (conformance/generate_reducer_cases.py, "
                   f"seed {SEED}); expectations recorded from store.streams.reducer.")
    lines = ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases)
    out.write_text(f'{{"description": {json.dumps(description)},\n"cases": [\n{lines}\n]}}\n')
    steps = [step for case in cases for step in case["steps"]]
    refused = sum("error" in step for step in steps)
    print(f"{len(cases)} cases, {len(steps)} batches, {refused} refused -> {out}")


if __name__ == "__main__":
    main()
