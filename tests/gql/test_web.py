"""The pages chatql serves itself: the app at ``/``, GraphiQL at ``GET /graphql``, assets."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import httpx

from chatql.gql.app import create_app
from chatql.gql.settings import Settings
from tests.conftest import TEST_SECRET, running_app, uvicorn_serving

HTML = {"Accept": "text/html"}
#: What the pages say of files under the default settings.
FILES = {"maxBytes": 25 * 1024 * 1024, "mediaTypes": [
    "application/json", "application/pdf", "image/gif", "image/jpeg", "image/png",
    "image/svg+xml", "image/webp", "text/csv", "text/html", "text/markdown", "text/plain"]}


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
        assert config_of(response.text) == {
            "auth": "dev", "files": FILES, "identity": {
                "X-User-Id": "bob", "X-Tenant-Id": "</script><b>", "X-Roles": "agent"}}


async def test_jwt_mode_pages_name_no_identity(settings: Settings) -> None:
    jwt = dataclasses.replace(settings, auth="jwt", jwt_secret=TEST_SECRET * 2)
    response = await get(jwt, "/graphql", {**HTML, "X-User-Id": "bob"})
    assert config_of(response.text) == {"auth": "jwt", "files": FILES}


async def test_the_page_tells_the_largest_file_the_server_takes_over_http(
        settings: Settings) -> None:
    """The page's config names ``CHATQL_FILE_MAX_BYTES``; it is the limit ``POST /files``
    enforces: that many bytes are taken, one more is 413."""
    small = dataclasses.replace(settings, file_max_bytes=1000)
    async with uvicorn_serving(create_app(small)) as port, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}") as http:
        page = await http.get("/", headers={**HTML, "X-User-Id": "bob"})
        limit = config_of(page.text)["files"]["maxBytes"]
        assert limit == 1000
        # The same limits the fileLimits query answers.
        asked = (await http.post("/graphql", headers={"X-User-Id": "bob"}, json={
            "query": "{ fileLimits { maxBytes mediaTypes } }"})).json()["data"]["fileLimits"]
        assert asked == config_of(page.text)["files"]
        who = {"X-User-Id": "bob", "Content-Type": "text/plain"}
        taken = await http.post("/files?filename=a.txt", headers=who, content=b"a" * limit)
        assert taken.status_code == 201, taken.text
        assert taken.json()["size"] == limit
        refused = await http.post("/files?filename=b.txt", headers=who,
                                  content=b"a" * (limit + 1))
        assert refused.status_code == 413
        assert refused.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
        assert f"larger than {limit} bytes" in refused.json()["errors"][0]["message"]


async def test_assets_are_served_and_the_playground_can_be_switched_off(
        settings: Settings) -> None:
    page = await get(settings, "/", HTML)
    for asset in re.findall(r'(?:src|href)="(/assets/[^"]+)"', page.text):
        response = await get(settings, asset, {})
        assert response.status_code == 200, asset
    off = dataclasses.replace(settings, playground=False)
    assert (await get(off, "/graphql", HTML)).status_code == 404


async def test_assets_are_gzipped_and_cached_for_good_over_http(settings: Settings) -> None:
    """The hashed build output goes compressed and with a year's cache lifetime; a
    missing one is a plain 404 that no cache keeps."""
    async with uvicorn_serving(create_app(settings)) as port, httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}") as http:
        page = await http.get("/", headers=HTML)
        script = re.search(r'<script[^>]+src="(/assets/[^"]+\.js)"', page.text)
        assert script is not None, page.text
        zipped = await http.get(script.group(1), headers={"Accept-Encoding": "gzip"})
        assert zipped.status_code == 200
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.headers["cache-control"] == "public, max-age=31536000, immutable"
        raw = await http.get(script.group(1), headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in raw.headers
        assert raw.content == zipped.content  # httpx decoded the gzip one
        assert zipped.num_bytes_downloaded < raw.num_bytes_downloaded / 2
        missing = await http.get("/assets/nothing-here.js")
        assert missing.status_code == 404 and "immutable" not in missing.headers.get(
            "cache-control", "")
