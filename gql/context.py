"""The per-request context every resolver receives, and the app-wide services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.websockets import WebSocket
from strawberry.types import Info as StrawberryInfo

from chatql.gql.settings import Settings
from chatql.store.cursors import CursorSigner
from chatql.store.db.database import Database
from chatql.store.db.replicas import set_caller
from chatql.store.files.service import FileService
from chatql.store.keeping.archive import ChatArchive
from chatql.store.keeping.shares import ShareViews
from chatql.store.lists.events import ChatEvents
from chatql.store.records import Identity
from chatql.store.streams import StreamService

__all__ = ["Context", "Info", "Services"]


@dataclass
class Services:
    """Long-lived collaborators built once by ``create_app``."""

    settings: Settings
    db: Database
    cursors: CursorSigner
    #: Live streams: producers' operations and subscriptions.
    streams: StreamService | None = None
    #: The live chat list's events: every write path publishes, subscribers follow.
    events: ChatEvents | None = None
    #: Cold storage for archived chats.
    archive: ChatArchive | None = None
    #: Uploaded files: their storage, limits and signed addresses.
    files: FileService | None = None
    #: Views of share links, written in batches (store/keeping/shares.py).
    share_views: ShareViews | None = None


@dataclass
class Context:
    """One HTTP request, or one WebSocket connection."""

    services: Services
    identity: Identity
    request: Request | WebSocket | None = None
    response: Any = None
    #: The WebSocket ``connection_init`` payload (set by the protocol handler).
    connection_params: dict[str, Any] | None = None
    #: Per-request DataLoaders, created on first use.
    loaders: dict[str, Any] = field(default_factory=dict)
    #: Why the request's credentials were refused, if they were: HTTP refuses before
    #: executing; a WebSocket may still name its caller in ``connection_init``.
    auth_error: str | None = None
    #: An HTTP operation the plans already had: counted against the caller's limits and
    #: declined by its plan, so the view runs it on the executor without either again.
    planned: bool = False
    #: The request named no caller (no identity header, no ``Authorization``): only
    #: what anyone may read is open to it — a PUBLIC share link, never a TENANT one,
    #: even where ``dev`` mode lets it act as ``dev`` otherwise.
    anonymous: bool = False

    def __post_init__(self) -> None:
        self.name_caller()

    def name_caller(self) -> None:
        """Tell the database who is calling (read replicas answer a caller's reads
        after its own writes only once they have replayed them)."""
        set_caller((self.identity.tenant_id, self.identity.user_id))

    @property
    def db(self) -> Database:
        return self.services.db


Info = StrawberryInfo[Context, None]
