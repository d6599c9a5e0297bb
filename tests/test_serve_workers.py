"""``chatql serve --workers N``: several processes on one port share streams via Redis.

The kernel hands each new connection to one of the worker processes; the test finds
which one holds the server side of its connection (through /proc), stops that worker
while it opens a second connection (so the other one takes it), and then starts a stream
through one worker, pushes to it and ends it through the other. With the
in-process ``memory://`` broker more than one worker is refused before anything listens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import TEST_SECRET, free_port
from tests.gql.test_streams_ws import ALICE, CREATE, END, PUSH, START

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(),
                                reason="finding a connection's worker needs /proc")


def _workers(pid: int) -> list[int]:
    """Worker processes of the server ``pid`` (not multiprocessing's own helpers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and (
                    b"spawn_main" in (entry / "cmdline").read_bytes()):
                found.append(int(entry.name))
    return found


def _worker_of(workers: list[int], server_port: int, client_port: int) -> int | None:
    """The worker holding the server side of the connection from ``client_port``."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if (int(local.split(":")[1], 16) == server_port
                and int(remote.split(":")[1], 16) == client_port):
            inode = fields[9]
    if inode is None:
        return None
    for pid in workers:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
        except OSError:
            continue
    return None


@asynccontextmanager
async def serve(database_url: str, broker_url: str, workers: int
                ) -> AsyncIterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": TEST_SECRET,
           "CHATQL_BROKER_URL": broker_url, "CHATQL_MIGRATE_ON_START": "false"}
    process = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port), "--workers",
         str(workers), "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert process.stderr is not None
        process.stderr.close()


async def graphql_data(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> Any:
    """The data of a request as alice that must succeed."""
    response = await http.post("/graphql", json={"query": query, "variables": variables},
                               headers=ALICE)
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    return body["data"]


async def test_two_workers_serve_and_share_a_stream(database_url: str, redis_url: str) -> None:
    async with serve(database_url, redis_url, 2) as (process, port):
        base = f"http://127.0.0.1:{port}"
        clients: dict[int, httpx.AsyncClient] = {}
        spare: list[httpx.AsyncClient] = []
        try:
            workers: list[int] = []
            for _ in range(600):
                workers = _workers(process.pid)
                if len(workers) == 2:
                    try:
                        async with httpx.AsyncClient(base_url=base, timeout=5) as probe:
                            if (await probe.get("/healthz")).status_code == 200:
                                break
                    except httpx.TransportError:
                        pass
                await asyncio.sleep(0.05)
            assert len(workers) == 2, "two worker processes"
            # One connection, and the worker holding it; while that worker is stopped
            # (SIGSTOP), the kernel can only hand the next connection to the other.
            for _ in range(2):
                http = httpx.AsyncClient(base_url=base, timeout=30)
                spare.append(http)
                stopped = list(clients)
                for pid in stopped:
                    os.kill(pid, signal.SIGSTOP)
                try:
                    async with http.stream("GET", "/healthz") as response:
                        stream = response.extensions["network_stream"]
                        client_port = stream.get_extra_info("client_addr")[1]
                        await response.aread()
                finally:
                    for pid in stopped:
                        os.kill(pid, signal.SIGCONT)
                pid = _worker_of(workers, port, client_port)
                assert pid is not None and pid not in clients
                clients[pid] = http
            assert len(clients) == 2, "each worker answered one of the connections"
            one, other = clients.values()
            chat = f"wk-{uuid.uuid4().hex[:10]}"
            await graphql_data(one, CREATE, {"id": chat})
            sid = (await graphql_data(one, START, {"input": {"chatId": chat}}))["startStream"]["id"]
            # The stream started through one process is pushed to through the other.
            pushed = await graphql_data(other, PUSH, {"id": sid, "chunks": [
                {"messageId": "m", "type": "text", "props": {"content": "from the other"}}]})
            assert pushed["pushChunks"]["accepted"] == 1
            ended = (await graphql_data(one, END, {"id": sid, "status": "COMPLETED"}))["endStream"]
            assert [m["props"] for m in ended["messages"]] == [{"content": "from the other"}]
        finally:
            for http in spare:
                await http.aclose()


async def test_memory_streams_refuse_more_than_one_worker(database_url: str) -> None:
    async with serve(database_url, "memory://", 2) as (process, port):
        code = await asyncio.to_thread(process.wait, 60)
        assert process.stderr is not None
        message = process.stderr.read().decode()
        assert code == 2
        assert "--workers 2" in message and "CHATQL_BROKER_URL=redis://" in message
        assert "Traceback" not in message
        # Nothing listens on the port.
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(timeout=5) as http:
                await http.get(f"http://127.0.0.1:{port}/healthz")


async def _through(workers: list[int], pid: int, base: str, path: str,
                   **request: Any) -> httpx.Response:
    """One request on a fresh connection that worker ``pid`` answers (the others are
    stopped while the connection is made, so the kernel can only hand it to ``pid``)."""
    others = [other for other in workers if other != pid]
    for other in others:
        os.kill(other, signal.SIGSTOP)
    try:
        http = httpx.AsyncClient(base_url=base, timeout=30)
        async with http.stream(request.pop("method", "GET"), path, **request) as response:
            client_port = response.extensions["network_stream"].get_extra_info(
                "client_addr")[1]
            await response.aread()
    finally:
        for other in others:
            os.kill(other, signal.SIGCONT)
    try:
        port = int(base.rsplit(":", 1)[1])
        assert _worker_of(workers, port, client_port) == pid
    finally:
        await http.aclose()
    return response


def _requests_counted(text: str, operation: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "chatql_requests_total"
               and sample.labels == {"operation": operation, "outcome": "ok"})


async def test_two_workers_metrics_sum_every_worker(database_url: str, redis_url: str) -> None:
    async with serve(database_url, redis_url, 2) as (process, port):
        base = f"http://127.0.0.1:{port}"
        workers: list[int] = []
        for _ in range(600):
            workers = _workers(process.pid)
            if len(workers) == 2:
                try:
                    async with httpx.AsyncClient(base_url=base, timeout=5) as probe:
                        if (await probe.get("/readyz")).status_code == 200:
                            break
                except httpx.TransportError:
                    pass
            await asyncio.sleep(0.05)
        assert len(workers) == 2
        name = f"Counted{uuid.uuid4().hex[:8]}"
        query = {"query": f"query {name} {{ chat(id: \"none\") {{ id }} }}"}
        # Three requests answered by one worker, two by the other.
        for pid, times in zip(workers, (3, 2), strict=True):
            for _ in range(times):
                response = await _through(workers, pid, base, "/graphql", method="POST",
                                          json=query, headers=ALICE)
                assert response.json() == {"data": {"chat": None}}
        # Whichever worker answers the scrape, it reports the sum over both.
        for pid in workers:
            scraped = await _through(workers, pid, base, "/metrics")
            assert _requests_counted(scraped.text, name) == 5
