// The web app as a chat client, in Chromium against a real `chatql serve` with the demo
// agent (`chatql-client demo --assistant demo`, started beside the server by the Python
// test) answering every chat of assistant "demo": a person starts a chat, types, and reads
// the agent's streamed answer; edits, regenerates, versions, search, the trash, start
// over, Stop and a reload mid-answer. Found by role and visible text.
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

async function newChat(page) {
  await page.getByRole("button", { name: "New chat", exact: true }).click();
  await page.waitForFunction(() => new URLSearchParams(location.search).has("chat"));
  return chatIdOf(page);
}

async function ask(page, words) {
  const box = page.getByRole("textbox", { name: "Message" });
  await box.click();
  await box.pressSequentially(words);
  await box.press("Enter");
  await page.getByRole("article", { name: "You, user input" }).filter({ hasText: words }).first().waitFor();
}

async function assertClean(page, blocked, errors, name) {
  await snap(page, name);
  assert.deepEqual(await seriousViolations(page), [], `axe on ${name}`);
  assert.deepEqual(errors, [], `page errors on ${name}`);
  assert.deepEqual(blocked, [], `requests to other hosts on ${name}`);
}

/** The stream has ended and the stored answer is shown (stored messages carry their time). */
async function answered(page) {
  await page.getByRole("button", { name: "Stop", exact: true }).waitFor({ state: "detached", timeout: 30000 });
  await page.getByRole("log").getByRole("article", { name: "demo, text" }).locator("time").waitFor({ timeout: 30000 });
}

test("a person talks to the agent: new chat, Enter sends, the answer streams in with rendered markdown; edit, regenerate, versions, search, start over, export, trash", async () => {
  const { ctx, page, blocked, errors } = await openApp();
  try {
    const chatId = await newChat(page);
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
    // The first message names the chat.
    await page.getByRole("heading", { level: 1, name: `Tell me about XK42Q${run} please` }).waitFor();
    await page.getByRole("navigation", { name: "Chats" }).getByRole("button", { name: `Tell me about XK42Q${run} please` }).waitFor();

    // The demo agent answers on its own. While it streams: Stop beside a disabled
    // composer, the thinking and the tool call's arguments growing.
    await page.getByRole("button", { name: "Stop", exact: true }).waitFor();
    assert.equal(await box.isDisabled(), true);
    await log.getByText("The person asks").first().waitFor();
    await log.getByLabel("Arguments").getByText('{"query"').waitFor();
    await snap(page, "streaming");
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
    const answerStart = log.getByRole("article", { name: "demo, thinking" });
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
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("textbox", { name: "Chat title" }).fill(`Renamed ${run}`);
    await page.getByRole("button", { name: "Save title" }).click();
    await page.getByRole("heading", { level: 1, name: `Renamed ${run}` }).waitFor();
    await page.getByRole("button", { name: "Pin" }).click();
    await page.getByRole("button", { name: "Pinned", pressed: true }).waitFor();
    await page.getByRole("textbox", { name: "New tag" }).fill("demo-tag");
    await page.getByRole("button", { name: "Add tag" }).click();
    await page.getByRole("list", { name: "Tags" }).getByText("demo-tag").waitFor();
    await page.getByLabel("Usage").getByText(/Usage: \d+ prompt \+ \d+ completion tokens/).waitFor();

    // Export downloads the JSON Lines export.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export" }).click()]);
    const lines = readFileSync(await download.path(), "utf8").trim().split("\n").map((line) => JSON.parse(line));
    assert.ok(lines.length >= 6, `${lines.length} lines`);
    assert.match(JSON.stringify(lines), new RegExp(`XK42Q${run}`));

    // Start over: a visible note that the agent's memory is kept.
    await page.getByRole("button", { name: "Start over" }).click();
    await page.getByRole("note").getByText("Its memory is kept.").waitFor();
    await assertClean(page, blocked, errors, "started-over");

    // Delete to the trash, then restore from it.
    await page.getByRole("button", { name: "Delete" }).click();
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
