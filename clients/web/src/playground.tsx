// The GraphQL playground: GraphiQL bundled from its npm release (no CDN), queries over
// HTTP, subscriptions over graphql-transport-ws, the identity in the headers editor.
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import "graphiql/style.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { pageConfig, webSocketUrl } from "./config";

const config = pageConfig();

const fetcher = createGraphiQLFetcher({
  url: "/graphql",
  // The headers editor's values also go into connection_init (identity over WebSocket).
  subscriptionUrl: webSocketUrl("/graphql"),
});

const DEV_HEADERS = { "X-User-Id": "dev", "X-Tenant-Id": "default", "X-Team-Id": "", "X-Roles": "" };
const headers =
  config.auth === "dev"
    ? { ...DEV_HEADERS, ...config.identity }
    : { Authorization: "Bearer <token>" };

const EXAMPLE = `# Queries and mutations run over HTTP, subscriptions over WebSocket.
query Chats {
  chats(first: 10) {
    groups { label chats { id title lastMessageAt } }
  }
}

subscription Live($chatId: ID!) {
  chatStream(chatId: $chatId) {
    streamId seq fromSeq snapshot type messageId props delta deltaPath
  }
}
`;

const root = document.getElementById("playground");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <GraphiQL
        fetcher={fetcher}
        defaultQuery={EXAMPLE}
        defaultHeaders={JSON.stringify(headers, null, 2)}
        defaultEditorToolsVisibility="headers"
        shouldPersistHeaders={false}
      />
    </StrictMode>,
  );
}
