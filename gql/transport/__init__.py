"""The ways in: WebSocket, Server-Sent Events, the AI SDK's ``/ai/chat``, MCP (``/mcp``
and ``chatql mcp``), exports and the browser pages, with the request-body limit they share.

Each transport turns its protocol into an operation and asks the planner (``gql.plans``)
or the executor for the answer; none holds a rule of its own about chats or messages.
"""
