"""Full-text search over what people and assistants said.

The index itself is kept by the database (migration ``0002``: FTS5 + triggers on
SQLite, a generated ``tsvector`` + GIN on Postgres), so this module only reads.

Query text is never parsed as a query language. On SQLite every whitespace-separated
token is quoted as an FTS5 string; on Postgres the text goes through
``plainto_tsquery``. Either way the words must all occur (AND), operators such as
``"``, ``*``, ``-``, ``AND`` or ``OR`` are plain text, and no user input can cause a
syntax error.

Ranking is BM25 on both backends. SQLite has it built in (``bm25()``). Postgres has no
document frequencies in ``ts_rank``, so the rank there is BM25-shaped: for each query
word its inverse document frequency (see ``_document_frequencies``) times
``ts_rank`` of that word (which grows, saturating, with how often the message says it,
and is divided by the log of the message's length). A message that says the words
more often, and says rarer words, ranks higher on both.

Scores within ``RELEVANCE_TIE_TOLERANCE`` of each other are near-ties and are put
newest first: relevance decides, and recency breaks what relevance cannot tell apart
instead of incidental row order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    column,
    func,
    literal,
    literal_column,
    select,
    table,
)
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store import access
from chatql.store.access import present
from chatql.store.chats.chat import chat_from_row, fetch_visible_chat
from chatql.store.db.database import Database
from chatql.store.db.tables import chats, messages
from chatql.store.errors import InvalidArgument, NotFound
from chatql.store.ids import check_chat_id
from chatql.store.messages import tree
from chatql.store.messages.message import message_from_row
from chatql.store.records import Chat, Identity, Message
from chatql.store.text import (
    MAX_TERMS,
    RELEVANCE_TIE_TOLERANCE,
    clean_query,
    fts5_match,
)

__all__ = [
    "DEFAULT_FIRST",
    "DEFAULT_WINDOW",
    "MAX_FIRST",
    "MAX_WINDOW",
    "SearchHit",
    "search_messages",
]

DEFAULT_FIRST = 20
MAX_FIRST = 100
DEFAULT_WINDOW = 2
MAX_WINDOW = 20
#: Postgres tables with fewer (estimated) rows have their word frequencies counted exactly.
_EXACT_BELOW = 100_000
#: Bound on an exact per-word count on a large table (see ``_document_frequencies``).
_COUNT_CAP = 10_000
#: Candidates ranked in SQL before near-ties are reordered, beyond ``first``.
_CANDIDATE_MARGIN = 20

_fts = table("message_search", column("rowid"), column("body"))
_fts_keys = table("message_search_keys", column("key"), column("message_id"))
_SIMPLE: ColumnElement[Any] = literal_column("'simple'::regconfig")
_VECTOR: ColumnElement[Any] = literal_column("messages.search_vector")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching message, its chat, its relevance and the messages around it."""

    message: Message
    chat: Chat
    score: float
    #: Up to ``window`` messages before and after the hit in its chat, oldest first
    #: (the hit itself is not repeated here).
    window: list[Message]


async def search_messages(
    db: Database,
    who: Identity,
    query: str,
    *,
    first: int | None = DEFAULT_FIRST,
    chat_id: str | None = None,
    assistant_id: str | None = None,
    include_subagents: bool = False,
    window: int | None = DEFAULT_WINDOW,
) -> list[SearchHit]:
    """The best-matching spoken messages in chats ``who`` may read, best first.

    ``first`` is capped at ``MAX_FIRST`` and ``window`` at ``MAX_WINDOW``. With
    ``chat_id`` only that chat is searched (a subagent chat too: it was asked for by
    name); an absent or unreadable chat is NOT_FOUND. Otherwise subagent chats are
    left out unless ``include_subagents``.
    """
    text = clean_query(query)
    first = DEFAULT_FIRST if first is None else first
    if first <= 0:
        raise InvalidArgument("first must be a positive number")
    first = min(first, MAX_FIRST)
    window = DEFAULT_WINDOW if window is None else window
    if window < 0:
        raise InvalidArgument("window must not be negative")
    window = min(window, MAX_WINDOW)
    if chat_id is not None:
        check_chat_id(chat_id)

    conditions: list[ColumnElement[bool]] = [
        present(),
        access.can_read(who),
    ]
    if chat_id is not None:
        conditions.append(messages.c.chat_id == chat_id)
    elif not include_subagents:
        conditions.append(chats.c.mode != "subagent")
    if assistant_id is not None:
        conditions.append(chats.c.assistant_id == assistant_id)

    limit = first + _CANDIDATE_MARGIN
    async with db.read() as conn:
        if chat_id is not None and await fetch_visible_chat(conn, who, chat_id) is None:
            raise NotFound(f"chat {chat_id!r} not found")
        if db.is_sqlite:
            ranked = await _rank_sqlite(conn, text, conditions, limit)
        else:
            ranked = await _rank_postgres(conn, text, conditions, limit)
        ranked = _newest_first_among_near_ties(ranked)[:first]
        if not ranked:
            return []
        chat_ids = sorted({message.chat_id for message, _ in ranked})
        chat_rows = (await conn.execute(select(chats).where(chats.c.id.in_(chat_ids)))).all()
        chats_by_id = {row.id: chat_from_row(row) for row in chat_rows}
        windows = await _windows(conn, [message for message, _ in ranked], window)
    return [
        SearchHit(message=message, chat=chats_by_id[message.chat_id], score=score,
                  window=windows[index])
        for index, (message, score) in enumerate(ranked)
    ]


def _hits_query(score: ColumnElement[Any], conditions: list[ColumnElement[bool]]) -> Select[Any]:
    return select(*messages.c, score.label("score")).where(*conditions)


async def _rank_sqlite(
    conn: AsyncConnection, text: str, conditions: list[ColumnElement[bool]], limit: int
) -> list[tuple[Message, float]]:
    match = fts5_match(text)
    # bm25() is negative, lower is better; the API reports higher-is-better scores.
    bm25 = func.bm25(literal_column("message_search"))
    query = (
        _hits_query(-bm25, conditions)
        .select_from(
            _fts.join(_fts_keys, _fts_keys.c.key == _fts.c.rowid)
            .join(messages, messages.c.id == _fts_keys.c.message_id)
            .join(chats, chats.c.id == messages.c.chat_id)
        )
        .where(literal_column("message_search").op("MATCH")(match))
        .order_by(bm25.asc(), messages.c.created_at.desc(), messages.c.sequence.desc())
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    return [(message_from_row(row), float(row.score)) for row in rows]


async def _rank_postgres(
    conn: AsyncConnection, text: str, conditions: list[ColumnElement[bool]], limit: int
) -> list[tuple[Message, float]]:
    terms = list(
        (
            await conn.scalars(
                select(func.unnest(func.tsvector_to_array(func.to_tsvector(_SIMPLE, text))))
            )
        ).all()
    )[:MAX_TERMS]
    if not terms:
        return []  # nothing but punctuation: no word can match

    documents, frequencies = await _document_frequencies(conn, terms)
    weights = [
        math.log(1.0 + (documents - n + 0.5) / (n + 0.5)) for n in frequencies
    ]
    # Normalization 1 divides by 1 + log(length): longer messages weigh each word less.
    score: ColumnElement[Any] = sum(
        (literal(weight) * func.ts_rank(_VECTOR, _term_query(term), 1)
         for term, weight in zip(terms, weights, strict=True)),
        start=literal(0.0),
    )
    query = (
        _hits_query(score, conditions)
        .select_from(messages.join(chats, chats.c.id == messages.c.chat_id))
        .where(_VECTOR.op("@@")(func.plainto_tsquery(_SIMPLE, text)))
        .order_by(
            literal_column("score").desc(),
            messages.c.created_at.desc(),
            messages.c.sequence.desc(),
        )
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    return [(message_from_row(row), float(row.score)) for row in rows]


def _term_query(term: str) -> ColumnElement[Any]:
    return func.plainto_tsquery(_SIMPLE, literal(term))


async def _document_frequencies(
    conn: AsyncConnection, terms: list[str]
) -> tuple[int, list[int]]:
    """How many messages are indexed, and how many contain each term.

    Counting a common word exactly would visit tens of thousands of heap rows per
    search, so on a large table common words take their frequency from the statistics
    ANALYZE keeps for the column (its most common lexemes, as Postgres' own planner
    does); the others are counted with the GIN index, bounded by ``_COUNT_CAP`` (a word
    missing from that list is rarer than every word on it anyway). Small or never
    analysed tables are counted exactly, which is cheap there.
    """
    # The tables that hold the rows: ``messages`` itself, or its hash partitions (which
    # autovacuum analyses; a partitioned table's own statistics are only kept by a
    # manual ANALYZE).
    leaves = (
        "SELECT c.oid, c.relname, c.reltuples FROM pg_class c"
        " WHERE c.relkind = 'r' AND (c.oid = to_regclass('messages') OR c.oid IN ("
        "  SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass('messages')))"
    )
    estimate = await conn.scalar(sql_text(
        f"SELECT sum(greatest(reltuples, 0)) FROM ({leaves}) AS leaves"))
    common: dict[str, float] = {}
    documents = 0
    if estimate is not None and estimate >= _EXACT_BELOW:
        stats = (await conn.execute(sql_text(
            "SELECT leaves.reltuples, s.null_frac,"
            " s.most_common_elems::text::text[] AS elems,"
            " s.most_common_elem_freqs AS freqs"
            f" FROM ({leaves}) AS leaves JOIN pg_stats s ON s.tablename = leaves.relname"
            " WHERE s.schemaname = current_schema() AND s.attname = 'search_vector'"
            " AND NOT s.inherited"
        ))).all()
        # Frequencies are fractions of each table's non-null (indexed) rows; over
        # partitions, a word missing from one's list counts as absent there.
        wanted = set(terms)
        share: dict[str, float] = {}
        for row in stats:
            if not row.elems:
                continue
            indexed = max(float(row.reltuples), 0.0) * (1.0 - float(row.null_frac or 0.0))
            documents += int(indexed)
            for elem, freq in zip(row.elems, row.freqs, strict=False):
                if elem in wanted:
                    share[elem] = share.get(elem, 0.0) + float(freq) * indexed
        if documents:
            common = {elem: rows / documents for elem, rows in share.items()}
    cap = _COUNT_CAP if documents else None
    counted: dict[str, int] = {}
    rare = [term for term in terms if term not in common]
    # Without usable statistics the indexed rows are counted too (the trailing None).
    to_count: list[str | None] = [*rare] if documents else [*rare, None]
    if to_count:
        counts = (
            await conn.execute(select(*(_count(term, cap) for term in to_count)))
        ).one()
        counted = {term: int(n) for term, n in zip(rare, counts, strict=False)}
        if not documents:
            documents = int(counts[-1])
    frequencies = [
        round(common[term] * documents) if term in common else counted[term]
        for term in terms
    ]
    return max(documents, *frequencies, 1), frequencies


def _count(term: str | None, cap: int | None) -> Any:
    """A scalar subquery counting messages with ``term`` (None: every indexed message)."""
    where = _VECTOR.is_not(None) if term is None else _VECTOR.op("@@")(_term_query(term))
    rows = select(literal(1).label("one")).select_from(messages).where(where)
    if cap is not None:
        rows = rows.limit(cap)
    return select(func.count()).select_from(rows.subquery()).scalar_subquery()


def _newest_first_among_near_ties(
    ranked: list[tuple[Message, float]],
) -> list[tuple[Message, float]]:
    """Reorder runs of near-equal scores newest first; ``ranked`` is best first."""
    ordered: list[tuple[Message, float]] = []
    start = 0
    while start < len(ranked):
        lead = ranked[start][1]
        end = start + 1
        while end < len(ranked) and lead - ranked[end][1] <= (
            RELEVANCE_TIE_TOLERANCE * abs(lead) + 1e-12
        ):
            end += 1
        run = ranked[start:end]
        run.sort(key=lambda hit: (hit[0].created_at, hit[0].sequence), reverse=True)
        ordered.extend(run)
        start = end
    return ordered


async def _windows(
    conn: AsyncConnection, hits: list[Message], size: int
) -> list[list[Message]]:
    """The ``size`` messages before and after each hit along its own branch.

    Before: its ancestors. After: its replies, following the most recently written
    one at each step (the version a branch switch to the hit would show). Each side
    is one bounded walk of the tree.
    """
    if size == 0:
        return [[] for _ in hits]
    windows: list[list[Message]] = []
    for hit in hits:
        window: list[Message] = []
        if hit.parent_id is not None:
            rows = (await conn.execute(tree.path_query(hit.parent_id, chat=hit.chat_id,
                                                      count=size, dialect=conn.dialect.name))).all()
            window.extend(message_from_row(row) for row in reversed(rows))
        ids = await tree.newest_replies(conn, hit.chat_id, hit.id, size)
        if ids:
            rows = (await conn.execute(select(messages).where(messages.c.chat_id == hit.chat_id,
                                                              messages.c.id.in_(ids))
                                       .order_by(messages.c.sequence))).all()
            window.extend(message_from_row(row) for row in rows)
        windows.append(window)
    return windows
