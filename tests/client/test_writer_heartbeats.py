"""The stream writer's heartbeats against a live server with a short idle timeout (both
databases, both stream backends): Stop found while the agent is quiet, and a killed
producer timed out while a quiet one that heartbeats is not."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys

import pytest
from chatql_client import ChatqlClient, StreamStopped

from chatql.gql.settings import Settings
from tests.client.test_writer import new_question


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A short idle timeout: heartbeats every 0.5 s, a vanished producer timed out in 1.5 s.
    return dataclasses.replace(settings, stream_idle_timeout=1.5)


async def test_stop_while_the_agent_is_quiet_cancels_its_wait(
        kit: ChatqlClient, person: ChatqlClient) -> None:
    chat_id, _ = await new_question(person)
    cancelled = asyncio.Event()
    written = asyncio.Event()

    async def stop_soon() -> None:
        # Once the text is with the service (a loaded machine may take longer than the
        # pause to open the stream), while the agent is quiet.
        await written.wait()
        await asyncio.sleep(0.3)
        await person.stop_stream(chat_id)

    stopper = asyncio.create_task(stop_soon())
    started = asyncio.get_running_loop().time()
    with pytest.raises(StreamStopped):
        async with kit.stream(chat_id) as s:
            await s.text("Calling a slow tool")
            await s.flush()
            written.set()
            try:
                await asyncio.sleep(30)  # a long tool call
            except asyncio.CancelledError:
                cancelled.set()
                raise
    await stopper
    assert cancelled.is_set()
    # Found by the next heartbeat (a third of the 1.5 s idle timeout), not after 30 s.
    assert asyncio.get_running_loop().time() - started < 5
    assert s.idle_timeout == 1.5
    # The task that ran the agent is not left cancelled.
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    last = (await person.messages(chat_id))[-1]
    assert (last["props"]["content"], last["status"]) == ("Calling a slow tool", "INTERRUPTED")


KILLED_PRODUCER = """
import asyncio, os, signal, sys
from chatql_client import ChatqlClient

async def main():
    client = ChatqlClient(sys.argv[1], headers={"X-User-Id": "agent-1", "X-Tenant-Id": "acme",
                                                "X-Roles": "agent"})
    async with client.stream(sys.argv[2]) as s:
        await s.text("Before the crash")
        await s.flush()
        print("streaming", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_a_killed_producer_times_out_but_a_quiet_one_with_heartbeats_does_not(
        server_url: str, kit: ChatqlClient, person: ChatqlClient) -> None:
    killed_chat, _ = await new_question(person, "Who crashes?")
    quiet_chat, _ = await new_question(person, "Who waits?")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_PRODUCER, server_url, killed_chat,
        stdout=subprocess.PIPE, env={**os.environ})
    out, _ = await process.communicate()
    assert out.decode().strip() == "streaming"
    assert process.returncode == -signal.SIGKILL

    async with kit.stream(quiet_chat) as s:
        await s.text("Thinking hard")
        await asyncio.sleep(4.5)  # three idle timeouts without a word
        await s.text("… done.")
    assert s.status == "COMPLETED"
    assert (await person.messages(quiet_chat))[-1]["props"] == {
        "content": "Thinking hard… done."}

    # The killed producer's stream was ended INTERRUPTED meanwhile, its text kept.
    last = (await person.messages(killed_chat))[-1]
    assert (last["props"], last["status"]) == ({"content": "Before the crash"}, "INTERRUPTED")
