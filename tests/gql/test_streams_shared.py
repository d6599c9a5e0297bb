"""Stream buffers shared through Redis: any instance serves any producer call.

Two real uvicorn instances share the test's database and the run's Redis prefix. The
producer's calls land on either; dedupe, ordering and one-active-stream-per-chat hold
across them; a SIGKILLed instance loses no accepted chunk: the producer carries on with
the other, or the other's sweeper ends the orphan INTERRUPTED and persists it once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatql.gql.settings import Settings
from tests.conftest import TEST_SECRET, free_port
from tests.gql.test_streams_shutdown import stored_rows
from tests.gql.test_streams_ws import (
    ALICE,
    CREATE,
    END,
    PUSH,
    START,
    STEP,
    STOP,
    Http,
    persisted,
    serve,
    shown,
)
from tests.gql.wsclient import ChunkView, connect

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared(settings: Settings, redis_url: str) -> Settings:
    return dataclasses.replace(settings, broker_url=redis_url)


def new_chat() -> str:
    return f"sh-{uuid.uuid4().hex[:10]}"


def text(mid: str, value: str, chunk_id: str | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"messageId": mid, "type": "text", "props": {"content": value},
                             "delta": True}
    if chunk_id is not None:
        chunk["chunkId"] = chunk_id
    return chunk


async def test_a_stream_started_on_a_is_pushed_stepped_and_ended_on_b(
        shared: Settings) -> None:
    chat = new_chat()
    async with serve(shared) as (a, _app_a), serve(shared) as (b, _app_b), \
            connect(b, "graphql-transport-ws", ALICE) as socket:
        on_a, on_b = Http(a), Http(b)
        await on_a.data(CREATE, {"id": chat})
        view = await ChunkView.open(socket, chat)
        sid = (await on_a.data(START, {"input": {"chatId": chat, "requestId": "r"}})
               )["startStream"]["id"]
        # Alternate instances; a retried chunk id is a duplicate wherever it lands.
        pushes = [(on_a, [text("m", "one ", "c1")]), (on_b, [text("m", "two ", "c2")]),
                  (on_a, [text("m", "two ", "c2"), text("m", "three", "c3")]),
                  (on_b, [text("n", "other")])]
        results = [(await http.data(PUSH, {"id": sid, "chunks": chunks}))["pushChunks"]
                   for http, chunks in pushes]
        assert [(r["accepted"], r["duplicates"], r["lastSeq"]) for r in results] == [
            (1, 0, 2), (1, 0, 3), (1, 1, 4), (1, 0, 5)]
        assert await on_b.data(STEP, {"id": sid, "step": {"id": "s1", "type": "llm"}})
        # One active stream per chat, whichever instance asks.
        assert await on_b.code(START, {"input": {"chatId": chat}}) == "STREAM_ACTIVE"
        ended = (await on_b.data(END, {"id": sid, "status": "FAILED", "error": "x"})
                 )["endStream"]
        assert ended["stream"]["status"] == "FAILED"
        assert [r["type"] for r in ended["resume"]] == ["llm"]
        # Retried on the other instance: the same result, written once.
        again = (await on_a.data(END, {"id": sid, "status": "FAILED"}))["endStream"]
        assert [m["id"] for m in again["messages"]] == [m["id"] for m in ended["messages"]]
        assert await on_a.code(PUSH, {"id": sid, "chunks": [text("m", "late")]}) == (
            "STREAM_CLOSED")
        await view.until_event("stream_end")
        rows = await on_a.messages(chat)
        assert [(m["props"], m["status"]) for m in rows] == [
            ({"content": "one two three"}, "FAILED"), ({"content": "other"}, "FAILED")]
        assert shown(view) == persisted(rows)
        # The chat is free again, from either instance.
        await on_b.data(START, {"input": {"chatId": chat}})
        assert await on_a.data(STOP, {"chat": chat}) is not None


async def test_concurrent_starts_and_pushes_across_instances(shared: Settings) -> None:
    chat = new_chat()
    async with serve(shared) as (a, _app_a), serve(shared) as (b, _app_b):
        on = [Http(a), Http(b)]
        await on[0].data(CREATE, {"id": chat})
        bodies = await asyncio.gather(*(on[i % 2].execute(START, {"input": {"chatId": chat}})
                                        for i in range(6)))
        winners = [body for body in bodies if not body.get("errors")]
        assert len(winners) == 1
        assert {body["errors"][0]["extensions"]["code"] for body in bodies
                if body.get("errors")} == {"STREAM_ACTIVE"}
        sid = winners[0]["data"]["startStream"]["id"]
        results = await asyncio.gather(*(on[i % 2].data(PUSH, {"id": sid, "chunks": [
            {"messageId": f"m{i}", "type": "text", "props": {"content": str(i)}},
            {"messageId": f"m{i}", "type": "text", "props": {"content": "!"},
             "delta": True}]}) for i in range(8)))
        assert sorted(r["pushChunks"]["lastSeq"] for r in results) == list(range(3, 18, 2))
        result = (await on[1].data(END, {"id": sid, "status": "COMPLETED"}))["endStream"]
        assert sorted(m["props"]["content"] for m in result["messages"]) == [
            f"{i}!" for i in range(8)]


class Instance:
    """A chatql process (so it can be SIGKILLed) on the shared database and Redis."""

    def __init__(self, database_url: str, redis_url: str, idle: float) -> None:
        self.port = free_port()
        env = {**os.environ, "CHATQL_DATABASE_URL": database_url,
               "CHATQL_SECRET": TEST_SECRET, "CHATQL_BROKER_URL": redis_url,
               "CHATQL_MIGRATE_ON_START": "false", "CHATQL_STREAM_IDLE_TIMEOUT": str(idle)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(self.port),
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.http = Http(f"127.0.0.1:{self.port}")

    async def ready(self) -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            for _ in range(400):
                try:
                    if (await http.get(f"http://127.0.0.1:{self.port}/healthz")
                            ).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise AssertionError("instance did not start")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def test_sigkill_mid_stream_the_producer_continues_on_the_other_instance(
        database_url: str, redis_url: str) -> None:
    chat = new_chat()
    a, b = Instance(database_url, redis_url, 300), Instance(database_url, redis_url, 300)
    try:
        await asyncio.gather(a.ready(), b.ready())
        await a.http.data(CREATE, {"id": chat})
        sid = (await a.http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        await a.http.data(PUSH, {"id": sid, "chunks": [text("m", "kept ", "c1")]})
        await a.http.data(PUSH, {"id": sid, "chunks": [text("m", "before ", "c2")]})
        a.kill()
        # The producer never saw c2's answer, say, and retries it on B with the rest.
        result = (await b.http.data(PUSH, {"id": sid, "chunks": [
            text("m", "before ", "c2"), text("m", "after", "c3")]}))["pushChunks"]
        assert (result["accepted"], result["duplicates"], result["lastSeq"]) == (1, 1, 4)
        await b.http.data(END, {"id": sid, "status": "COMPLETED"})
    finally:
        a.stop()
        b.stop()
    assert await stored_rows(database_url, chat) == [
        ("text", {"content": "kept before after"}, "COMPLETED")]


async def test_an_orphan_of_a_sigkilled_instance_is_persisted_once_interrupted(
        database_url: str, redis_url: str) -> None:
    chat = new_chat()
    a = Instance(database_url, redis_url, 300)
    others = [Instance(database_url, redis_url, 1), Instance(database_url, redis_url, 1)]
    try:
        await asyncio.gather(a.ready(), *(o.ready() for o in others))
        await a.http.data(CREATE, {"id": chat})
        sid = (await a.http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        await a.http.data(PUSH, {"id": sid, "chunks": [text("m", "half ", "c1"),
                                                      text("m", "done", "c2")]})
        a.kill()
        for _ in range(200):
            if await stored_rows(database_url, chat):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)  # both sweepers have run again: still one write
        assert await others[0].http.code(PUSH, {"id": sid, "chunks": [text("m", "x")]}) == (
            "STREAM_CLOSED")
    finally:
        a.stop()
        for other in others:
            other.stop()
    assert await stored_rows(database_url, chat) == [
        ("text", {"content": "half done"}, "INTERRUPTED")]


async def test_sigterm_hands_active_streams_over_instead_of_ending_them(
        database_url: str, redis_url: str) -> None:
    chat = new_chat()
    a, b = Instance(database_url, redis_url, 300), Instance(database_url, redis_url, 300)
    try:
        await asyncio.gather(a.ready(), b.ready())
        await a.http.data(CREATE, {"id": chat})
        sid = (await a.http.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        await a.http.data(PUSH, {"id": sid, "chunks": [text("m", "rolling ")]})
        a.process.terminate()  # a rolling deploy
        assert await asyncio.to_thread(a.process.wait, 30) in (0, -signal.SIGTERM)
        assert await stored_rows(database_url, chat) == []
        await b.http.data(PUSH, {"id": sid, "chunks": [text("m", "restart")]})
        await b.http.data(END, {"id": sid, "status": "COMPLETED"})
    finally:
        a.stop()
        b.stop()
    assert await stored_rows(database_url, chat) == [
        ("text", {"content": "rolling restart"}, "COMPLETED")]


async def test_token_counts_and_usage_cross_instances(shared: Settings) -> None:
    """Counts pushed on one instance and usage reported on the other are one persist's."""
    chat = new_chat()
    async with serve(shared) as (a, _app_a), serve(shared) as (b, _app_b):
        on_a, on_b = Http(a), Http(b)
        await on_a.data(CREATE, {"id": chat})
        sid = (await on_a.data(START, {"input": {"chatId": chat}}))["startStream"]["id"]
        await on_a.data(PUSH, {"id": sid, "chunks": [{**text("m", "Hi"), "tokens": 4}]})
        # No count on this chunk: the one pushed on A (kept in Redis) stands.
        await on_b.data(PUSH, {"id": sid, "chunks": [text("m", "!")]})
        end = """mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED,
          usage: {promptTokens: 11, completionTokens: 5}) { messages { tokens } } }"""
        for http in (on_b, on_a):  # the retry on the other instance counts nothing more
            assert (await http.data(end, {"id": sid}))["endStream"] == {
                "messages": [{"tokens": 4}]}
        usage = (await on_a.data("query($id: ID!) { chat(id: $id) { usage { promptTokens "
                                 "completionTokens messageTokens } } }", {"id": chat}))
        assert usage["chat"]["usage"] == {"promptTokens": 11, "completionTokens": 5,
                                          "messageTokens": 4}
