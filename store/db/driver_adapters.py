"""The one door from chatql's store to database driver internals.

aiosqlite and SQLAlchemy keep the right to change anything that is not their public
API in any release. Where the store needs such an internal — to run a whole SQLite
statement in one trip to aiosqlite's thread, to keep that thread from holding up the
process's exit — it reaches it through a small function or class here, and nowhere
else (``tests/test_private_names.py`` holds every other module to that). Each says
what it relies on and why the store needs it; where a public API does the job it is
used instead, and its docstring says so. ``tests/store/test_driver_adapters.py`` pins
the behaviour each relies on against the installed drivers, so an upgrade that changes
one fails there first, naming it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from threading import Thread
from typing import Concatenate, ParamSpec, TypeVar

import aiosqlite
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["ThreadCallConnection", "compiled_positional_names", "compiled_text",
           "daemon_sqlite_thread"]

T = TypeVar("T")
P = ParamSpec("P")


class ThreadCallConnection(aiosqlite.Connection):
    """An aiosqlite connection that also runs a function of the caller's, whole, in
    the connection's own thread."""

    def call_in_thread(self, function: Callable[Concatenate[sqlite3.Connection, P], T],
                       *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
        """``function(sqlite3_connection, *args, **kwargs)``, run in the connection's thread after
        every call queued before it; awaiting it gives its result or raises its error.

        Relies on aiosqlite's ``Connection._execute(fn, *args)`` — the queue to the
        connection's worker thread that every public method of aiosqlite goes through
        (so calls stay in order with theirs) — and ``Connection._conn``, the
        ``sqlite3.Connection`` that may only be used in that thread (``ValueError``
        once closed). aiosqlite's public calls each take one trip to the thread; a
        statement as SQLAlchemy's adapter drives it takes four (open a cursor,
        execute, fetch, close), about 80 µs each on a small machine, and this runs
        all of it in one.
        """
        outcome: Awaitable[T] = self._execute(  # type: ignore[no-untyped-call]
            function, self._conn, *args, **kwargs)
        return outcome


def daemon_sqlite_thread(connection: aiosqlite.Connection) -> None:
    """Make ``connection``'s worker thread a daemon, so a connection nobody closed
    never holds up the process's exit; call it before the connection is awaited (its
    thread starts then).

    Relies on aiosqlite's ``Connection._thread`` (0.22 and later: the connection owns
    its worker thread) or the connection being that ``threading.Thread`` itself (before
    0.22) — as SQLAlchemy's own aiosqlite dialect does for the connections it makes.
    """
    if isinstance(connection, Thread):
        connection.daemon = True
    else:
        connection._thread.daemon = True


def compiled_positional_names(compiled: SQLCompiler) -> Sequence[str]:
    """The names of a compiled statement's bound parameters, in the order its
    positional placeholders (``?``, ``$1``…) take them; empty for a named paramstyle.

    Public API: ``Compiled.params`` (every bound parameter, by name),
    ``SQLCompiler.construct_expanded_state(params)`` and its ``positional_parameters``
    (the values in placeholder order): given each parameter's own name as its value,
    the positional values are the names in order. The store compiles its hottest
    reads to driver SQL once and binds each request's values by these names.
    """
    if not compiled.positional:
        return ()
    state = compiled.construct_expanded_state({name: name for name in compiled.params})
    return tuple(state.positional_parameters)


def compiled_text(compiled: SQLCompiler) -> tuple[str, Sequence[str]]:
    """A compiled statement's driver SQL, with its literal-execute parameters written
    in, and the names of its other bound parameters in placeholder order (as
    :func:`compiled_positional_names`).

    Public API: ``SQLCompiler.binds`` (each parameter's ``BindParameter``, whose
    ``literal_execute`` marks one rendered into the text) and the expanded state's
    ``statement``. A constant the planner sees as a value, not a parameter, is planned
    with its statistics, and a prepared statement of such text gets a generic plan as
    good as a custom one.
    """
    fixed = {name for name, bind in compiled.binds.items() if bind.literal_execute}
    if not fixed:
        return compiled.string, compiled_positional_names(compiled)
    state = compiled.construct_expanded_state(
        {name: value if name in fixed else name for name, value in compiled.params.items()})
    return state.statement, tuple(state.positional_parameters) if compiled.positional else ()
