"""chatql from an MCP client: remember a note, append to a chat, search and read it back.

Runs against a chatql server in dev mode (``make serve``), as the person the headers
name; in JWT mode send ``Authorization: Bearer <token>`` instead. Run it again: every
write is idempotent, so nothing is written twice.

    python clients/examples/mcp/client.py [http://127.0.0.1:8000]
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVER = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
HEADERS = {"X-User-Id": "ada", "X-Tenant-Id": "example"}


async def main() -> None:
    async with httpx2.AsyncClient(headers=HEADERS, timeout=30) as http:
        # The chat itself comes from GraphQL: chatFor makes it on first use.
        made = await http.post(f"{SERVER}/graphql", json={"query": """mutation {
            chatFor(assistantId: "helper", channel: "mcp-example") { id } }"""})
        chat_id = made.json()["data"]["chatFor"]["id"]

        async with Client(streamable_http_client(f"{SERVER}/mcp", http_client=http)) as chatql:
            tools = await chatql.list_tools()
            print("tools:", ", ".join(tool.name for tool in tools.tools))

            await chatql.call_tool("remember", {
                "content": "Ada prefers answers in French.", "write_id": "ada-language"})
            memory = await chatql.call_tool("search_memory", {"query": "french"})
            for hit in memory.structured_content["hits"]:
                print("memory:", hit["entry"]["content"])

            for append_id, role, text in (
                    ("greeting", "USER", "Bonjour! Which trains go to Lyon tonight?"),
                    ("answer", "ASSISTANT", "Two: the 19:04 and the 21:30 from Paris.")):
                await chatql.call_tool("append_message", {
                    "chat_id": chat_id, "role": role, "text": text, "append_id": append_id})

            found = await chatql.call_tool("search_messages", {"query": "lyon trains"})
            for hit in found.structured_content["hits"]:
                print("found:", hit["chat"]["id"], hit["message"]["text"])

            page = await chatql.call_tool("read_chat", {"chat_id": chat_id, "limit": 10})
            for message in page.structured_content["messages"]:
                print(f"{message['role']}: {message['text']}")

            missing = await chatql.call_tool("read_chat", {"chat_id": "no-such-chat"})
            print("error:", missing.content[0].text)

            markdown = await chatql.read_resource(f"chatql://chats/{chat_id}")
            print(markdown.contents[0].text.splitlines()[0])


asyncio.run(main())
