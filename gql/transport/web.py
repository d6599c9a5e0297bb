"""The browser pages chatql serves itself: the web app at ``/`` (and at ``/s/{token}``, a
share link's page) and GraphiQL at ``/graphql``.

Both are built from ``clients/web`` (React + Vite, GraphiQL from its npm release) into
``gql/static/`` and shipped inside the Python package, so serving them needs no Node.js
and no request leaves the host (no CDN). The pages learn what they need from a JSON
script written into their HTML here:

- ``auth``: ``dev`` or ``jwt`` (``CHATQL_AUTH``); in ``jwt`` mode the app asks for a token.
- ``identity`` (``dev`` mode only): the ``X-User-Id``, ``X-Team-Id``, ``X-Tenant-Id`` and
  ``X-Roles`` headers the page request carried — as a proxy in front would set them. The
  app acts as that identity (the person may switch); the playground offers them in its
  headers editor, from where they go with every request and into ``connection_init``.
- ``files``: ``{"maxBytes": …, "mediaTypes": […]}``, the largest file ``POST /files`` and
  ``createUpload`` take (``CHATQL_FILE_MAX_BYTES``) and the media types they accept
  (``CHATQL_FILE_TYPES``), as the ``fileLimits`` query answers them: the app refuses a
  larger file before uploading it, and its file picker offers those types.

A share link's page is the same app, told by its path to show the link read-only; it
is never indexed (``<meta name="robots" content="noindex">`` and ``X-Robots-Tag``) and
sends no referrer, so the token in its address does not travel to the sites it links.
"""

from __future__ import annotations

import json
from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chatql.gql.settings import Settings
from chatql.gql.transport.files import file_limits_for

__all__ = ["STATIC_DIR", "page_response", "web_routes"]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_PLACEHOLDER = "<!--chatql-config-->"
_IDENTITY_HEADERS = ("X-User-Id", "X-Team-Id", "X-Tenant-Id", "X-Roles")
_NOINDEX = '<meta name="robots" content="noindex" />'


def _config_script(settings: Settings, request: Request) -> str:
    limits = file_limits_for(settings)
    config: dict[str, object] = {"auth": settings.auth, "files": {
        "maxBytes": limits.max_bytes, "mediaTypes": sorted(limits.types)}}
    if settings.auth == "dev":
        config["identity"] = {
            name: request.headers[name] for name in _IDENTITY_HEADERS if name in request.headers
        }
    # "<" escaped: the JSON can never close the script element early.
    text = json.dumps(config).replace("<", "\\u003c")
    return f'<script id="chatql-config" type="application/json">{text}</script>'


def page_response(name: str, settings: Settings, request: Request, *,
                  noindex: bool = False) -> Response:
    """The built page ``name`` (``index.html``, ``playground.html``) for this request;
    ``noindex`` keeps search engines (and referrers) away from it."""
    path = STATIC_DIR / name
    if not path.is_file():
        return PlainTextResponse(
            f"{name} is not built: run `npm ci && npm run build` in clients/web", status_code=404
        )
    config = _config_script(settings, request)
    # The page embeds the caller's identity: never cache it.
    headers = {"Cache-Control": "no-store"}
    if noindex:
        config = f"{_NOINDEX}\n    {config}"
        headers.update({"X-Robots-Tag": "noindex", "Referrer-Policy": "no-referrer"})
    html = path.read_text(encoding="utf-8").replace(_PLACEHOLDER, config, 1)
    return HTMLResponse(html, headers=headers)


#: Build output is named by its content's hash: a name never changes meaning, so a
#: browser may keep it for a year without asking again.
_IMMUTABLE = "public, max-age=31536000, immutable"


class _Immutable:
    """Marks every successful answer of ``app`` as cacheable for good."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_cached(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                MutableHeaders(scope=message)["Cache-Control"] = _IMMUTABLE
            await send(message)

        await self.app(scope, receive, send_cached)


def assets_app() -> ASGIApp:
    """``/assets``: the hashed build output, cached for good and gzipped for clients
    that accept it (the scripts shrink to about a third)."""
    files = StaticFiles(directory=STATIC_DIR / "assets", check_dir=False)
    return GZipMiddleware(_Immutable(files), minimum_size=1024)


def web_routes(settings: Settings) -> list[BaseRoute]:
    """``/`` (the app), ``/s/{token}`` (a share link's page) and ``/assets`` (hashed,
    immutable build output)."""

    async def app_page(request: Request) -> Response:
        return page_response("index.html", settings, request)

    async def share_page(request: Request) -> Response:
        # The app reads the link itself (sharedChat); the page is the same for every
        # token, so a made-up one learns nothing here.
        return page_response("index.html", settings, request, noindex=True)

    return [
        Route("/", app_page, methods=["GET"]),
        Route("/s/{token}", share_page, methods=["GET"]),
        Mount("/assets", app=assets_app(), name="assets"),
    ]
