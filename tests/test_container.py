"""The container image and the compose file, read as the tools would read them (no
Docker engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_image_is_built_in_stages_and_runs_unprivileged() -> None:
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    stages = [index for index, line in enumerate(lines) if line.startswith("FROM ")]
    assert len(stages) >= 2, "a build stage and a runtime stage"
    final = lines[stages[-1]:]
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), "the server runs as a non-root user"
    assert any("--from=build" in line for line in final), "the runtime takes built wheels"
    # The runtime stage installs no compilers or build tools.
    assert not any(re.search(r"apt-get install|build-essential|gcc", line) for line in final)
    assert final[-1].startswith("CMD") and "chatql" in final[-1]


def test_compose_runs_postgres_redis_and_two_instances_sharing_them() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis"} <= set(services)
    instances = [name for name, service in services.items() if service.get("build") == "."]
    assert len(instances) == 2
    for name in instances:
        env = services[name]["environment"]
        assert env["CHATQL_DATABASE_URL"].startswith("postgresql+asyncpg://")
        assert env["CHATQL_DATABASE_URL"].split("@")[1].startswith("postgres:")
        assert env["CHATQL_BROKER_URL"].startswith("redis://redis:")
        assert "/readyz" in " ".join(services[name]["healthcheck"]["test"])
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # One instance migrates; the other waits for it and does not.
    migrating = [name for name in instances
                 if services[name]["environment"].get("CHATQL_MIGRATE_ON_START") != "0"]
    assert len(migrating) == 1
