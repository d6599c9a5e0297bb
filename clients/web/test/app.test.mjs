// The web app and the playground in Debian's Chromium against a real `chatql serve`.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { ALICE, base, closeBrowser, context, occurrences, producer, seriousViolations, sharedBrowser, snap, text } from "./helpers.mjs";
// The chat-client flows run in this same process, with the same browser.
import "./chat-client.test.mjs";

// Names unique to this run, so runs against the same server never meet.
const run = Date.now().toString(36);
const id = (name) => `${name}-${run}`;

let browser;
before(async () => {
  browser = await sharedBrowser();
});
after(async () => {
  await closeBrowser();
});

/** Unfolds every folded part (thinking, tool calls and results, folded once stored), so its text is read too. */
const expandThinking = async (log) => {
  // Once every answer shown is the stored copy (a stored answer carries its time).
  await log.page().waitForFunction(() => [...document.querySelectorAll('[role="log"] section[aria-label^="Answer from"]')].every((a) => a.querySelector("time")));
  await log.page().evaluate(() => document.querySelectorAll('[role="log"] details').forEach((details) => { details.open = true; }));
};

const expectText = async (locator, value, timeout = 10000) => {
  await locator.getByText(value, { exact: false }).first().waitFor({ timeout });
};

async function startChat(agent, chatId, title) {
  await agent.send({ op: "create", chatId, title });
  const started = await agent.send({ op: "start", chatId, input: { role: "USER", type: "user_input", props: { content: `Question for ${title}` } } });
  return started.data.startStream.id;
}

test("the app shows each part of a live stream growing, then the persisted result", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    const streamId = await startChat(agent, id("weather"), `Weather in Oslo ${run}`);
    await page.goto(`${base}/?chat=${id("weather")}`);
    await page.getByRole("navigation", { name: "Chats" }).getByRole("button", { name: `Weather in Oslo ${run}` }).waitFor();
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    const log = page.getByRole("log");
    // The question is shown while the stream runs (nothing is stored before it ends).
    await expectText(log, `Question for Weather in Oslo ${run}`);
    const push = (...chunks) => agent.send({ op: "push", streamId, chunks });
    await push(text("think", "Let me ", { type: "thinking", blockId: "B1", threadId: "T1" }));
    await expectText(log, "Let me");
    await push(text("think", "check the weather.", { type: "thinking", blockId: "B1", threadId: "T1" }));
    await expectText(log, "Let me check the weather.");
    await push({ messageId: "call", type: "tool_call", blockId: "B1", threadId: "T1", props: { name: "weather", arguments: "" } });
    await page.getByText("Tool call:").first().waitFor();
    await push({ messageId: "call", type: "tool_call", delta: true, deltaPath: "arguments", props: { arguments: '{"city"' } });
    const args = log.getByLabel("Arguments");
    await expectText(args, '{"city"');
    await push({ messageId: "call", type: "tool_call", delta: true, deltaPath: "arguments", props: { arguments: ': "Oslo"}' } });
    await expectText(args, '{"city": "Oslo"}');
    await push(text("t1", "Sunny ", { blockId: "B2", threadId: "T1" }), text("t2", "Also: ", { blockId: "B3", threadId: "T2" }));
    await expectText(log, "Sunny");
    await expectText(log, "Also:");
    await push(text("t1", "in Oslo."), text("t2", "no rain."));
    await expectText(log, "Sunny in Oslo.");
    await expectText(log, "Also: no rain.");
    assert.equal(await log.getByRole("region", { name: "Block B1" }).getByText("Let me check the weather.").count(), 1);
    await log.getByText("thread T2").first().waitFor();
    const ended = await agent.send({ op: "end", streamId });
    assert.equal(ended.data.endStream.messages.length, 5);
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached" });
    // After a reload everything comes from the database, once.
    await page.reload();
    await expectText(log, "Sunny in Oslo.");
    await expandThinking(log);
    const shown = await log.innerText();
    for (const part of ["Question for Weather in Oslo", "Let me check the weather.", '{"city": "Oslo"}', "Sunny in Oslo.", "Also: no rain."]) {
      assert.equal(occurrences(shown, part), 1, `${part} in ${shown}`);
    }
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/app.png` });
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("an answer with math and code: KaTeX renders the formula, the code is highlighted with a copy button", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    const streamId = await startChat(agent, id("math"), `Math ${run}`);
    await agent.send({ op: "push", streamId, chunks: [text("m", "Euler: $e^{i\\pi} + 1 = 0$\n\n```js\nconst answer = 42;\n```\n")] });
    await agent.send({ op: "end", streamId });
    await page.goto(`${base}/?chat=${id("math")}`);
    const log = page.getByRole("log");
    await log.getByRole("math").first().waitFor();
    const code = log.locator("pre code");
    await code.getByText("42").waitFor();
    assert.ok(await code.locator("span").count() > 0, "the code is highlighted");
    await log.getByRole("button", { name: "Copy code" }).waitFor();
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/math.png` });
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("stop mid-stream keeps the interrupted text; after a reload it comes from the database", async () => {
  const agent = producer();
  const { ctx } = await context(browser);
  const page = await ctx.newPage();
  try {
    const streamId = await startChat(agent, id("stopme"), "Long answer");
    await page.goto(`${base}/?chat=${id("stopme")}`);
    const log = page.getByRole("log");
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    await agent.send({ op: "push", streamId, chunks: [text("a", "The first half of a long ")] });
    await expectText(log, "The first half of a long");
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await expectText(log, "interrupted");
    await expectText(log, "The first half of a long");
    const refused = await agent.send({ op: "push", streamId, chunks: [text("a", "answer.")] });
    assert.equal(refused.errors[0].extensions.code, "STREAM_CLOSED");
    await page.reload();
    await expectText(log, "The first half of a long");
    await expectText(log, "interrupted");
    const shown = await log.innerText();
    assert.equal(occurrences(shown, "The first half of a long"), 1);
    assert.equal(occurrences(shown, "answer."), 0);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("a reply that fails before its first word shows why, live and after a reload", async () => {
  const agent = producer();
  const { ctx, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    const streamId = await startChat(agent, id("fails"), "Failing answer");
    await page.goto(`${base}/?chat=${id("fails")}`);
    const log = page.getByRole("log");
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    const ended = await agent.send({ op: "end", streamId, status: "FAILED", error: "The model is down." });
    assert.deepEqual(ended.data.endStream.messages.map((m) => [m.type, m.status]),
      [["user_input", "FAILED"], ["error", "FAILED"]]);
    await expectText(log, "The model is down.");
    await expectText(log, "failed");
    await page.reload();
    await expectText(log, "The model is down.");
    assert.equal(occurrences(await log.innerText(), "The model is down."), 1);
    // The note answers the question: Regenerate is offered on it.
    await page.getByRole("button", { name: "Regenerate", exact: true }).waitFor();
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("a page opened mid-stream and a page whose socket is cut end with exactly the persisted messages", async () => {
  const agent = producer();
  const first = await context(browser);
  const second = await context(browser);
  const early = await first.ctx.newPage();
  try {
    const streamId = await startChat(agent, id("shared"), "Shared stream");
    await early.goto(`${base}/?chat=${id("shared")}`);
    await early.getByRole("button", { name: "Stop", exact: true }).waitFor();
    const push = (...chunks) => agent.send({ op: "push", streamId, chunks });
    await push(text("a", "alpha "), text("b", "beta ", { type: "thinking" }));
    await expectText(early.getByRole("log"), "alpha");
    const late = await second.ctx.newPage();
    await late.goto(`${base}/?chat=${id("shared")}`);
    await expectText(late.getByRole("log"), "alpha");
    await push(text("a", "gamma "));
    await expectText(early.getByRole("log"), "alpha gamma");
    // Cut the early page's socket and take it offline while the stream goes on.
    await first.ctx.setOffline(true);
    await early.evaluate(() => window.__sockets.forEach((socket) => socket.close()));
    await push(text("a", "delta "), text("b", "epsilon ", { type: "thinking" }));
    await push(text("a", "zeta"));
    await first.ctx.setOffline(false);
    const ended = await agent.send({ op: "end", streamId });
    const persisted = ended.data.endStream.messages;
    for (const page of [early, late]) {
      const log = page.getByRole("log");
      await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 20000 });
      // The stored messages (the question among them) replace the live view.
      await expectText(log, "Question for Shared stream");
      await expectText(log, "alpha gamma delta zeta");
      await expandThinking(log);
      const shown = await log.innerText();
      for (const message of persisted) {
        assert.equal(occurrences(shown, message.props.content), 1, `${message.props.content} in ${shown}`);
      }
      assert.equal(occurrences(shown, "alpha"), 1);
      assert.equal(occurrences(shown, "epsilon"), 1);
    }
  } finally {
    agent.close();
    await first.ctx.close();
    await second.ctx.close();
  }
});

test("the chat list updates itself: a new chat appears, shows typing while streamed, without a reload", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    await page.goto(`${base}/`);
    const nav = page.getByRole("navigation", { name: "Chats" });
    await nav.waitFor();
    await page.waitForFunction(() => window.__sockets.some((socket) => socket.readyState === 1));
    await agent.send({ op: "create", chatId: id("live-list"), title: `Live list ${run}` });
    await nav.getByRole("button", { name: `Live list ${run}` }).waitFor();
    const started = await agent.send({ op: "start", chatId: id("live-list") });
    await nav.getByRole("button", { name: `Live list ${run} · typing…` }).waitFor();
    await agent.send({ op: "end", streamId: started.data.startStream.id });
    await nav.getByRole("button", { name: `Live list ${run} · typing…` }).waitFor({ state: "detached" });
    await nav.getByRole("button", { name: `Live list ${run}`, exact: true }).waitFor();
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("an answer whose first words follow its start at once is drawn once, with them; a start without words still shows Stop", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    await agent.send({ op: "create", chatId: id("quiet-start"), title: `Quiet start ${run}` });
    await page.goto(`${base}/?chat=${id("quiet-start")}`);
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.waitForFunction(() => window.__sockets.some((socket) => socket.readyState === 1));
    // Every change to the page: whether the Stop button was there, and the answer's words.
    await page.evaluate(() => {
      window.__drawn = [];
      const stop = () => [...document.querySelectorAll("button")].some((button) => button.getAttribute("aria-label") === "Stop");
      new MutationObserver(() => {
        window.__drawn.push({ stop: stop(), words: document.body.textContent.includes("First words") });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the chatStream subscription is in place
    const started = await agent.send({ op: "start", chatId: id("quiet-start") });
    const streamId = started.data.startStream.id;
    await agent.send({ op: "push", streamId, chunks: [text("a", "First words of the answer.")] });
    await expectText(page.getByRole("log"), "First words of the answer.");
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    const drawn = await page.evaluate(() => window.__drawn);
    // Not an empty answer (Stop, the actions busy) drawn first, the words a frame later:
    // the words come first, Stop in a render of its own right after them.
    assert.equal(drawn.find((change) => change.stop)?.words, true, JSON.stringify(drawn));
    assert.equal(drawn.find((change) => change.words)?.stop, false, JSON.stringify(drawn));
    await agent.send({ op: "end", streamId });
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached" });
    // A stream that says nothing and ends at once, then one that says nothing yet: Stop is
    // offered for that one all the same, a moment later.
    const brief = await agent.send({ op: "start", chatId: id("quiet-start") });
    await agent.send({ op: "end", streamId: brief.data.startStream.id });
    const silent = await agent.send({ op: "start", chatId: id("quiet-start") });
    const since = Date.now();
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ timeout: 5000 });
    assert.ok(Date.now() - since < 2000, `Stop shown ${Date.now() - since} ms after the start`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await page.getByRole("button", { name: "Stop", exact: true }).count(), 1); // the silent one's
    await agent.send({ op: "end", streamId: silent.data.startStream.id });
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached" });
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("Enter shows the question and empties the composer at once, before the append's reply; a refused send gives the text back", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    await agent.send({ op: "create", chatId: id("at-once"), title: `At once ${run}` });
    // The appends are held until the test lets them go (the second is refused).
    const held = [];
    await page.route("**/graphql", async (route) => {
      if (!(route.request().postData() ?? "").includes("AppendMessages")) return route.fallback();
      await new Promise((resolve) => held.push(resolve));
      return held.length === 1 ? route.fallback() : route.abort("connectionrefused");
    });
    await page.goto(`${base}/?chat=${id("at-once")}`);
    const box = page.getByRole("textbox", { name: "Message" });
    const log = page.getByRole("log");
    await box.fill(`Sent at once ${run}`);
    await box.press("Enter");
    await expectText(log, `Sent at once ${run}`);
    assert.equal(await box.inputValue(), "");
    assert.equal(held.length, 1); // its reply has not come yet
    const stored = page.waitForResponse((response) => (response.request().postData() ?? "").includes("AppendMessages"));
    held[0]();
    assert.equal((await (await stored).json()).errors, undefined);
    // Stored under the id the page showed it with.
    const leaf = await agent.send({ op: "leaf", chatId: id("at-once") });
    assert.equal(leaf.content, `Sent at once ${run}`);
    assert.equal(await log.locator(`[id="message-${leaf.id}"]`).count(), 1);
    // A send the server never gets: the question leaves the chat, the text is back to send
    // again, and the person is told.
    await box.fill(`Never sent ${run}`);
    await box.press("Enter");
    await expectText(log, `Never sent ${run}`);
    assert.equal(await box.inputValue(), "");
    while (held.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    held[1]();
    await log.getByText(`Never sent ${run}`).waitFor({ state: "detached" });
    assert.equal(await box.inputValue(), `Never sent ${run}`);
    await page.getByRole("status").or(page.getByRole("alert")).first().waitFor();
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("the Pinned section is not read again while an answer in an unpinned chat starts, streams and ends; it is for a pinned chat's messages", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    await agent.send({ op: "create", chatId: id("pinned-one"), title: `Pinned one ${run}` });
    await agent.send({ op: "create", chatId: id("unpinned"), title: `Unpinned ${run}` });
    const pinned = await fetch(`${base}/graphql`, {
      method: "POST", headers: { "content-type": "application/json", ...ALICE },
      body: JSON.stringify({ query: "mutation($id: ID!) { updateChat(id: $id, input: {pinned: true}) { pinned } }", variables: { id: id("pinned-one") } }),
    }).then((response) => response.json());
    assert.equal(pinned.data.updateChat.pinned, true);
    await page.goto(`${base}/`);
    const nav = page.getByRole("navigation", { name: "Chats" });
    await nav.getByRole("region", { name: "Pinned" }).getByRole("button", { name: `Pinned one ${run}` }).waitFor();
    await page.waitForFunction(() => window.__sockets.some((socket) => socket.readyState === 1));
    const reads = [];
    page.on("request", (request) => {
      if ((request.postData() ?? "").includes("PinnedChats")) reads.push(request.url());
    });
    // An answer in the unpinned chat: typing shown, then gone; the Pinned section not read.
    const started = await agent.send({ op: "start", chatId: id("unpinned") });
    const streamId = started.data.startStream.id;
    await nav.getByRole("button", { name: `Unpinned ${run} · typing…` }).waitFor();
    await agent.send({ op: "push", streamId, chunks: [text("a", "An answer.")] });
    await agent.send({ op: "end", streamId });
    await nav.getByRole("button", { name: `Unpinned ${run} · typing…` }).waitFor({ state: "detached" });
    await new Promise((resolve) => setTimeout(resolve, 600)); // past the list's 150 ms wait
    assert.deepEqual(reads, []);
    // An answer in the pinned chat: its messages may move it (or rename it): read again.
    const again = page.waitForRequest((request) => (request.postData() ?? "").includes("PinnedChats"), { timeout: 5000 });
    const other = await agent.send({ op: "start", chatId: id("pinned-one") });
    await agent.send({ op: "push", streamId: other.data.startStream.id, chunks: [text("a", "Another answer.")] });
    await agent.send({ op: "end", streamId: other.data.startStream.id });
    await again;
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("the playground works with every other host blocked: a query and a live chatStream", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  try {
    const streamId = await startChat(agent, id("playground"), "Playground chat");
    await page.goto(`${base}/graphql`);
    // The dev identity is offered in the headers editor.
    await page.getByText('"X-User-Id": "alice"').first().waitFor();
    const run = async (document) => {
      await page.getByRole("region", { name: "Query Editor" }).getByRole("textbox").first().focus();
      await page.keyboard.press("Control+A");
      await page.keyboard.press("Delete");
      await page.keyboard.insertText(document);
      // GraphiQL takes the edited text into its state after a short debounce.
      await page.waitForTimeout(400);
      await page.getByRole("button", { name: /Execute query/ }).click();
    };
    await run(`{ chat(id: "${id("playground")}") { title } }`);
    const result = page.getByRole("region", { name: "Result Window" });
    await expectText(result, "Playground chat");
    await run(`subscription { chatStream(chatId: "${id("playground")}") { seq type props } }`);
    await agent.send({ op: "push", streamId, chunks: [text("m", "live from the playground")] });
    await expectText(result, "live from the playground");
    await agent.send({ op: "push", streamId, chunks: [text("m", " and more")] });
    await expectText(result, " and more");
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/playground.png` });
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
    await agent.send({ op: "end", streamId });
  } finally {
    agent.close();
    await ctx.close();
  }
});

/** A stream that asks a person, then ends (it waits, AWAITING_INPUT): three tool calls needing approval and a question. */
async function askingChat(agent, chatId, title) {
  const streamId = await startChat(agent, chatId, title);
  const call = (messageId, name, args, extra = {}) => ({
    messageId, type: "tool_call", props: { id: messageId, name, arguments: JSON.stringify(args), needsApproval: true, ...extra },
  });
  const pushed = await agent.send({ op: "push", streamId, chunks: [
    call("c1", "send_email", { to: "board@acme.test" }, { reason: "it leaves the company" }),
    call("c2", "delete_files", { path: "/reports" }),
    call("c3", "book_flight", { city: "Oslo" }),
    { messageId: "q1", type: "question", props: { prompt: "Which seat do you prefer?", responseSchema: { type: "string" } } },
  ] });
  assert.equal(pushed.errors, undefined, JSON.stringify(pushed));
  const ended = await agent.send({ op: "end", streamId });
  assert.equal(ended.errors, undefined, JSON.stringify(ended));
}

test("approvals inline and the inbox: approve, deny with a reason, edit arguments (validated), answer a question; kept across a reload", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  try {
    const title = `Approvals ${run}`;
    await askingChat(agent, id("approvals"), title);
    await page.goto(`${base}/`);
    // The inbox: what waits for the person, across chats, each opening its chat at the call.
    const nav = page.getByRole("navigation", { name: "Chats" });
    const inbox = nav.getByRole("region", { name: "Waiting for you" });
    const mine = inbox.getByRole("listitem").filter({ hasText: title });
    await mine.first().waitFor();
    assert.equal(await mine.count(), 4);
    await inbox.getByRole("button", { name: /^Waiting for you \d+$/ }).waitFor();
    await mine.filter({ hasText: "Approve book_flight" }).getByRole("button").click();
    await page.waitForURL(new RegExp(`chat=${id("approvals")}`));
    const log = page.getByRole("log");
    const email = log.getByRole("group", { name: "Approve send_email?" });
    await email.getByText("Waiting for your approval: it leaves the company").waitFor();
    // Pending comes from the server: still there after a reload.
    await page.reload();
    await email.getByRole("button", { name: "Approve", exact: true }).waitFor();
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "approvals");
    // Approve.
    await email.getByRole("button", { name: "Approve", exact: true }).click();
    await expectText(log, "Approved by alice");
    assert.equal(await email.count(), 0, "a decided call has no buttons");
    // Deny, with a reason.
    const remove = log.getByRole("group", { name: "Approve delete_files?" });
    await remove.getByRole("button", { name: "Deny" }).click();
    await remove.getByRole("textbox", { name: "Reason (optional)" }).fill("too risky");
    await remove.getByRole("button", { name: "Deny" }).click();
    await expectText(log, "Denied by alice: too risky");
    // Edit the arguments: JSON, checked before it can be sent.
    const flight = log.getByRole("group", { name: "Approve book_flight?" });
    await flight.getByRole("button", { name: "Edit arguments" }).click();
    const editor = flight.getByRole("textbox", { name: "Arguments (JSON)" });
    assert.deepEqual(JSON.parse(await editor.inputValue()), { city: "Oslo" });
    await editor.fill('{"city": ');
    await flight.getByRole("alert").getByText("Not valid JSON").waitFor();
    assert.equal(await flight.getByRole("button", { name: "Approve with these arguments" }).isDisabled(), true);
    await editor.fill('{"city": "Bergen"}');
    await flight.getByRole("button", { name: "Approve with these arguments" }).click();
    await expectText(log, "Approved with edited arguments by alice");
    // A question: its prompt and an answer.
    const question = log.getByRole("form", { name: "Answer the question" });
    await question.getByText("Which seat do you prefer?").waitFor();
    await question.getByRole("textbox", { name: "Your answer" }).fill("Window");
    await question.getByRole("button", { name: "Send answer" }).click();
    await expectText(log, "Answered by alice: Window");
    // The inbox follows: nothing of this chat waits any more.
    await mine.first().waitFor({ state: "detached" });
    // Decided once: after a reload the decisions are shown, and nothing can be decided again.
    await page.reload();
    await expectText(log, "Denied by alice: too risky");
    await expectText(log, "Answered by alice: Window");
    await expectText(log, "Approved with edited arguments by alice");
    for (const name of ["Approve", "Deny", "Edit arguments", "Send answer"]) {
      assert.equal(await log.getByRole("button", { name, exact: true }).count(), 0, name);
    }
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "decided");
    // The inline form: a call that asks while its stream is still open, decided on the live row.
    const inline = id("inline-approval");
    const streamId = await startChat(agent, inline, `Inline approval ${run}`);
    await page.goto(`${base}/?chat=${inline}`);
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    const asked = await agent.send({ op: "push", streamId, chunks: [{ messageId: "c9", type: "tool_call",
      props: { id: "c9", name: "send_sms", arguments: '{"to": "+4700000000"}', needsApproval: true, inline: true } }] });
    assert.equal(asked.errors, undefined, JSON.stringify(asked));
    const sms = log.getByRole("group", { name: "Approve send_sms?" });
    await sms.getByRole("button", { name: "Approve", exact: true }).click();
    await expectText(log, "Approved by alice");
    await agent.send({ op: "push", streamId, chunks: [text("after", "Sent the message.")] });
    await expectText(log, "Sent the message.");
    await agent.send({ op: "end", streamId });
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached" });
    await expectText(log, "Approved by alice");
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
    assert.deepEqual(errors, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("on a phone the menu button counts what waits for the person; the sidebar is one instance across 768 px", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  try {
    const title = `Waiting badge ${run}`;
    await askingChat(agent, id("badge"), title);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    const nav = page.getByRole("navigation", { name: "Chats" });
    // The drawer is closed: its count shows on the menu button, named for a screen reader too.
    const menu = page.getByRole("button", { name: /^Open the chat list, \d+ waiting for you$/ });
    await menu.waitFor();
    assert.equal(await nav.count(), 0);
    const waiting = Number((await menu.getAttribute("aria-label")).match(/(\d+) waiting/)[1]);
    assert.ok(waiting >= 4, `${waiting} waiting`);
    assert.equal(await menu.getByText(String(waiting), { exact: true }).isVisible(), true, "the badge is visible");
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "390-waiting");
    // The drawer's inbox says the same count; an entry opens its chat and closes the drawer.
    await menu.click();
    const inbox = nav.getByRole("region", { name: "Waiting for you" });
    await inbox.getByRole("button", { name: `Waiting for you ${waiting}` }).waitFor();
    await inbox.getByRole("listitem").filter({ hasText: title }).filter({ hasText: "Approve send_email" }).getByRole("button").click();
    await page.waitForURL(new RegExp(`chat=${id("badge")}`));
    await nav.waitFor({ state: "detached" });
    // Deciding one: the badge follows, without a reload.
    await page.getByRole("log").getByRole("group", { name: "Approve send_email?" }).getByRole("button", { name: "Approve", exact: true }).click();
    const fewer = waiting - 1 === 0 ? "Open the chat list" : `Open the chat list, ${waiting - 1} waiting for you`;
    await page.getByRole("button", { name: fewer, exact: true }).waitFor();

    // One sidebar across the breakpoint: what was typed in its search box stays, and so does the element.
    await page.setViewportSize({ width: 1280, height: 900 });
    const search = nav.getByRole("searchbox", { name: "Search chats and messages" });
    await search.fill(`kept ${run}`);
    await nav.evaluate((element) => { window.__sidebar = element; });
    await page.setViewportSize({ width: 390, height: 844 });
    await nav.waitFor({ state: "detached" });
    await page.getByRole("button", { name: /^Open the chat list/ }).click();
    await nav.waitFor();
    assert.equal(await search.inputValue(), `kept ${run}`);
    assert.equal(await nav.evaluate((element) => element === window.__sidebar), true, "the same sidebar, not a new one");
    // The drawer is a modal dialog that takes the focus and gives it back to the menu button on Escape.
    await page.getByRole("dialog", { name: "Chats" }).waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent === "New chat");
    assert.deepEqual(await seriousViolations(page), []);
    await page.keyboard.press("Escape");
    await nav.waitFor({ state: "detached" });
    await page.waitForFunction(() => document.activeElement?.getAttribute("aria-label")?.startsWith("Open the chat list"));
    await page.setViewportSize({ width: 1280, height: 900 });
    await nav.waitFor();
    assert.equal(await search.inputValue(), `kept ${run}`);
    assert.equal(await nav.evaluate((element) => element === window.__sidebar), true, "the same sidebar, not a new one");
    assert.equal(await page.getByRole("dialog", { name: "Chats" }).count(), 0, "a column, not a dialog, on a wide screen");
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
    assert.deepEqual(errors, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

test("a file larger than the server takes is refused before any upload, the limit named; the picker offers the accepted types", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const uploads = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname === "/files") uploads.push(request.url());
  });
  try {
    const chatId = id("too-large");
    await agent.send({ op: "create", chatId, title: `Too large ${run}` });
    await page.goto(`${base}/?chat=${chatId}`);
    const composer = page.getByRole("form", { name: "Message composer" });
    const box = composer.getByRole("textbox", { name: "Message" });
    await box.waitFor();
    // The server's limit, as its page says it (CHATQL_FILE_MAX_BYTES, 25 MiB by default), shown before any upload.
    const limit = await page.evaluate(() => JSON.parse(document.getElementById("chatql-config").textContent).files.maxBytes);
    assert.equal(limit, 25 * 1024 * 1024);
    await composer.getByText("paste or drop files to attach (up to 25 MB each)").waitFor();
    assert.equal(await composer.getByRole("button", { name: "Attach files" }).getAttribute("title"), "Attach files (up to 25 MB each)");
    // The file picker offers the media types the server accepts (CHATQL_FILE_TYPES), as its page says them.
    const types = await page.evaluate(() => JSON.parse(document.getElementById("chatql-config").textContent).files.mediaTypes);
    assert.ok(types.includes("image/png") && types.includes("application/pdf"), String(types));
    assert.equal(await composer.locator("input[type=file]").getAttribute("accept"), types.join(","));
    // One byte over: refused at once, with the limit, and nothing is sent.
    await box.evaluate((element, size) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(size)], "big.txt", { type: "text/plain" }));
      element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, limit + 1);
    await page.getByRole("status").or(page.getByRole("alert"))
      .getByText("big.txt: the file is larger than 25 MB, the largest file this server takes").first().waitFor();
    assert.equal(await composer.getByRole("list", { name: "Files to send" }).count(), 0);
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "too-large");
    assert.deepEqual(uploads, [], "no upload was tried");
    assert.deepEqual(blocked, []);
    assert.deepEqual(failed, []);
    assert.deepEqual(errors, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});

// A 1×1 PNG.
const PIXEL = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

test("attachments: the attach button, a pasted image, files dropped on the composer; progress, remove, a refused file's reason; sent and shown", async () => {
  const agent = producer();
  const { ctx, blocked, failed } = await context(browser);
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  try {
    const chatId = id("files");
    await agent.send({ op: "create", chatId, title: `Files ${run}` });
    await page.goto(`${base}/?chat=${chatId}`);
    const composer = page.getByRole("form", { name: "Message composer" });
    const box = composer.getByRole("textbox", { name: "Message" });
    await box.waitFor();
    // The attach button opens the file chooser.
    const [chooser] = await Promise.all([
      page.waitForEvent("filechooser"),
      composer.getByRole("button", { name: "Attach files" }).click(),
    ]);
    await chooser.setFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("remember the milk\n") });
    const chips = composer.getByRole("list", { name: "Files to send" });
    await chips.getByText("notes.txt").waitFor();
    // A pasted image, and files dropped on the composer.
    await box.evaluate((element, bytes) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], "pixel.png", { type: "image/png" }));
      element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, [...PIXEL]);
    await chips.getByText("pixel.png").waitFor();
    await composer.evaluate((element) => {
      const data = new DataTransfer();
      data.items.add(new File(["a,b\n1,2\n"], "extra.csv", { type: "text/csv" }));
      data.items.add(new File(["MZ"], "tool.exe", { type: "application/x-msdownload" }));
      element.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
      element.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await chips.getByText("extra.csv").waitFor();
    // A refused file: the server's reason as a toast, and no chip.
    await page.getByRole("status").or(page.getByRole("alert")).getByText(/tool\.exe: .+/).first().waitFor();
    await chips.getByText("tool.exe").waitFor({ state: "detached" });
    // Every upload done (no progress bar left); one removed.
    await chips.getByRole("progressbar").first().waitFor({ state: "detached" });
    await chips.getByRole("button", { name: "Remove extra.csv" }).click();
    await chips.getByText("extra.csv").waitFor({ state: "detached" });
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "attachments");
    await box.fill(`What do these say? ${run}`);
    await box.press("Enter");
    const sent = page.getByRole("log").getByRole("article", { name: "You, user input" });
    await sent.getByText(`What do these say? ${run}`).waitFor();
    await chips.waitFor({ state: "detached" });
    // Stored: the image as a thumbnail, the text file as a download, from the server after a reload.
    await page.reload();
    const image = sent.getByRole("img", { name: "pixel.png" });
    await image.waitFor();
    await page.waitForFunction(() => [...document.querySelectorAll('[role="log"] img')].some((img) => img.complete && img.naturalWidth === 1));
    const download = sent.getByRole("link", { name: /^Download notes\.txt/ });
    await download.waitFor();
    const href = await download.getAttribute("href");
    const bytes = await page.request.get(new URL(href, base).toString());
    assert.equal(bytes.status(), 200);
    assert.equal(await bytes.text(), "remember the milk\n");
    assert.equal(await sent.getByText("extra.csv").count(), 0);
    // The message's content: the text, then the file parts.
    const stored = await agent.send({ op: "leaf", chatId });
    assert.deepEqual(stored.content.map((part) => part.type === "text" ? part.text : `${part.filename} ${part.mediaType}`),
      [`What do these say? ${run}`, "notes.txt text/plain", "pixel.png image/png"]);
    assert.deepEqual(await seriousViolations(page), []);
    await snap(page, "sent-files");
    assert.deepEqual(blocked, []);
    // The one refused request is the file the server would not take.
    assert.deepEqual(failed.map((line) => line.split(" ")[0]), ["415"]);
    assert.deepEqual(errors, []);
  } finally {
    agent.close();
    await ctx.close();
  }
});
