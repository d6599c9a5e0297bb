"""HTTP lanes: the hottest operations, sent as plain POSTs, answered without the view.

A producer pushes thousands of chunks per stream, a chat appends every message, and
front ends read the same message pages and chat lists again and again; for each, the
view's generic steps (request adapter, content negotiation, request data, result
processing, Strawberry's argument conversion) cost a good part of the answer. A lane
answers one such request with the bytes and headers the view would send. Each lane
names its root fields and two functions: ``plan`` (the cached plan for a document, or
None when the document is not one the lane serves) and ``run`` (the ``{"data": …}`` of
the operation, or None to leave it to the view).

Declining is always safe: the request then goes through the view unchanged (a read the
lane declined is not planned again there: the executor answers it). A write the lane
*tried* and that failed is not tried again: ``run`` keeps the failure
(:func:`keep_refusal`) and the ordinary resolver raises it (:func:`take_refusal`)
instead of writing, so the caller sees exactly the ordinary error for the one attempt
it made. A kept failure lives only as long as the request's view run
(:func:`clear_refusals`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["Lane", "clear_refusals", "keep_refusal", "take_refusal"]


@dataclass(frozen=True, slots=True)
class Lane:
    """An operation a lane serves: the root fields it names, how to plan and how to
    run it."""

    #: The root fields, as bytes: every request body this lane may serve names one.
    fields: tuple[bytes, ...]
    #: ``plan(query, operation_name)``: the app's plan for the document, or None.
    plan: Callable[[str | None, str | None], object | None]
    #: ``run(context, query, operation_name, variables, nul_free=…)``.
    run: Callable[..., Awaitable[dict[str, Any] | None]]

    def may_serve(self, body: bytes) -> bool:
        """Whether ``body`` names one of the lane's root fields (a cheap look before
        the body is parsed)."""
        return any(name in body for name in self.fields)


# The failure a lane met for this operation's write, with the field it was for (each
# request runs in its own task, which holds its own copy of the variable).
_refusal: ContextVar[tuple[str, BaseException] | None] = ContextVar("chatql_lane_refusal",
                                                                   default=None)


def keep_refusal(field: str, error: BaseException) -> None:
    """Keep ``error`` for the ordinary ``field`` resolver of this operation."""
    _refusal.set((field, error))


def take_refusal(field: str) -> BaseException | None:
    """The failure a lane met for this operation's ``field`` write, once."""
    kept = _refusal.get()
    if kept is None or kept[0] != field:
        return None
    _refusal.set(None)
    return kept[1]


def clear_refusals(field: str | None = None) -> None:
    """Forget the failure kept for ``field`` (a run starts afresh), or any failure
    (the view has answered)."""
    kept = _refusal.get()
    if kept is not None and (field is None or kept[0] == field):
        _refusal.set(None)
