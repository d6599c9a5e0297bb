"""Fixtures of the producer kit's tests: a real chatql server (uvicorn, both databases,
both stream backends) and kit clients pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from chatql_client import ChatqlClient

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from tests.conftest import BACKENDS, on_backend, uvicorn_serving

AGENT = {"X-User-Id": "agent-1", "X-Tenant-Id": "acme", "X-Roles": "agent"}
PERSON = {"X-User-Id": "alice", "X-Tenant-Id": "acme"}


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    return on_backend(request, settings)


@pytest.fixture
async def server_url(settings: Settings) -> AsyncIterator[str]:
    """The GraphQL address of a live server on these settings."""
    async with uvicorn_serving(create_app(settings)) as port:
        yield f"http://127.0.0.1:{port}/graphql"


@pytest.fixture
async def kit(server_url: str) -> AsyncIterator[ChatqlClient]:
    """A kit client with an agent's identity."""
    async with ChatqlClient(server_url, headers=AGENT, retry_backoff=0.01) as client:
        yield client


@pytest.fixture
async def person(server_url: str) -> AsyncIterator[ChatqlClient]:
    """A kit client as the person who owns the chats (presses Stop, asks questions)."""
    async with ChatqlClient(server_url, headers=PERSON) as client:
        yield client


@pytest.fixture
def make_kit(server_url: str) -> Callable[..., ChatqlClient]:
    """More kit clients on the same server (closed by the test)."""
    def build(**options: object) -> ChatqlClient:
        return ChatqlClient(server_url, headers=AGENT, retry_backoff=0.01, **options)  # type: ignore[arg-type]

    return build
