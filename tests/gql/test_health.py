"""``/healthz`` (alive) and ``/readyz`` (able to serve) over real HTTP."""

from __future__ import annotations

import dataclasses
import os
import signal
from typing import Any

import httpx
import pytest

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from chatql.store.db.database import Database
from chatql.store.db.migrate import alembic_config, migrate
from chatql.store.db.partitions import layout_partitions
from tests.conftest import BACKENDS, on_backend, running_app, uvicorn_serving


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


async def probe(settings: Settings) -> tuple[httpx.Response, httpx.Response]:
    async with uvicorn_serving(create_app(settings)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        return await http.get("/healthz"), await http.get("/readyz")


async def test_ready_when_database_migrations_and_broker_are(settings: Settings) -> None:
    alive, ready = await probe(settings)
    assert (alive.status_code, alive.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})


async def test_not_ready_while_migrations_are_behind(settings: Settings) -> None:
    db = Database(settings.database_url)

    def downgrade(sync: Any) -> None:
        from alembic import command

        command.downgrade(alembic_config(sync), "-1")

    async with db.engine.connect() as conn:
        layout = await conn.run_sync(layout_partitions) if db.is_postgres else 0
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(downgrade)
        alive, ready = await probe(settings)
    finally:
        await migrate(db, pg_partitions=layout)
        await db.dispose()
    assert alive.status_code == 200
    assert ready.status_code == 503
    assert ready.json() == {"status": "not ready", "failed": ["migrations"]}


async def test_not_ready_while_the_broker_is_unreachable(settings: Settings) -> None:
    if settings.broker_url == "memory://":
        pytest.skip("a process's own memory is always reachable")
    # Up, then the broker goes away: the app keeps serving liveness, not readiness.
    app = create_app(settings)
    async with uvicorn_serving(app) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        backend = app.state.services.streams.backend
        real = backend.redis
        backend.redis = type(real).from_url("redis://127.0.0.1:1/0")
        try:
            alive, ready = await http.get("/healthz"), await http.get("/readyz")
        finally:
            await backend.redis.aclose()
            backend.redis = real
    assert alive.status_code == 200
    assert (ready.status_code, ready.json()) == (
        503, {"status": "not ready", "failed": ["broker"]})


async def test_draining_from_sigterm_on(settings: Settings) -> None:
    """SIGTERM: /readyz answers 503 ``draining`` at once (the server's own handler still
    runs), and never 200 again."""
    told: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: told.append(signum))
    try:
        async with running_app(settings) as app, httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            assert (await http.get("/readyz")).status_code == 200
            os.kill(os.getpid(), signal.SIGTERM)
            draining = await http.get("/readyz")
            alive = await http.get("/healthz")
        assert told == [signal.SIGTERM]
        assert (draining.status_code, draining.json()) == (
            503, {"status": "not ready", "failed": ["draining"]})
        assert alive.status_code == 200
        # After shutdown the handler is the server's own again, and the app never
        # says ready again.
        assert signal.getsignal(signal.SIGTERM) is not previous
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            assert (await http.get("/readyz")).status_code == 503
    finally:
        signal.signal(signal.SIGTERM, previous)


async def test_not_ready_when_the_database_is_unreachable(settings: Settings) -> None:
    unreachable = dataclasses.replace(
        settings, database_url="postgresql+asyncpg://nobody@127.0.0.1:1/none")
    alive, ready = await probe(unreachable)
    assert alive.status_code == 200
    assert (ready.status_code, ready.json()) == (
        503, {"status": "not ready", "failed": ["database"]})
