// A separate producer process for the browser tests: an agent runtime that talks to
// chatql over HTTP. It reads one JSON command per line on stdin and answers each with
// one JSON line on stdout: {"op":"create"|"start"|"push"|"end", ...}.
import { createInterface } from "node:readline";

const url = `${process.env.CHATQL_URL}/graphql`;
const AGENT = { "X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent" };

async function gql(query, variables) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...AGENT },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

const operations = {
  create: ({ chatId, title }) =>
    gql('mutation($id: ID!, $title: String) { createChat(input: {id: $id, title: $title, assistantId: "bot"}) { id } }', { id: chatId, title }),
  start: ({ chatId, input }) =>
    gql("mutation($input: StartStreamInput!) { startStream(input: $input) { id } }", {
      input: { chatId, requestId: `r-${Date.now()}`, assistantId: "bot", input },
    }),
  push: ({ streamId, chunks }) =>
    gql("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id, chunks: $chunks) { accepted lastSeq } }", { id: streamId, chunks }),
  end: ({ streamId, status }) =>
    gql("mutation($id: ID!, $status: StreamStatus!) { endStream(streamId: $id, status: $status) { messages { id type props status } } }", { id: streamId, status: status ?? "COMPLETED" }),
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  const result = await operations[command.op](command);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
