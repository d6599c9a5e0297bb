"""The demo agent: answers every chat of one assistant through the agent loop.

With ``OPENAI_BASE_URL`` or ``OPENAI_API_KEY`` set it asks any OpenAI-compatible Chat
Completions endpoint (OpenAI, Ollama, vLLM …; model ``OPENAI_MODEL``, default
``gpt-4o-mini``), streaming its answer over httpx. Without them an offline demo model
answers deterministically — thinking, a tool call whose arguments grow, the tool's result,
then markdown text with a table, a code block and bold — paced a little so a viewer sees
it stream. With ``CHATQL_DEMO_APPROVALS=1`` it asks the person to approve its lookup
first: the stream ends awaiting the decision, and the answer follows once it is made.
Either model names the chat when it answers its first question (``s.set_title``; a
title the person gave stays).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from chatql_client.client import ChatqlClient
from chatql_client.types import Message
from chatql_client.writer import StreamWriter

__all__ = ["OfflineModel", "OpenAIChatModel", "demo_model", "demo_title", "run_demo"]

DEMO_MODEL = "chatql-demo"
#: The most words of the question a demo title keeps.
TITLE_WORDS = 5


def _content(message: Message) -> str:
    content = (message.get("props") or {}).get("content")
    return content if isinstance(content, str) else json.dumps(content)


def demo_title(question: str) -> str | None:
    """The demo's name for a chat: the first words of its first question, capitalised,
    without the question's punctuation (None: a question without words)."""
    words = question.split()
    if not words:
        return None
    title = " ".join(words[:TITLE_WORDS]).rstrip(".,;:!?")
    if len(words) > TITLE_WORDS:
        title += "\u2026"
    return title[:1].upper() + title[1:] or None


async def _name_chat(context: list[Message], s: StreamWriter) -> None:
    """On the chat's first question, the agent names the chat."""
    questions = [m for m in context if m.get("role") == "USER"]
    if len(questions) == 1 and not s.resume:
        title = demo_title(_content(questions[0]))
        if title is not None:
            await s.set_title(title)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _words(text: str) -> list[str]:
    """``text`` as word-sized tokens (each keeps its following space)."""
    out: list[str] = []
    word = ""
    for char in text:
        word += char
        if char in " \n":
            out.append(word)
            word = ""
    if word:
        out.append(word)
    return out


class OfflineModel:
    """A deterministic stand-in for a model: the same context gives the same stream."""

    def __init__(self, pace: float = 0.02, *, approvals: bool = False) -> None:
        self.pace = pace
        #: Ask the person to approve the lookup tool before it runs (``CHATQL_DEMO_APPROVALS``).
        self.approvals = approvals

    async def _pause(self) -> None:
        if self.pace:
            await asyncio.sleep(self.pace)

    async def answer(self, context: list[Message], s: StreamWriter) -> None:
        questions = [m for m in context if m.get("role") == "USER"]
        question = _content(questions[-1]) if questions else ""
        turn = len(questions)
        call_id = f"lookup-{turn}"
        if s.resume:
            # The person decided on the lookup: run it, or say it was declined.
            decided = s.resume[0]
            decision = decided.get("decision") or {}
            if decided["state"] != "RESOLVED" or not decision.get("approved"):
                why = decision.get("reason") or ("no decision in time"
                                                 if decided["state"] == "EXPIRED" else "")
                for piece in _words("You declined the lookup" + (f" ({why})" if why else "")
                                    + ", so I did not run it. Ask me anything else."):
                    await s.text(piece)
                    await self._pause()
                return
        else:
            await _name_chat(context, s)
            for piece in _words(f"The person asks: \u201c{question}\u201d. I will look it "
                                "up with the lookup tool, then answer with a table and an "
                                "example."):
                await s.thinking(piece)
                await self._pause()
            await s.tool_call(call_id, "lookup", needs_approval=self.approvals,
                              reason="the lookup reads your question" if self.approvals
                              else None)
            arguments = json.dumps({"query": question, "limit": 3})
            for piece in _pieces(arguments, 6):
                await s.tool_arguments(call_id, piece)
                await self._pause()
            if self.approvals:
                return  # the stream waits for the person; the loop resumes it
        words = len(question.split())
        await s.tool_result(call_id, json.dumps({"words": words, "characters": len(question),
                                                 "turn": turn}))
        answer = (
            f"Here is what I found about **{question or 'your question'}**.\n\n"
            "| Measure | Value |\n| --- | --- |\n"
            f"| Words | {words} |\n| Characters | {len(question)} |\n| Turn | {turn} |\n\n"
            "An example in Python:\n\n"
            "```python\n"
            f"question = {question!r}\n"
            "print(len(question.split()), 'words')\n"
            "```\n\n"
            "**Done.** Ask me anything else.")
        for piece in _words(answer):
            await s.text(piece)
            await self._pause()
        s.usage(prompt_tokens=sum(len(_content(m)) // 4 + 1 for m in context),
                completion_tokens=len(_words(answer)), model=DEMO_MODEL)


class OpenAIChatModel:
    """Any OpenAI-compatible Chat Completions endpoint, streamed (no SDK needed)."""

    def __init__(self, base_url: str, api_key: str | None, model: str,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.transport = transport

    @staticmethod
    def messages(context: list[Message]) -> list[dict[str, Any]]:
        """The chat's context as Chat Completions messages (text turns only)."""
        roles = {"USER": "user", "ASSISTANT": "assistant", "SYSTEM": "system"}
        out: list[dict[str, Any]] = []
        for message in context:
            role = roles.get(str(message.get("role")))
            if role is None or message.get("type") not in ("user_input", "text", "memory",
                                                           "summary", "system"):
                continue
            out.append({"role": role, "content": _content(message)})
        return out

    async def chunks(self, context: list[Message]) -> AsyncIterator[Mapping[str, Any]]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = {"model": self.model, "messages": self.messages(context), "stream": True,
                "stream_options": {"include_usage": True}}
        async with httpx.AsyncClient(timeout=120, transport=self.transport) as http, \
                http.stream("POST", f"{self.base_url}/chat/completions", json=body,
                            headers=headers) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"model endpoint answered {response.status_code}: "
                                   f"{response.text[:300]}")
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                yield json.loads(data)

    async def answer(self, context: list[Message], s: StreamWriter) -> None:
        await _name_chat(context, s)
        async for chunk in self.chunks(context):
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    await s.thinking(reasoning)
                if isinstance(delta.get("content"), str) and delta["content"]:
                    await s.text(delta["content"])
            usage = chunk.get("usage")
            if usage:
                s.usage(prompt_tokens=usage.get("prompt_tokens") or 0,
                        completion_tokens=usage.get("completion_tokens") or 0,
                        model=chunk.get("model") or self.model)


def demo_model(env: Mapping[str, str] | None = None,
               pace: float = 0.02) -> OfflineModel | OpenAIChatModel:
    """The model the environment configures: an OpenAI-compatible endpoint when
    ``OPENAI_BASE_URL`` or ``OPENAI_API_KEY`` is set, else the offline demo model."""
    env = os.environ if env is None else env
    base = env.get("OPENAI_BASE_URL")
    key = env.get("OPENAI_API_KEY")
    if not base and not key:
        return OfflineModel(pace, approvals=env.get("CHATQL_DEMO_APPROVALS", "") in (
            "1", "true", "yes"))
    return OpenAIChatModel(base or "https://api.openai.com/v1", key,
                           env.get("OPENAI_MODEL", "gpt-4o-mini"))


async def run_demo(url: str, assistant_id: str, *, headers: Mapping[str, str] | None = None,
                   token: str | None = None, pace: float = 0.02, concurrency: int = 8) -> None:
    """Serve the demo agent until cancelled."""
    model = demo_model(pace=pace)
    async with ChatqlClient(url, headers=headers, token=token) as client:
        await client.serve(assistant_id, model.answer, concurrency=concurrency)
