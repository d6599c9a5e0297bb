// Latency of the web app in Chromium against a bare WebSocket page, in the same run and
// against the same server and the same scripted agent. Per round, on a fresh chat:
// - Enter → first token: the person presses Enter; the page appends the message; the
//   agent (this process, polling the chat every 2 ms) starts a stream and pushes its
//   first token; the time until that token is in the page's DOM (page clock).
// - last chunk → on screen: the agent pushes its last chunk (after 20 tokens 5 ms apart);
//   the time from just before that push to the chunk's text in the DOM (both clocks are
//   the machine's, read as timeOrigin + now()).
// Then, per page, long tasks while an answer streams: a chat of 200 messages (questions
// and markdown answers) open, the agent pushes BENCH_TOKENS tokens (default 1,000) one
// chunk each at 100 a second (a token every 10 ms on a schedule); a PerformanceObserver
// of "longtask" entries, started once the chat shows, records every task over 50 ms until
// the last token is in the DOM.
// Prints one JSON line: {"app": {...}, "bare": {...}, "stream": {"app": {...}, "bare":
// {...}}} with the per-round milliseconds and, per page, the long tasks' durations, the
// tokens and the seconds the stream took.
import { performance } from "node:perf_hooks";

import { ALICE, base, launch } from "../test/helpers.mjs";

const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
const tokens = Number(process.env.BENCH_TOKENS ?? 1000);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function gql(query, variables) {
  const response = await fetch(`${base}/graphql`, {
    method: "POST", headers: { "content-type": "application/json", ...ALICE }, body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

// The bare page: a textarea that appends on Enter, and one graphql-transport-ws
// subscription to chatStream whose text deltas are appended to a div — nothing else.
const BARE = `<!doctype html><html lang="en"><title>bare</title><body>
<textarea aria-label="Message"></textarea><div id="out"></div>
<script type="module">
const chatId = new URLSearchParams(location.search).get("chat");
const headers = ${JSON.stringify(ALICE)};
const out = document.getElementById("out");
const socket = new WebSocket(location.origin.replace("http", "ws") + "/graphql", "graphql-transport-ws");
socket.onopen = () => socket.send(JSON.stringify({ type: "connection_init", payload: headers }));
socket.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.type === "connection_ack") {
    socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: {
      query: "subscription($c: ID!) { chatStream(chatId: $c) { seq type messageId props delta } }", variables: { c: chatId } } }));
    window.__ready = true;
  } else if (message.type === "next") {
    const chunk = message.payload.data.chatStream;
    if (chunk.type === "text" && chunk.props && typeof chunk.props.content === "string") out.textContent += chunk.props.content;
  } else if (message.type === "ping") socket.send(JSON.stringify({ type: "pong" }));
};
document.querySelector("textarea").addEventListener("keydown", (event) => {
  if (event.key !== "Enter") return;
  event.preventDefault();
  fetch("/graphql", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({
    query: "mutation($c: ID!, $a: String!, $m: [MessageInput!]!) { appendMessages(chatId: $c, appendId: $a, messages: $m) { lastSequence } }",
    variables: { c: chatId, a: crypto.randomUUID(), m: [{ role: "USER", type: "user_input", props: { content: event.target.value } }] } }) });
});
</script></body></html>`;

/** Records, in the page, when Enter went down and when each watched text first appears. */
const WATCH = () => {
  window.__seen = {};
  window.__watch = [];
  const stamp = () => performance.timeOrigin + performance.now();
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) window.__enter = stamp();
  }, true);
  new MutationObserver(() => {
    const text = document.body.textContent;
    for (const marker of window.__watch) if (!(marker in window.__seen) && text.includes(marker)) window.__seen[marker] = stamp();
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
};

async function answer(chatId, round) {
  // The agent: wait for the person's message to be the chat's leaf, then answer.
  let leaf = null;
  for (;;) {
    const data = await gql("query($id: ID!) { chat(id: $id) { messages(last: 1) { edges { node { id role } } } } }", { id: chatId });
    leaf = data.chat.messages.edges[0]?.node;
    if (leaf?.role === "USER") break;
    await sleep(2);
  }
  const started = await gql("mutation($i: StartStreamInput!) { startStream(input: $i) { id } }",
    { i: { chatId, requestId: `bench-${round}`, parentId: leaf.id } });
  const streamId = started.startStream.id;
  const push = (content) => gql("mutation($s: ID!, $c: [ChunkInput!]!) { pushChunks(streamId: $s, chunks: $c) { lastSeq } }",
    { s: streamId, c: [{ messageId: "a", type: "text", props: { content }, delta: true }] });
  await push(`FIRST${round} `);
  for (let i = 0; i < 20; i += 1) {
    await sleep(5);
    await push(`token${i} `);
  }
  await sleep(20);
  const pushedAt = now();
  await push(`END${round}`);
  await gql("mutation($s: ID!) { endStream(streamId: $s, status: COMPLETED) { messages { id } } }", { s: streamId });
  return pushedAt;
}

async function measure(page, kind, round) {
  const { createChat } = await gql('mutation { createChat(input: {assistantId: "bench", title: "bench"}) { id } }');
  const chatId = createChat.id;
  if (kind === "app") {
    await page.goto(`${base}/?chat=${chatId}`);
  } else {
    // The bare page written into a document the server answered (same origin and
    // address space as the app, so the browser treats its socket alike).
    await page.goto(`${base}/healthz?chat=${chatId}`);
    await page.setContent(BARE);
  }
  await page.evaluate(WATCH);
  await page.evaluate(([first, last]) => window.__watch.push(first, last), [`FIRST${round}`, `END${round}`]);
  const box = page.getByRole("textbox", { name: "Message" });
  await box.waitFor();
  if (kind === "bare") await page.waitForFunction(() => window.__ready === true);
  else await page.waitForFunction(() => window.__sockets.some((socket) => socket.readyState === 1));
  await sleep(200); // the subscription is in place
  await box.fill(`question ${round}`);
  const agent = answer(chatId, round);
  if (process.env.BENCH_DEBUG) console.error(now().toFixed(0), "enter");
  await box.press("Enter");
  const pushedAt = await agent;
  await page.waitForFunction((marker) => marker in window.__seen, `END${round}`, { timeout: 10000 });
  const seen = await page.evaluate(() => ({ enter: window.__enter, seen: window.__seen }));
  return { first: seen.seen[`FIRST${round}`] - seen.enter, last: seen.seen[`END${round}`] - pushedAt };
}

/** A chat of 200 messages: questions and markdown answers (lists, a table, code). */
async function longChat() {
  const { createChat } = await gql('mutation { createChat(input: {assistantId: "bench", title: "long"}) { id } }');
  const messages = [];
  for (let n = 1; n <= 100; n += 1) {
    messages.push({ role: "USER", type: "user_input", props: { content: `Question ${n}: how do I page through a long chat?` } });
    let content = `Step **${n}**:\n\n1. Read \`messages(last: 50)\`.\n2. Keep the cursor.\n\n`
      + "| field | meaning |\n|---|---|\n| `cursor` | where a page ends |\n";
    if (n % 5 === 0) content += "\n```python\nfor page in pages(chat):\n    print(len(page))\n```\n";
    if (n === 100) content += "\nLAST-OF-HISTORY";
    messages.push({ role: "ASSISTANT", type: "text", assistantId: "bench", props: { content } });
  }
  await gql("mutation($c: ID!, $m: [MessageInput!]!) { appendMessages(chatId: $c, appendId: \"seed\", messages: $m) { lastSequence } }",
    { c: createChat.id, m: messages });
  return createChat.id;
}

/** Streams `tokens` tokens at 100 a second into the open chat; counts long tasks. */
async function streamLongTasks(page, kind) {
  const chatId = await longChat();
  if (kind === "app") {
    await page.goto(`${base}/?chat=${chatId}`);
    await page.getByText("LAST-OF-HISTORY").first().waitFor({ timeout: 30000 });
    await page.waitForFunction(() => window.__sockets.some((socket) => socket.readyState === 1));
  } else {
    await page.goto(`${base}/healthz?chat=${chatId}`);
    await page.setContent(BARE);
    await page.waitForFunction(() => window.__ready === true);
  }
  await sleep(500); // the subscription is in place, the page settled
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
    }).observe({ type: "longtask" });
    window.__seen = {};
    window.__watch = ["STREAM-END"];
    new MutationObserver(() => {
      if (!("STREAM-END" in window.__seen) && document.body.textContent.includes("STREAM-END")) {
        window.__seen["STREAM-END"] = performance.now();
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const data = await gql("query($id: ID!) { chat(id: $id) { messages(last: 1) { edges { node { id } } } } }", { id: chatId });
  const started = await gql("mutation($i: StartStreamInput!) { startStream(input: $i) { id } }",
    { i: { chatId, requestId: `stream-${kind}`, parentId: data.chat.messages.edges[0].node.id } });
  const streamId = started.startStream.id;
  const push = (content) => gql("mutation($s: ID!, $c: [ChunkInput!]!) { pushChunks(streamId: $s, chunks: $c) { lastSeq } }",
    { s: streamId, c: [{ messageId: "a", type: "text", props: { content }, delta: true }] });
  const start = now();
  for (let i = 0; i < tokens; i += 1) {
    const wait = start + i * 10 - now();
    if (wait > 0) await sleep(wait);
    // Words, with a new paragraph, a list item or inline code now and then.
    const token = i % 40 === 39 ? "\n\n" : i % 25 === 24 ? "\n- item " : i % 17 === 16 ? "`code` " : `word${i} `;
    await push(token);
  }
  await push("STREAM-END");
  const seconds = (now() - start) / 1000;
  await page.waitForFunction(() => "STREAM-END" in window.__seen, null, { timeout: 30000 });
  await gql("mutation($s: ID!) { endStream(streamId: $s, status: COMPLETED) { messages { id } } }", { s: streamId });
  await sleep(300); // the answer's last render
  const longTasks = await page.evaluate(() => window.__longTasks);
  return { longTasks, tokens, seconds };
}

const browser = await launch();
const results = { app: { first: [], last: [] }, bare: { first: [], last: [] }, stream: {} };
try {
  const ctx = await browser.newContext({ extraHTTPHeaders: ALICE });
  await ctx.addInitScript(() => {
    const Native = window.WebSocket;
    window.__sockets = [];
    window.WebSocket = class extends Native {
      constructor(...args) {
        super(...args);
        window.__sockets.push(this);
      }
    };
  });
  const page = await ctx.newPage();
  if (process.env.BENCH_DEBUG) page.on("console", (m) => console.error("page:", m.text()));
  if (process.env.BENCH_DEBUG) page.on("pageerror", (e) => console.error("pageerror:", e));
  if (process.env.BENCH_DEBUG) page.on("websocket", (ws) => {
    ws.on("framesent", (f) => console.error(now().toFixed(0), "sent", String(f.payload).slice(0, 120)));
    ws.on("framereceived", (f) => console.error(now().toFixed(0), "recv", String(f.payload).slice(0, 120)));
  });
  if (process.env.BENCH_DEBUG) page.on("request", (r) => console.error(now().toFixed(0), "http", r.postData()?.slice(0, 60)));
  // One warm-up round each (code caches, connections), then alternate kinds.
  await measure(page, "app", 0);
  await measure(page, "bare", 0);
  for (let round = 1; round <= rounds; round += 1) {
    for (const kind of round % 2 ? ["app", "bare"] : ["bare", "app"]) {
      const result = await measure(page, kind, round * 2 + (kind === "app" ? 0 : 1));
      results[kind].first.push(result.first);
      results[kind].last.push(result.last);
    }
  }
  for (const kind of ["bare", "app"]) results.stream[kind] = await streamLongTasks(page, kind);
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
