"""SQLAlchemy Core tables: the single source of the relational schema.

Alembic migrations in ``store/migrations`` create exactly these tables; a test
compares the migrated database with this metadata so the two never drift.

Times are stored as UTC. JSON columns are ``JSONB`` on Postgres and ``JSON`` (text)
on SQLite.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

__all__ = [
    "append_receipts",
    "chat_imports",
    "chat_tags",
    "chats",
    "closed_chats",
    "columns_of_type",
    "feedback",
    "files",
    "interrupts",
    "memory_entries",
    "memory_scopes",
    "message_files",
    "messages",
    "metadata",
    "resume_records",
    "service_state",
    "shares",
    "stream_claims",
    "stream_files",
    "usage_records",
]


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    SQLite has no timezone type, so values are stored naive in UTC and made aware
    again on the way out; the text form sorts correctly because every value is UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass an aware datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # pragma: no cover - raw SQL on SQLite
            value = datetime.fromisoformat(value)
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


JSONDocument = JSON().with_variant(JSONB(), "postgresql")


def columns_of_type(*tables: Table, kind: type[Any]) -> frozenset[str]:
    """The names of the columns of ``tables`` stored as ``kind`` (``JSON``,
    :class:`UTCDateTime`, ``Boolean`` …): what a reader of raw driver rows must decode,
    read from the tables so a column added to one is decoded everywhere."""
    return frozenset(column.name for table in tables for column in table.c
                     if isinstance(column.type, kind))

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

chats = Table(
    "chats",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("title", Text),
    # Where the title came from: USER (a person named the chat), AGENT (its agent did)
    # or AUTO (the first USER message, when nobody named it); NULL while untitled.
    Column("title_source", String(8)),
    Column("assistant_id", String(200), nullable=False),
    Column("mode", String(32), nullable=False, server_default="chat"),
    Column("status", String(16), nullable=False, server_default="ACTIVE"),
    Column("public", Boolean, nullable=False, server_default="0"),
    Column("share", String(16), nullable=False, server_default="PRIVATE"),
    Column("sort", Integer, nullable=False, server_default="0"),
    Column("last_message_at", UTCDateTime),
    # What LAST_MESSAGE_AT ordering and grouping sort by: the newest message's time,
    # or the creation time while the chat has none. Kept as a column so one plain
    # composite index serves the default chat list on both backends.
    Column("activity_at", UTCDateTime, nullable=False),
    # The highest message sequence ever handed out in this chat. Appends lock the
    # chat row and advance it, which keeps sequences gap-free under concurrency.
    Column("last_sequence", BigInteger, nullable=False, server_default="0"),
    Column("metadata", JSONDocument),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("created_by", String(200)),
    Column("updated_by", String(200)),
    Column("team_id", String(200)),
    Column("tenant_id", String(200), nullable=False),
    Column("deleted_at", UTCDateTime),
    # Where the conversation happens (api, widget, telegram …); set at creation.
    Column("channel", String(64), nullable=False, server_default="api"),
    # The person a ``chatFor`` chat belongs to; NULL for chats made by ``createChat``.
    # The unique key below makes "one chat per (tenant, assistant, channel, person)"
    # the database's rule: NULLs never collide, so ordinary chats are not limited.
    Column("subject", String(200)),
    # Organising and keeping: the chat's tags (sorted, distinct; mirrored one per row
    # in chat_tags for filtering), whether it is pinned, and when it expires.
    Column("tags", JSONDocument, nullable=False, server_default="[]"),
    Column("pinned", Boolean, nullable=False, server_default="0"),
    Column("expires_at", UTCDateTime),
    # Cold archive: when the messages moved to object storage, and the object's key.
    Column("archived_at", UTCDateTime),
    Column("archive_key", String(400)),
    # The last message of the active branch: where appends and streams hang by
    # default, and the branch that pages and the model's window follow.
    Column("active_leaf_id", String(64)),
    Index(None, "tenant_id", "activity_at", "id"),
    Index(None, "tenant_id", "created_at", "id"),
    Index(None, "tenant_id", "updated_at", "id"),
    Index(None, "tenant_id", "sort", "id"),
    Index(None, "tenant_id", "title", "id"),
    Index(None, "tenant_id", "assistant_id", "activity_at", "id"),
    Index(None, "tenant_id", "assistant_id", "channel", "subject", unique=True),
    # A non-admin's own sidebar ("my chats") in a tenant with many users reads one
    # creator's range instead of filtering the whole tenant's.
    Index(None, "tenant_id", "created_by", "activity_at", "id"),
    # The retention sweeper finds what is due without scanning every chat.
    Index(None, "expires_at"),
    Index(None, "deleted_at"),
    # The idle-archive sweeper reads not-yet-archived chats by their last activity.
    Index(None, "archived_at", "activity_at"),
)

# One row per tag of a chat, so "every one of these tags" is a few index probes.
chat_tags = Table(
    "chat_tags",
    metadata,
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("tag", String(64), primary_key=True),
    Column("tenant_id", String(200), nullable=False),
    Index(None, "tenant_id", "tag", "chat_id"),
)

messages = Table(
    "messages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("sequence", BigInteger, nullable=False),
    Column("request_id", String(200)),
    Column("role", String(16), nullable=False),
    Column("type", String(64), nullable=False),
    Column("props", JSONDocument, nullable=False),
    Column("block_id", String(200)),
    Column("thread_id", String(200)),
    Column("assistant_id", String(200)),
    Column("status", String(16), nullable=False, server_default="COMPLETED"),
    Column("metadata", JSONDocument),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # The message's token count as its producer reported it; NULL when unknown.
    Column("tokens", BigInteger),
    # The conversation tree. ``parent_id`` is the message this one follows (NULL for a
    # root) and ``depth`` its place on its branch (1 for a root). ``jump_id`` is a
    # skew-binary jump pointer to an ancestor at ``jump_depth``: following it or the
    # parent reaches the ancestor at any depth in O(log depth) primary-key reads,
    # which is what makes a page deep in a long branch cost what its end costs.
    Column("parent_id", String(64)),
    Column("depth", BigInteger),
    Column("jump_id", String(64)),
    Column("jump_depth", BigInteger),
    UniqueConstraint("chat_id", "sequence"),
    Index(None, "chat_id", "parent_id", "sequence"),
    # One per filter a page of a chat's messages offers, each in the page's keyset
    # order, so a filtered page reads the rows it returns rather than the chat.
    Index(None, "chat_id", "request_id", "sequence"),
    Index(None, "chat_id", "type", "sequence"),
    Index(None, "chat_id", "thread_id", "sequence"),
    Index(None, "chat_id", "block_id", "sequence"),
    # Also the chat's SYSTEM messages, which open the model's context.
    Index(None, "chat_id", "role", "sequence"),
    # A request's messages across chats, in messagesByRequest's page order.
    Index(None, "request_id", "created_at", "chat_id", "sequence"),
)

append_receipts = Table(
    "append_receipts",
    metadata,
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("append_id", String(128), primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("message_ids", JSONDocument, nullable=False),
    Column("first_sequence", BigInteger, nullable=False),
    Column("last_sequence", BigInteger, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

# One row per stream, written when it starts: a request id names one stream of a chat
# (the unique key refuses a second start, so two workers never answer one question
# twice; NULLs never collide), and ``ended_at`` is NULL while the stream is live (set
# in the transaction that persists it), which is what "awaiting a reply" reads.
stream_claims = Table(
    "stream_claims",
    metadata,
    Column("stream_id", String(128), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("request_id", String(200)),
    Column("started_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    UniqueConstraint("chat_id", "request_id"),
    Index(None, "chat_id", "ended_at"),
)

closed_chats = Table(
    "closed_chats",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(200), nullable=False),
    Column("closed_at", UTCDateTime, nullable=False),
)

resume_records = Table(
    "resume_records",
    metadata,
    Column("id", String(64), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("request_id", String(200)),
    Column("assistant_id", String(200)),
    Column("stack_id", String(200)),
    Column("stack_parent_id", String(200)),
    Column("stack_depth", Integer, nullable=False, server_default="0"),
    Column("type", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("input", JSONDocument),
    Column("output", JSONDocument),
    Column("space_snapshot", JSONDocument),
    Column("error", Text),
    Column("sequence", Integer, nullable=False),
    Column("metadata", JSONDocument),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index(None, "chat_id", "sequence"),
    Index(None, "stack_id"),
)

# One row per model request whose usage a producer reported (``endStream(usage:)``),
# written in the stream's persist transaction; the stream id keys it, so a retried
# persist never counts a request twice.
usage_records = Table(
    "usage_records",
    metadata,
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("stream_id", String(128), primary_key=True),
    Column("request_id", String(200)),
    Column("assistant_id", String(200), nullable=False),
    Column("model", String(200)),
    Column("prompt_tokens", BigInteger, nullable=False),
    Column("completion_tokens", BigInteger, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "created_at"),
)

# One row per import id and tenant: makes importChat idempotent and lets a large
# import resume after the last batch it committed (``lines_done``).
chat_imports = Table(
    "chat_imports",
    metadata,
    Column("tenant_id", String(200), primary_key=True),
    Column("import_id", String(128), primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("chat_id", String(64), nullable=False),
    Column("lines_done", BigInteger, nullable=False, server_default="0"),
    Column("complete", Boolean, nullable=False, server_default="0"),
    Column("created_at", UTCDateTime, nullable=False),
)

# Small key/value table for service-wide state, such as the cursor signing key
# generated on first start when CHATQL_SECRET is not set.
service_state = Table(
    "service_state",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# What agents remember about a person, outside every chat. Full-text search objects
# (SQLite FTS5 table and triggers, the Postgres generated ``search_vector`` column and
# its GIN index) are created by the migration only, as for messages.
memory_entries = Table(
    "memory_entries",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(200), nullable=False),
    Column("subject", String(200), nullable=False),
    Column("scope", String(200), nullable=False),
    Column("content", Text, nullable=False),
    Column("pinned", Boolean, nullable=False, server_default="0"),
    Column("created_by", String(200)),
    # An idempotent write's key and the digest of what it wrote (null without a key).
    Column("write_id", String(128)),
    Column("write_digest", String(64)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("tenant_id", "subject", "write_id"),
    Index(None, "tenant_id", "subject", "scope", "pinned", "created_at", "id"),
    Index(None, "tenant_id", "subject", "scope", "pinned", "updated_at", "id"),
)

# One row per (tenant, subject, scope) holding the scope's total content length. Every
# write, update and delete changes it with one conditional UPDATE in the same
# transaction as the entry, which is what makes the per-scope cap hold under
# concurrent writers (the row lock serialises them; the condition is re-checked).
memory_scopes = Table(
    "memory_scopes",
    metadata,
    Column("tenant_id", String(200), primary_key=True),
    Column("subject", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("chars", BigInteger, nullable=False, server_default="0"),
)

# What a stream asked a person (a tool call awaiting approval, a question awaiting an
# answer) and the decision, written in the stream's persist transaction. A stream's
# interrupts are decided once each (``decision_id`` names the decision that resolved
# one, so the same decision sent again is recognised); once none of them is pending,
# the chat awaits a resumption until a worker claims it (``resumed_by``, the claiming
# stream's request id). The inbox pages a tenant's interrupts newest first.
interrupts = Table(
    "interrupts",
    metadata,
    Column("id", String(64), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("tenant_id", String(200), nullable=False),
    Column("message_id", String(64), nullable=False),
    # The asking message's sequence: a chat's interrupts in the order they were asked.
    Column("sequence", BigInteger, nullable=False),
    Column("stream_id", String(128), nullable=False),
    Column("request_id", String(200)),
    Column("assistant_id", String(200)),
    Column("kind", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("tool_call_id", String(200)),
    Column("tool_name", String(200)),
    Column("arguments", JSONDocument),
    Column("prompt", Text),
    Column("response_schema", JSONDocument),
    Column("reason", Text),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime),
    # The decision: its fields as one document, who and when, and its idempotency key.
    Column("decision", JSONDocument),
    Column("decided_by", String(200)),
    Column("decided_at", UTCDateTime),
    Column("decision_id", String(128)),
    Column("resumed_by", String(200)),
    Index(None, "tenant_id", "state", "requested_at", "id"),
    Index(None, "chat_id", "state"),
    Index(None, "stream_id"),
)

# A person's rating of a message: one row per (message, person), replaced when they
# rate again and deleted when they clear it. What an evaluation starts from is kept with
# it when it is written: the question the message answered (its nearest USER ancestor),
# the assistant, and the request and model of the stream that wrote the message. Owners
# and admins page it newest first (``updated_at``: the rating as it stands).
feedback = Table(
    "feedback",
    metadata,
    Column("id", String(64), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("tenant_id", String(200), nullable=False),
    Column("message_id", String(64), nullable=False),
    Column("question_id", String(64)),
    Column("rated_by", String(200), nullable=False),
    Column("rating", String(8), nullable=False),
    Column("comment", Text),
    Column("tags", JSONDocument, nullable=False, server_default="[]"),
    Column("assistant_id", String(200)),
    Column("request_id", String(200)),
    Column("model", String(200)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("message_id", "rated_by"),
    Index(None, "tenant_id", "updated_at", "id"),
    Index(None, "tenant_id", "assistant_id", "updated_at", "id"),
    Index(None, "chat_id", "updated_at", "id"),
)

# Files: one row per upload (an upload of bytes the tenant already holds is a row of its
# own pointing at the same object: content is stored once per tenant, under the
# SHA-256 in ``storage_key``). ``state`` is PENDING while a two-phase upload waits for
# its bytes, READY once they are verified, DELETED when nothing may read it any more
# and its object waits for the sweeper (which deletes the object once no other row of
# the tenant names it, then the row).
files = Table(
    "files",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(200), nullable=False),
    Column("uploader", String(200), nullable=False),
    Column("filename", String(255), nullable=False),
    Column("media_type", String(200), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("width", Integer),
    Column("height", Integer),
    Column("created_at", UTCDateTime, nullable=False),
    Column("storage_key", String(400), nullable=False),
    Column("state", String(16), nullable=False, server_default="READY"),
    # Quota sums and "does another row still name this object" read by content.
    Index(None, "tenant_id", "sha256"),
    # The sweeper: orphans by age, rows waiting for their object's deletion.
    Index(None, "state", "created_at"),
)

# Which messages reference which files (a ``file`` part of a message's content, or a
# ``file`` message): what makes a file readable to whoever may read the chat, and what
# keeps it. Kept with the message rows (appends, streams, edits, deletes); a purge
# removes a chat's links and releases the files nothing references any more.
message_files = Table(
    "message_files",
    metadata,
    Column("message_id", String(64), primary_key=True),
    Column("file_id", String(64), ForeignKey("files.id"), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Index(None, "file_id", "chat_id"),
    Index(None, "chat_id"),
)

# Which files the chunks of a live stream name (a ``file`` message, or a ``file`` part,
# not yet stored): written when the push naming them is accepted, by a producer that may
# read them, so whoever may read the chat reads them while the reply is live. A link
# counts only while its stream's claim is live; the persist replaces it with the stored
# messages' ``message_files`` rows in its transaction, and a stream that can never be
# stored drops its links.
stream_files = Table(
    "stream_files",
    metadata,
    Column(
        "stream_id",
        String(128),
        ForeignKey("stream_claims.stream_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("file_id", String(64), ForeignKey("files.id"), primary_key=True),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Index(None, "file_id"),
    Index(None, "chat_id"),
)

# A share link: a read-only snapshot of one branch of a chat, as it was when shared.
# ``message_id`` is the branch's leaf then and ``message_ids`` the path from the root
# to it (oldest first), so the share never shows a message written later, on that
# branch or another; a message deleted since is gone from it too. Only the SHA-256 of
# the link's token is kept: whoever reads the table cannot open a link with it.
shares = Table(
    "shares",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("token_hash", String(64), nullable=False),
    Column(
        "chat_id",
        String(64),
        ForeignKey("chats.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("tenant_id", String(200), nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("message_id", String(64), nullable=False),
    Column("leaf_sequence", BigInteger, nullable=False),
    Column("message_ids", JSONDocument, nullable=False),
    # PUBLIC (anyone with the link) or TENANT (identities of the chat's tenant).
    Column("audience", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime),
    Column("revoked_at", UTCDateTime),
    Column("views", BigInteger, nullable=False, server_default="0"),
    UniqueConstraint("token_hash"),
    Index(None, "chat_id", "created_at"),
)
