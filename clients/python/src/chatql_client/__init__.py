"""chatql-client: stream agents into chatql.

    from chatql_client import ChatqlClient, StreamStopped

    client = ChatqlClient("http://127.0.0.1:8000/graphql", token="<JWT>")
    async with client.stream(chat_id) as s:
        await s.text("Hello")

The kit speaks to the service over HTTP and a WebSocket only; it never imports the server.
"""

from __future__ import annotations

from chatql_client.agent_loop import AgentLoop, Handler
from chatql_client.client import ChatqlClient
from chatql_client.errors import (
    ChatqlError,
    ChatqlTransportError,
    NoAnswer,
    StreamEndedError,
    StreamStopped,
)
from chatql_client.files import UploadedFile, file_part
from chatql_client.sync import SyncChatqlClient
from chatql_client.writer import StreamWriter

__all__ = ["AgentLoop", "ChatqlClient", "ChatqlError", "ChatqlTransportError", "Handler",
           "NoAnswer", "StreamEndedError", "StreamStopped", "StreamWriter",
           "SyncChatqlClient", "UploadedFile", "file_part"]
