"""Service configuration, read once from ``CHATQL_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from chatql.store.db.database import DEFAULT_DATABASE_URL
from chatql.store.files.service import DEFAULT_FILE_TYPES

__all__ = ["Settings"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Settings:
    """Everything the app factory needs; tests build their own instances.

    Each field is read from ``CHATQL_<FIELD NAME IN UPPER CASE>``.
    """

    database_url: str = DEFAULT_DATABASE_URL
    #: Comma-separated Postgres read replicas of ``database_url`` (streaming standbys).
    database_replica_urls: tuple[str, ...] = field(default_factory=tuple)
    #: Seconds a replica may hold WAL the primary wrote without replaying it before
    #: reads skip it (until it catches up).
    replica_max_lag: float = 5.0
    #: Hash partitions by chat id of the per-chat tables on Postgres (0: plain tables),
    #: used when the database is created or converted by ``chatql migrate``; a
    #: database keeps the count it was given.
    pg_partitions: int = 16
    #: Key for signing cursors; when empty a random key is kept in the database.
    secret: str = ""
    #: Serve the GraphiQL playground on GET /graphql from a browser.
    playground: bool = True
    #: Run migrations when the app starts (the embedded default does).
    migrate_on_start: bool = True
    #: Identity source: ``dev`` headers or ``jwt`` bearer tokens.
    auth: str = "dev"
    #: HS256 key (at least 32 bytes) for ``jwt`` mode.
    jwt_secret: str = ""
    #: RS256 public key for ``jwt`` mode: PEM text or the path of a PEM file.
    jwt_public_key: str = ""
    #: When set, tokens must carry this ``aud`` / ``iss``.
    jwt_audience: str = ""
    jwt_issuer: str = ""
    #: Limits on a GraphQL document (beyond them: QUERY_TOO_COMPLEX).
    max_query_depth: int = 12
    max_query_tokens: int = 5_000
    max_query_aliases: int = 50
    #: Seconds a WebSocket may wait before sending ``connection_init``.
    ws_init_timeout: float = 10.0
    #: Seconds between server keep-alive pings on idle WebSockets (0 turns them off).
    ws_keepalive: float = 15.0
    max_subscriptions_per_connection: int = 100
    #: Largest accepted HTTP request body in bytes.
    max_body_bytes: int = 2 * 1024 * 1024
    #: Comma-separated origins allowed by CORS (empty: no cross-origin access).
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    #: Live-stream fan-out backend (``memory://`` or ``redis://host:port/db``).
    broker_url: str = "memory://"
    #: Seconds without a push after which an active stream ends as INTERRUPTED (a
    #: push with no chunks is a heartbeat that keeps it alive; 0 turns the sweeper off).
    stream_idle_timeout: float = 60.0
    #: Largest buffered stream in bytes.
    max_stream_bytes: int = 16 * 1024 * 1024
    #: Agent memory: characters per entry, and per (subject, scope) in total.
    memory_entry_chars: int = 4_000
    memory_scope_chars: int = 20_000
    #: Seconds a chat created with ``temporary: true`` lives (default one day).
    temporary_ttl: float = 24 * 3600.0
    #: Days a soft-deleted chat stays in the trash before the sweeper purges it.
    trash_days: float = 30.0
    #: Seconds between retention sweeps on each instance (0 turns the sweeper off).
    sweep_interval: float = 30.0
    #: Where archived chats go: ``file:///path`` or ``s3://bucket/prefix``.
    archive_url: str = "file://./chatql-archive"
    #: Days without activity after which the sweeper archives a chat (0: never).
    archive_after_days: float = 0.0
    #: Where uploaded files are kept: ``file:///path`` or ``s3://bucket/prefix`` (endpoint
    #: and credentials from the ``AWS_*`` variables). Empty: a ``files`` folder beside
    #: the SQLite database, or ``./chatql-files`` for Postgres.
    files_url: str = ""
    #: Largest uploaded file in bytes.
    file_max_bytes: int = 25 * 1024 * 1024
    #: Comma-separated media types accepted for upload.
    file_types: tuple[str, ...] = DEFAULT_FILE_TYPES
    #: Bytes a tenant's files may take in all, each distinct content counted once
    #: (0: no limit).
    file_quota_bytes: int = 0
    #: Seconds a signed file address (``File.url``, an upload address) stays good.
    file_url_ttl: float = 900.0
    #: Seconds an upload no message references is kept before the sweeper deletes it.
    file_orphan_ttl: float = 24 * 3600.0
    #: Bytes of a text file's contents ``modelContext(files: INLINE)`` gives as text
    #: (the rest is cut, with a marker saying so).
    context_file_text_bytes: int = 100 * 1024
    #: Largest file other than text ``modelContext(files: INLINE)`` gives as a data URL
    #: (a larger one gets a signed URL, as with ``files: URL``).
    context_file_inline_bytes: int = 5 * 1024 * 1024
    #: Fast plans switched off by name, comma-separated (the names of
    #: ``chatql.gql.plans.planner.PLANS``; an unknown one stops the server). The general
    #: executor then answers those operations; answers are the same bytes either way.
    disabled_plans: tuple[str, ...] = field(default_factory=tuple)
    #: The assistant a chat created by ``POST /ai/chat`` belongs to when the request
    #: names none (the agent serving that assistant answers it).
    default_assistant: str = "assistant"
    #: Seconds ``POST /ai/chat`` waits for an agent to start answering.
    agent_reply_timeout: float = 60.0
    #: Serve ``/metrics`` and count requests, streams and subscribers for it.
    metrics: bool = True
    #: ``text`` (uvicorn's access log) or ``json`` (one JSON line per request).
    log_format: str = "text"
    #: Limits per identity and operation class, e.g.
    #: ``pushes=200/second;writes=30/second;reads=100/second;subscriptions=20``; share-link
    #: reads (``shares``) are limited even when left out (gql/ops/rate_limits.py).
    rate_limits: str = ""
    #: Path of an Apollo persisted query manifest (documents known from the start).
    persisted_queries: str = ""
    #: Accept only the manifest's documents.
    persisted_only: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for spec in fields(cls):
            raw = env.get(f"CHATQL_{spec.name.upper()}")
            if raw is None:
                continue
            default = getattr(cls(), spec.name)
            values[spec.name] = _parse(spec.name, raw, default)
        return cls(**values)  # type: ignore[arg-type]


def _parse(name: str, raw: str, default: object) -> object:
    if isinstance(default, bool):
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"CHATQL_{name.upper()} must be true or false, got {raw!r}")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, tuple):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw
