"""The stream reducer (by the merging rules), including property-based equivalence.

The property tests compare the producer-side buffer with an independent, deliberately
plain client implementation that only sees the published chunks (with service ids) —
what a subscriber's front end would do.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatql.store.errors import InvalidArgument, InvalidDelta
from chatql.store.streams.reducer import (
    ChunkEvent,
    ChunkIn,
    MessageState,
    StreamState,
    apply_chunks,
    apply_event,
    snapshot_events,
)
from tests.client_reducer import client_apply


def counter_ids() -> Any:
    numbers = itertools.count(1)
    return lambda: f"svc{next(numbers)}"


def push(state: StreamState, *chunks: ChunkIn) -> list[ChunkEvent]:
    return apply_chunks(state, chunks, make_id=counter_ids_for(state)).events


_ID_SOURCES: dict[int, Any] = {}


def counter_ids_for(state: StreamState) -> Any:
    return _ID_SOURCES.setdefault(id(state), counter_ids())


def props_of(state: StreamState) -> list[tuple[str, dict[str, Any]]]:
    return [(m.type, m.props) for m in state.messages.values()]


# ---- examples of each rule -------------------------------------------------------


def test_deltas_merge_by_message_id_and_default_path_is_content() -> None:
    state = StreamState("s1")
    push(state,
         ChunkIn(type="text", message_id="M1", props={"content": "Hel"}, delta=True),
         ChunkIn(type="text", message_id="M1", props={"content": "lo"}, delta=True),
         ChunkIn(type="text", props={"content": "alone"}))
    assert props_of(state) == [("text", {"content": "Hello"}), ("text", {"content": "alone"})]


def test_service_ids_replace_producer_ids_and_stay_stable() -> None:
    state = StreamState("s1")
    first = push(state, ChunkIn(type="text", message_id="M1", props={"content": "a"}))
    second = push(state, ChunkIn(type="text", message_id="M1", props={"content": "b"},
                                 delta=True))
    assert first[0]["messageId"] == second[0]["messageId"] != "M1"
    assert list(state.messages) == [first[0]["messageId"]]


def test_nested_paths_list_indexes_and_actions() -> None:
    state = StreamState("s1")
    push(
        state,
        ChunkIn(type="tool_call", message_id="T", props={"name": "search", "items": [{"a": 1}]}),
        ChunkIn(type="tool_call", message_id="T", props={"arguments": '{"q":'}, delta=True,
                delta_path="arguments"),
        ChunkIn(type="tool_call", message_id="T", props={"arguments": '"x"}'}, delta=True,
                delta_path="arguments"),
        ChunkIn(type="tool_call", message_id="T", props={"a": 2}, delta=True,
                delta_path="items.0.a", delta_action="replace"),
        ChunkIn(type="tool_call", message_id="T", props={"deep": 5}, delta=True,
                delta_path="x.y.deep", delta_action="set"),
        ChunkIn(type="tool_call", message_id="T", props={"x": {"z": 1}}, delta=True,
                delta_path="x", delta_action="merge"),
        ChunkIn(type="tool_call", message_id="T", props={"items": [{"b": 1}]}, delta=True,
                delta_path="items"),
    )
    assert props_of(state) == [("tool_call", {
        "name": "search", "arguments": '{"q":"x"}', "items": [{"a": 2}, {"b": 1}],
        "x": {"y": {"deep": 5}, "z": 1}})]


def test_empty_path_merges_or_replaces_whole_props() -> None:
    state = StreamState("s1")
    push(state,
         ChunkIn(type="text", message_id="M", props={"a": 1, "b": 1}),
         ChunkIn(type="text", message_id="M", props={"b": 2, "c": 3}, delta=True,
                 delta_path="", delta_action="merge"))
    assert props_of(state) == [("text", {"a": 1, "b": 2, "c": 3})]
    push(state, ChunkIn(type="text", message_id="M", props={"z": 0}, delta=True,
                        delta_path="", delta_action="replace"))
    assert props_of(state) == [("text", {"z": 0})]


def test_non_delta_chunk_replaces_type_and_props() -> None:
    state = StreamState("s1")
    push(state,
         ChunkIn(type="loading", message_id="M", props={"content": "wait"}),
         ChunkIn(type="text", message_id="M", props={"content": "done"}))
    assert props_of(state) == [("text", {"content": "done"})]


@pytest.mark.parametrize(
    "bad",
    [
        ChunkIn(type="text", message_id="M", props={"content": {"x": 1}}, delta=True),
        ChunkIn(type="text", message_id="M", props={"content": 5}, delta=True),
        ChunkIn(type="text", message_id="M", props={"q": "x"}, delta=True,
                delta_path="content.q"),
        ChunkIn(type="text", message_id="M", props={"content": "x"}, delta=True,
                delta_action="explode"),
        ChunkIn(type="text", message_id="M", props={"other": "x"}, delta=True),
        ChunkIn(type="text", message_id="M", props={"list": 1}, delta=True,
                delta_path="list.7", delta_action="set"),
        ChunkIn(type="text", message_id="M", props={"content": "x"}, delta=True,
                delta_path="", delta_action="append"),
        ChunkIn(type="text", message_id="M", props={"content": [1]}, delta=True,
                delta_action="merge"),
    ],
)
def test_a_delta_that_cannot_apply_rejects_the_whole_batch(bad: ChunkIn) -> None:
    state = StreamState("s1")
    push(state, ChunkIn(type="text", message_id="M", chunk_id="c0",
                        props={"content": "ok", "list": [1]}))
    before = (state.seq, props_of(state), dict(state.aliases), set(state.seen_chunks))
    with pytest.raises(InvalidDelta):
        push(state,
             ChunkIn(type="text", message_id="M", chunk_id="c1", props={"content": "!"},
                     delta=True),
             ChunkIn(type="text", message_id="N", props={"content": "new"}),
             bad)
    assert (state.seq, props_of(state), dict(state.aliases), set(state.seen_chunks)) == before


def test_invalid_fields_are_invalid_argument() -> None:
    state = StreamState("s1")
    for bad in (ChunkIn(type=""), ChunkIn(type="text", role="ROBOT"),
                ChunkIn(type="text", props=[1])):  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument):
            push(state, bad)
    assert state.seq == 0 and not state.messages


def test_duplicates_are_counted_and_not_sequenced() -> None:
    state = StreamState("s1")
    state.next_seq()  # stream_start
    out = apply_chunks(state, [ChunkIn(type="text", chunk_id="a", props={"content": "x"}),
                               ChunkIn(type="text", chunk_id="a", props={"content": "x"})])
    again = apply_chunks(state, [ChunkIn(type="text", chunk_id="a", props={"content": "x"}),
                                 ChunkIn(type="text", props={"content": "y"})])
    assert (out.accepted, out.duplicates, again.accepted, again.duplicates) == (1, 1, 1, 1)
    assert [e["seq"] for e in out.events + again.events] == [2, 3]
    assert again.events[0]["chunkId"]  # generated
    assert len(state.messages) == 2


def test_events_are_delivered_but_never_become_messages() -> None:
    state = StreamState("s1")
    events = push(state,
                  ChunkIn(type="text", message_id="M", props={"content": "x"}),
                  ChunkIn(type="event", message_id="M", props={"event": "message_end"}))
    assert len(events) == 2 and events[1]["messageId"] == events[0]["messageId"]
    assert len(state.messages) == 1


# ---- property: buffered state == what a plain subscriber computes ---------------------


def normalise(view: Any) -> Any:
    import json

    return json.loads(json.dumps(view))


producer_ids = st.sampled_from(["M1", "M2", "M3", None])
paths = st.sampled_from([None, "content", "arguments", "a.b", "items", "items.0", "", "x"])
leaf = st.one_of(st.text(max_size=3), st.lists(st.integers(0, 3), max_size=2),
                 st.dictionaries(st.sampled_from(["p", "q"]), st.integers(0, 3), max_size=2),
                 st.integers(0, 3))


@st.composite
def chunks(draw: Any) -> ChunkIn:
    delta = draw(st.booleans())
    path = draw(paths)
    action = draw(st.sampled_from([None, "append", "replace", "merge", "set"]))
    keys = ["content", "arguments", "b", "items", "0", "x", "p"]
    props = draw(st.dictionaries(st.sampled_from(keys), leaf, max_size=3))
    kind = draw(st.sampled_from(["text", "thinking", "tool_call", "event"]))
    return ChunkIn(
        type=kind,
        chunk_id=draw(st.one_of(st.none(), st.sampled_from(["c1", "c2", "c3", "c4", "c5"]))),
        message_id=draw(producer_ids),
        props=props,
        delta=delta,
        delta_path=path,
        delta_action=action,
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(chunks(), min_size=1, max_size=4), max_size=8))
def test_persisted_state_equals_what_a_subscriber_applies(batches: list[list[ChunkIn]]) -> None:
    state = StreamState("s")
    state.next_seq()
    client: dict[str, dict[str, Any]] = {}
    view: dict[str, MessageState] = {}
    seqs: list[int] = []
    ids = counter_ids()
    for batch in batches:
        before = normalise({k: (m.type, m.props) for k, m in state.messages.items()})
        try:
            outcome = apply_chunks(state, batch, make_id=ids)
        except InvalidDelta:
            after = normalise({k: (m.type, m.props) for k, m in state.messages.items()})
            assert after == before  # all or nothing
            continue
        for event in outcome.events:
            seqs.append(event["seq"])
            client_apply(client, event)
            apply_event(view, event)
    buffered = normalise({k: {"type": m.type, "props": m.props}
                          for k, m in state.messages.items()})
    assert normalise(client) == buffered
    assert normalise({k: {"type": m.type, "props": m.props} for k, m in view.items()}) == buffered
    assert seqs == list(range(2, 2 + len(seqs)))
    # A late joiner's snapshot rebuilds the same state.
    late: dict[str, dict[str, Any]] = {}
    for event in snapshot_events("s", state.seq, state.messages.values()):
        assert event["seq"] == state.seq
        client_apply(late, event)
    assert normalise(late) == buffered


def test_chunk_tokens_set_the_count_last_value_wins() -> None:
    state = StreamState("s")
    push(state, ChunkIn(type="text", message_id="m", props={"content": "a"}, tokens=3))
    push(state, ChunkIn(type="text", message_id="m", props={"content": "b"}, delta=True))
    [message] = state.messages.values()
    assert message.tokens == 3  # a chunk without tokens leaves the count
    push(state, ChunkIn(type="text", message_id="m", props={"content": "c"}, delta=True,
                        tokens=9),
         ChunkIn(type="text", message_id="m", props={"content": "d"}, delta=True, tokens=7))
    assert message.tokens == 7
    assert message.copy().tokens == 7


def test_a_refused_batch_takes_its_token_counts_back() -> None:
    state = StreamState("s")
    push(state, ChunkIn(type="text", message_id="m", props={"content": "a"}, tokens=3))
    with pytest.raises(InvalidDelta):
        push(state, ChunkIn(type="text", message_id="m", props={"content": "b"}, delta=True,
                            tokens=50),
             ChunkIn(type="text", message_id="m", props={"content": {}}, delta=True))
    [message] = state.messages.values()
    assert (message.props, message.tokens) == ({"content": "a"}, 3)
    for bad in (-1, 2**53 + 1, True, 1.5):
        with pytest.raises(InvalidArgument):
            push(state, ChunkIn(type="text", message_id="m", tokens=bad))  # type: ignore[arg-type]
    assert message.tokens == 3


# ---- runs of text appends (applied as one append per message) -----------------------


def state_of(state: StreamState) -> Any:
    return normalise({
        "seq": state.seq,
        "aliases": state.aliases,
        "seen": sorted(state.seen_chunks),
        "messages": {k: [m.type, m.role, m.props, m.tokens] for k, m in state.messages.items()},
    })


def test_a_run_of_appends_gives_the_same_events_and_state_as_one_chunk_at_a_time() -> None:
    batch = [
        ChunkIn(type="text", message_id="M1", props={"content": "a"}, delta=True),
        ChunkIn(type="text", message_id="M1", props={"content": "b", "t": 1}, delta=True),
        ChunkIn(type="text", message_id="M1", props={"content": "b"}, delta=True),
        ChunkIn(type="text", message_id="M1", props={"content": "b"}, delta=True,
                delta_path="content"),
        ChunkIn(type="text", message_id="M2", props={"content": "x"}, delta=True),
        ChunkIn(type="text", message_id="M2", props={"content": "x"}, delta=True),
        ChunkIn(type="text", message_id="M1", props={"content": "c"}, delta=True,
                delta_path="content", delta_action="append"),
        ChunkIn(type="text", message_id="M1", props={"content": "d"}, delta=True,
                tokens=4),
        ChunkIn(type="text", message_id="M1", props={"title": "T"}, delta=True,
                delta_path="title", delta_action="set"),
        ChunkIn(type="text", message_id="M1", props={"content": "e"}, delta=True),
        ChunkIn(type="event", props={"event": "tick"}),
        ChunkIn(type="text", message_id="M2", props={"content": "y"}, delta=True,
                chunk_id="k1"),
        ChunkIn(type="text", message_id="M2", props={"content": "z"}, delta=True,
                chunk_id="k1"),
        ChunkIn(type="text", message_id="M1", props={"content": "f"}, delta=True),
    ]
    whole, single = StreamState("s"), StreamState("s")
    whole_ids, single_ids = counter_ids(), counter_ids()
    events = apply_chunks(whole, batch, make_id=whole_ids).events
    one_by_one = [e for chunk in batch
                  for e in apply_chunks(single, [chunk], make_id=single_ids).events]
    assert events == one_by_one
    assert state_of(whole) == state_of(single)
    assert whole.messages["svc1"].props == {"content": "abbbcdef", "title": "T"}
    assert whole.messages["svc1"].tokens == 4
    assert whole.messages["svc2"].props == {"content": "xxy"}


def test_appends_onto_a_null_or_missing_content_start_it() -> None:
    state = StreamState("s")
    push(state, ChunkIn(type="text", message_id="M1", props={"content": None, "k": 1}),
         ChunkIn(type="text", message_id="M2", props={"k": 2}))
    push(state, *[ChunkIn(type="text", message_id=m, props={"content": t}, delta=True)
                  for m in ("M1", "M2") for t in ("p", "q")])
    assert props_of(state) == [("text", {"content": "pq", "k": 1}),
                               ("text", {"k": 2, "content": "pq"})]


@pytest.mark.parametrize("bad", [
    ChunkIn(type="text", message_id="M1", props={"content": ["list"]}, delta=True),
    ChunkIn(type="text", message_id="M1", props={"other": "x"}, delta=True),
    ChunkIn(type="text", message_id="M3", props={"content": "x"}, delta=True,
            delta_path="content.deep"),
])
def test_a_failure_after_a_run_of_appends_leaves_the_state_unchanged(bad: ChunkIn) -> None:
    state = StreamState("s")
    push(state, ChunkIn(type="text", message_id="M1", props={"content": "start"}),
         ChunkIn(type="text", message_id="M3", props={"content": "3"}),
         ChunkIn(type="text", message_id="M4", props={"content": None}))
    before = state_of(state)
    batch = [
        *[ChunkIn(type="text", message_id="M4", props={"content": str(n)}, delta=True)
          for n in range(3)],
        *[ChunkIn(type="text", message_id="M1", props={"content": str(n)}, delta=True)
          for n in range(5)],
        ChunkIn(type="text", message_id="M2", props={"content": "new"}, delta=True),
        ChunkIn(type="text", message_id="M2", props={"content": "er"}, delta=True,
                chunk_id="c9", tokens=3),
        ChunkIn(type="text", message_id="M1", props={"content": "!"}, delta=True),
        bad,
        ChunkIn(type="text", message_id="M1", props={"content": "never"}, delta=True),
    ]
    with pytest.raises(InvalidDelta):
        push(state, *batch)
    assert state_of(state) == before
    # The stream carries on from where it was.
    push(state, ChunkIn(type="text", message_id="M1", props={"content": "+"}, delta=True))
    assert state.messages[state.aliases["M1"]].props == {"content": "start+"}
    assert state.seq == 4


def test_appends_to_lists_and_other_paths_keep_their_rules() -> None:
    state = StreamState("s")
    push(state, ChunkIn(type="tool_call", message_id="M1",
                        props={"content": ["a"], "args": "{"}))
    push(state,
         ChunkIn(type="tool_call", message_id="M1", props={"content": ["b"]}, delta=True),
         ChunkIn(type="tool_call", message_id="M1", props={"args": "\"x\""}, delta=True,
                 delta_path="args"),
         ChunkIn(type="tool_call", message_id="M1", props={"content": ["c"]}, delta=True),
         ChunkIn(type="tool_call", message_id="M1", props={"args": "}"}, delta=True,
                 delta_path="args"))
    assert props_of(state) == [("tool_call", {"content": ["a", "b", "c"], "args": "{\"x\"}"})]
    with pytest.raises(InvalidDelta):
        push(state, ChunkIn(type="tool_call", message_id="M1", props={"content": "text"},
                            delta=True))
    assert props_of(state) == [("tool_call", {"content": ["a", "b", "c"], "args": "{\"x\"}"})]


texts = st.sampled_from(["", "a", "bc", "\u00e9"])
run_chunks = st.one_of(
    st.builds(lambda m, t, p: ChunkIn(type="text", message_id=m, props={"content": t},
                                      delta=True, delta_path=p),
              st.sampled_from(["M1", "M2"]), texts, st.sampled_from([None, "content"])),
    chunks(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(run_chunks, min_size=1, max_size=12), max_size=5))
def test_a_batch_does_what_its_chunks_do_one_at_a_time(batches: list[list[ChunkIn]]) -> None:
    whole, single = StreamState("s"), StreamState("s")
    issued = [0, 0]

    def ids_for(side: int) -> Any:
        def make_id() -> str:
            issued[side] += 1
            return f"svc{issued[side]}"

        return make_id

    whole_ids, single_ids = ids_for(0), ids_for(1)
    for batch in batches:
        before = state_of(whole)
        try:
            events = apply_chunks(whole, batch, make_id=whole_ids).events
        except InvalidDelta:
            assert state_of(whole) == before  # all or nothing
            issued[0] = issued[1]  # ids a refused batch drew are drawn again
            continue
        one_by_one = [e for chunk in batch
                      for e in apply_chunks(single, [chunk], make_id=single_ids).events]
        assert normalise(events) == normalise(one_by_one)
        assert state_of(whole) == state_of(single)
