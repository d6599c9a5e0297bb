"""The pages chatql serves itself: the app at ``/``, GraphiQL at ``GET /graphql``, assets."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import httpx

from chatql.gql.settings import Settings
from tests.conftest import TEST_SECRET, running_app

HTML = {"Accept": "text/html"}


def config_of(html: str) -> Any:
    match = re.search(r'<script id="chatql-config" type="application/json">(.*?)</script>', html)
    assert match is not None, html
    return json.loads(match.group(1))


async def get(settings: Settings, path: str, headers: dict[str, str]) -> httpx.Response:
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://chatql") as http:
            return await http.get(path, headers=headers)


async def test_the_app_and_playground_carry_the_page_requests_dev_identity(
        settings: Settings) -> None:
    for path in ("/", "/graphql"):
        response = await get(settings, path, {**HTML, "X-User-Id": "bob", "X-Roles": "agent",
                                              "X-Tenant-Id": "</script><b>"})
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        assert "</script><b>" not in response.text
        assert config_of(response.text) == {"auth": "dev", "identity": {
            "X-User-Id": "bob", "X-Tenant-Id": "</script><b>", "X-Roles": "agent"}}


async def test_jwt_mode_pages_name_no_identity(settings: Settings) -> None:
    jwt = dataclasses.replace(settings, auth="jwt", jwt_secret=TEST_SECRET * 2)
    response = await get(jwt, "/graphql", {**HTML, "X-User-Id": "bob"})
    assert config_of(response.text) == {"auth": "jwt"}


async def test_assets_are_served_and_the_playground_can_be_switched_off(
        settings: Settings) -> None:
    page = await get(settings, "/", HTML)
    for asset in re.findall(r'(?:src|href)="(/assets/[^"]+)"', page.text):
        response = await get(settings, asset, {})
        assert response.status_code == 200, asset
    off = dataclasses.replace(settings, playground=False)
    assert (await get(off, "/graphql", HTML)).status_code == 404
