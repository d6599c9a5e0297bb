"""What startup built is kept out of the cyclic collector's full collections."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import gc, os, sys
from starlette.testclient import TestClient
from chatql.gql.app import create_app
assert gc.get_freeze_count() == 0
with TestClient(create_app()) as client:
    assert client.get("/healthz").json() == {"status": "ok"}
    frozen = gc.get_freeze_count()
    tracked = len(gc.get_objects())
print(frozen, tracked)
"""


def test_a_started_app_freezes_what_startup_built(tmp_path: Path) -> None:
    env = {"CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/startup.db",
           "CHATQL_SECRET": "startup-secret-0123456789", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    frozen, tracked = (int(value) for value in run.stdout.split())
    # The modules, the schema and the engine: far more than what is left to collect.
    assert frozen > 50_000 and tracked < frozen / 4, (frozen, tracked)
