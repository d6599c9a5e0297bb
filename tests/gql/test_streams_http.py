"""Stream producer mutations and resume queries over HTTP (SPEC §8), both backends."""

from __future__ import annotations

from typing import Any

from tests.conftest import GraphQLClient

CREATE = 'mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }'
START = """mutation($input: StartStreamInput!) {
  startStream(input: $input) { id chatId requestId status startedAt } }"""
PUSH = """mutation($id: ID!, $chunks: [ChunkInput!]!) {
  pushChunks(streamId: $id, chunks: $chunks) { accepted duplicates lastSeq } }"""
STEP = """mutation($id: ID!, $step: StepInput!) { recordStep(streamId: $id, step: $step) }"""
END = """mutation($id: ID!, $status: StreamStatus!, $error: String) {
  endStream(streamId: $id, status: $status, error: $error) {
    stream { id status }
    messages { id role type props status sequence requestId assistantId blockId threadId }
    resume { type status stackId stackParentId stackDepth error sequence input output }
  } }"""
STOP = "mutation($chat: ID!) { stopStream(chatId: $chat) }"
MESSAGES = """query($chat: ID!) { messages(chatId: $chat, first: 200) {
  edges { node { id role type props status sequence } } } }"""
LAST = """query($chat: ID!) { lastResume(chatId: $chat) { type status stackId } }"""
RECORDS = """query($chat: ID!) { resumeRecords(chatId: $chat) { type status stackId sequence } }"""


async def stored(client: GraphQLClient, chat: str) -> list[dict[str, Any]]:
    data = await client.data(MESSAGES, {"chat": chat})
    return [edge["node"] for edge in data["messages"]["edges"]]


async def start(client: GraphQLClient, chat: str, **extra: Any) -> str:
    await client.data(CREATE, {"id": chat})
    data = await client.data(START, {"input": {"chatId": chat, "requestId": "r1",
                                                "assistantId": "bot", **extra}})
    stream_id: str = data["startStream"]["id"]
    return stream_id


async def test_stream_persists_merged_messages_in_order(client: GraphQLClient) -> None:
    sid = await start(client, "c1", input={"role": "USER", "type": "user_input",
                                           "props": {"content": "hi"}})
    push = await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m1", "type": "text", "props": {"content": "Hel"}, "delta": True},
        {"messageId": "m2", "type": "thinking", "props": {"content": "hmm"}},
        {"messageId": "m1", "type": "text", "props": {"content": "lo"}, "delta": True},
        {"type": "event", "props": {"event": "message_end"}},
    ]})
    assert push["pushChunks"] == {"accepted": 4, "duplicates": 0, "lastSeq": 5}
    assert await stored(client, "c1") == []  # nothing is written during the stream
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert result["stream"] == {"id": sid, "status": "COMPLETED"}
    got = [(m["type"], m["props"], m["status"], m["sequence"]) for m in result["messages"]]
    assert got == [("user_input", {"content": "hi"}, "COMPLETED", 1),
                   ("text", {"content": "Hello"}, "COMPLETED", 2),
                   ("thinking", {"content": "hmm"}, "COMPLETED", 3)]
    assert result["messages"][1]["requestId"] == "r1"
    assert result["messages"][1]["assistantId"] == "bot"
    assert result["resume"] == []
    assert [m["id"] for m in await stored(client, "c1")] == [m["id"] for m in result["messages"]]


async def test_end_stream_twice_returns_the_same_result_once(client: GraphQLClient) -> None:
    sid = await start(client, "c2")
    await client.data(PUSH, {"id": sid, "chunks": [{"type": "text", "props": {"content": "x"}}]})
    first = await client.data(END, {"id": sid, "status": "COMPLETED"})
    second = await client.data(END, {"id": sid, "status": "COMPLETED"})
    assert first == second
    assert len(await stored(client, "c2")) == 1
    code = await client.error_code(PUSH, {"id": sid, "chunks": [{"type": "text"}]})
    assert code == "STREAM_CLOSED"


async def test_one_active_stream_per_chat_and_unknown_streams(client: GraphQLClient) -> None:
    await start(client, "c3")
    code = await client.error_code(START, {"input": {"chatId": "c3"}})
    assert code == "STREAM_ACTIVE"
    assert await client.error_code(PUSH, {"id": "nope", "chunks": []}) == "STREAM_NOT_FOUND"
    assert await client.error_code(END, {"id": "nope", "status": "FAILED"}) == "STREAM_NOT_FOUND"
    assert await client.error_code(START, {"input": {"chatId": "absent"}}) == "NOT_FOUND"


async def test_invalid_delta_rejects_the_batch_and_keeps_the_stream(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c4")
    await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "a"}}]})
    code = await client.error_code(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "b"}, "delta": True},
        {"messageId": "m", "type": "text", "props": {"content": {"x": 1}}, "delta": True}]})
    assert code == "INVALID_DELTA"
    code = await client.error_code(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "b"}, "delta": True,
         "deltaAction": "explode"}]})
    assert code == "INVALID_DELTA"
    push = await client.data(PUSH, {"id": sid, "chunks": [
        {"messageId": "m", "type": "text", "props": {"content": "c"}, "delta": True}]})
    assert push["pushChunks"]["lastSeq"] == 3  # the rejected batches took no seq
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert [m["props"] for m in result["messages"]] == [{"content": "ac"}]


async def test_push_limits_are_payload_too_large_and_leave_the_stream(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c5")
    too_many = [{"type": "text", "props": {"content": "x"}}] * 1001
    assert await client.error_code(PUSH, {"id": sid, "chunks": too_many}) == "PAYLOAD_TOO_LARGE"
    ok = await client.data(PUSH, {"id": sid, "chunks": too_many[:2]})
    assert ok["pushChunks"]["accepted"] == 2
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert len(result["messages"]) == 2


async def test_failed_stream_writes_resume_steps_newest_running_takes_status(
    client: GraphQLClient,
) -> None:
    sid = await start(client, "c6")
    steps = [
        {"id": "s1", "type": "input", "status": "completed", "stackId": "root"},
        {"id": "s2", "type": "delegate", "stackId": "root", "input": {"agent": "x"}},
        {"id": "s3", "type": "llm", "stackId": "child", "stackParentId": "root",
         "stackDepth": 1},
    ]
    for step in steps:
        assert (await client.data(STEP, {"id": sid, "step": step}))["recordStep"] is True
    await client.data(STEP, {"id": sid, "step": {"id": "s3", "type": "llm",
                                                 "output": {"partial": "ab"}}})
    result = (await client.data(END, {"id": sid, "status": "FAILED", "error": "boom"}))
    resume = result["endStream"]["resume"]
    assert [(r["type"], r["status"], r["stackDepth"], r["sequence"]) for r in resume] == [
        ("input", "completed", 0, 1), ("delegate", "running", 0, 2), ("llm", "failed", 1, 3)]
    assert resume[2]["error"] == "boom" and resume[2]["output"] == {"partial": "ab"}
    assert resume[2]["stackParentId"] == "root"
    assert (await client.data(LAST, {"chat": "c6"}))["lastResume"] == {
        "type": "llm", "status": "failed", "stackId": "child"}
    assert len((await client.data(RECORDS, {"chat": "c6"}))["resumeRecords"]) == 3


async def test_completed_stream_leaves_no_resume_records(client: GraphQLClient) -> None:
    sid = await start(client, "c7")
    await client.data(STEP, {"id": sid, "step": {"id": "s1", "type": "llm"}})
    result = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert result["resume"] == []
    assert (await client.data(LAST, {"chat": "c7"}))["lastResume"] is None


async def test_stop_stream_interrupts_and_closes(client: GraphQLClient) -> None:
    sid = await start(client, "c8")
    await client.data(PUSH, {"id": sid, "chunks": [{"type": "text", "props": {"content": "p"}}]})
    assert (await client.data(STOP, {"chat": "c8"}))["stopStream"] is True
    assert (await client.data(STOP, {"chat": "c8"}))["stopStream"] is False
    assert [m["status"] for m in await stored(client, "c8")] == ["INTERRUPTED"]
    code = await client.error_code(PUSH, {"id": sid, "chunks": [{"type": "text"}]})
    assert code == "STREAM_CLOSED"
    end = (await client.data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
    assert end["stream"]["status"] == "INTERRUPTED"
