"""The one place where failures become GraphQL errors with an ``extensions.code``.

Store errors keep their message (written for developers) and get the code of their
class. GraphQL's own parse, validation and variable errors are ``INVALID_ARGUMENT``
(``QUERY_TOO_COMPLEX`` when a limit was hit). Anything unexpected is logged here with
its traceback and reaches the client only as ``INTERNAL`` with a generic message: no
stack trace, SQL or driver text ever leaves the service.
"""

from __future__ import annotations

import logging
from typing import Any

from graphql import FieldNode, GraphQLError, GraphQLSyntaxError
from strawberry import Schema
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionContext

from chatql.store import errors as store_errors

__all__ = ["CODES", "ChatqlSchema", "QueryTooComplex", "code_for", "failed_root_field"]

logger = logging.getLogger("chatql")

CODES: tuple[tuple[type[store_errors.ChatqlError], str], ...] = (
    # Most specific first: the first matching class wins.
    (store_errors.InvalidCursor, "INVALID_CURSOR"),
    (store_errors.InvalidDelta, "INVALID_DELTA"),
    (store_errors.WindowTooSmall, "WINDOW_TOO_SMALL"),
    (store_errors.InvalidArgument, "INVALID_ARGUMENT"),
    (store_errors.AppendConflict, "APPEND_CONFLICT"),
    (store_errors.Conflict, "CONFLICT"),
    (store_errors.NotFound, "NOT_FOUND"),
    (store_errors.ChatClosed, "CHAT_CLOSED"),
    (store_errors.Expired, "EXPIRED"),
    (store_errors.StreamNotFound, "STREAM_NOT_FOUND"),
    (store_errors.StreamClosed, "STREAM_CLOSED"),
    (store_errors.StreamActive, "STREAM_ACTIVE"),
    (store_errors.PayloadTooLarge, "PAYLOAD_TOO_LARGE"),
    (store_errors.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (store_errors.QuotaExceeded, "QUOTA_EXCEEDED"),
    (store_errors.MemoryFull, "MEMORY_FULL"),
    (store_errors.Unauthenticated, "UNAUTHENTICATED"),
    (store_errors.Forbidden, "FORBIDDEN"),
    (store_errors.PersistFailed, "PERSIST_FAILED"),
)


class QueryTooComplex(GraphQLError):
    """A document over the depth, token or alias limits."""


def code_for(error: BaseException) -> str | None:
    for cls, code in CODES:
        if isinstance(error, cls):
            return code
    return None


def _classify(error: GraphQLError) -> tuple[str, str | None]:
    """The code for ``error`` and, for unexpected failures, the message to show instead."""
    original = error.original_error
    if isinstance(error, QueryTooComplex) or isinstance(original, QueryTooComplex):
        return "QUERY_TOO_COMPLEX", None
    if isinstance(error, GraphQLSyntaxError) and error.message.endswith("Parsing aborted."):
        # graphql-core's parser limits (token, comment and nesting budgets, gql/ops/limits.py).
        return "QUERY_TOO_COMPLEX", None
    if original is None:
        # Parse, validation and variable-coercion errors written by graphql-core.
        return "INVALID_ARGUMENT", None
    code = code_for(original)
    if code is not None:
        return code, None
    if isinstance(original, CannotGetOperationTypeError | InvalidOperationTypeError):
        # An unknown operationName or a disallowed operation type (reaches here over
        # WebSocket; HTTP answers these with 400 before executing).
        return "INVALID_ARGUMENT", None
    if isinstance(original, GraphQLError):
        return "INVALID_ARGUMENT", None
    return "INTERNAL", "Internal server error"


class ChatqlSchema(Schema):
    """A Strawberry schema that gives every error its ``extensions.code``."""

    #: The converters of the inputs built without Strawberry's generic conversion, by
    #: type name (set by ``build_schema``; see gql/schema/inputs.py).
    inputs: dict[str, Any]

    def process_errors(
        self,
        errors: list[GraphQLError],
        execution_context: ExecutionContext | None = None,
    ) -> None:
        for error in errors:
            code, replacement = _classify(error)
            if replacement is not None:
                logger.error("unexpected error in %s", error.path, exc_info=error.original_error)
                error.message = replacement
            extensions: dict[str, Any] = dict(error.extensions or {})
            extensions["code"] = code
            if isinstance(error.original_error, store_errors.MemoryFull):
                # What the agent needs to consolidate and retry.
                extensions.update(error.original_error.extensions())
            error.extensions = extensions


def failed_root_field(schema: Schema, field: FieldNode, error: Exception) -> dict[str, Any]:
    """The answer the executor gives when the non-null root ``field`` raised ``error``:
    ``{"data": null, "errors": [...]}`` with the error located at the field, coded
    (and, if unexpected, logged) by :meth:`ChatqlSchema.process_errors`.

    A plan that already tried a write answers its failure with this, so the write is
    never tried a second time by the executor and the caller sees the same error.
    """
    located = GraphQLError(str(error), nodes=[field],
                           path=[(field.alias or field.name).value], original_error=error)
    schema.process_errors([located])
    return {"data": None, "errors": [located.formatted]}
