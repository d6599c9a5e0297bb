"""The kit installs on its own: a fresh virtual environment with ``chatql-client`` and its
two runtime dependencies — and not the server — imports every kit module and runs the
command line. Nothing of the kit can reach for ``chatql`` there."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "clients" / "python"

pytestmark = pytest.mark.slow

PROBE = """
import importlib, importlib.util, pkgutil, sys
import chatql_client
assert importlib.util.find_spec("chatql") is None, "the server is installed here"
assert "site-packages" in chatql_client.__file__, chatql_client.__file__
names = [m.name for m in pkgutil.iter_modules(chatql_client.__path__)]
for name in names:
    importlib.import_module(f"chatql_client.{name}")
loaded = sorted(m for m in sys.modules if m == "chatql" or m.startswith("chatql."))
assert not loaded, loaded
print(",".join(sorted(names)))
"""


def test_the_kit_installs_and_imports_without_the_server(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    str(KIT)], check=True, timeout=300)
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=True,
                            capture_output=True, text=True).stdout.lower()
    assert "chatql-client==" in listed and "\nchatql==" not in f"\n{listed}"
    probe = subprocess.run([str(python), "-c", PROBE], cwd=tmp_path, check=True,
                           capture_output=True, text=True)
    modules = set(probe.stdout.strip().split(","))
    assert {"client", "writer", "agent_loop", "demo", "cli", "sync", "errors"} <= modules
    helped = subprocess.run([str(env_dir / "bin" / "chatql-client"), "demo", "--help"],
                            check=True, capture_output=True, text=True)
    assert "--assistant" in helped.stdout
