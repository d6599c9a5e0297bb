"""The conversation tree: where new messages hang, branches, siblings and subtrees.

A chat is a tree of messages; the chat's ``active_leaf_id`` names the last message of
the branch that is shown and that the model reads. Every message stores its
``parent_id`` and ``depth`` (1 for a root) and a skew-binary jump pointer
(``jump_id``/``jump_depth``, after Myers' "An applicative random-access stack"):

- a new message's jump is its grandparent-by-jump when its parent's two jumps span the
  same distance, else its parent; the pointer depends only on the parent's row and the
  row its jump names, so a write reads at most two rows;
- the ancestor of any message at a given depth is reached by following the jump when
  it does not overshoot and the parent otherwise, in O(log depth) primary-key reads.

That is the choice for bounded branch pages. A page walks up parent links from its
upper end (O(page)); a page that reads forward first finds its upper end with one
jump climb (O(log depth)). The alternatives considered: a recursive walk from the
branch's leaf down to the cursor costs the distance to the leaf (a million rows for an
early page of a long branch); a stored ancestry (path string or closure table) costs
O(depth) space per message. The jump pointer is four narrow columns and one extra
indexed read per forward page.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import (
    CTE,
    Select,
    bindparam,
    case,
    delete,
    func,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from chatql.store.db.rows import Link
from chatql.store.db.tables import chats, messages
from chatql.store.errors import NotFound

__all__ = [
    "LEAF_COLUMNS",
    "Link",
    "ancestor_at",
    "chain_jump_depths",
    "chain_links",
    "delete_exactly",
    "delete_subtrees",
    "leaf_joined",
    "leaf_links",
    "link_rows",
    "newest_leaf_below",
    "newest_replies",
    "path_query",
    "path_walk",
    "set_active_leaf",
    "sibling_ids",
]


_JUMP = messages.alias("jump")
# A message's tree columns with its jump target's, built once (appends run it each time).
_WITH_JUMP = (
    select(messages.c.parent_id, messages.c.depth, messages.c.jump_id, messages.c.jump_depth,
           _JUMP.c.parent_id.label("j_parent_id"), _JUMP.c.depth.label("j_depth"),
           _JUMP.c.jump_id.label("j_jump_id"), _JUMP.c.jump_depth.label("j_jump_depth"))
    .outerjoin(_JUMP, (_JUMP.c.id == messages.c.jump_id)
               & (_JUMP.c.chat_id == messages.c.chat_id))
    .where(messages.c.id == bindparam("id"), messages.c.chat_id == bindparam("chat"))
)

# A message and every message its jumps reach, up to the root: O(log depth) rows, one
# statement. A chain written below the message finds there every ancestor its own
# jumps land on (each one is its parent or its parent's jump's jump, so by induction
# on that path or in the chain).
_PATH = (
    select(messages.c.id, messages.c.parent_id, messages.c.depth, messages.c.jump_id,
           messages.c.jump_depth)
    .where(messages.c.id == bindparam("id"), messages.c.chat_id == bindparam("chat"))
    .cte("jump_path", recursive=True)
)
_STEP = messages.alias("step")
_PATH = _PATH.union_all(
    select(_STEP.c.id, _STEP.c.parent_id, _STEP.c.depth, _STEP.c.jump_id, _STEP.c.jump_depth)
    .where(_STEP.c.id == _PATH.c.jump_id, _STEP.c.chat_id == bindparam("chat"),
           _PATH.c.jump_depth < _PATH.c.depth)
)
_JUMP_PATH = select(_PATH)


class _Known:
    """Tree columns of messages read (or written) so far, each row read at most once."""

    def __init__(self, conn: AsyncConnection, chat_id: str, missing: str) -> None:
        self._conn = conn
        self._chat_id = chat_id
        self._missing = missing
        self._links: dict[str, Link] = {}

    def add(self, link: Link) -> Link:
        self._links[link.id] = link
        return link

    async def get(self, message_id: str) -> Link:
        found = self._links.get(message_id)
        if found is None:
            row = (await self._conn.execute(
                select(messages.c.parent_id, messages.c.depth, messages.c.jump_id,
                       messages.c.jump_depth)
                .where(messages.c.id == message_id, messages.c.chat_id == self._chat_id)
            )).first()
            if row is None:
                raise NotFound(self._missing.format(id=message_id, chat=self._chat_id))
            found = self.add(Link(message_id, row.parent_id, int(row.depth), row.jump_id,
                                  int(row.jump_depth)))
        return found

    async def get_with_jump(self, message_id: str) -> Link:
        """:meth:`get`, also reading the message's jump target in the same statement
        (a new message below it needs both)."""
        if message_id in self._links:
            return self._links[message_id]
        row = (await self._conn.execute(
            _WITH_JUMP, {"id": message_id, "chat": self._chat_id})).first()
        if row is None:
            raise NotFound(self._missing.format(id=message_id, chat=self._chat_id))
        if row.j_depth is not None and row.jump_id not in self._links:
            self.add(Link(row.jump_id, row.j_parent_id, int(row.j_depth), row.j_jump_id,
                          int(row.j_jump_depth)))
        return self.add(Link(message_id, row.parent_id, int(row.depth), row.jump_id,
                             int(row.jump_depth)))

    def cached(self, message_id: str) -> Link | None:
        """A message read or written so far, without the database (None: not yet)."""
        return self._links.get(message_id)

    def read(self, message_id: str) -> Link:
        """A message :meth:`get_with_jump` or :meth:`get_with_path` read already (one
        they did not find does not exist)."""
        found = self._links.get(message_id)
        if found is None:
            raise NotFound(self._missing.format(id=message_id, chat=self._chat_id))
        return found

    async def get_with_path(self, message_id: str) -> Link:
        """:meth:`get`, also reading every message the jumps from it reach (what a
        chain of more than one message below it needs) in the same statement."""
        if message_id in self._links:
            return self._links[message_id]
        rows = (await self._conn.execute(
            _JUMP_PATH, {"id": message_id, "chat": self._chat_id})).all()
        if not rows:
            raise NotFound(self._missing.format(id=message_id, chat=self._chat_id))
        for row in rows:
            if row.id not in self._links:
                self.add(Link(row.id, row.parent_id, int(row.depth), row.jump_id,
                              int(row.jump_depth)))
        return self._links[message_id]

    async def below(self, message_id: str, parent_id: str | None) -> Link:
        """The tree columns of a new message ``message_id`` below ``parent_id``."""
        if parent_id is None:
            return self.add(_below(message_id, None, None))
        parent = await self.get(parent_id)
        return self.add(_below(message_id, parent, await self.get(parent.jump_id)))


async def chain_links(conn: AsyncConnection, chat_id: str, parent_id: str | None,
                      ids: Sequence[str], *,
                      parent_rows: tuple[Link, Link] | None = None) -> Iterator[Link]:
    """Tree columns for ``ids`` written as a chain below ``parent_id`` (None: roots).

    The rows above the chain are read here; the links are made as they are taken,
    without the database, so a long chain's are made while its rows stream out.
    ``parent_rows``: the parent's and its jump target's links, read already in this
    transaction (:data:`LEAF_COLUMNS`); enough for one message, which then reads
    nothing here.
    """
    known = _Known(conn, chat_id, "message {id!r} not found in chat {chat!r}")
    if parent_rows is not None and len(ids) == 1 and parent_rows[0].id == parent_id:
        for link in parent_rows:
            known.add(link)
    # One message needs its parent and the parent's jump; a longer chain's jumps reach
    # further up the parent's jump path, read whole rather than a row at a time.
    if parent_id is None:
        parent = None
    elif len(ids) == 1:
        parent = await known.get_with_jump(parent_id)
    else:
        parent = await known.get_with_path(parent_id)
    return _chain(known, parent, ids)


_LEAF = messages.alias("leaf")
_LEAF_JUMP = messages.alias("leaf_jump")
#: The chat's active leaf and its jump target, as columns of a statement over
#: ``chats`` (see :func:`leaf_joined`).
LEAF_COLUMNS = (
    _LEAF.c.parent_id.label("l_parent_id"), _LEAF.c.depth.label("l_depth"),
    _LEAF.c.jump_id.label("l_jump_id"), _LEAF.c.jump_depth.label("l_jump_depth"),
    _LEAF_JUMP.c.parent_id.label("lj_parent_id"), _LEAF_JUMP.c.depth.label("lj_depth"),
    _LEAF_JUMP.c.jump_id.label("lj_jump_id"), _LEAF_JUMP.c.jump_depth.label("lj_jump_depth"),
)


def leaf_joined(query: Select[Any]) -> Select[Any]:
    """``query`` over ``chats`` with the chat's active leaf and the leaf's jump target
    outer-joined (read back with :func:`leaf_links`)."""
    return query.add_columns(*LEAF_COLUMNS).outerjoin(
        _LEAF, (_LEAF.c.id == chats.c.active_leaf_id) & (_LEAF.c.chat_id == chats.c.id)
    ).outerjoin(
        _LEAF_JUMP, (_LEAF_JUMP.c.id == _LEAF.c.jump_id) & (_LEAF_JUMP.c.chat_id == chats.c.id))


def leaf_links(row: Any, leaf_id: str | None) -> tuple[Link, Link] | None:
    """The active leaf's and its jump target's links :func:`leaf_joined` read, or None
    (no leaf, or not both rows found)."""
    if leaf_id is None or row.l_depth is None or row.lj_depth is None:
        return None
    return (Link(leaf_id, row.l_parent_id, int(row.l_depth), row.l_jump_id,
                 int(row.l_jump_depth)),
            Link(row.l_jump_id, row.lj_parent_id, int(row.lj_depth), row.lj_jump_id,
                 int(row.lj_jump_depth)))


def _chain(known: _Known, parent: Link | None, ids: Sequence[str]) -> Iterator[Link]:
    links: list[Link] = []
    # The chain's own messages by depth: most jumps land among them (a long stream
    # makes thousands of links, so this loop stays free of lookups by id).
    base = 1 if parent is None else parent.depth + 1
    for message_id in ids:
        if parent is None:
            new = _below(message_id, None, None)
        else:
            jump = (links[parent.jump_depth - base] if parent.jump_depth >= base
                    else known.read(parent.jump_id))
            new = _below(message_id, parent, jump)
        links.append(new)
        parent = new
        yield new


async def link_rows(conn: AsyncConnection, chat_id: str, rows: list[dict[str, Any]]) -> str:
    """Fill the tree columns of message rows written in ``sequence`` order (imports,
    archive restores); returns the id of the last row.

    A row that names its parent (``parent_id``, None for a root) keeps it; a row
    without the key follows the message before it, so a document that says nothing of
    the tree imports as one chain. A named parent must come earlier.
    """
    known = _Known(conn, chat_id,
                   "parent message {id!r} does not come before its reply in this chat")
    previous: str | None = None
    if rows and "parent_id" not in rows[0]:
        previous = await conn.scalar(
            select(messages.c.id).where(messages.c.chat_id == chat_id,
                                        messages.c.sequence < rows[0]["sequence"])
            .order_by(messages.c.sequence.desc()).limit(1))
    for row in rows:
        new = await known.below(row["id"], row.get("parent_id", previous))
        row.update(new.columns())
        previous = new.id
    return str(previous)


def _below(message_id: str, parent: Link | None, parent_jump: Link | None) -> Link:
    """The tree columns of a new message below ``parent`` (None: a root)."""
    if parent is None or parent_jump is None:
        return Link(message_id, None, 1, message_id, 1)
    if parent.depth - parent.jump_depth == parent.jump_depth - parent_jump.jump_depth:
        return Link(message_id, parent.id, parent.depth + 1, parent_jump.jump_id,
                    parent_jump.jump_depth)
    return Link(message_id, parent.id, parent.depth + 1, parent.id, parent.depth)


def chain_jump_depths(upto: int) -> list[int]:
    """The jump target's depth for every depth 1..``upto`` (index 0 unused).

    A function of depth alone, the same on every branch: bulk loaders use it to write
    the tree columns of long chains without reading rows back.
    """
    jumps = [0, 1]
    for depth in range(2, upto + 1):
        parent = depth - 1
        parent_jump = jumps[parent]
        if parent - parent_jump == parent_jump - jumps[parent_jump]:
            jumps.append(jumps[parent_jump])
        else:
            jumps.append(parent)
    return jumps[:upto + 1]


def ancestor_at(start_id: Any, depth: Any, *, chat: Any, dialect: str) -> Select[tuple[str]]:
    """The id of ``start_id``'s ancestor (or itself) at ``depth``: O(log) row reads.

    ``start_id``, ``depth`` and ``chat`` (the start's chat, which every message of its
    tree shares) may be values or SQL expressions. On Postgres each step names the chat,
    so on partitioned tables it reads one partition's primary key; on SQLite a step
    follows the chat of the row it climbs from (see :func:`path_walk`).
    """
    base = select(messages.c.id, messages.c.chat_id, messages.c.depth, messages.c.parent_id,
                  messages.c.jump_id, messages.c.jump_depth).where(
        messages.c.id == start_id, messages.c.chat_id == chat)
    climb = base.cte("climb", recursive=True)
    step = messages.alias("step")
    target = case((climb.c.jump_depth >= depth, climb.c.jump_id), else_=climb.c.parent_id)
    in_chat = step.c.chat_id == (climb.c.chat_id if dialect == "sqlite" else chat)
    climb = climb.union_all(
        select(step.c.id, step.c.chat_id, step.c.depth, step.c.parent_id, step.c.jump_id,
               step.c.jump_depth)
        .where(step.c.id == target, in_chat, climb.c.depth > depth)
    )
    return select(climb.c.id).where(climb.c.depth == depth)


def path_walk(start: Any, where: Sequence[Any] = (), *, chat: Any, floor: Any = 0,
              count: Any = None, carry: Sequence[str] = (), dialect: str) -> CTE:
    """The walk from ``start`` (an id or an expression giving one) up towards the root.

    Rows ``id``, ``chat_id``, ``parent_id``, ``depth``, ``n`` (1 for the start) and the message
    columns named in ``carry`` (read on the way, so a caller needs no second lookup
    per row), at most ``count`` of them (None: no bound) and only those deeper than
    ``floor``; the walk stops there, so its cost is the rows it returns, however deep
    the branch. ``chat`` is the start's chat (on Postgres every step names it, so on
    partitioned tables the walk stays in one partition); ``where`` narrows the start row
    further (the caller's access). ``dialect`` is the database's (see below).
    """
    carried = [name for name in carry if name not in _WALKED]
    base = select(messages.c.id, messages.c.chat_id, messages.c.parent_id, messages.c.depth,
                  literal(1).label("n"), *(messages.c[name] for name in carried)).where(
        messages.c.id == start, messages.c.chat_id == chat, messages.c.depth > floor, *where)
    walk = base.cte("walk", recursive=True)
    up = messages.alias("up")
    # The floor is checked on the row already walked (its parent lies one level up). So
    # is the chat on SQLite: a condition on ``up`` alone (or one SQLite infers from a
    # constant) makes it, once the table has statistics, build a Bloom filter over the
    # chat's rows at every step — a page of 50 took 15 ms, not 0.15. Each step stays in
    # the start's chat either way: a parent is in its child's chat.
    in_chat = up.c.chat_id == (walk.c.chat_id if dialect == "sqlite" else chat)
    clauses = [up.c.id == walk.c.parent_id, in_chat, walk.c.depth > floor + 1]
    if count is not None:
        clauses.append(walk.c.n < count)
    return walk.union_all(
        select(up.c.id, up.c.chat_id, up.c.parent_id, up.c.depth, walk.c.n + 1,
               *(up.c[name] for name in carried)).where(*clauses)
    )


#: The columns every :func:`path_walk` row has.
_WALKED = frozenset({"id", "chat_id", "parent_id", "depth", "n"})


def path_query(start_id: str, *, chat: str, count: int | None, floor: int = 0,
               newest_first: bool = True, dialect: str) -> Select[Any]:
    """Rows of the path from ``start_id`` up towards the root, newest first (see
    :func:`path_walk`). Callers add their filter and a LIMIT; the ``_step`` column
    numbers the rows from the start.
    """
    walk = path_walk(start_id, chat=chat, floor=floor, count=count, dialect=dialect)
    return (
        select(messages, walk.c.n.label("_step"))
        .join(walk, (messages.c.id == walk.c.id) & (messages.c.chat_id == chat))
        .order_by(walk.c.n if newest_first else walk.c.n.desc())
    )


async def newest_leaf_below(conn: AsyncConnection, chat_id: str, message_id: str) -> str:
    """The most recently written leaf at or below ``message_id`` (itself when a leaf)."""
    below = select(messages.c.id, messages.c.sequence).where(
        messages.c.id == message_id, messages.c.chat_id == chat_id).cte("below",
                                                                         recursive=True)
    child = messages.alias("child")
    below = below.union_all(
        select(child.c.id, child.c.sequence).where(child.c.chat_id == chat_id,
                                                   child.c.parent_id == below.c.id)
    )
    # Sequences grow down every branch, so the newest descendant is a leaf.
    newest = await conn.scalar(
        select(below.c.id).order_by(below.c.sequence.desc()).limit(1)
    )
    if newest is None:
        raise NotFound(f"message {message_id!r} not found in chat {chat_id!r}")
    return str(newest)


async def newest_replies(conn: AsyncConnection, chat_id: str, message_id: str,
                         count: int) -> list[str]:
    """Up to ``count`` messages after ``message_id``, taking the newest reply each step."""
    down = select(messages.c.id, literal(0).label("n")).where(
        messages.c.id == message_id, messages.c.chat_id == chat_id).cte("down", recursive=True)
    child = messages.alias("child")
    newest_child = (
        select(child.c.id).where(child.c.chat_id == chat_id, child.c.parent_id == down.c.id)
        .order_by(child.c.sequence.desc()).limit(1).scalar_subquery()
    )
    down = down.union_all(
        select(newest_child, down.c.n + 1).where(down.c.n < count, down.c.id.is_not(None))
    )
    ids = (await conn.scalars(select(down.c.id).where(down.c.n > 0,
                                                       down.c.id.is_not(None)))).all()
    return [str(i) for i in ids]


async def set_active_leaf(conn: AsyncConnection, chat_id: str, leaf_id: str | None) -> None:
    await conn.execute(update(chats).where(chats.c.id == chat_id)
                       .values(active_leaf_id=leaf_id))


def _descendants(chat_id: str, ids: Sequence[str]) -> CTE:
    """The messages ``ids`` of one chat and everything below them, each row once (a
    message below two of the named ones is still one row)."""
    below = select(messages.c.id).where(
        messages.c.chat_id == chat_id, messages.c.id.in_(list(ids))
    ).cte("below", recursive=True)
    child = messages.alias("child")
    return below.union(select(child.c.id).where(child.c.chat_id == chat_id,
                                                child.c.parent_id == below.c.id))


async def _active_cut(conn: AsyncConnection, chat_id: str, tops: Sequence[Any]) -> Any:
    """The shallowest of ``tops`` (rows with ``id`` and ``depth``, shallowest first) on
    the chat's active branch, or None."""
    active = await conn.scalar(select(chats.c.active_leaf_id).where(chats.c.id == chat_id))
    if active is None:
        return None
    for top in tops:
        if await conn.scalar(ancestor_at(active, int(top.depth), chat=chat_id,
                                         dialect=conn.dialect.name)) == top.id:
            return top
    return None


async def _fall_back(conn: AsyncConnection, chat_id: str, survivor: str | None) -> None:
    """Make the newest leaf below ``survivor`` active; with None, the newest leaf below
    the chat's newest message (nothing when the chat is empty)."""
    if survivor is None:
        survivor = await conn.scalar(
            select(messages.c.id).where(messages.c.chat_id == chat_id)
            .order_by(messages.c.sequence.desc()).limit(1))
    if survivor is not None:
        survivor = await newest_leaf_below(conn, chat_id, survivor)
    await set_active_leaf(conn, chat_id, survivor)


async def delete_subtrees(conn: AsyncConnection, chat_id: str, ids: Sequence[str]) -> int:
    """Delete the messages ``ids`` of one chat and all their descendants; returns how
    many rows went.

    When the active leaf goes with them, the active branch falls back to the newest
    leaf below the nearest surviving ancestor (or the chat's newest message's, or
    nothing when the chat is emptied).
    """
    tops = (await conn.execute(
        select(messages.c.id, messages.c.depth, messages.c.parent_id)
        .where(messages.c.chat_id == chat_id, messages.c.id.in_(list(ids)))
        .order_by(messages.c.depth)
    )).all()
    if not tops:
        return 0
    cut = await _active_cut(conn, chat_id, tops)
    doomed = _descendants(chat_id, [top.id for top in tops])
    # Counted first: SQLite reports no row count for a DELETE led by a CTE.
    count = await conn.scalar(select(func.count()).select_from(doomed))
    await conn.execute(delete(messages).where(
        messages.c.chat_id == chat_id, messages.c.id.in_(select(doomed.c.id))))
    if cut is not None:
        await _fall_back(conn, chat_id, cut.parent_id)
    return int(count or 0)


async def delete_exactly(conn: AsyncConnection, chat_id: str, ids: Sequence[str]) -> int:
    """Delete exactly the messages ``ids`` of one chat; returns how many rows went.

    Each deleted message's children hang on its nearest surviving ancestor (a root's
    become roots), and every message below a deleted one gets the tree columns a
    fresh write of the same tree would give it (its depth is smaller now, and its jump
    pointer follows from the depth), so branch pages stay bounded. The rows below are
    read once and only rows whose columns change are written, in one bulk statement.

    When the active leaf is deleted, its nearest surviving ancestor becomes the active
    leaf (with no ancestor left, the newest leaf below the chat's newest message); a
    deleted message higher up the active branch leaves the leaf where it is.
    """
    named = (await conn.execute(
        select(messages.c.id, messages.c.parent_id)
        .where(messages.c.chat_id == chat_id, messages.c.id.in_(list(ids)))
    )).all()
    if not named:
        return 0
    gone = {row.id: row.parent_id for row in named}

    def survivor_above(parent_id: str | None) -> str | None:
        while parent_id is not None and parent_id in gone:
            parent_id = gone[parent_id]
        return parent_id

    active = await conn.scalar(select(chats.c.active_leaf_id).where(chats.c.id == chat_id))
    below = _descendants(chat_id, list(gone))
    # Parents come before their children in old-depth order, which is what the links
    # are made in: a new link needs its parent's (new) link and that one's jump target.
    rows = (await conn.execute(
        select(messages.c.id, messages.c.parent_id, messages.c.depth, messages.c.jump_id,
               messages.c.jump_depth)
        .where(messages.c.id.in_(select(below.c.id)), messages.c.chat_id == chat_id)
        .order_by(messages.c.depth)
    )).all()
    known = _Known(conn, chat_id, "message {id!r} not found in chat {chat!r}")
    changed: list[Link] = []
    for row in rows:
        if row.id in gone:
            continue
        parent_id = survivor_above(row.parent_id)
        if parent_id is None:
            new = _below(row.id, None, None)
        else:
            # Mostly re-linked already; a parent above every deleted message is read
            # once, with its jump path, where the jumps of every message re-linked
            # below it land (see ``_PATH``).
            parent = known.cached(parent_id) or await known.get_with_path(parent_id)
            jump = known.cached(parent.jump_id) or await known.get(parent.jump_id)
            new = _below(row.id, parent, jump)
        known.add(new)
        if new != tuple(row):
            changed.append(new)
    await conn.execute(delete(messages).where(messages.c.chat_id == chat_id,
                                              messages.c.id.in_(list(gone))))
    await _write_links(conn, changed)
    if active in gone:
        # The leaf itself went: its nearest surviving ancestor leads the branch now.
        survivor = survivor_above(gone[active])
        if survivor is None:
            await _fall_back(conn, chat_id, None)
        else:
            await set_active_leaf(conn, chat_id, survivor)
    return len(gone)


#: Rows per statement when rewriting tree columns in bulk.
_LINK_BATCH = 20_000


async def _write_links(conn: AsyncConnection, links: Sequence[Link]) -> None:
    """Store the tree columns of ``links`` (existing messages)."""
    for start in range(0, len(links), _LINK_BATCH):
        batch = links[start:start + _LINK_BATCH]
        if conn.dialect.name == "postgresql":
            # One statement joining the new values as arrays: an executemany would be
            # one round trip per row.
            await conn.execute(_PG_WRITE_LINKS, {
                "ids": [link.id for link in batch],
                "parents": [link.parent_id for link in batch],
                "depths": [link.depth for link in batch],
                "jump_ids": [link.jump_id for link in batch],
                "jump_depths": [link.jump_depth for link in batch],
            })
        else:
            # Plain parameter tuples: building SQLAlchemy parameters row by row costs
            # more than SQLite's update itself.
            await conn.exec_driver_sql(_WRITE_LINK, [
                (link.parent_id, link.depth, link.jump_id, link.jump_depth, link.id)
                for link in batch])


_WRITE_LINK = ("UPDATE messages SET parent_id = ?, depth = ?, jump_id = ?, jump_depth = ?"
               " WHERE id = ?")
_PG_WRITE_LINKS = text(
    "UPDATE messages SET parent_id = v.parent_id, depth = v.depth, jump_id = v.jump_id,"
    " jump_depth = v.jump_depth FROM (SELECT unnest(CAST(:ids AS text[])) AS id,"
    " unnest(CAST(:parents AS text[])) AS parent_id,"
    " unnest(CAST(:depths AS bigint[])) AS depth,"
    " unnest(CAST(:jump_ids AS text[])) AS jump_id,"
    " unnest(CAST(:jump_depths AS bigint[])) AS jump_depth) AS v"
    " WHERE messages.id = v.id")


async def sibling_ids(conn: AsyncConnection, chat_id: str, parent_id: str | None) -> list[str]:
    """The messages below ``parent_id`` (the chat's roots for None), oldest first."""
    parent = (messages.c.parent_id.is_(None) if parent_id is None
              else messages.c.parent_id == parent_id)
    return list((await conn.scalars(
        select(messages.c.id).where(messages.c.chat_id == chat_id, parent)
        .order_by(messages.c.sequence)
    )).all())
