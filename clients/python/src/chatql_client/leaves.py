# Generated from schema.graphql by clients/python/generate_types.py: do not edit by
# hand, run `make kit-types`.
"""Selections of the schema's plain fields that the kit's documents share."""

#: Every scalar and enum field of ``Message``.
MESSAGE_FIELDS = (
    "id chatId requestId role type props blockId threadId assistantId sequence status metadata "
    "createdAt updatedAt tokens tokensEstimated parentId"
)
