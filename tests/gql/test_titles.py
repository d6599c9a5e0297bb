"""Chat titles end to end over real HTTP (and a WebSocket for the live chat list), on
both databases: the automatic title from the first question (appends through the append
plan and the executor, a stream's input, the AI SDK's /ai/chat, an OpenAI import), an
agent's title, and a person's title that nothing else replaces."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from chatql.store.chats.titles import automatic_title
from tests.gql.test_chat_events import listening
from tests.gql.test_streams_ws import serve
from tests.gql.wsclient import connect

PERSON = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}
AGENT = {"X-User-Id": "bot", "X-Tenant-Id": "acme", "X-Roles": "agent"}
ADMIN = {"X-User-Id": "root", "X-Tenant-Id": "acme", "X-Roles": "admin"}
NEIGHBOUR = {"X-User-Id": "carol", "X-Tenant-Id": "acme"}
STRANGER = {"X-User-Id": "alice", "X-Tenant-Id": "globex", "X-Roles": "agent"}

CREATE = """mutation($id: ID!, $title: String, $public: Boolean! = false) {
  createChat(input: {id: $id, assistantId: "bot", title: $title, public: $public}) {
    id title titleSource } }"""
APPEND = """mutation($chat: ID!, $aid: String!, $messages: [MessageInput!]!) {
  appendMessages(chatId: $chat, appendId: $aid, messages: $messages) { lastSequence } }"""
CHAT = "query($id: ID!) { chat(id: $id) { title titleSource } }"
UPDATE = """mutation($id: ID!, $title: String) { updateChat(id: $id, input: {title: $title}) {
  title titleSource } }"""
NAME = """mutation($chat: ID!, $title: String!) { setChatTitle(chatId: $chat, title: $title) {
  id title titleSource } }"""
START = """mutation($input: StartStreamInput!) { startStream(input: $input) { id } }"""
END = """mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) {
  messages { role } } }"""
EVENTS = """subscription { chatEvents { type chatId chat { title titleSource } } }"""
IMPORT = """mutation($input: ImportChatInput!) { importChat(input: $input) {
  id title titleSource } }"""

LONG = ("Compare Oslo, Lisbon, Porto, Madrid, Seville and Valencia, for a weekend in May"
        " please\nand a second line")


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "USER", "type": "user_input", "props": {"content": text}, **extra}


def answer(text: str) -> dict[str, Any]:
    return {"role": "ASSISTANT", "type": "text", "props": {"content": text}}


class Client:
    """GraphQL over real HTTP to the live server."""

    def __init__(self, server: str) -> None:
        self.url = f"http://{server}/graphql"

    async def execute(self, query: str, variables: dict[str, Any],
                      who: dict[str, str]) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, json={"query": query, "variables": variables},
                                       headers=who)
        return response.json()

    async def data(self, query: str, variables: dict[str, Any],
                   who: dict[str, str] = PERSON) -> Any:
        body = await self.execute(query, variables, who)
        assert not body.get("errors"), body
        return body["data"]

    async def code(self, query: str, variables: dict[str, Any],
                   who: dict[str, str] = PERSON) -> str:
        body = await self.execute(query, variables, who)
        assert body.get("errors"), body
        return str(body["errors"][0]["extensions"]["code"])

    async def title(self, chat: str) -> tuple[str | None, str | None]:
        found = (await self.data(CHAT, {"id": chat}))["chat"]
        return found["title"], found["titleSource"]

    async def append(self, chat: str, aid: str, *messages: dict[str, Any]) -> None:
        await self.data(APPEND, {"chat": chat, "aid": aid, "messages": list(messages)})


def test_the_automatic_title_rule() -> None:
    # The first line with words, cut at a word boundary, without trailing punctuation.
    assert automatic_title(LONG) == (
        "Compare Oslo, Lisbon, Porto, Madrid, Seville and Valencia")
    assert automatic_title("Compare Oslo and Lisbon, for a weekend in May please") == (
        "Compare Oslo and Lisbon, for a weekend in May please")
    assert automatic_title("I would like to compare Oslo and Lisbon for a weekend in May,"
                           " please help") == (
        "I would like to compare Oslo and Lisbon for a weekend in May")
    assert automatic_title("\n  \n  Weather   in\tOslo?  \nthanks") == "Weather in Oslo"
    assert automatic_title("What is f(x)?") == "What is f(x)"
    assert automatic_title("x" * 80) == "x" * 60
    assert automatic_title("?! ...") is None
    assert automatic_title("") is None


@pytest.mark.parametrize("plan", ["append", "executor"])
async def test_a_chat_nobody_named_takes_its_first_question(
        settings: Settings, plan: str) -> None:
    """Through the append plan and the ordinary executor alike, in the append's own
    transaction: the live chat list gets the titled chat with the append's event."""
    if plan == "executor":
        settings = dataclasses.replace(settings, disabled_plans=("append",))
    async with serve(settings) as (server, app), connect(server, "graphql-transport-ws",
                                                          PERSON) as ws:
        client = Client(server)
        op = await ws.start(EVENTS)
        await listening(app)
        made = (await client.data(CREATE, {"id": "trip"}))["createChat"]
        assert (made["title"], made["titleSource"]) == (None, None)
        assert (await ws.receive(op) or {})["data"]["chatEvents"]["type"] == "CREATED"
        served = app.state.planner.served["append"]
        await client.append("trip", "a1", user(LONG), answer("Here is a plan."))
        assert (app.state.planner.served["append"] > served) == (plan == "append")
        expected = ("Compare Oslo, Lisbon, Porto, Madrid, Seville and Valencia", "AUTO")
        assert await client.title("trip") == expected
        event = (await ws.receive(op) or {})["data"]["chatEvents"]
        assert event["type"] == "MESSAGES"
        assert (event["chat"]["title"], event["chat"]["titleSource"]) == expected
        # Later questions never rename it.
        await client.append("trip", "a2", user("And what about Rome?"))
        assert await client.title("trip") == expected

        # A first question without words names nothing, and no later one does.
        await client.data(CREATE, {"id": "picture"})
        await client.append("picture", "p1", {"role": "USER", "type": "user_input",
                                              "props": {"content": [{"type": "file",
                                                                     "url": "x.png"}]}})
        await client.append("picture", "p2", user("What is in it?"))
        assert await client.title("picture") == (None, None)

        # An answer alone names nothing; the first question after it does.
        await client.data(CREATE, {"id": "greeted"})
        await client.append("greeted", "g1", answer("Hello! How can I help?"))
        assert await client.title("greeted") == (None, None)
        await client.append("greeted", "g2", user("Weather in Oslo?"))
        assert await client.title("greeted") == ("Weather in Oslo", "AUTO")


async def test_a_persons_title_is_never_replaced(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        client = Client(server)
        made = (await client.data(CREATE, {"id": "named", "title": "Trip, 2027"}))["createChat"]
        assert (made["title"], made["titleSource"]) == ("Trip, 2027", "USER")
        await client.append("named", "a1", user("Weather in Oslo?"))
        assert await client.title("named") == ("Trip, 2027", "USER")
        # The agent's title does not replace it: the chat comes back as it is.
        kept = (await client.data(NAME, {"chat": "named", "title": "Oslo weather"},
                                  AGENT))["setChatTitle"]
        assert (kept["title"], kept["titleSource"]) == ("Trip, 2027", "USER")
        assert await client.title("named") == ("Trip, 2027", "USER")

        # Renamed by the person: still theirs. Cleared: untitled, and it stays so (the
        # chat's first question was asked long ago).
        renamed = (await client.data(UPDATE, {"id": "named", "title": "Oslo"}))["updateChat"]
        assert renamed == {"title": "Oslo", "titleSource": "USER"}
        cleared = (await client.data(UPDATE, {"id": "named", "title": None}))["updateChat"]
        assert cleared == {"title": None, "titleSource": None}
        await client.append("named", "a2", user("Another question"))
        assert await client.title("named") == (None, None)

        # A chat titled by the automatic rule and then by the agent is the person's
        # once they name it, for good.
        await client.data(CREATE, {"id": "auto"})
        await client.append("auto", "a1", user("weather in oslo"))
        assert await client.title("auto") == ("weather in oslo", "AUTO")
        await client.data(UPDATE, {"id": "auto", "title": "Mine"})
        await client.data(NAME, {"chat": "auto", "title": "The agent's"}, AGENT)
        assert await client.title("auto") == ("Mine", "USER")


async def test_an_agent_names_a_chat_and_only_an_agent_may(settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        client = Client(server)
        await client.data(CREATE, {"id": "c", "public": True})
        await client.append("c", "a1", user("how warm is it in oslo today"))
        assert await client.title("c") == ("how warm is it in oslo today", "AUTO")
        named = (await client.data(NAME, {"chat": "c", "title": "  Oslo weather  "},
                                   AGENT))["setChatTitle"]
        assert named == {"id": "c", "title": "Oslo weather", "titleSource": "AGENT"}
        # The agent may name it again (and so may an admin, producing for it).
        await client.data(NAME, {"chat": "c", "title": "Oslo today"}, AGENT)
        assert await client.title("c") == ("Oslo today", "AGENT")
        await client.data(NAME, {"chat": "c", "title": "Oslo, today"}, ADMIN)
        assert await client.title("c") == ("Oslo, today", "AGENT")

        # Not the person's door (their title is updateChat's), not another reader's;
        # a chat the caller cannot read is NOT_FOUND like one that never existed.
        assert await client.code(NAME, {"chat": "c", "title": "x"}) == "FORBIDDEN"
        assert await client.code(NAME, {"chat": "c", "title": "x"}, NEIGHBOUR) == "FORBIDDEN"
        hidden = await client.execute(NAME, {"chat": "c", "title": "x"}, STRANGER)
        ghost = await client.execute(NAME, {"chat": "nope", "title": "x"}, STRANGER)
        assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        assert (hidden["errors"][0]["message"].replace("'c'", "?")
                == ghost["errors"][0]["message"].replace("'nope'", "?"))
        for bad in ("", "   ", "two\nlines", "x" * 1001):
            assert await client.code(NAME, {"chat": "c", "title": bad}, AGENT) == (
                "INVALID_ARGUMENT")
        assert await client.title("c") == ("Oslo, today", "AGENT")

        # Named before its first question: the question does not rename it.
        await client.data(CREATE, {"id": "early"})
        await client.data(NAME, {"chat": "early", "title": "Planned"}, AGENT)
        await client.append("early", "a1", user("Weather in Oslo?"))
        assert await client.title("early") == ("Planned", "AGENT")


async def test_a_streams_input_names_the_chat_when_the_stream_is_written(
        settings: Settings) -> None:
    async with serve(settings) as (server, _app):
        client = Client(server)
        await client.data(CREATE, {"id": "s"})
        stream = (await client.data(START, {"input": {
            "chatId": "s", "requestId": "r1", "input": user("Summarise the report: today")}},
                                    AGENT))["startStream"]["id"]
        await client.data(END, {"id": stream}, AGENT)
        assert await client.title("s") == ("Summarise the report: today", "AUTO")


async def test_chats_made_by_the_ai_sdk_and_by_an_import_are_titled(
        settings: Settings) -> None:
    quick = dataclasses.replace(settings, agent_reply_timeout=0.2)
    async with serve(quick) as (server, _app):
        client = Client(server)
        body = {"id": "sdk", "trigger": "submit-message", "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in"},
                                                  {"type": "text", "text": " Oslo?"}]}]}
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(f"http://{server}/ai/chat", json=body, headers=PERSON)
        assert response.status_code == 200
        assert await client.title("sdk") == ("Weather in Oslo", "AUTO")

        imported = (await client.data(IMPORT, {"input": {
            "format": "OPENAI", "chatId": "imp", "assistantId": "bot",
            "document": {"messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Best time for Lisbon?"}]},
        }}))["importChat"]
        assert (imported["title"], imported["titleSource"]) == ("Best time for Lisbon", "AUTO")
