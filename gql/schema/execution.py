"""A GraphQL execution context with a short path for plain scalar fields.

A page of 50 messages is ~750 leaf fields, and graphql-core spends most of a request
on them: for each one it builds a resolve-info tuple, calls Strawberry's default
resolver (``getattr`` behind three wrappers), then dispatches ``complete_value``.
For a field that has no resolver, no arguments and a scalar or enum type, all of that
amounts to ``coerce_output_value(getattr(source, python_name))``; this context does
just that, and builds an object whose selected fields are all such leaves in one
loop. Anything else — resolvers, arguments, lists, objects, nulls, coercion failures,
or any schema extension that hooks field resolution — takes graphql-core's ordinary
path, so results and errors are exactly what they would have been.
"""

from __future__ import annotations

import weakref
from typing import Any

from graphql import GraphQLEnumType, GraphQLNonNull, GraphQLScalarType
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from chatql.gql.document_shapes import plain_attribute

__all__ = ["LeafFastPathExecutionContext"]

_Plan = tuple[str, Any, bool] | None
# Per schema: (type name, field name) -> (python attribute, coercer, nullable), or None
# when the field must take the ordinary path. Filled once per field; weakly keyed so a
# discarded schema takes its plans with it.
_PLANS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], _Plan]] = (
    weakref.WeakKeyDictionary()
)


def _plan(schema: Any, parent_type: Any, name: str) -> _Plan:
    field_def = schema.get_field(parent_type, name)
    python_name = None if field_def is None else plain_attribute(field_def)
    if python_name is None:
        return None
    nullable = not isinstance(field_def.type, GraphQLNonNull)
    leaf = field_def.type if nullable else field_def.type.of_type
    if not isinstance(leaf, GraphQLScalarType | GraphQLEnumType):
        return None
    return python_name, leaf.coerce_output_value, nullable


class LeafFastPathExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, minus the per-field ceremony for plain leaves."""

    def _plan_for(self, parent_type: Any, name: str) -> _Plan:
        try:
            plans = _PLANS[self.schema]
        except KeyError:
            plans = _PLANS[self.schema] = {}
        key = (parent_type.name, name)
        try:
            return plans[key]
        except KeyError:
            plan = plans[key] = _plan(self.schema, parent_type, name)
            return plan

    def execute_fields(
        self,
        parent_type: Any,
        source_value: Any,
        path: Any,
        grouped_field_set: Any,
        position_context: Any = None,
    ) -> Any:
        # An object whose selected fields are all plain leaves (a message node, say) is
        # built in one loop. At the first field that is not, or that is null where it
        # may not be, or fails to coerce, the whole object goes the ordinary way.
        manager = self.middleware_manager
        if manager is None or not manager.middlewares:
            results: dict[str, Any] = {}
            try:
                for response_name, field_details_list in grouped_field_set.items():
                    node = field_details_list[0].node
                    plan = None if node.arguments else self._plan_for(
                        parent_type, node.name.value)
                    if plan is None:
                        break
                    value = getattr(source_value, plan[0])
                    if value is None:
                        if not plan[2]:
                            break
                        results[response_name] = None
                        continue
                    coerced = plan[1](value)
                    if coerced is None:
                        break
                    results[response_name] = coerced
                else:
                    return results
            except Exception:  # the ordinary path below reports it properly
                pass
        return super().execute_fields(
            parent_type, source_value, path, grouped_field_set, position_context
        )

    def execute_field(
        self,
        parent_type: Any,
        source: Any,
        field_details_list: Any,
        path: Any,
        position_context: Any = None,
    ) -> Any:
        node = field_details_list[0].node
        manager = self.middleware_manager
        if not node.arguments and (manager is None or not manager.middlewares):
            plan = self._plan_for(parent_type, node.name.value)
            if plan is not None:
                try:
                    value = getattr(source, plan[0])
                    if value is None:
                        if plan[2]:
                            return None
                    else:
                        coerced = plan[1](value)
                        if coerced is not None:
                            return coerced
                except Exception:  # the ordinary path below reports it properly
                    pass
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )
