"""The app and playground ship pre-built in ``gql/static`` (no Node.js needed to serve
them); this fails when their sources changed without ``npm run build`` in clients/web."""

from __future__ import annotations

import hashlib
import re

from chatql.gql.transport.web import STATIC_DIR
from tests.clients.node import ROOT

# The same inputs, in the same way, as clients/web/scripts/stamp.mjs.
INPUTS = [
    "clients/web/src", "clients/web/index.html", "clients/web/playground.html",
    "clients/web/vite.config.ts", "clients/web/package-lock.json", "clients/web/tsconfig.json",
    "clients/js/src",
]


def source_hash() -> str:
    paths: list[str] = []
    for name in INPUTS:
        path = ROOT / name
        if path.is_dir():
            paths.extend(p.relative_to(ROOT).as_posix() for p in path.rglob("*") if p.is_file())
        else:
            paths.append(name)
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(f"{path}\0".encode())
        digest.update((ROOT / path).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def test_shipped_assets_were_built_from_the_current_sources() -> None:
    recorded = (STATIC_DIR / "SOURCES.sha256").read_text().strip()
    assert recorded == source_hash(), "gql/static is stale: run `npm run build` in clients/web"


def test_pages_reference_only_their_own_assets() -> None:
    for page in ("index.html", "playground.html"):
        html = (STATIC_DIR / page).read_text()
        assert "<!--chatql-config-->" in html
        assert "http://" not in html and "https://" not in html and "//cdn" not in html
        for asset in re.findall(r'(?:src|href)="/assets/([^"]+)"', html):
            assert (STATIC_DIR / "assets" / asset).is_file(), asset
        # The icon is in the page, so a browser never asks the server for /favicon.ico
        # (which chatql does not serve: the request would end in a 404 on every load).
        assert re.search(r'<link rel="icon" href="data:image/png;base64,[A-Za-z0-9+/=]+"', html)
