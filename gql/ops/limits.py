"""Limits on a GraphQL document: depth, lexical tokens and aliases.

A document over any limit is refused before it runs, with ``extensions.code``
``QUERY_TOO_COMPLEX``. The limits come from the request's settings
(``CHATQL_MAX_QUERY_DEPTH``, ``CHATQL_MAX_QUERY_TOKENS``, ``CHATQL_MAX_QUERY_ALIASES``),
as the app's schema was built with them (a request whose context carries settings of its
own uses those).

- Tokens are counted by graphql-core's parser while it reads (``max_lexical_tokens``,
  plus the same budget for comments), so an oversized document is abandoned early
  instead of being parsed in full first. ``gql/errors.py`` gives the parser's
  "Parsing aborted." errors the ``QUERY_TOO_COMPLEX`` code.
- Depth and aliases are measured by one validation rule of this module (memoised per
  fragment, so fragment bombs cost linear time) that reports ``QueryTooComplex``.
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
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    StringValueNode,
    ValidationContext,
    ValidationRule,
)
from strawberry.extensions import ParserCache, SchemaExtension

from chatql.gql.document_shapes import has_nul
from chatql.gql.errors import QueryTooComplex
from chatql.gql.settings import Settings
from chatql.store.errors import InvalidArgument

__all__ = ["DocumentParserCache", "NoNulStrings", "QueryLimits", "limit_rules"]

def _limit_rule(max_depth: int, max_aliases: int) -> type[ASTValidationRule]:
    """A rule measuring each operation's depth and the document's aliases.

    Strawberry's own depth and alias rules walk a fragment again at every spread, so a
    "fragment bomb" (each fragment spreading the next twice) costs 2^n steps, and its
    depth rule crashes on the empty selection sets graphql-core 3.3 accepts. Here every
    fragment is measured once (memoised), which keeps the walk linear in the document;
    aliases are still counted once per spread, so a bomb is caught by the alias limit.
    Introspection fields (``__schema`` …) do not count towards depth. Fragment cycles
    and unknown fragments are left to graphql-core's own rules.
    """

    class DocumentLimits(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            definitions = context.document.definitions
            fragments = {d.name.value: d for d in definitions
                         if isinstance(d, FragmentDefinitionNode)}
            measured: dict[str, tuple[int, int]] = {}

            def measure(selection_set: SelectionSetNode | None,
                        visiting: frozenset[str]) -> tuple[int, int]:
                depth = aliases = 0
                if selection_set is None:
                    return depth, aliases
                for node in selection_set.selections:
                    if isinstance(node, FieldNode):
                        aliases += node.alias is not None
                        inner, inner_aliases = measure(node.selection_set, visiting)
                        aliases += inner_aliases
                        if node.selection_set is not None and not node.name.value.startswith(
                            "__"
                        ):
                            depth = max(depth, 1 + inner)
                    elif isinstance(node, InlineFragmentNode):
                        inner, inner_aliases = measure(node.selection_set, visiting)
                        depth, aliases = max(depth, inner), aliases + inner_aliases
                    elif isinstance(node, FragmentSpreadNode):
                        name = node.name.value
                        if name in visiting or name not in fragments:
                            continue
                        if name not in measured:
                            measured[name] = measure(fragments[name].selection_set,
                                                     visiting | {name})
                        inner, inner_aliases = measured[name]
                        depth, aliases = max(depth, inner), aliases + inner_aliases
                return depth, aliases

            total_aliases = 0
            try:
                for definition in definitions:
                    if isinstance(definition, OperationDefinitionNode):
                        depth, aliases = measure(definition.selection_set, frozenset())
                        total_aliases += aliases
                        if depth > max_depth:
                            name = definition.name.value if definition.name else "anonymous"
                            self.report_error(QueryTooComplex(
                                f"operation {name!r} is nested {depth} levels deep; "
                                f"at most {max_depth} are allowed", [definition]))
            except RecursionError:
                self.report_error(QueryTooComplex("the document is nested too deeply"))
                return
            if total_aliases > max_aliases:
                self.report_error(QueryTooComplex(
                    f"the document uses {total_aliases} aliases; at most {max_aliases} "
                    "are allowed"))

    return DocumentLimits


_NUL_MESSAGE = "strings must not contain NUL (U+0000) characters"


class NoNulStrings(ValidationRule):
    """String literals in the document must not contain NUL."""

    def enter_string_value(self, node: StringValueNode, *_args: Any) -> None:
        if "\x00" in node.value:
            self.report_error(
                GraphQLError(_NUL_MESSAGE, node, original_error=InvalidArgument(_NUL_MESSAGE))
            )




@functools.lru_cache(maxsize=16)
def limit_rules(max_depth: int, max_aliases: int) -> tuple[type[ASTValidationRule], ...]:
    """The validation rules for these limits (cached: the validation cache keys on them)."""
    return (_limit_rule(max_depth, max_aliases), NoNulStrings)


class QueryLimits(SchemaExtension):
    """Applies the depth, token and alias limits of the request's settings (those the
    schema was built with when the request's context has none)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self._settings = settings

    def _settings_of(self, context: Any) -> Settings:
        services = getattr(context, "services", None)
        settings = getattr(services, "settings", None)
        return settings if isinstance(settings, Settings) else self._settings

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        settings = self._settings_of(context.context)
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
        if not context.pre_execution_errors and has_nul(context.variables):
            error = GraphQLError(_NUL_MESSAGE, original_error=InvalidArgument(_NUL_MESSAGE))
            context.pre_execution_errors = [error]
        yield


class DocumentParserCache(ParserCache):
    """Strawberry's parse cache, with a document that does not parse left to the
    ordinary parse step.

    The cache parses in the extension's ``on_parse`` hook, outside the ``try`` that turns
    a syntax error into a GraphQL error result, so over WebSocket such a document
    escaped as an exception (a logged traceback and no answer). Leaving the document
    unset on an error lets Strawberry parse it again itself (same options, same error)
    and answer with the error as a result, on every transport.
    """

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        try:
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        except GraphQLError:
            context.graphql_document = None
        yield
