"""The GraphQL schema: types and resolvers, one module per concept.

``types`` and ``inputs`` hold the public contract's object, input and enum types; each
concept (``chats``, ``messages``, ``chat_lists``, ``chat_events``, ``streams``,
``memory``, ``usage``, ``search``, ``archive``, ``imports``, ``lifecycle``) holds its
resolvers; ``root`` assembles them into the schema an app serves, and ``execution`` is
the executor's short path for plain fields. Resolvers only translate: the rules live in
``chatql.store``. Nothing here knows about HTTP, WebSockets or the fast plans.
"""
