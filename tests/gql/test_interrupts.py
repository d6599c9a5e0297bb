"""A person in the loop, end to end over real HTTP (and SSE for the live chat list):
approvals and questions asked in a stream, kept, decided once, resumed by one worker,
and woven into the model's window — on SQLite and Postgres, both stream backends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.store.keeping.retention import expire_interrupts
from tests.conftest import BACKENDS, on_backend
from tests.gql.test_chat_events import events_over_sse, listening
from tests.gql.test_streams_ws import END, PUSH, START, serve

# The agent worker that produces the stream (not an approver).
AGENT = {"X-User-Id": "worker", "X-Tenant-Id": "acme", "X-Roles": "agent"}
# The person whose chat it is.
BOB = {"X-User-Id": "bob", "X-Tenant-Id": "acme"}
# Someone else in the tenant, and someone in another tenant.
CAROL = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
MALLORY = {"X-User-Id": "bob", "X-Tenant-Id": "other"}
# A service identity that may decide.
APPROVER = {"X-User-Id": "supervisor", "X-Tenant-Id": "acme", "X-Roles": "agent,approver"}

CREATE = """mutation($id: ID!) { createChat(input: {assistantId: "bot", id: $id}) { id } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $text: String!) {
  appendMessages(chatId: $chat, appendId: $aid,
    messages: [{role: USER, type: "text", props: {content: $text}, requestId: $aid}]) {
    messageIds } }"""
INTERRUPT_FIELDS = """id chatId messageId streamId requestId kind state toolCallId toolName
  arguments prompt responseSchema reason expiresAt
  decision { approved editedArguments response reason decidedBy }"""
CHAT = ("""query($id: ID!, $state: InterruptState) { chat(id: $id) {
  interrupts(state: $state) { """ + INTERRUPT_FIELDS + """ }
  resumption { requestId decisions { id state decision { approved } } } } }""")
RESOLVE = ("""mutation($id: ID!, $approved: Boolean, $edited: JSON, $response: JSON,
    $reason: String, $decision: ID) {
  resolveInterrupt(id: $id, approved: $approved, editedArguments: $edited,
    response: $response, reason: $reason, decisionId: $decision) { """
           + INTERRUPT_FIELDS + " } }")
INBOX = """query($filter: InterruptFilter, $first: Int, $after: String) {
  interrupts(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id chatId state kind } }
    pageInfo { hasNextPage endCursor } } }"""
LIST = """query($filter: ChatFilter) { chats(filter: $filter) { edges { node { id } } } }"""
CONTEXT = """query($chat: ID!) { modelContext(chatId: $chat, limit: 50) {
  id role type props } }"""
STOP = "mutation($chat: ID!) { stopStream(chatId: $chat) }"
PURGE = "mutation($id: ID!) { purgeChat(id: $id) }"


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


class Client:
    def __init__(self, server: str) -> None:
        self.url = f"http://{server}/graphql"

    async def execute(self, query: str, variables: dict[str, Any] | None,
                      who: dict[str, str]) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, json={"query": query,
                                                       "variables": variables or {}},
                                       headers=who)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = BOB) -> Any:
        body = await self.execute(query, variables, who)
        assert not body.get("errors"), body
        return body["data"]

    async def code(self, query: str, variables: dict[str, Any] | None = None,
                   who: dict[str, str] = BOB) -> str:
        body = await self.execute(query, variables, who)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"])

    async def chat(self, chat: str, who: dict[str, str] = BOB,
                   state: str | None = None) -> dict[str, Any]:
        return (await self.data(CHAT, {"id": chat, "state": state}, who))["chat"]

    async def listed(self, chat_filter: dict[str, Any], who: dict[str, str] = BOB) -> set[str]:
        data = await self.data(LIST, {"filter": chat_filter}, who)
        return {edge["node"]["id"] for edge in data["chats"]["edges"]}

    async def ask(self, chat: str, request: str, messages: list[dict[str, Any]],
                  status: str = "COMPLETED") -> dict[str, Any]:
        """A producer's stream answering ``request``: ``messages`` as whole chunks."""
        started = await self.data(START, {"input": {"chatId": chat, "requestId": request}},
                                  AGENT)
        stream = started["startStream"]["id"]
        await self.data(PUSH, {"id": stream, "chunks": messages}, AGENT)
        ended = await self.data(END, {"id": stream, "status": status}, AGENT)
        return dict(ended["endStream"])


def tool_call(mid: str, call: str, name: str, arguments: str, **props: Any) -> dict[str, Any]:
    return {"messageId": mid, "type": "tool_call",
            "props": {"id": call, "name": name, "arguments": arguments, **props}}


def question(mid: str, prompt: str, **props: Any) -> dict[str, Any]:
    return {"messageId": mid, "type": "question", "props": {"prompt": prompt, **props}}


def stored_id(ended: dict[str, Any], kind: str, n: int = 0) -> str:
    """The id the service gave the ``n``-th message of ``kind`` the stream wrote (an
    interrupt is named like the message that asked)."""
    return str([m["id"] for m in ended["messages"] if m["type"] == kind][n])


async def person_asks(client: Client, chat: str, request: str = "q1") -> None:
    await client.data(CREATE, {"id": chat})
    await client.data(APPEND, {"chat": chat, "aid": request, "text": "email the report"})


async def test_an_approval_is_kept_decided_once_and_resumed_by_one_worker(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        client = Client(server)
        await person_asks(client, "mail")
        ended = await client.ask("mail", "q1", [
            {"messageId": "m-text", "type": "text", "props": {"content": "I will send it."}},
            tool_call("m-call", "call-1", "send_email", '{"to": "ceo@acme.test"}',
                      needsApproval=True, reason="sends mail outside"),
        ])
        # The producer ended COMPLETED; a stream that asked waits for the decision.
        assert ended["stream"]["status"] == "AWAITING_INPUT"
        assert {m["status"] for m in ended["messages"]} == {"COMPLETED"}
        call = stored_id(ended, "tool_call")

        chat = await client.chat("mail")
        [asked] = chat["interrupts"]
        assert asked == {
            "id": call, "chatId": "mail", "messageId": call,
            "streamId": asked["streamId"], "requestId": "q1", "kind": "TOOL_APPROVAL",
            "state": "PENDING", "toolCallId": "call-1", "toolName": "send_email",
            "arguments": {"to": "ceo@acme.test"}, "prompt": None, "responseSchema": None,
            "reason": "sends mail outside", "expiresAt": None, "decision": None}
        assert chat["resumption"] is None
        # The lists find it: awaiting a decision, not a reply (no worker may take it).
        assert await client.listed({"awaitingDecision": True}) == {"mail"}
        assert await client.listed({"awaitingReply": True}, AGENT) == set()
        inbox = (await client.data(INBOX))["interrupts"]["edges"]
        assert [edge["node"]["id"] for edge in inbox] == [call]
        # Nobody else sees it; the producer may not approve its own call.
        for stranger in (CAROL, MALLORY):
            assert (await client.data(INBOX, who=stranger))["interrupts"]["edges"] == []
            assert await client.code(RESOLVE, {"id": call, "approved": True},
                                     stranger) == "NOT_FOUND"
        assert await client.code(RESOLVE, {"id": call, "approved": True},
                                 AGENT) == "FORBIDDEN"
        # A malformed decision changes nothing.
        assert await client.code(RESOLVE, {"id": call}) == "INVALID_ARGUMENT"
        assert await client.code(RESOLVE, {"id": call, "response": "yes"}) == (
            "INVALID_ARGUMENT")
        assert (await client.chat("mail"))["interrupts"][0]["state"] == "PENDING"

        decided = (await client.data(RESOLVE, {
            "id": call, "approved": True, "edited": {"to": "cfo@acme.test"},
            "decision": "d-1"}))["resolveInterrupt"]
        assert decided["state"] == "RESOLVED"
        assert decided["decision"] == {"approved": True,
                                       "editedArguments": {"to": "cfo@acme.test"},
                                       "response": None, "reason": None, "decidedBy": "bob"}
        # Once: the same decision id (or the same decision) answers the same; another
        # decision is CONFLICT.
        again = await client.data(RESOLVE, {"id": call, "approved": True,
                                            "edited": {"to": "cfo@acme.test"},
                                            "decision": "d-1"})
        assert again["resolveInterrupt"] == decided
        assert await client.code(RESOLVE, {"id": call, "approved": False,
                                           "decision": "d-2"}) == "CONFLICT"
        assert (await client.data(INBOX))["interrupts"]["edges"] == []

        # Every interrupt decided: the chat awaits a worker again, and says how to claim.
        assert await client.listed({"awaitingDecision": True}) == set()
        assert await client.listed({"awaitingReply": True}, AGENT) == {"mail"}
        resumption = (await client.chat("mail"))["resumption"]
        assert resumption["requestId"] == "q1.resume.1"
        assert resumption["decisions"] == [
            {"id": call, "state": "RESOLVED", "decision": {"approved": True}}]
        # The model sees the call with the arguments the person approved.
        window = (await client.data(CONTEXT, {"chat": "mail"}, AGENT))["modelContext"]
        [call] = [m for m in window if m["type"] == "tool_call"]
        assert json.loads(call["props"]["arguments"]) == {"to": "cfo@acme.test"}

        # Two workers race to resume: exactly one start succeeds.
        starts = await asyncio.gather(*(client.execute(
            START, {"input": {"chatId": "mail", "requestId": "q1.resume.1"}}, AGENT)
            for _ in range(2)))
        won = [body for body in starts if not body.get("errors")]
        lost = [body for body in starts if body.get("errors")]
        assert len(won) == 1 and len(lost) == 1
        assert lost[0]["errors"][0]["extensions"]["code"] in ("CONFLICT", "STREAM_ACTIVE")
        assert (await client.chat("mail"))["resumption"] is None
        stream = won[0]["data"]["startStream"]["id"]
        await client.data(PUSH, {"id": stream, "chunks": [
            {"messageId": "m-result", "role": "TOOL", "type": "tool_result",
             "props": {"tool_call_id": "call-1", "content": "sent"}}]}, AGENT)
        ended = (await client.data(END, {"id": stream, "status": "COMPLETED"},
                                   AGENT))["endStream"]
        assert ended["stream"]["status"] == "COMPLETED"
        assert await client.listed({"awaitingReply": True}, AGENT) == set()


async def test_a_question_takes_only_an_answer_its_schema_allows(settings: Settings) -> None:
    schema = {"type": "object", "required": ["city"],
              "properties": {"city": {"type": "string", "enum": ["Oslo", "Lisbon"]}}}
    async with serve(settings) as (server, _app):
        client = Client(server)
        await person_asks(client, "trip")
        ended = await client.ask("trip", "q1", [question("m-q", "Which city?",
                                                         responseSchema=schema)])
        assert ended["stream"]["status"] == "AWAITING_INPUT"
        q = stored_id(ended, "question")
        [asked] = (await client.chat("trip"))["interrupts"]
        assert (asked["kind"], asked["prompt"], asked["responseSchema"]) == (
            "INPUT", "Which city?", schema)
        for wrong in ({"city": "Paris"}, {"town": "Oslo"}, "Oslo"):
            body = await client.execute(RESOLVE, {"id": q, "response": wrong}, BOB)
            assert body["errors"][0]["extensions"]["code"] == "INVALID_ARGUMENT", body
            assert "responseSchema" in body["errors"][0]["message"]
        assert await client.code(RESOLVE, {"id": q, "approved": True,
                                           "edited": {}}) == "INVALID_ARGUMENT"
        assert (await client.chat("trip"))["interrupts"][0]["state"] == "PENDING"
        decided = (await client.data(RESOLVE, {"id": q, "response": {"city": "Lisbon"}}))
        assert decided["resolveInterrupt"]["decision"]["response"] == {"city": "Lisbon"}
        # The model sees the answer as the person's message after the question.
        window = (await client.data(CONTEXT, {"chat": "trip"}, AGENT))["modelContext"]
        assert [(m["role"], m["type"]) for m in window] == [
            ("USER", "text"), ("ASSISTANT", "question"), ("USER", "text")]
        assert json.loads(window[-1]["props"]["content"]) == {"city": "Lisbon"}


async def test_denied_expired_and_cancelled_interrupts(settings: Settings) -> None:
    async with serve(settings) as (server, app):
        client = Client(server)
        await person_asks(client, "ops")
        ended = await client.ask("ops", "q1", [
            tool_call("m-a", "call-a", "drop_table", "{}", needsApproval=True),
            tool_call("m-b", "call-b", "restart", "{}", needsApproval=True, expiresIn=1),
        ])
        a, b = stored_id(ended, "tool_call"), stored_id(ended, "tool_call", 1)
        assert [i["expiresAt"] is None for i in (await client.chat("ops"))["interrupts"]] == [
            True, False]
        denied = await client.data(RESOLVE, {"id": a, "approved": False,
                                             "reason": "not in production"}, APPROVER)
        assert denied["resolveInterrupt"]["decision"]["decidedBy"] == "supervisor"
        # One still pending: no resumption yet.
        assert (await client.chat("ops"))["resumption"] is None
        await asyncio.sleep(1.2)
        assert await client.code(RESOLVE, {"id": b, "approved": True}) == "EXPIRED"
        assert (await client.chat("ops", state="PENDING"))["interrupts"][0]["id"] == b
        assert await expire_interrupts(app.state.services.db) == 1
        chat = await client.chat("ops")
        assert [i["state"] for i in chat["interrupts"]] == ["RESOLVED", "EXPIRED"]
        assert chat["resumption"]["requestId"] == "q1.resume.1"
        # The model sees both calls refused, with the reasons.
        window = (await client.data(CONTEXT, {"chat": "ops"}, AGENT))["modelContext"]
        results = [m["props"] for m in window if m["type"] == "tool_result"]
        assert results == [
            {"tool_call_id": "call-a", "denied": True, "reason": "not in production"},
            {"tool_call_id": "call-b", "denied": True, "reason": "expired"}]

        # Stopping a chat that waits for a decision cancels what is pending.
        await person_asks(client, "halt")
        h = stored_id(await client.ask("halt", "q1", [question("m-h", "Go on?")]), "question")
        assert (await client.data(STOP, {"chat": "halt"}))["stopStream"] is True
        [cancelled] = (await client.chat("halt"))["interrupts"]
        assert cancelled["state"] == "CANCELLED"
        assert await client.code(RESOLVE, {"id": h, "response": "yes"}) == "CONFLICT"
        assert (await client.chat("halt"))["resumption"] is None
        # A purge takes them with the chat.
        await client.data(PURGE, {"id": "halt"})
        assert await client.code(RESOLVE, {"id": h, "response": "yes"}) == "NOT_FOUND"


async def test_the_inbox_pages_newest_first_and_a_plain_end_cannot_claim_to_wait(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        client = Client(server)
        asked = []
        for n in range(3):
            await person_asks(client, f"c{n}")
            asked.append(stored_id(await client.ask(f"c{n}", "q1", [
                question(f"m{n}", f"Question {n}?")]), "question"))
        first = (await client.data(INBOX, {"first": 2}))["interrupts"]
        assert [edge["node"]["id"] for edge in first["edges"]] == [asked[2], asked[1]]
        assert first["pageInfo"]["hasNextPage"] is True
        rest = (await client.data(INBOX, {"first": 2, "after": first["pageInfo"]["endCursor"]}))
        assert [edge["node"]["id"] for edge in rest["interrupts"]["edges"]] == [asked[0]]
        # A cursor is bound to its filter.
        assert await client.code(INBOX, {"first": 2, "filter": {"kind": "INPUT"},
                                         "after": first["pageInfo"]["endCursor"]}) == (
            "INVALID_CURSOR")
        only = await client.data(INBOX, {"filter": {"chatId": "c1"}})
        assert [edge["node"]["id"] for edge in only["interrupts"]["edges"]] == [asked[1]]
        assert await client.code(INBOX, {"first": 0}) == "INVALID_ARGUMENT"

        # AWAITING_INPUT is for a stream that asked.
        await person_asks(client, "plain")
        started = await client.data(START, {"input": {"chatId": "plain", "requestId": "q1"}},
                                    AGENT)
        stream = started["startStream"]["id"]
        await client.data(PUSH, {"id": stream, "chunks": [
            {"messageId": "t", "type": "text", "props": {"content": "hi"}}]}, AGENT)
        assert await client.code(END, {"id": stream, "status": "AWAITING_INPUT"},
                                 AGENT) == "INVALID_ARGUMENT"
        ended = await client.data(END, {"id": stream, "status": "COMPLETED"}, AGENT)
        assert ended["endStream"]["stream"]["status"] == "COMPLETED"
        assert (await client.chat("plain"))["interrupts"] == []


async def test_the_live_chat_list_hears_interrupts_requested_and_resolved(
        settings: Settings) -> None:
    everything = "subscription { chatEvents { type chatId } }"
    deciding = "subscription { chatEvents(filter: {awaitingDecision: true}) { type chatId } }"
    heard: dict[str, list[str]] = {everything: [], deciding: []}
    async with serve(settings) as (server, app):
        client = Client(server)
        await person_asks(client, "live")

        async def listen(query: str, last: str) -> None:
            async for event in events_over_sse(server, query, BOB, timeout=30):
                if event["chatId"] == "live":
                    heard[query].append(event["type"])
                    if event["type"] == last:
                        return

        listeners = [asyncio.create_task(listen(everything, "INTERRUPT_RESOLVED")),
                     asyncio.create_task(listen(deciding, "DELETED"))]
        await listening(app, 2)
        started = await client.data(START, {"input": {"chatId": "live", "requestId": "q1"}},
                                    AGENT)
        # The lists read the chat as each event is delivered: the stream asks only once
        # its start was delivered (else a loaded machine delivers the start after the ask).
        for _ in range(3000):
            if "STREAM_STARTED" in heard[everything]:
                break
            await asyncio.sleep(0.02)
        stream = started["startStream"]["id"]
        await client.data(PUSH, {"id": stream, "chunks": [question("m-live", "Sure?")]},
                          AGENT)
        ended = dict((await client.data(END, {"id": stream, "status": "COMPLETED"},
                                        AGENT))["endStream"])
        await client.data(RESOLVE, {"id": stored_id(ended, "question"), "response": "yes"})
        await asyncio.wait_for(asyncio.gather(*listeners), 60)
    # Every list hears both. A list of the chats awaiting a decision sees the chat only
    # once the stream that asked was written (not while it ran): it reads the chat as
    # each event is delivered, so whichever event published after that write comes
    # first brings the chat in (the stream's end, its messages or the request itself);
    # it sees the chat leave (DELETED from that list) with the decision.
    assert "INTERRUPT_REQUESTED" in heard[everything], heard
    assert heard[everything][-1] == "INTERRUPT_RESOLVED", heard
    arrived = heard[deciding][:-1]
    assert arrived and set(arrived) <= {"STREAM_ENDED", "MESSAGES", "INTERRUPT_REQUESTED"}, heard
    assert heard[deciding][-1] == "DELETED", heard
