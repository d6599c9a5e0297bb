"""The documentation's examples, run against a real ``chatql serve`` so they cannot rot.

Which fenced blocks of ``README.md`` and ``docs/**/*.md`` run:

- ```` ```bash ```` blocks run with ``bash -e -o pipefail``, one process per block, in
  page order (so a page's blocks build on each other: create a chat, append, read);
- ```` ```python ```` blocks are saved to a file and run with this interpreter;
- every other block (```` ```sh ````, ```` ```graphql ````, ```` ```json ```` …) is
  shown only: use ``sh`` for commands that need what this test cannot provide
  (Postgres, Redis, Docker, Node.js, a long benchmark).

Before a block runs, ``127.0.0.1:8000`` and ``localhost:8000`` become the test server's
address and ``.venv/bin/`` this interpreter's own ``bin`` directory; the block's
environment names the server's database (``CHATQL_DATABASE_URL``), so ``chatql export``
and ``chatql import`` reach the same data. Every page runs against the same server and
database, as a reader following the pages against one ``make serve`` would: examples on
different pages use different chat ids.

Every GraphQL response a block prints (a JSON object with ``data`` or ``errors``,
also on Server-Sent Events' ``data:`` lines and in a WebSocket frame's ``payload``)
must carry no ``errors`` and no null root field — a private chat read by another
identity answers ``{"chat": null}``.
HTML comments right after a block's closing fence tune this:

- ``<!-- expect: TEXT -->``: TEXT must occur in the block's output (compact JSON, as the
  server writes it);
- ``<!-- expect-error: CODE -->``: the block shows a failure; its responses may carry
  errors, each with this ``extensions.code``, and at least one must;
- ``<!-- background -->``: the block keeps running (a subscription, as in a second
  terminal) while the page's next blocks run; the test waits for its first output
  before going on, and checks its expectations once the page is done.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from chatql.gql.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = ("bash", "python")
BLOCK_TIMEOUT = 60.0
BACKGROUND_WAIT = 10.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<name>expect-error|expect|background)\s*:?"
                        r"\s*(?P<value>.*?)\s*-->\s*$")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    source: str
    expect: list[str] = field(default_factory=list)
    expect_error: list[str] = field(default_factory=list)
    background: bool = False

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The page's fenced blocks in order, with the directives that follow each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        start = i + 1
        i = start
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and not lines[i].strip().strip(fence[0])
        ):
            i += 1
        body = "\n".join(_dedent(line, indent) for line in lines[start:i])
        block = Block(page, start, opening["lang"].lower(), body + "\n")
        i += 1
        while i < len(lines):
            directive = _DIRECTIVE.match(lines[i])
            if directive is None:
                break
            name, value = directive["name"], directive["value"]
            if name == "expect":
                block.expect.append(value)
            elif name == "expect-error":
                block.expect_error.append(value)
            else:
                block.background = True
            i += 1
        found.append(block)
    return found


def _dedent(line: str, indent: int) -> str:
    """A line of a block indented by ``indent`` (a list item's), without that indent."""
    if not indent:
        return line
    return line[indent:] if line[:indent].isspace() else line.lstrip()


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def runnable(page: Path) -> list[Block]:
    return [block for block in blocks_of(page) if block.lang in RUNNABLE]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    port: int
    env: dict[str, str]
    log: Path

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``python -m chatql.gql.cli serve`` on a free port, a fresh SQLite file, default
    settings otherwise (no ``CHATQL_*`` variable of the caller's leaks in)."""
    missing = [tool for tool in ("bash", "curl", "python3") if shutil.which(tool) is None]
    if missing:
        message = f"the documentation's examples need {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    home = tmp_path_factory.mktemp("docs-server")
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CHATQL_")}
    env["CHATQL_DATABASE_URL"] = f"sqlite+aiosqlite:///{home / 'chatql.db'}"
    env["PYTHONUNBUFFERED"] = "1"
    log_path = home / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chatql.gql.cli", "serve", "--port", str(port),
             "--log-level", "warning"],
            cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
                while True:
                    assert process.poll() is None, log_path.read_text(errors="replace")
                    try:
                        if http.get("/healthz").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert time.monotonic() < deadline, "chatql serve did not start"
                    time.sleep(0.05)
            yield Server(port, env, log_path)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def localise(source: str, server: Server) -> str:
    """The block as it runs here: the test server's address, this virtualenv's tools."""
    address = f"127.0.0.1:{server.port}"
    source = source.replace("127.0.0.1:8000", address).replace("localhost:8000", address)
    return source.replace(".venv/bin/", str(Path(sys.executable).parent) + "/")


def json_values(text: str) -> list[Any]:
    """Every JSON object in ``text``: whole lines, several concatenated on one line (curl
    prints no newline after a body), or after Server-Sent Events' ``data:``."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:"):
            line = line[len("data:"):].strip()
        position = 0
        while position < len(line) and line[position] == "{":
            try:
                value, position = decoder.raw_decode(line, position)
            except json.JSONDecodeError:
                break
            values.append(value)
            while position < len(line) and line[position].isspace():
                position += 1
    return values


def check_output(block: Block, output: str, server: Server) -> None:
    context = (f"{block.where} ({block.lang})\n--- block ---\n{block.source}--- output ---\n"
               f"{output}\n--- server log ---\n{server.log_tail()}")
    codes: list[str] = []
    for value in json_values(output):
        if isinstance(value, dict) and isinstance(value.get("payload"), dict):
            # A WebSocket frame: graphql-transport-ws `next`, graphql-ws `data`.
            value = value["payload"]
        if not isinstance(value, dict) or not ({"data", "errors"} & value.keys()):
            continue
        for error in value.get("errors") or []:
            codes.append(str((error.get("extensions") or {}).get("code")))
        data = value.get("data")
        if isinstance(data, dict) and not value.get("errors"):
            nulls = [key for key, item in data.items() if item is None]
            assert not nulls, f"null root field {nulls} in {context}"
    if block.expect_error:
        assert codes, f"expected an error {block.expect_error}, none came: {context}"
        unexpected = [code for code in codes if code not in block.expect_error]
        assert not unexpected, f"unexpected error codes {unexpected}: {context}"
    else:
        assert not codes, f"errors {codes}: {context}"
    for text in block.expect:
        assert text in output, f"expected {text!r} in the output of {context}"


def command(block: Block, server: Server, workdir: Path) -> list[str]:
    source = localise(block.source, server)
    if block.lang == "python":
        script = workdir / f"example_{block.line}.py"
        script.write_text(source, encoding="utf-8")
        return [sys.executable, str(script)]
    return ["bash", "-e", "-o", "pipefail", "-c", source]


def run_block(block: Block, server: Server, workdir: Path) -> None:
    done = subprocess.run(command(block, server, workdir), cwd=workdir, env=server.env,
                          capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    assert done.returncode == 0, (
        f"{block.where} exited with {done.returncode}\n--- block ---\n{block.source}"
        f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}\n"
        f"--- server log ---\n{server.log_tail()}")
    check_output(block, done.stdout, server)


@dataclass
class Background:
    block: Block
    process: subprocess.Popen[bytes]
    output: Path
    sink: IO[bytes]

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.sink.close()


def start_background(block: Block, server: Server, workdir: Path) -> Background:
    output = workdir / f"background_{block.line}.out"
    sink = output.open("wb")
    process = subprocess.Popen(command(block, server, workdir), cwd=workdir, env=server.env,
                               stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    running = Background(block, process, output, sink)
    deadline = time.monotonic() + BACKGROUND_WAIT
    while not running.text().strip():
        if process.poll() is not None or time.monotonic() > deadline:
            running.stop()
            pytest.fail(f"{block.where}: no output from the background block\n"
                        f"{block.source}--- output ---\n{running.text()}")
        time.sleep(0.02)
    # Its first output means it is connected; let the subscription settle.
    time.sleep(0.3)
    return running


def finish_background(running: Background, server: Server) -> None:
    deadline = time.monotonic() + BACKGROUND_WAIT
    while (not all(text in running.text() for text in running.block.expect)
           and time.monotonic() < deadline):
        time.sleep(0.05)
    running.stop()
    check_output(running.block, running.text(), server)


PAGES = [page for page in pages() if runnable(page)]


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_examples_run(page: Path, server: Server, tmp_path: Path) -> None:
    background: list[Background] = []
    try:
        for block in runnable(page):
            if block.background:
                background.append(start_background(block, server, tmp_path))
            else:
                run_block(block, server, tmp_path)
        while background:
            finish_background(background.pop(0), server)
    finally:
        for running in background:
            running.stop()


def test_the_readme_and_the_tutorial_have_runnable_examples() -> None:
    readme = runnable(ROOT / "README.md")
    assert sum(block.source.count("curl ") for block in readme) >= 3
    assert all("X-User-Id: alice" in block.source for block in readme)
    tutorial = runnable(DOCS / "tutorial.md")
    assert any("startStream" in block.source for block in tutorial)
    assert any(block.background and "chatStream" in block.source for block in tutorial)
    assert any(block.lang == "python" for block in tutorial)


def test_every_setting_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [f"CHATQL_{spec.name.upper()}" for spec in fields(Settings)
               if f"`CHATQL_{spec.name.upper()}`" not in text]
    assert not missing, f"docs/configuration.md does not describe {missing}"


def test_blocks_are_found_with_their_directives(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text\n\n```bash\necho '{\"data\": {\"a\": 1}}'\n```\n<!-- expect: \"a\": 1 -->\n"
        "<!-- background -->\n\n- item\n\n  ```python\n  print('x')\n  ```\n\n"
        "```sh\nmake serve\n```\n<!-- expect-error: NOT_FOUND -->\n")
    found = blocks_of(page)
    assert [(block.lang, block.source) for block in found] == [
        ("bash", "echo '{\"data\": {\"a\": 1}}'\n"), ("python", "print('x')\n"),
        ("sh", "make serve\n")]
    assert found[0].expect == ['"a": 1'] and found[0].background
    assert found[2].expect_error == ["NOT_FOUND"]
    assert json_values('{"data":{"a":1}}{"data":{"b":null}}\nplain\ndata: {"x":2}') == [
        {"data": {"a": 1}}, {"data": {"b": None}}, {"x": 2}]
