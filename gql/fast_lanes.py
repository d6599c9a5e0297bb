"""HTTP lanes: the hottest operations, sent as plain POSTs, answered without the view.

A producer pushes thousands of chunks per stream, a chat appends every message, and
front ends read the same message pages and chat lists again and again; for each, the
view's generic steps (request adapter, content negotiation, request data, result
processing, Strawberry's argument conversion) cost a good part of the answer. A lane
answers one such request with the bytes and headers the view would send. Each lane
names its root fields and two functions: ``plan`` (the cached plan for a document, or
None when the document is not one the lane serves) and ``run`` (the ``{"data": …}`` of
the operation, or None to leave it to the view).

Declining is always safe: the request then goes through the view with the lane's own
context, marked :attr:`~gql.context.Context.planned`, so the view neither counts it
against the caller's limits again nor offers it to the plans again: the executor
answers it. A write the lane *tried* is never declined afterwards: its failure is the
lane's answer, the error the executor would give (:func:`gql.errors.failed_root_field`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Lane"]


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
