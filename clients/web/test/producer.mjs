// A separate producer process for the browser tests: an agent runtime that talks to
// chatql over HTTP. It reads one JSON command per line on stdin and answers each with
// one JSON line on stdout: {"op":"create"|"start"|"push"|"end"|"answer"|"settle"|"leaf", ...}.
// "answer" plays a scripted agent: it answers the chat's active leaf (the person's
// question) in the background — thinking, a tool call whose arguments grow, its result,
// then markdown — a piece every `pace` ms; "settle" waits for that answer to end.
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
  end: ({ streamId, status, error }) =>
    gql("mutation($id: ID!, $status: StreamStatus!, $error: String) { endStream(streamId: $id, status: $status, error: $error) { messages { id type props status } } }", { id: streamId, status: status ?? "COMPLETED", error: error ?? null }),
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const answers = new Map();

async function play(streamId, question, pace) {
  const push = async (...chunks) => {
    const result = await operations.push({ streamId, chunks });
    if (result.errors) throw Object.assign(new Error(result.errors[0].message), { code: result.errors[0].extensions?.code });
    await sleep(pace);
  };
  try {
    for (const word of `The person asks about ${question}. `.split(/(?<= )/)) {
      await push({ messageId: "think", type: "thinking", props: { content: word }, delta: true });
    }
    await push({ messageId: "call", type: "tool_call", props: { name: "lookup", arguments: "" } });
    const args = JSON.stringify({ query: question });
    for (let i = 0; i < args.length; i += 6) {
      await push({ messageId: "call", type: "tool_call", delta: true, deltaPath: "arguments", props: { arguments: args.slice(i, i + 6) } });
    }
    await push({ messageId: "result", type: "tool_result", role: "TOOL", props: { content: `{"words": ${question.split(/\s+/).length}}`, tool_call_id: "call", name: "lookup" } });
    const answer = `About **${question}**:\n\n| Measure | Value |\n| --- | --- |\n| Words | ${question.split(/\s+/).length} |\n\n\`\`\`python\nprint(${JSON.stringify(question)})\n\`\`\`\n\nSee [the docs](https://example.org/docs). <b>raw</b> Done.`;
    for (const piece of answer.split(/(?<= )/)) {
      await push({ messageId: "answer", type: "text", props: { content: piece }, delta: true });
    }
    const ended = await operations.end({ streamId });
    return { status: "COMPLETED", messages: ended.data?.endStream?.messages ?? [] };
  } catch (error) {
    return { status: error.code ?? "ERROR", message: error.message };
  }
}

operations.answer = async ({ chatId, pace = 30 }) => {
  const found = await gql("query($id: ID!) { chat(id: $id) { activeLeafId messages(last: 1) { edges { node { id role props } } } } }", { id: chatId });
  const leaf = found.data.chat.messages.edges[0]?.node;
  if (!leaf || leaf.role !== "USER" || leaf.id !== found.data.chat.activeLeafId) return { errors: [{ message: "no question awaits an answer" }] };
  const started = await gql("mutation($input: StartStreamInput!) { startStream(input: $input) { id } }", {
    input: { chatId, requestId: `answer-${leaf.id}-${Date.now()}`, assistantId: "bot", parentId: leaf.id },
  });
  if (started.errors) return started;
  const streamId = started.data.startStream.id;
  answers.set(chatId, play(streamId, leaf.props.content, pace));
  return { streamId, question: leaf.props.content };
};

operations.settle = async ({ chatId }) => answers.get(chatId);

// The chat's active leaf: its id and content (what a person's message stored).
operations.leaf = async ({ chatId }) => {
  const found = await gql("query($id: ID!) { chat(id: $id) { messages(last: 1) { edges { node { id props } } } } }", { id: chatId });
  const node = found.data?.chat?.messages.edges[0]?.node;
  return { id: node?.id ?? null, content: node?.props.content ?? null, errors: found.errors };
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  const result = await operations[command.op](command);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
