"""The fast plans: documents sent so often that they are answered without the executor.

``planner`` is the one registry and the one door the transports ask; ``plan`` is their
one interface, ``shapes`` fills their results from the schema and ``mutation`` is what
the mutation plans are made of; each other module is a plan for one root field or a
few (``compiled_reads`` for message pages, the chat list and a chat; ``append``,
``push``, ``chat_events``, ``chat_stream`` and ``shared_chat``). A plan is built from
the schema when a document is first seen, and declines whatever it was not built for,
which the executor then answers. Plans sit above the schema and below the transports.
"""
