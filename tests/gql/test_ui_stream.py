"""The translation of chatql chunks into AI SDK UI message chunks, case by case (the
endpoint's tests run it over HTTP on every backend)."""

from __future__ import annotations

from typing import Any

from chatql.gql.transport.ui_stream import UIMessageStream
from chatql.store.streams.reducer import ChunkEvent


def chunk(message: str | None, type: str, props: Any, *, delta: bool = False,
          role: str = "ASSISTANT", block: str | None = "B1", snapshot: bool = False,
          stream: str = "s1", path: str | None = None, action: str | None = None) -> ChunkEvent:
    return ChunkEvent(streamId=stream, seq=2, chunkId="c", messageId=message, blockId=block,
                      threadId=None, type=type, role=role, props=props, delta=delta,
                      deltaPath=path, deltaAction=action, fromSeq=2, snapshot=snapshot)


def end(status: str, **extra: Any) -> ChunkEvent:
    return chunk(None, "event", {"event": "stream_end", "status": status, **extra})


def run(*events: ChunkEvent, stream: str | None = "s1") -> list[dict[str, Any]]:
    translator = UIMessageStream(stream_id=stream)
    return [ui for event in events for ui in translator.feed(event)]


def test_a_replaced_text_that_does_not_extend_the_sent_one_starts_a_new_part() -> None:
    assert run(
        chunk("a", "text", {"content": "Helo"}),
        chunk("a", "text", {"content": "Hello"}),
        chunk("a", "text", {"content": "Hi"}),
        end("completed"),
    ) == [
        {"type": "start", "messageId": "a"}, {"type": "start-step"},
        {"type": "text-start", "id": "a"}, {"type": "text-delta", "id": "a", "delta": "Helo"},
        {"type": "text-end", "id": "a"},
        {"type": "text-start", "id": "a:1"}, {"type": "text-delta", "id": "a:1", "delta": "Hello"},
        {"type": "text-end", "id": "a:1"},
        {"type": "text-start", "id": "a:2"}, {"type": "text-delta", "id": "a:2", "delta": "Hi"},
        {"type": "text-end", "id": "a:2"},
        {"type": "finish-step"}, {"type": "finish"},
    ]


def test_a_text_that_grows_after_its_block_ended_goes_on_in_a_new_part() -> None:
    ui = run(
        chunk("a", "text", {"content": "One"}),
        chunk("b", "thinking", {"content": "hm"}, block="B2"),
        chunk("a", "text", {"content": " two"}, delta=True),
    )
    assert ui[-2:] == [{"type": "text-start", "id": "a:1"},
                       {"type": "text-delta", "id": "a:1", "delta": " two"}]


def test_data_parts_resend_whole_props_under_the_same_id_only_when_changed() -> None:
    assert run(
        chunk("d", "chart", {"points": [1]}),
        chunk("d", "chart", {"points": [2]}, delta=True, path="points"),
        chunk("d", "chart", {"points": [1, 2]}),
    )[2:] == [
        {"type": "data-chart", "id": "d", "data": {"points": [1]}},
        {"type": "data-chart", "id": "d", "data": {"points": [1, 2]}},
    ]


def test_a_result_for_a_call_never_shown_shows_the_call_first() -> None:
    assert run(chunk("r", "tool_result", {"tool_call_id": "x", "content": {"ok": True}},
                     role="TOOL"))[2:] == [
        {"type": "tool-input-start", "toolCallId": "x", "toolName": "tool",
         "providerExecuted": True},
        {"type": "tool-input-available", "toolCallId": "x", "toolName": "tool", "input": {},
         "providerExecuted": True},
        {"type": "tool-output-available", "toolCallId": "x", "output": {"ok": True}},
    ]


def test_arguments_that_are_not_json_are_given_as_text() -> None:
    ui = run(chunk("c", "tool_call", {"id": "k", "name": "sh", "arguments": "ls -l"}),
             end("completed"))
    assert {"type": "tool-input-available", "toolCallId": "k", "toolName": "sh",
            "input": "ls -l", "providerExecuted": True} in ui


def test_a_snapshot_gives_the_same_parts_as_the_chunks_it_stands_for() -> None:
    live = run(chunk("a", "text", {"content": "Hi "}, delta=True),
               chunk("a", "text", {"content": "there"}, delta=True), end("completed"))
    late = run(chunk("a", "text", {"content": "Hi there"}, snapshot=True), end("completed"))
    assert late == [
        {"type": "start", "messageId": "a"}, {"type": "start-step"},
        {"type": "text-start", "id": "a"},
        {"type": "text-delta", "id": "a", "delta": "Hi there"},
        {"type": "text-end", "id": "a"}, {"type": "finish-step"}, {"type": "finish"},
    ]
    assert [u for u in live if u["type"] != "text-delta"] == [
        u for u in late if u["type"] != "text-delta"]


def test_the_persons_messages_events_and_other_streams_send_nothing() -> None:
    assert run(chunk("q", "user_input", {"content": "hi"}, role="USER"),
               chunk(None, "event", {"event": "block_start"}),
               chunk("a", "text", {"content": "x"}, stream="other")) == []


def test_endings() -> None:
    assert run(end("interrupted")) == [{"type": "start"}, {"type": "abort"}]
    assert run(end("failed", error="boom")) == [
        {"type": "start"}, {"type": "error", "errorText": "boom"}, {"type": "finish"}]
    translator = UIMessageStream(stream_id="s1")
    translator.feed(end("completed"))
    assert translator.finished and translator.feed(chunk("a", "text", {"content": "x"})) == []
