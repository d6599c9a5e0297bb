"""Subscriptions over plain HTTP: Server-Sent Events, or a clear refusal.

- **Server-Sent Events.** ``chatStream`` (and any other operation) runs over HTTP when
  the request says ``Accept: text/event-stream``: the ``graphql-sse`` protocol in its
  distinct-connections mode, one ``POST`` (or ``GET``) per operation. Each result is an
  ``event: next`` whose ``data`` is the JSON execution result, and ``event: complete``
  ends the stream; a comment line every 15 seconds keeps proxies from closing an idle
  connection. The transport is Strawberry's own (``graphql-sse`` in the view's
  protocols), so a subscription runs through the same resolver — the same access rules
  and ``afterSeq`` — as over WebSocket. Closing the connection ends the subscription.
- **Anything else is refused.** A subscription sent as a plain JSON request (no
  event-stream ``Accept``, or a multipart one) cannot be answered as one response;
  graphql-core would resolve its root field to ``null`` and the caller would see an
  ``INTERNAL`` error. It is ``INVALID_ARGUMENT`` instead (HTTP 400), naming the two
  transports that work.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

from cross_web import HTTPException
from strawberry.exceptions import MissingQueryError
from strawberry.http.streaming import AsyncTextStream, SSETransport, merge_stream_with_heartbeat
from strawberry.http.types import HTTPMethod
from strawberry.schema.exceptions import (
    CannotGetOperationTypeError,
    InvalidOperationTypeError,
)
from strawberry.subscriptions import GRAPHQL_SSE_PROTOCOL
from strawberry.types.execution import ExecutionResult
from strawberry.types.graphql import OperationType

from chatql.gql.plans.plan import TextRelay

__all__ = ["GRAPHQL_SSE_PROTOCOL", "SUBSCRIPTION_OVER_HTTP", "RelayedSubscription",
           "execute_plain_http", "relayed_stream"]

SUBSCRIPTION_OVER_HTTP = (
    "Subscriptions cannot run as a plain HTTP request: use a WebSocket "
    "(graphql-transport-ws or graphql-ws) or Server-Sent Events "
    "(graphql-sse: POST with 'Accept: text/event-stream')"
)


async def execute_plain_http(view: Any, method: str, context: Any, root_value: Any,
                             request_data: Any) -> ExecutionResult:
    """Run a query or mutation sent as plain HTTP; a subscription is refused.

    ``HTTPException`` answers become ``INVALID_ARGUMENT`` bodies in ``gql/app.py``.
    """
    allowed = set(OperationType.from_http(cast("HTTPMethod", method)))
    allowed.discard(OperationType.SUBSCRIPTION)
    if not view.allow_queries_via_get and method == "GET":
        allowed.discard(OperationType.QUERY)
    try:
        result: ExecutionResult = await view.schema.execute(
            request_data.query,
            root_value=root_value,
            variable_values=request_data.variables,
            context_value=context,
            operation_name=request_data.operation_name,
            allowed_operation_types=allowed,
            operation_extensions=request_data.extensions,
        )
    except CannotGetOperationTypeError as error:
        raise HTTPException(400, error.as_http_error_reason()) from None
    except InvalidOperationTypeError as error:
        if error.operation_type is OperationType.SUBSCRIPTION:
            raise HTTPException(400, SUBSCRIPTION_OVER_HTTP) from None
        raise HTTPException(400, error.as_http_error_reason(method)) from None
    except MissingQueryError:
        raise HTTPException(400, "No GraphQL query found in the request") from None
    return result


class RelayedSubscription:
    """A subscription the view streams from a fast relay instead of an execution: it
    stands where the executor's result would (an async iterator, never iterated as
    one) and :func:`relayed_stream` writes it."""

    def __init__(self, relay: TextRelay) -> None:
        self.relay = relay

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        raise StopAsyncIteration


def relayed_stream(subscription: RelayedSubscription, transport: Any) -> AsyncTextStream:
    """The event stream of a relayed subscription: an ``event: next`` per event, then
    ``event: complete``, with the heartbeats of the ordinary way's stream."""
    assert isinstance(transport, SSETransport)
    relay = subscription.relay

    async def stream() -> AsyncGenerator[str, None]:
        async with aclosing(relay.texts()) as texts:
            async for text in texts:
                yield transport.encode_event("next", text)
        yield transport.encode_complete()

    return merge_stream_with_heartbeat(
        stream, lambda: transport.encode_comment("ping"),
        interval=transport.heartbeat_interval,
        send_initial_heartbeat=transport.send_initial_heartbeat)
