"""Tool approvals in the AI SDK's chat protocol over real HTTP: a tool call the agent
marks ``needsApproval`` reaches the client as ``tool-approval-request``; the SDK's
approval response (the messages ending with the assistant's ``approval-responded``
parts) decides the interrupt once and streams the resumed reply, denied calls as
``tool-output-denied``; approval ids the chat never issued decide nothing. On both
databases and both brokers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_ai_chat import ask, posted, ui_chunks
from tests.gql.test_streams_ws import END, PUSH, START, Http, serve

INTERRUPTS = """query($chat: ID!) { chat(id: $chat) {
  interrupts { id state toolCallId decision { approved reason } }
  resumption { requestId } } }"""


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


async def _stream(http: Http, chat: str, request: str, chunks: list[dict[str, Any]],
                  parent: str | None = None) -> None:
    started = await http.data(START, {"input": {"chatId": chat, "requestId": request,
                                                "assistantId": "bot", "parentId": parent}})
    sid = started["startStream"]["id"]
    await http.data(PUSH, {"id": sid, "chunks": chunks})
    await http.data(END, {"id": sid, "status": "COMPLETED"})


async def _stored(http: Http, chat: str, question: str) -> None:
    for _ in range(500):
        body = await http.execute(
            "query($c: ID!) { chat(id: $c) { activeLeafId } }", {"c": chat})
        if ((body.get("data") or {}).get("chat") or {}).get("activeLeafId") == question:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the question was never stored")


async def agent_asks(http: Http, chat: str, question: str) -> None:
    """The agent answers with two tool calls needing approval, then waits."""
    await _stored(http, chat, question)
    await _stream(http, chat, question, [
        {"messageId": "say", "type": "text", "props": {"content": "I need your approval."}},
        {"messageId": "c1", "type": "tool_call", "props": {
            "id": "call-mail", "name": "send_email", "arguments": '{"to":"ceo@acme.test"}',
            "needsApproval": True, "reason": "sends mail outside"}},
        {"messageId": "c2", "type": "tool_call", "props": {
            "id": "call-pay", "name": "pay", "arguments": '{"eur":10}',
            "needsApproval": True}},
    ], parent=question)


async def agent_resumes(http: Http, chat: str) -> None:
    """The worker claims the resumption and reports the approved call's result."""
    for _ in range(500):
        chat_data = (await http.data(INTERRUPTS, {"chat": chat}))["chat"]
        if chat_data["resumption"] is not None:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("no resumption")
    await _stream(http, chat, chat_data["resumption"]["requestId"], [
        {"messageId": "r1", "role": "TOOL", "type": "tool_result",
         "props": {"tool_call_id": "call-mail", "content": "sent"}},
        {"messageId": "done", "type": "text", "props": {"content": "Mail sent; no payment."}},
    ])


def responded(chunks: list[dict[str, Any]], decisions: dict[str, bool]) -> dict[str, Any]:
    """The assistant UI message the SDK posts back after ``addToolApprovalResponse``:
    each tool part in state ``approval-responded`` with the person's decision."""
    requests = {c["toolCallId"]: c["approvalId"] for c in chunks
                if c["type"] == "tool-approval-request"}
    parts: list[dict[str, Any]] = [{"type": "step-start"}]
    for call, approval in requests.items():
        approved = decisions[call]
        parts.append({"type": "tool-x", "toolCallId": call, "state": "approval-responded",
                      "input": {}, "approval": {"id": approval, "approved": approved,
                                                **({} if approved else {"reason": "too much"})}})
    return {"id": chunks[0]["messageId"], "role": "assistant", "parts": parts}


async def test_an_approval_request_reaches_the_client_and_its_answer_resumes_the_reply(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        body = ask("ap-1", "q1", "Mail the CEO and pay the invoice")
        async with posted(server, body) as response:
            agent = asyncio.create_task(agent_asks(http, "ap-1", "q1"))
            asked = [chunk async for chunk in ui_chunks(response)]
            await agent
        interrupts = (await http.data(INTERRUPTS, {"chat": "ap-1"}))["chat"]["interrupts"]
        ids = {i["toolCallId"]: i["id"] for i in interrupts}
        # Each call's input is complete, then the request whose id is the interrupt's.
        approval_chunks = [c for c in asked if c["type"] in (
            "tool-input-available", "tool-approval-request")]
        assert [(c["type"], c["toolCallId"]) for c in approval_chunks] == [
            ("tool-input-available", "call-mail"),
            ("tool-approval-request", "call-mail"),
            ("tool-input-available", "call-pay"),
            ("tool-approval-request", "call-pay")]
        assert {c["toolCallId"]: c["approvalId"] for c in approval_chunks
                if c["type"] == "tool-approval-request"} == ids
        assert asked[-1] == {"type": "finish"}

        # The person approves the mail and denies the payment.
        answer = responded(asked, {"call-mail": True, "call-pay": False})
        again = {"id": "ap-1", "trigger": "submit-message", "messageId": None,
                 "messages": [body["messages"][0], answer]}
        async with posted(server, again) as response:
            assert response.status_code == 200
            worker = asyncio.create_task(agent_resumes(http, "ap-1"))
            resumed = [chunk async for chunk in ui_chunks(response)]
            await worker
        # The reply continues the client's assistant message: no new id, the denial
        # first, then the approved call's result on the part the client shows.
        assert resumed[0] == {"type": "start"}
        assert {"type": "tool-output-denied", "toolCallId": "call-pay"} in resumed
        assert {"type": "tool-output-available", "toolCallId": "call-mail",
                "output": "sent"} in resumed
        assert not [c for c in resumed if c["type"] == "tool-input-start"]
        text = "".join(c["delta"] for c in resumed if c["type"] == "text-delta")
        assert text == "Mail sent; no payment."
        assert resumed[-1] == {"type": "finish"}
        decided = (await http.data(INTERRUPTS, {"chat": "ap-1"}))["chat"]["interrupts"]
        assert {i["toolCallId"]: (i["state"], i["decision"]) for i in decided} == {
            "call-mail": ("RESOLVED", {"approved": True, "reason": None}),
            "call-pay": ("RESOLVED", {"approved": False, "reason": "too much"})}

        # The very same answer again changes nothing; a different one is refused.
        async with posted(server, again) as response:
            assert response.status_code == 200
        flipped = responded(asked, {"call-mail": False, "call-pay": False})
        async with posted(server, {**again, "messages": [body["messages"][0], flipped]}
                          ) as response:
            assert response.status_code == 409
            assert "decided differently" in (await response.aread()).decode()
        assert (await http.data(INTERRUPTS, {"chat": "ap-1"}))["chat"]["interrupts"] == decided


async def test_answering_some_approvals_reports_them_and_waits_for_the_rest(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        body = ask("ap-2", "q1", "Mail and pay")
        async with posted(server, body) as response:
            agent = asyncio.create_task(agent_asks(http, "ap-2", "q1"))
            asked = [chunk async for chunk in ui_chunks(response)]
            await agent
        answer = responded(asked, {"call-mail": False, "call-pay": False})
        answer["parts"] = answer["parts"][:2]  # only the mail is answered (denied)
        async with posted(server, {**body, "messages": [body["messages"][0], answer]}
                          ) as response:
            chunks = [chunk async for chunk in ui_chunks(response)]
        assert chunks == [{"type": "start"}, {"type": "start-step"},
                          {"type": "tool-output-denied", "toolCallId": "call-mail"},
                          {"type": "finish-step"}, {"type": "finish"}]
        chat = (await http.data(INTERRUPTS, {"chat": "ap-2"}))["chat"]
        assert sorted(i["state"] for i in chat["interrupts"]) == ["PENDING", "RESOLVED"]
        assert chat["resumption"] is None


async def test_approval_ids_never_issued_decide_nothing(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        http = Http(server)
        body = ask("ap-3", "q1", "Mail and pay")
        async with posted(server, body) as response:
            agent = asyncio.create_task(agent_asks(http, "ap-3", "q1"))
            asked = [chunk async for chunk in ui_chunks(response)]
            await agent
        before = (await http.data(INTERRUPTS, {"chat": "ap-3"}))["chat"]
        answer = responded(asked, {"call-mail": True, "call-pay": True})
        # A forged id beside a real one: nothing is decided, the real one included.
        answer["parts"][2]["approval"]["id"] = "forged-approval"
        async with posted(server, {**body, "messages": [body["messages"][0], answer]}
                          ) as response:
            assert response.status_code == 404
            assert "never requested" in (await response.aread()).decode()
        # Another chat's approval id is as unknown here as a forged one.
        other = ask("ap-4", "q4", "Something else")
        async with posted(server, other) as response:
            assert response.status_code == 200
            async with asyncio.timeout(30):
                await _stored(http, "ap-4", "q4")
                await response.aclose()
        real = responded(asked, {"call-mail": True, "call-pay": True})
        async with posted(server, {**other, "messages": [other["messages"][0], real]}
                          ) as response:
            assert response.status_code == 404
        # Someone who may not read the chat learns nothing either.
        stranger = {"X-User-Id": "mallory", "X-Tenant-Id": "other"}
        async with posted(server, {**body, "messages": [body["messages"][0], real]},
                          stranger) as response:
            assert response.status_code == 404
        # A malformed approval is a 400.
        bad = responded(asked, {"call-mail": True, "call-pay": True})
        bad["parts"][1]["approval"] = {"id": 7, "approved": "yes"}
        async with posted(server, {**body, "messages": [body["messages"][0], bad]}
                          ) as response:
            assert response.status_code == 400
        assert (await http.data(INTERRUPTS, {"chat": "ap-3"}))["chat"] == before
