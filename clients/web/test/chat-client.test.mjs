// The web app as a chat client, in Chromium against a real `chatql serve` with the demo
// agent (`chatql-client demo --assistant demo`, started beside the server by the Python
// test) answering every chat of assistant "demo": a person starts a chat, types, and reads
// the agent's streamed answer; edits, regenerates, versions, search, the trash, start
// over, Stop and a reload mid-answer; the bugs a person met in the first minutes; the
// layout at three widths in both themes; a share link continued as one's own chat; and a
// second demo agent (assistant "demo-approvals") asking before its lookup, approved and
// denied. Found by role and visible text.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { base, context, occurrences, seriousViolations, sharedBrowser, snap } from "./helpers.mjs";

const run = Date.now().toString(36);

/** A page acting as alice, recording page errors, chatql's own error answers (a missing
 * asset or favicon) and requests to other hosts. */
async function openApp() {
  const browser = await sharedBrowser();
  const { ctx, blocked, failed: errors } = await context(browser);
  const page = await ctx.newPage();
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`${base}/`);
  return { ctx, page, blocked, errors };
}

const chatIdOf = (page) => new URL(page.url()).searchParams.get("chat");

/** New chat: a local view with the composer focused (the chat is created by the first message). */
async function newChat(page) {
  await page.getByRole("button", { name: "New chat", exact: true }).click();
  await page.waitForFunction(() => document.activeElement?.getAttribute("aria-label") === "Message");
}

/** Picks `name` in the chat's menu (Chat actions). */
async function chatAction(page, name) {
  await page.getByRole("button", { name: "Chat actions" }).click();
  await page.getByRole("menuitem", { name, exact: true }).click();
}

async function ask(page, words) {
  const box = page.getByRole("textbox", { name: "Message" });
  await box.click();
  await box.pressSequentially(words);
  await box.press("Enter");
  await page.getByRole("article", { name: "You, user input" }).filter({ hasText: words }).first().waitFor();
  await page.waitForFunction(() => new URLSearchParams(location.search).has("chat"));
}

async function assertClean(page, blocked, errors, name) {
  await snap(page, name);
  assert.deepEqual(await seriousViolations(page), [], `axe on ${name}`);
  assert.deepEqual(errors, [], `page errors on ${name}`);
  assert.deepEqual(blocked, [], `requests to other hosts on ${name}`);
}

/** The stream has ended and the stored answer is shown (a stored answer carries its time). */
async function answered(page) {
  await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 30000 });
  await page.getByRole("log").getByRole("region", { name: "Answer from demo" }).last().locator("time").waitFor({ timeout: 30000 });
  await page.getByRole("log").getByRole("article", { name: "demo, text" }).waitFor({ timeout: 30000 });
}

test("a person talks to the agent: new chat, Enter sends, the answer streams in with rendered markdown; edit, regenerate, versions, search, start over, export, trash", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    await newChat(page);
    const box = page.getByRole("textbox", { name: "Message" });
    // The composer has the focus; Shift+Enter breaks the line, Enter sends.
    assert.equal(await box.evaluate((element) => element === document.activeElement), true);
    await box.pressSequentially(`Tell me about XK42Q${run}`);
    await box.press("Shift+Enter");
    await box.pressSequentially("please");
    assert.equal(await box.inputValue(), `Tell me about XK42Q${run}\nplease`);
    await box.press("Enter");
    const log = page.getByRole("log");
    const question = log.getByRole("article", { name: "You, user input" });
    await question.getByText("please").waitFor();
    await page.waitForFunction(() => document.querySelector('textarea[aria-label="Message"]').value === "");
    await page.waitForFunction(() => new URLSearchParams(location.search).has("chat"));
    const chatId = chatIdOf(page);
    // The demo agent answers on its own. While it streams: Stop beside a disabled
    // composer, the thinking and the tool call's arguments growing.
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    assert.equal(await box.isDisabled(), true);
    await log.getByText("The person asks").first().waitFor();
    await log.getByLabel("Arguments").getByText('{"query"').waitFor();
    await snap(page, "streaming");
    // The first message names the chat.
    await page.getByRole("heading", { level: 1, name: `Tell me about XK42Q${run} please` }).waitFor();
    await page.getByRole("navigation", { name: "Chats" }).getByRole("button", { name: `Tell me about XK42Q${run} please` }).waitFor();
    await answered(page);
    // The stored answer: markdown rendered (bold, a table, a code block).
    const answer = log.getByRole("article", { name: "demo, text" });
    await answer.getByRole("table").getByRole("cell", { name: "Words" }).waitFor();
    assert.equal(await answer.locator("strong").first().innerText(), `Tell me about XK42Q${run}\nplease`.replace("\n", " "));
    assert.match(await answer.locator("pre code").innerText(), /print\(/);
    assert.equal(await box.isDisabled(), false);
    // Sender and time on each message; thinking folded, unfolded on request.
    await question.getByText("You", { exact: true }).waitFor();
    assert.ok(await question.locator("time").getAttribute("datetime"));
    const thinking = log.getByRole("group").filter({ hasText: "Thinking" }).first();
    assert.equal(await thinking.evaluate((element) => element.open), false);
    await log.getByText("Thinking", { exact: true }).first().click();
    assert.equal(await thinking.evaluate((element) => element.open), true);
    await log.getByText("Tool result").waitFor();
    await assertClean(page, blocked, errors, "answered");

    // Edit the question: the agent answers the second version; ‹ › moves back to version 1.
    // The demo repeats the question in bold, so a link and raw HTML in it reach the
    // rendered answer: the link opens safely, the HTML is never rendered.
    await question.getByRole("button", { name: /^Edit/ }).click();
    const editor = log.getByRole("textbox", { name: "Edit your message" });
    await editor.fill(`Tell me about ZQ7${run} instead, see [the docs](https://example.org/docs) <b>raw</b> [unsafe](javascript:alert(1))`);
    await editor.press("Enter");
    await log.getByRole("article", { name: "You, user input" }).getByText(`ZQ7${run} instead`).waitFor();
    await question.getByRole("group", { name: "Versions" }).getByText("2 / 2").waitFor();
    await answered(page);
    await answer.locator("strong").getByText(`ZQ7${run} instead`).waitFor();
    const link = answer.getByRole("link", { name: "the docs" });
    assert.equal(await link.getAttribute("target"), "_blank");
    assert.equal(await link.getAttribute("rel"), "noopener noreferrer");
    assert.equal(await answer.locator("b").count(), 0, "raw HTML is never rendered");
    assert.match(await answer.innerText(), /<b>raw<\/b>/, "raw HTML shows as its text");
    assert.equal(await answer.locator('a[href^="javascript"]').count(), 0, "no javascript: link");
    await snap(page, "edited");
    await question.getByRole("button", { name: "Previous version" }).click();
    await question.getByRole("group", { name: "Versions" }).getByText("1 / 2").waitFor();
    await answer.getByRole("table").waitFor();
    await answer.locator("strong").getByText(`XK42Q${run}`).waitFor();
    assert.equal(occurrences(await log.innerText(), `ZQ7${run}`), 0);
    await assertClean(page, blocked, errors, "version-1");

    // Regenerate the answer: the agent answers the same question again; the new answer is
    // version 2 of 2, and ‹ moves back to the first answer.
    const answerStart = log.getByRole("region", { name: "Answer from demo" });
    const firstAnswer = await answer.getAttribute("id");
    await answerStart.getByRole("button", { name: "Regenerate" }).click();
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    await log.getByLabel("Arguments").getByText('{"query"').waitFor();
    await answered(page);
    const versions = answerStart.getByRole("group", { name: "Versions" });
    await versions.getByText("2 / 2").waitFor();
    await question.getByRole("group", { name: "Versions" }).getByText("1 / 2").waitFor();
    const secondAnswer = await answer.getAttribute("id");
    assert.notEqual(secondAnswer, firstAnswer);
    await answer.getByRole("table").waitFor();
    assert.equal(await log.getByRole("table").count(), 1, "one answer on the branch shown");
    await assertClean(page, blocked, errors, "regenerated");
    await versions.getByRole("button", { name: "Previous version" }).click();
    await versions.getByText("1 / 2").waitFor();
    await page.waitForFunction((id) => document.getElementById(id) !== null, firstAnswer);
    assert.equal(await answer.getAttribute("id"), firstAnswer);
    assert.equal(await log.getByRole("table").count(), 1);
    await assertClean(page, blocked, errors, "regenerated-version-1");

    // Search a word from a message body (on the other branch): the hit opens its chat there.
    await page.goto(`${base}/`);
    await page.getByRole("searchbox", { name: "Search chats and messages" }).fill(`ZQ7${run}`);
    const hits = page.getByRole("region", { name: "Messages found" });
    await hits.getByRole("button").first().click();
    await page.waitForFunction(() => document.activeElement?.tagName === "ARTICLE");
    const focused = await page.evaluate(() => document.activeElement.textContent);
    assert.match(focused, new RegExp(`ZQ7${run}`));
    assert.equal(chatIdOf(page), chatId);
    await snap(page, "search-hit");
    await page.getByRole("searchbox", { name: "Search chats and messages" }).fill("");

    // Rename, pin, tag.
    await chatAction(page, "Rename");
    await page.getByRole("textbox", { name: "Chat title" }).fill(`Renamed ${run}`);
    await page.getByRole("button", { name: "Save title" }).click();
    await page.getByRole("heading", { level: 1, name: `Renamed ${run}` }).waitFor();
    await page.getByRole("button", { name: "Pin", exact: true }).click();
    await page.getByRole("button", { name: "Pinned", pressed: true }).waitFor();
    await chatAction(page, "Add a tag");
    await page.getByRole("textbox", { name: "New tag" }).fill("demo-tag");
    await page.getByRole("button", { name: "Add tag" }).click();
    await page.getByRole("list", { name: "Tags" }).getByText("demo-tag").waitFor();
    await page.getByLabel("Usage").getByText(/Usage: \d+ prompt \+ \d+ completion tokens/).waitFor();

    // Export downloads the JSON Lines export.
    const [download] = await Promise.all([page.waitForEvent("download"), chatAction(page, "Export")]);
    const lines = readFileSync(await download.path(), "utf8").trim().split("\n").map((line) => JSON.parse(line));
    assert.ok(lines.length >= 6, `${lines.length} lines`);
    assert.match(JSON.stringify(lines), new RegExp(`XK42Q${run}`));

    // Start over: a visible note that the agent's memory is kept.
    await chatAction(page, "Start over");
    await page.getByRole("note").getByText("Its memory is kept.").waitFor();
    await assertClean(page, blocked, errors, "started-over");

    // Delete to the trash, then restore from it.
    await chatAction(page, "Delete");
    const nav = page.getByRole("navigation", { name: "Chats" });
    await nav.getByRole("button", { name: `Renamed ${run}` }).waitFor({ state: "detached" });
    await nav.getByRole("button", { name: "Trash" }).click();
    await page.getByRole("heading", { name: "Trash" }).waitFor();
    const restore = page.getByRole("button", { name: `Restore Renamed ${run}` });
    await restore.waitFor();
    await snap(page, "trash");
    await restore.click();
    await page.getByRole("heading", { level: 1, name: `Renamed ${run}` }).waitFor();
    await nav.getByRole("button", { name: `Renamed ${run}` }).waitFor();
    await assertClean(page, blocked, errors, "restored");
  } finally {
    await ctx.close();
  }
});

test("Stop mid-answer keeps what was written, marked interrupted; the agent stops", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    await newChat(page);
    await ask(page, `Halt now ${run}`);
    const log = page.getByRole("log");
    await log.getByText("The person asks").first().waitFor();
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await log.getByText("interrupted").first().waitFor();
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached" });
    await page.getByRole("textbox", { name: "Message" }).waitFor({ state: "visible" });
    assert.equal(await page.getByRole("textbox", { name: "Message" }).isDisabled(), false);
    await assertClean(page, blocked, errors, "stopped");
    // Stored as interrupted; the agent wrote nothing more (its answer never ends).
    await page.reload();
    await log.getByText("interrupted").first().waitFor();
    await log.locator("article time").first().waitFor();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(occurrences(await log.innerText(), "Done."), 0);
    assert.equal(await page.getByRole("button", { name: "Stop", exact: true }).count(), 0);
  } finally {
    await ctx.close();
  }
});

test("a reload mid-answer resumes it: the answer completes once", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    await newChat(page);
    await ask(page, `Resume me ${run}`);
    await page.getByRole("log").getByText("Tool call:").waitFor();
    await page.reload();
    const log = page.getByRole("log");
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    await log.getByText("Done.").waitFor({ timeout: 20000 });
    await answered(page);
    assert.equal(await log.getByRole("table").count(), 1);
    assert.equal(occurrences(await log.innerText(), "Done."), 1);
    await assertClean(page, blocked, errors, "resumed");
  } finally {
    await ctx.close();
  }
});

/** chatql's GraphQL requests over HTTP from `page` (their bodies), as they are sent. */
function graphqlRequests(page) {
  const sent = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/graphql" && request.method() === "POST") sent.push(request.postData() ?? "");
  });
  return sent;
}

/** Waits for one clear message about the chat, then asserts no request goes out for 2 s. */
async function assertMissingChatIsQuiet(page, sent) {
  await page.getByText(/This chat does not exist or was deleted/).waitFor();
  await page.waitForTimeout(300);
  const before = sent.length;
  await page.waitForTimeout(2000);
  assert.equal(sent.length, before, `requests after the message: ${sent.slice(before).join("\n")}`);
  assert.equal(await page.getByText(/This chat does not exist or was deleted/).count(), 1);
  assert.equal(await page.getByText("Loading messages…").count(), 0);
}

test("a link to a missing chat, or to a message in one, shows one clear message and sends no more requests", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    const sent = graphqlRequests(page);
    await page.goto(`${base}/?chat=missing-${run}&message=missing-message-${run}`);
    await assertMissingChatIsQuiet(page, sent);
    await page.goto(`${base}/?chat=missing-${run}`);
    await assertMissingChatIsQuiet(page, sent);
    assert.deepEqual(errors, []);
    assert.deepEqual(blocked, []);
  } finally {
    await ctx.close();
  }
});

test("the first minutes: nothing is created before the first message, Shift+Enter right after New chat, usage after the answer, Pinned, search snippets, a deleted chat's hit and link", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    const sent = graphqlRequests(page);
    const nav = page.getByRole("navigation", { name: "Chats" });
    await nav.waitFor();
    // Typing at once after New chat: every key lands in the composer, the newline kept.
    await page.getByRole("button", { name: "New chat", exact: true }).click();
    const before = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu";
    const words = `${before} MARKER${run} ${before}`;
    await page.keyboard.type("First line");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type(words);
    const box = page.getByRole("textbox", { name: "Message" });
    assert.equal(await box.inputValue(), `First line\n${words}`);
    // New chat made nothing on the server: no createChat, no "Untitled chat" in the list.
    await page.waitForTimeout(1000);
    assert.deepEqual(sent.filter((body) => body.includes("createChat")), []);
    assert.equal(await nav.getByRole("button", { name: /Untitled chat/ }).count(), 0);
    assert.equal(chatIdOf(page), null);
    await assertClean(page, blocked, errors, "new-chat");
    // The first message creates the chat.
    await box.press("Enter");
    await page.waitForFunction(() => new URLSearchParams(location.search).has("chat"));
    const chatId = chatIdOf(page);
    assert.equal(sent.filter((body) => body.includes("createChat")).length, 1);
    await page.getByRole("log").getByRole("article", { name: "You, user input" }).getByText(`MARKER${run}`).waitFor();
    await answered(page);
    // The usage line counts the answer without a reload.
    await page.getByLabel("Usage").getByText(/Usage: [1-9]\d* prompt \+ [1-9]\d* completion tokens/).waitFor({ timeout: 10000 });

    // Pinned chats have their own section at the top of the list.
    await page.getByRole("button", { name: "Pin", exact: true }).click();
    await nav.getByRole("region", { name: "Pinned" }).getByRole("button", { name: /First line/ }).waitFor();

    // A search hit: cut at word boundaries, the match marked.
    await page.getByRole("searchbox", { name: "Search chats and messages" }).fill(`MARKER${run}`);
    const hits = page.getByRole("region", { name: "Messages found" });
    const hit = hits.getByRole("button").filter({ hasText: `MARKER${run}` }).first();
    await hit.waitFor();
    assert.equal(await hit.locator("mark").first().innerText(), `MARKER${run}`);
    const known = new Set(`First line ${words}`.split(/\s+/));
    const snippet = (await hit.locator("mark").first().evaluate((mark) => mark.parentElement.textContent)).replace(/…/g, " ");
    for (const word of snippet.split(/\s+/).filter(Boolean)) assert.ok(known.has(word), `"${word}" is cut in "${snippet}"`);
    await hit.click();
    await page.waitForFunction(() => new URLSearchParams(location.search).has("message"));
    const link = page.url();
    assert.equal(chatIdOf(page), chatId);

    // Deleted: its hit leaves the results; its link (with &message=) says so, quietly.
    await chatAction(page, "Delete");
    await nav.getByRole("button", { name: /First line/ }).first().waitFor({ state: "detached" });
    await hits.getByRole("button").filter({ hasText: `MARKER${run}` }).waitFor({ state: "detached" });
    await page.goto(link);
    await assertMissingChatIsQuiet(page, sent);
    assert.deepEqual(errors, []);
    assert.deepEqual(blocked, []);
  } finally {
    await ctx.close();
  }
});

test("at 390, 768 and 1280 px, light and dark: a reading column, the list a drawer on a phone, the theme toggle kept", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    await newChat(page);
    // Raw HTML in prose with no link: its blocks are put in the page without the
    // sanitiser (their HTML is made of escaped text), so it must show as its text.
    await ask(page, `Widths and themes ${run} <img src=x onerror="window.__xss=1"> & "quoted"`);
    await answered(page);
    const log = page.getByRole("log");
    const echoed = log.getByRole("article", { name: "demo, text" }).locator("strong").first();
    assert.match(await echoed.innerText(), /<img src=x onerror="window.__xss=1"> & "quoted"/);
    assert.equal(await log.locator("img").count(), 0, "raw HTML is never rendered");
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    // A code block: highlighted, with its copy button.
    const answer = log.getByRole("article", { name: "demo, text" });
    await answer.getByRole("button", { name: "Copy code" }).waitFor();
    assert.ok(await answer.locator("pre code span").count() > 0, "the code is highlighted");
    // A message's actions show on hover and on keyboard focus.
    const question = log.getByRole("article", { name: "You, user input" });
    const copy = question.getByRole("button", { name: "Copy" });
    const shown = () => copy.evaluate((button) => getComputedStyle(button.parentElement).opacity);
    await page.mouse.move(0, 0);
    assert.equal(await shown(), "0");
    await question.hover();
    assert.equal(await shown(), "1");
    await page.mouse.move(0, 0);
    await copy.focus();
    assert.equal(await shown(), "1");
    const main = page.getByRole("main", { name: "Chat" });
    const nav = page.getByRole("navigation", { name: "Chats" });
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [390, 768, 1280]) {
        await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
        await page.waitForFunction((dark) => document.documentElement.classList.contains("dark") === dark, scheme === "dark");
        await log.getByRole("article", { name: "demo, text" }).waitFor();
        if (width === 390) {
          // A phone: the chat takes the screen; the list is a closed drawer behind the menu
          // button. (Measured once the layout has turned: the resize is seen a frame later.)
          await page.getByRole("button", { name: "Open the chat list" }).waitFor();
          await nav.waitFor({ state: "detached" });
          const column = await main.boundingBox();
          assert.ok(column.width >= 300, `the chat column is ${column.width}px wide at 390px`);
          await assertClean(page, blocked, errors, `${width}-${scheme}`);
          await page.getByRole("button", { name: "Open the chat list" }).click();
          await nav.getByRole("button", { name: "New chat", exact: true }).waitFor();
          await nav.getByRole("button", { name: `Widths and themes ${run}` }).waitFor();
          await assertClean(page, blocked, errors, `${width}-${scheme}-drawer`);
          await page.keyboard.press("Escape");
          await nav.waitFor({ state: "detached" });
          if (scheme === "light") {
            // New chat from the drawer closes it and leaves the focus in the composer.
            await page.getByRole("button", { name: "Open the chat list" }).click();
            await nav.getByRole("button", { name: "New chat", exact: true }).click();
            await nav.waitFor({ state: "detached" });
            await page.waitForFunction(() => document.activeElement?.getAttribute("aria-label") === "Message");
            await page.getByRole("button", { name: "Open the chat list" }).click();
            await nav.getByRole("button", { name: `Widths and themes ${run}` }).click();
            await nav.waitFor({ state: "detached" });
            await log.getByRole("article", { name: "demo, text" }).waitFor();
          }
        } else {
          await nav.getByRole("button", { name: `Widths and themes ${run}` }).waitFor();
          const column = await main.boundingBox();
          assert.ok(column.width >= width - 300, `the chat column is ${column.width}px wide at ${width}px`);
          await assertClean(page, blocked, errors, `${width}-${scheme}`);
        }
        // The reading column stays about 48rem wide, however wide the window.
        const reading = await log.getByRole("region", { name: "Answer from demo" }).boundingBox();
        assert.ok(reading.width <= 48 * 16, `the answer is ${reading.width}px wide`);
      }
    }
    // Thumbs and share on the answer: the rating is kept; the share link is copied and shown.
    await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const turn = log.getByRole("region", { name: "Answer from demo" });
    await turn.getByRole("button", { name: "Good answer" }).click();
    await turn.getByRole("button", { name: "Good answer", pressed: true }).waitFor();
    await turn.getByRole("button", { name: "Share" }).click();
    const shared = page.getByText(/^Share link( copied)?: /);
    await shared.waitFor();
    const url = (await shared.innerText()).replace(/^Share link( copied)?: /, "");
    assert.match(url, new RegExp(`^${base}/s/`));
    // The toggle overrides the system's choice, and is kept across a reload.
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByRole("button", { name: "Dark theme" }).click();
    await page.waitForFunction(() => document.documentElement.classList.contains("dark"));
    await page.reload();
    await page.getByRole("button", { name: "Light theme" }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.classList.contains("dark")), true);
    await turn.getByRole("button", { name: "Good answer", pressed: true }).waitFor();
    await page.getByRole("button", { name: "Light theme" }).click();
    await page.waitForFunction(() => !document.documentElement.classList.contains("dark"));
    // The identity is set in the settings dialog, not in the top bar.
    await page.getByRole("button", { name: "Settings" }).click();
    const dialog = page.getByRole("dialog", { name: "Settings" });
    assert.equal(await dialog.getByRole("textbox", { name: "User" }).inputValue(), "alice");
    await assertClean(page, blocked, errors, "settings");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    // The share link opens a read-only copy of the conversation.
    await page.goto(url);
    await page.getByRole("heading", { level: 1, name: `Widths and themes ${run}` }).waitFor();
    await page.getByRole("log").getByText("Ask me anything else.").waitFor();
    assert.equal(await page.getByRole("textbox", { name: "Message" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Regenerate" }).count(), 0);
    await assertClean(page, blocked, errors, "shared");
    // A signed-in person continues it as a chat of their own: a copy, opened at once.
    await page.getByRole("button", { name: "Continue this chat" }).click();
    await page.waitForURL(/\?chat=/);
    const forked = chatIdOf(page);
    await page.getByRole("log").getByText("Ask me anything else.").waitFor();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.getByRole("navigation", { name: "Chats" }).getByRole("button", { name: `Widths and themes ${run}` }).first().waitFor();
    assert.ok(forked, "the copy has its own chat");
    await assertClean(page, blocked, errors, "forked");
  } finally {
    await ctx.close();
  }
});

test("an agent asks before its tool runs: Deny says why and the agent answers so; Approve and the resumed answer streams in", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    // The demo agent of assistant "demo-approvals" asks before its lookup.
    await newChat(page);
    await page.getByRole("combobox", { name: "Assistant" }).fill("demo-approvals");
    await ask(page, `Approve me ${run}`);
    const log = page.getByRole("log");
    const approval = log.getByRole("group", { name: "Approve lookup?" });
    await approval.getByText("Waiting for your approval: the lookup reads your question").waitFor({ timeout: 30000 });
    // The inbox has it too.
    const inbox = page.getByRole("navigation", { name: "Chats" }).getByRole("region", { name: "Waiting for you" });
    await inbox.getByRole("button", { name: /Approve lookup/ }).first().waitFor();
    await assertClean(page, blocked, errors, "approval");
    await approval.getByRole("button", { name: "Approve", exact: true }).click();
    await log.getByText("Approved by alice").waitFor();
    // The agent resumes: the lookup's result, then the answer, streamed in.
    await log.getByText("Here is what I found about").waitFor({ timeout: 30000 });
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 30000 });
    // A second question, denied with a reason: the agent says it did not run the lookup.
    await ask(page, `Deny me ${run}`);
    const second = log.getByRole("group", { name: "Approve lookup?" });
    await second.getByRole("button", { name: "Deny" }).waitFor({ timeout: 30000 });
    await second.getByRole("button", { name: "Deny" }).click();
    await second.getByRole("textbox", { name: "Reason (optional)" }).fill("not now");
    await second.getByRole("button", { name: "Deny" }).click();
    await log.getByText("Denied by alice: not now").waitFor();
    await log.getByText("You declined the lookup (not now)").waitFor({ timeout: 30000 });
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 30000 });
    await page.reload();
    await log.getByText("Approved by alice").waitFor();
    await log.getByText("Denied by alice: not now").waitFor();
    assert.equal(await log.getByRole("button", { name: "Approve", exact: true }).count(), 0);
    await assertClean(page, blocked, errors, "approved");
  } finally {
    await ctx.close();
  }
});
