"""The installed server is one namespace, ``chatql``, and serves from a plain install.

PyPI's ``gql`` is a GraphQL client many of our users' tools import: a wheel of chatql
must not shadow it (nor install a module as generic as ``store``). The wheel is built
from this checkout, installed without ``-e`` into a fresh virtual environment beside
PyPI's ``gql``, and ``chatql serve`` answers a GraphQL request from there.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(out), str(ROOT)], check=True)
    (built,) = out.glob("chatql-*.whl")
    return built


def test_the_wheel_installs_one_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"chatql"}, top
    # The migrations, the web app and the playground travel with the code.
    assert "chatql/store/migrations/env.py" in names
    assert any(n.startswith("chatql/store/migrations/versions/0001_") for n in names)
    assert "chatql/gql/static/index.html" in names
    assert any(n.startswith("chatql/gql/static/assets/") for n in names)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_plain_install_serves_beside_pypis_gql(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel), "gql>=3.5,<5"],
                   check=True)
    # Both import side by side, from the environment rather than this checkout.
    probe = ("import gql, chatql.gql.app, chatql.store\n"
             "assert hasattr(gql, 'Client'), gql.__file__\n"
             "assert 'site-packages' in chatql.gql.app.__file__, chatql.gql.app.__file__\n")
    subprocess.run([str(python), "-c", probe], check=True, cwd=tmp_path)

    port = _free_port()
    env = {**os.environ, "CHATQL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",
           "CHATQL_AUTH": "dev"}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([str(env_dir / "bin" / "chatql"), "serve", "--port", str(port)],
                                  cwd=tmp_path, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "chatql serve did not start"
            time.sleep(0.2)
        headers = {"X-User-Id": "packager"}
        created = httpx.post(f"http://127.0.0.1:{port}/graphql", headers=headers, json={
            "query": 'mutation { createChat(input: {assistantId: "a", title: "from a wheel"})'
                     ' { id title } }'})
        assert created.json()["data"]["createChat"]["title"] == "from a wheel"
    finally:
        server.terminate()
        server.wait(timeout=30)
