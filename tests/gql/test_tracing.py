"""OpenTelemetry traces from ``chatql serve`` to an OTLP/HTTP collector stand-in: one
trace per request with its database spans; nothing of OpenTelemetry loaded without
the endpoint variable."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import TEST_SECRET, free_port
from tests.gql.test_streams_ws import ALICE, CREATE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def collector() -> Iterator[tuple[str, list[Any]]]:
    """An OTLP/HTTP endpoint keeping every span it is sent."""
    spans: list[Any] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    spans.extend(scope.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


def attributes(span: Any) -> dict[str, Any]:
    return {item.key: item.value.string_value for item in span.attributes}


async def test_one_trace_per_request_with_database_spans(
        database_url: str, collector: tuple[str, list[Any]]) -> None:
    endpoint, spans = collector
    port = free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": database_url, "CHATQL_SECRET": TEST_SECRET,
           "CHATQL_MIGRATE_ON_START": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "chatql-test"}
    server = subprocess.Popen(
        [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
         "--log-level", "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            for _ in range(600):
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            for chat in ("traced-1", "traced-2"):
                made = await http.post("/graphql", headers=ALICE, json={
                    "query": CREATE, "variables": {"id": f"{chat}-{port}"}})
                assert made.json()["data"]["createChat"]["id"] == f"{chat}-{port}"
            for _ in range(200):
                servers = [span for span in spans if span.kind == span.SPAN_KIND_SERVER
                           and attributes(span).get("http.target",
                                                    attributes(span).get("url.path"))
                           == "/graphql"]
                if len(servers) >= 2:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # the database spans of the same batch
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        assert server.stderr is not None
        server.stderr.close()
    assert len(servers) == 2, [span.name for span in spans]
    for request_span in servers:
        trace = [span for span in spans if span.trace_id == request_span.trace_id]
        # One request, one trace: exactly one server span in it.
        assert [span.kind for span in trace].count(request_span.SPAN_KIND_SERVER) == 1
        database = [span for span in trace if "db.system" in attributes(span)
                    or "db.system.name" in attributes(span)]
        assert database, [span.name for span in trace]
    assert servers[0].trace_id != servers[1].trace_id


def test_nothing_of_opentelemetry_loads_without_the_endpoint(tmp_path: Path) -> None:
    script = """
import asyncio, sys
import httpx
from chatql.gql.app import create_app
from chatql.gql.settings import Settings

async def main():
    settings = Settings(database_url=sys.argv[1])
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            response = await http.post("/graphql", json={"query": "{ chats { totalCount } }"})
            assert response.status_code == 200, response.text

asyncio.run(main())
loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
print(loaded)
"""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", script,
                           f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
