import { ChatqlClient, CreateChatDocument, MessagesDocument } from "@chatql/client";
import { toUIMessages } from "@chatql/client/ai-sdk";
import { createRoot } from "react-dom/client";

import { Chat } from "./Chat";

// ?chat=<id> names the chatql chat (made on first send); ?transport=ws uses chatql's
// WebSocket ChatTransport instead of the AI SDK's own transport over /ai/chat.
const params = new URLSearchParams(location.search);
if (!params.has("chat")) {
  params.set("chat", crypto.randomUUID());
  history.replaceState(null, "", `?${params}`);
}
const chatId = params.get("chat") as string;
const overWebSocket = params.get("transport") === "ws";
const headers = { "X-User-Id": params.get("user") ?? "alice" };
const client = new ChatqlClient({ url: new URL("/graphql", location.href).href, headers: () => headers });

// The chat so far (its active branch). /ai/chat creates a new chat on the first send;
// the WebSocket transport appends to an existing one, so that variant creates it here.
// A chat that is not there yet has no reply to resume (chatql answers 404 for it).
let exists = true;
const stored = await client.request(MessagesDocument, { chatId, last: 100 }).then(
  (data) => data.messages.edges.map((edge) => edge.node),
  async () => {
    exists = false;
    if (overWebSocket) await client.request(CreateChatDocument, { input: { id: chatId, assistantId: "demo" } });
    return [];
  },
);

createRoot(document.getElementById("root") as HTMLElement).render(
  <Chat chatId={chatId} client={client} headers={headers} initial={toUIMessages(stored)} overWebSocket={overWebSocket} resume={exists} />,
);
