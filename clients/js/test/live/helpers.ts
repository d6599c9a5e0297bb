// A producer over real HTTP for the live tests (the agent role may stream).
export const base = process.env.CHATQL_LIVE_URL ?? "";
export const AGENT = { "X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent" };

export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AGENT },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data as T;
}

/** An id no other test run uses. */
export const unique = (name: string) => `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

/** A 1x1 PNG. */
export const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

/** A new chat of ``assistantId``, created by the agent role; its id. */
export async function createChat(assistantId = "bot"): Promise<string> {
  const id = unique("chat");
  await gql("mutation($id: ID!, $a: String!) { createChat(input: {id: $id, assistantId: $a}) { id } }", { id, a: assistantId });
  return id;
}

export async function startStream(chatId: string): Promise<string> {
  await gql('mutation($id: ID!) { createChat(input: {id: $id, assistantId: "bot"}) { id } }', { id: chatId });
  const data = await gql<{ startStream: { id: string } }>(
    "mutation($input: StartStreamInput!) { startStream(input: $input) { id } }",
    { input: { chatId, requestId: "r1", assistantId: "bot" } },
  );
  return data.startStream.id;
}

export async function push(streamId: string, chunks: Record<string, unknown>[]): Promise<void> {
  await gql("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id, chunks: $chunks) { accepted } }",
    { id: streamId, chunks });
}

export interface Persisted { id: string; type: string; props: unknown }

export async function endStream(streamId: string): Promise<Persisted[]> {
  const data = await gql<{ endStream: { messages: Persisted[] } }>(
    "mutation($id: ID!) { endStream(streamId: $id, status: COMPLETED) { messages { id type props } } }",
    { id: streamId },
  );
  return data.endStream.messages.filter((m) => m.type !== "user_input");
}

export const text = (messageId: string, content: string, extra: Record<string, unknown> = {}) =>
  ({ messageId, type: "text", props: { content }, delta: true, ...extra });

export async function until(check: () => boolean, what: string, ms = 10000, poll?: () => Promise<void>): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await (poll ? poll() : Promise.resolve());
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
