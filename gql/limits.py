"""Limits on a GraphQL document: depth, lexical tokens and aliases (SPEC §10).

A document over any limit is refused before it runs, with ``extensions.code``
``QUERY_TOO_COMPLEX``. The limits come from the request's settings
(``CHATQL_MAX_QUERY_DEPTH``, ``CHATQL_MAX_QUERY_TOKENS``, ``CHATQL_MAX_QUERY_ALIASES``),
so the module-level schema serves apps built with different settings.

- Tokens are counted by graphql-core's parser while it reads (``max_lexical_tokens``,
  plus the same budget for comments), so an oversized document is abandoned early
  instead of being parsed in full first. ``gql/errors.py`` gives the parser's
  "Parsing aborted." errors the ``QUERY_TOO_COMPLEX`` code.
- Depth and aliases reuse Strawberry's validation rules; what they report is re-raised
  as ``QueryTooComplex`` so the code does not depend on their message wording.
  Introspection fields do not count towards depth, so GraphiQL's schema query works.

The same extension refuses NUL characters in any string the caller sends (document
literals and variables) with ``INVALID_ARGUMENT``: Postgres cannot store them in text or
JSONB, and refusing them everywhere keeps both backends answering alike.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, cast

from graphql import (
    ASTValidationRule,
    GraphQLError,
    StringValueNode,
    ValidationContext,
    ValidationRule,
)
from strawberry.extensions import SchemaExtension
from strawberry.extensions.max_aliases import create_validator as alias_validator
from strawberry.extensions.query_depth_limiter import create_validator as depth_validator

from gql.errors import QueryTooComplex
from gql.settings import Settings
from store.errors import InvalidArgument

__all__ = ["NoNulStrings", "QueryLimits", "limit_rules"]

_DEFAULTS = Settings()


def _reporting_too_complex(rule: type[ASTValidationRule]) -> type[ASTValidationRule]:
    """``rule`` with every error it reports turned into QueryTooComplex.

    Strawberry's depth and alias rules do all their work in ``__init__``, reporting
    straight to the validation context, so the context's reporter is swapped for the
    duration of that call.
    """

    class TooComplexRule(rule):  # type: ignore[misc, valid-type]
        def __init__(self, context: ValidationContext) -> None:
            report = context.report_error

            def too_complex(error: GraphQLError) -> None:
                report(QueryTooComplex(error.message, error.nodes))

            context.report_error = too_complex  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                del context.report_error

    TooComplexRule.__name__ = f"TooComplex{rule.__name__}"
    return TooComplexRule


_NUL_MESSAGE = "strings must not contain NUL (U+0000) characters"


class NoNulStrings(ValidationRule):
    """String literals in the document must not contain NUL."""

    def enter_string_value(self, node: StringValueNode, *_args: Any) -> None:
        if "\x00" in node.value:
            self.report_error(
                GraphQLError(_NUL_MESSAGE, node, original_error=InvalidArgument(_NUL_MESSAGE))
            )


def _has_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds NUL in any string (iterative: no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


@functools.lru_cache(maxsize=16)
def limit_rules(max_depth: int, max_aliases: int) -> tuple[type[ASTValidationRule], ...]:
    """The validation rules for these limits (cached: the validation cache keys on them)."""
    return (
        _reporting_too_complex(depth_validator(max_depth, None, None)),
        _reporting_too_complex(alias_validator(max_aliases)),
        NoNulStrings,
    )


def _settings_of(context: Any) -> Settings:
    services = getattr(context, "services", None)
    settings = getattr(services, "settings", None)
    return settings if isinstance(settings, Settings) else _DEFAULTS


class QueryLimits(SchemaExtension):
    """Applies the depth, token and alias limits of the request's settings."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        settings = _settings_of(context.context)
        # graphql-core 3.3 options that Strawberry's ParseOptions type does not list yet.
        parse_options = cast("dict[str, Any]", context.parse_options)
        parse_options["max_lexical_tokens"] = settings.max_query_tokens
        parse_options["max_comments"] = settings.max_query_tokens
        context.validation_rules = (
            *context.validation_rules,
            *limit_rules(settings.max_query_depth, settings.max_query_aliases),
        )
        yield

    def on_validate(self) -> Iterator[None]:
        # Runs after ValidationCache has filled in the document's errors (this extension
        # is listed last); a document that is valid but whose variables carry NUL is
        # refused here, before anything executes.
        context = self.execution_context
        if not context.pre_execution_errors and _has_nul(context.variables):
            error = GraphQLError(_NUL_MESSAGE, original_error=InvalidArgument(_NUL_MESSAGE))
            context.pre_execution_errors = [error]
        yield
