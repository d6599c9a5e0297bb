// The example pages, built (`npm run build`) and served by `vite preview` (which
// proxies /ai, /ag-ui and /graphql to a real `chatql serve`), in Chromium with the demo
// agent (`chatql-client demo --assistant demo`) answering, and a second one that asks
// for approval first (assistant "demo-approvals", CHATQL_DEMO_APPROVALS=1). Started by
// tests/clients/test_examples.py, which passes the pages' addresses: USE_CHAT_URL,
// ASSISTANT_UI_URL and AG_UI_URL. The browser helpers are the web app's (clients/web/test).
import assert from "node:assert/strict";
import { test } from "node:test";

import { context, launch, occurrences, snap } from "../../web/test/helpers.mjs";

const USE_CHAT = process.env.USE_CHAT_URL;
const ASSISTANT_UI = process.env.ASSISTANT_UI_URL;
const AG_UI = process.env.AG_UI_URL;
const run = Date.now().toString(36);

/** A query through a page's own proxy, as the page's person (alice, dev mode). */
async function gql(origin, query, variables = {}) {
  const response = await fetch(`${origin}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", "X-User-Id": "alice" },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

const BRANCH = "messages(chatId: $chatId, last: 100) { edges { node { id role type status parentId props } } }";
const TREE = "messages(chatId: $chatId, first: 200, allBranches: true) { edges { node { id role type status parentId props } } }";
const branchOf = async (origin, chatId) => (await gql(origin, `query($chatId: ID!) { ${BRANCH} }`, { chatId })).messages.edges.map((e) => e.node);
const treeOf = async (origin, chatId) => (await gql(origin, `query($chatId: ID!) { ${TREE} }`, { chatId })).messages.edges.map((e) => e.node);

/** The stored reply to the person's message `content`: the messages after it on the active branch. */
async function replyTo(origin, chatId, content) {
  const branch = await branchOf(origin, chatId);
  const at = branch.findIndex((m) => m.role === "USER" && m.props?.content === content);
  assert.notEqual(at, -1, `question ${content} stored`);
  const next = branch.findIndex((m, i) => i > at && m.role === "USER");
  return branch.slice(at + 1, next === -1 ? undefined : next);
}

async function until(check, what, ms = 20000, describe = async () => "") {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} ${await describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A page of one example: no identity headers of the browser's own (the page sends X-User-Id), every other host blocked. */
async function openPage(browser, origin, { path = "/", socketDelayMs = 0 } = {}) {
  const { ctx, blocked, failed } = await context(browser, { headers: {}, origin });
  const page = await ctx.newPage();
  if (socketDelayMs > 0) await page.routeWebSocket(/\/graphql$/, slowSockets(socketDelayMs));
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`${origin}${path}`);
  const clean = (name) => {
    assert.deepEqual(errors, [], `page errors on ${name}`);
    assert.deepEqual(failed, [], `error answers on ${name}`);
    assert.deepEqual(blocked, [], `requests to other hosts on ${name}`);
  };
  return { ctx, page, clean };
}

/**
 * A WebSocket route under which each of the page's sockets reaches chatql only after
 * `ms` (a slow network): a reply must still be followed from its start, so the page may
 * ask the agent only once it is listening.
 */
function slowSockets(ms) {
  const pass = (code, reason) => (code === 1000 || (code >= 3000 && code < 5000) ? { code, reason } : {});
  return (page) => {
    let server = null;
    let closed = false;
    const early = [];
    page.onMessage((message) => (server ? server.send(message) : early.push(message)));
    page.onClose((code, reason) => {
      closed = true;
      server?.close(pass(code, reason));
    });
    setTimeout(() => {
      if (closed) return;
      server = page.connectToServer();
      server.onMessage((message) => page.send(message));
      server.onClose((code, reason) => page.close(pass(code, reason)));
      for (const message of early.splice(0)) server.send(message);
    }, ms);
  };
}

let browser;
test.before(async () => {
  assert.ok(USE_CHAT && ASSISTANT_UI && AG_UI, "USE_CHAT_URL, ASSISTANT_UI_URL and AG_UI_URL name the served pages");
  browser = await launch();
});
test.after(async () => {
  await browser?.close();
});

let sharedChat = null; // the use-chat page's chat, opened again in assistant-ui

test("use-chat: a message's reply streams in; Stop ends it, stored as interrupted; a reload mid-reply resumes it to the end", async () => {
  const { ctx, page, clean } = await openPage(browser, USE_CHAT);
  try {
    await page.waitForFunction(() => new URLSearchParams(location.search).has("chat"));
    const chatId = new URL(page.url()).searchParams.get("chat");
    const box = page.getByRole("textbox", { name: "Message" });
    const send = page.getByRole("button", { name: "Send", exact: true });
    const stop = page.getByRole("button", { name: "Stop", exact: true });
    const replies = page.getByRole("article", { name: "assistant" });
    const ask = async (words) => {
      await box.fill(words);
      await send.click();
      await page.getByRole("article", { name: "user" }).filter({ hasText: words }).waitFor();
    };

    // Sent, and the reply streams: Stop shows while the thinking and then the text grow.
    const first = `Hello from use-chat ${run}`;
    await ask(first);
    await stop.waitFor();
    await replies.nth(0).getByText("The person asks").waitFor();
    await replies.nth(0).getByText("Done.").waitFor({ timeout: 30000 });
    await send.waitFor();
    await snap(page, "use-chat-answered");
    assert.ok((await replyTo(USE_CHAT, chatId, first)).every((m) => m.status === "COMPLETED"));

    // Stop mid-reply: the page stops, and so does the agent; the reply is stored interrupted.
    const halted = `Please stop ${run}`;
    await ask(halted);
    await replies.nth(1).getByText("The person asks").waitFor();
    await stop.click();
    await send.waitFor();
    const stopped = await until(async () => {
      const reply = await replyTo(USE_CHAT, chatId, halted);
      return reply.some((m) => m.status === "INTERRUPTED") && reply;
    }, "the interrupted reply stored", 20000, async () => JSON.stringify(await branchOf(USE_CHAT, chatId)));
    assert.ok(stopped.every((m) => !JSON.stringify(m.props).includes("Done.")), "the agent stopped");
    await snap(page, "use-chat-stopped");
    clean("use-chat stopped");

    // A reload mid-reply: the chat so far comes back and the reply goes on streaming to its end.
    const resumed = `Resume please ${run}`;
    await ask(resumed);
    await replies.nth(2).locator("pre").filter({ hasText: "lookup(" }).waitFor();
    await page.reload();
    await page.getByRole("article", { name: "user" }).filter({ hasText: resumed }).waitFor();
    await stop.waitFor(); // still being written: resumed, not merely loaded
    await replies.nth(2).getByText("Done.").waitFor({ timeout: 30000 });
    await send.waitFor();
    const text = await page.locator("main").innerText();
    assert.equal(occurrences(text, "Done."), 2, "the first and the resumed reply, each once");
    assert.equal(occurrences(text, `Here is what I found about **${resumed}**`), 1);
    const reply = await until(async () => {
      const stored = await replyTo(USE_CHAT, chatId, resumed);
      return stored.some((m) => JSON.stringify(m.props).includes("Done.")) && stored;
    }, "the resumed reply stored");
    assert.ok(reply.every((m) => m.status === "COMPLETED"), JSON.stringify(reply));
    await snap(page, "use-chat-resumed");
    clean("use-chat resumed");
    sharedChat = { chatId, first };
  } finally {
    await ctx.close();
  }
});

test("assistant-ui: lists chats, opens one; Edit makes a ‹ 2 / 2 › branch the agent answers, Regenerate a second answer", async () => {
  assert.ok(sharedChat, "the use-chat test made a chat");
  const { chatId, first } = sharedChat;
  // Its sockets are slow to connect: the runs of Edit and Regenerate follow the chat
  // before the agent is asked, or the reply would start before the page listens.
  const { ctx, page, clean } = await openPage(browser, ASSISTANT_UI, { socketDelayMs: 1500 });
  try {
    // The list: alice's chats with the demo assistant, among them the use-chat page's.
    const title = (await gql(ASSISTANT_UI, "query($id: ID!) { chat(id: $id) { title } }", { id: chatId })).chat.title ?? "Untitled";
    const chats = page.locator('[aria-label="Chats"]');
    await chats.getByRole("button", { name: "New chat" }).waitFor();
    const listed = (await gql(ASSISTANT_UI, '{ chats(first: 50, filter: {assistantId: "demo"}) { edges { node { id } } } }')).chats.edges.length;
    assert.ok(listed >= 1);
    await until(async () => (await chats.getByRole("button", { name: "Archive" }).count()) === listed, `${listed} chats listed`);
    // Newest first: the use-chat page's chat is the one it wrote to last.
    await chats.getByRole("button", { name: title, exact: true }).first().click();
    const questions = page.locator('[aria-label="You"]');
    const answers = page.locator('[aria-label="Agent"]');
    await questions.filter({ hasText: first }).waitFor();
    await answers.first().getByText("Done.").waitFor();
    const send = page.getByRole("button", { name: "Send", exact: true });
    await send.waitFor();
    await snap(page, "assistant-ui-opened");

    // Edit the first question: a new branch, answered by the agent.
    const edited = `Hello again, edited ${run}`;
    await questions.filter({ hasText: first }).getByRole("button", { name: "Edit" }).click();
    const editor = page.getByRole("textbox", { name: "Edited message" });
    await editor.fill(edited);
    await page.getByRole("button", { name: "Save" }).click();
    const question = questions.filter({ hasText: edited });
    await question.waitFor();
    await question.getByText(/2\s*\/\s*2/).waitFor();
    await answers.last().getByText(`Here is what I found about **${edited}**`).waitFor({ timeout: 30000 });
    await answers.last().getByText("Done.").waitFor({ timeout: 30000 });
    await send.waitFor();
    await snap(page, "assistant-ui-edited");
    // Stored as chatql's edit: a sibling of the original question, both at the root.
    const tree = await treeOf(ASSISTANT_UI, chatId);
    const roots = tree.filter((m) => m.role === "USER" && m.parentId === null);
    assert.deepEqual(roots.map((m) => m.props.content), [first, edited]);
    assert.deepEqual(new Set(roots.map((m) => m.type)).size, 1, "the edit keeps the original's type");
    const copy = roots[1];

    // Regenerate its answer: a second answer, with its own switcher.
    await answers.last().getByRole("button", { name: "Regenerate" }).click();
    await answers.last().getByText(/2\s*\/\s*2/).waitFor();
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 30000 });
    await answers.last().getByText("Done.").waitFor();
    await snap(page, "assistant-ui-regenerated");
    const answered = await until(async () => {
      const below = (await treeOf(ASSISTANT_UI, chatId)).filter((m) => m.parentId === copy.id);
      return below.length === 2 && below;
    }, "two answers below the edited question");
    assert.ok(answered.every((m) => m.role !== "USER"));

    // Back to the first version of the question: the original conversation.
    await question.getByRole("button", { name: "Previous branch" }).click();
    const original = questions.filter({ hasText: first });
    await original.getByText(/1\s*\/\s*2/).waitFor();
    assert.equal(await questions.filter({ hasText: edited }).count(), 0);
    await snap(page, "assistant-ui-version-1");
    clean("assistant-ui");
  } finally {
    await ctx.close();
  }
});

/** The AG-UI page's thread (its chat id), the person's question sent, the reply's article. */
async function askAgUi(page, question) {
  await page.waitForFunction(() => new URLSearchParams(location.search).has("thread"));
  const chatId = new URL(page.url()).searchParams.get("thread");
  await page.getByRole("textbox", { name: "Message" }).fill(question);
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.getByRole("article", { name: "user" }).filter({ hasText: question }).waitFor();
  return { chatId, reply: page.getByRole("article", { name: "assistant" }).last() };
}

/** The reply's text on the page (its paragraphs, exactly) equals the text chatql stored for it. */
async function sameTextAsStored(reply, chatId, question) {
  const stored = await until(async () => {
    const messages = await replyTo(AG_UI, chatId, question);
    return messages.some((m) => m.type === "text" && JSON.stringify(m.props).includes("Done.")) && messages;
  }, "the reply stored");
  assert.ok(stored.every((m) => m.status === "COMPLETED"), JSON.stringify(stored));
  const text = stored.filter((m) => m.type === "text").map((m) => m.props.content).join("");
  assert.equal((await reply.getByRole("paragraph").allTextContents()).join(""), text);
  assert.ok(text.includes(`Here is what I found about **${question}**`), text);
}

test("ag-ui: HttpAgent over /ag-ui streams the reply (equal to the stored one) and shows it again after a reload; an approval ends the run, Approve resumes it", async () => {
  // Two pages at once, one per demo agent, so the approval adds no time of its own.
  const answered = async () => {
    const { ctx, page, clean } = await openPage(browser, AG_UI);
    try {
      const question = `Hello over AG-UI ${run}`;
      const { chatId, reply } = await askAgUi(page, question);
      // Streaming: the text is there while the run still goes on.
      await reply.getByRole("paragraph").filter({ hasText: "Here is what I found" }).waitFor({ timeout: 30000 });
      assert.equal(await reply.getByText("Done.").count(), 0, "the text shows before the reply ends");
      assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isDisabled());
      await reply.getByText("Done.").waitFor({ timeout: 30000 });
      await page.getByRole("status").filter({ hasText: "Ready." }).waitFor();
      await reply.getByRole("row", { name: /lookup/ }).filter({ hasText: '"words"' }).waitFor();
      await sameTextAsStored(reply, chatId, question);
      await snap(page, "ag-ui-answered");

      // A reload posts the stored message again: MESSAGES_SNAPSHOT, nothing appended.
      const before = (await branchOf(AG_UI, chatId)).length;
      await page.reload();
      await reply.getByText("Done.").waitFor();
      await page.getByRole("status").filter({ hasText: "Ready." }).waitFor();
      assert.equal(await page.getByRole("article", { name: "user" }).count(), 1);
      await reply.getByRole("row", { name: /lookup/ }).filter({ hasText: '"words"' }).waitFor();
      await sameTextAsStored(reply, chatId, question);
      assert.equal((await branchOf(AG_UI, chatId)).length, before, "the reload wrote nothing");
      await snap(page, "ag-ui-reloaded");
      clean("ag-ui");
    } finally {
      await ctx.close();
    }
  };
  const approved = async () => {
    const { ctx, page, clean } = await openPage(browser, AG_UI, { path: "/?assistant=demo-approvals" });
    try {
      const question = `Look this up over AG-UI ${run}`;
      const { chatId, reply } = await askAgUi(page, question);
      // The run ends with the interrupt outcome: the call waits for the person.
      const asks = page.getByRole("region", { name: "The agent asks" });
      await asks.getByText(`lookup({"query": "${question}", "limit": 3})`).waitFor({ timeout: 30000 });
      await page.getByRole("status").filter({ hasText: "Waiting for your decision." }).waitFor();
      const interrupts = `query($id: ID!) { chat(id: $id) { interrupts { kind state decision { approved } } } }`;
      const pending = (await gql(AG_UI, interrupts, { id: chatId })).chat.interrupts;
      assert.deepEqual(pending.map((i) => [i.kind, i.state]), [["TOOL_APPROVAL", "PENDING"]]);
      assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isDisabled());
      await snap(page, "ag-ui-approval");

      // Approve: the next run carries `resume`, and the answer streams in it.
      await asks.getByRole("button", { name: "Approve" }).click();
      await reply.getByText("Done.").waitFor({ timeout: 30000 });
      await asks.waitFor({ state: "hidden" });
      await page.getByRole("status").filter({ hasText: "Ready." }).waitFor();
      await reply.getByRole("row", { name: /lookup/ }).filter({ hasText: '"words"' }).waitFor();
      await sameTextAsStored(reply, chatId, question);
      const decided = (await gql(AG_UI, interrupts, { id: chatId })).chat.interrupts;
      assert.deepEqual(decided.map((i) => [i.state, i.decision?.approved]), [["RESOLVED", true]]);
      await snap(page, "ag-ui-approved");
      clean("ag-ui approval");
    } finally {
      await ctx.close();
    }
  };
  await Promise.all([answered(), approved()]);
});
