"""A real Postgres primary and streaming replica, started from the server's binaries.

:func:`start_pair` makes both in a temporary directory on free loopback ports —
``initdb`` for the primary, ``pg_basebackup -R`` for the replica (which then streams
from it) — run as the ``postgres`` user when the tests run as root (the server refuses
to run as root). :class:`ReplicaPair` pauses, resumes, stops and starts the replica.
The replica tests and ``bench.replicas`` both run on it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ReplicaPair", "free_port", "postgres_binaries", "start_pair"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def postgres_binaries() -> Path | None:
    """The directory of the newest installed server's binaries (None: none installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda path: int(Path(path).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return None if initdb is None else Path(initdb).parent


def _as_postgres(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@dataclass
class ReplicaPair:
    """A running primary and replica; ``stop`` removes both with their files."""

    binaries: Path
    root: Path
    primary_port: int
    replica_port: int

    def url(self, port: int, database: str) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{port}/{database}"

    def _run(self, *command: str) -> None:
        subprocess.run(_as_postgres([str(self.binaries / command[0]), *command[1:]]),
                       check=True, capture_output=True, timeout=120)

    def psql_replica(self, sql: str) -> None:
        subprocess.run(_as_postgres([str(self.binaries / "psql"), "-h", "127.0.0.1", "-p",
                                     str(self.replica_port), "-U", "postgres", "-d",
                                     "postgres", "-Atc", sql]),
                       check=True, capture_output=True, timeout=60)

    def pause_replay(self) -> None:
        self.psql_replica("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.psql_replica("SELECT pg_wal_replay_resume()")

    def stop_replica(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "replica"), "-m", "fast", "-w", "stop")

    def start_replica(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "replica"), "-l",
                  str(self.root / "replica.log"), "-w", "start")

    def replica_running(self) -> bool:
        return (self.root / "replica" / "postmaster.pid").exists()

    def stop(self) -> None:
        for node in ("replica", "primary"):
            if (self.root / node / "postmaster.pid").exists():
                subprocess.run(_as_postgres([str(self.binaries / "pg_ctl"), "-D",
                                             str(self.root / node), "-m", "immediate", "-w",
                                             "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(self.root, ignore_errors=True)


def _configure(data: Path, port: int, sockets: Path) -> None:
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(f"\nport = {port}\nlisten_addresses = '127.0.0.1'\n"
                   f"unix_socket_directories = '{sockets}'\nfsync = off\n"
                   "synchronous_commit = off\nfull_page_writes = off\n"
                   "max_wal_senders = 4\nwal_level = replica\nhot_standby = on\n"
                   "max_connections = 60\nshared_buffers = 32MB\n")


def start_pair(binaries: Path) -> ReplicaPair:
    """Start a primary and a streaming replica of it; both listen on 127.0.0.1."""
    root = Path(tempfile.mkdtemp(prefix="chatql-replicas-"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    pair = ReplicaPair(binaries, root, free_port(), free_port())
    try:
        primary = root / "primary"
        pair._run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust",
                  "--no-sync")
        _configure(primary, pair.primary_port, root)
        pair._run("pg_ctl", "-D", str(primary), "-l", str(root / "primary.log"), "-w",
                  "start")
        pair._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(pair.primary_port), "-U",
                  "postgres", "-D", str(root / "replica"), "-R", "-X", "stream",
                  "--no-sync")
        with (root / "replica" / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {pair.replica_port}\n")
        pair.start_replica()
        deadline = time.monotonic() + 60
        while True:
            try:
                pair.psql_replica("SELECT 1")
                break
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    except BaseException:
        pair.stop()
        raise
    return pair
