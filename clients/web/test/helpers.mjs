// Shared pieces of the browser tests: Chromium through playwright-core, and the producer.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import { chromium } from "playwright-core";

export const base = process.env.CHATQL_URL ?? "http://127.0.0.1:8000";
export const host = new URL(base).host;
export const ALICE = { "X-User-Id": "alice", "X-Tenant-Id": "acme", "X-Roles": "agent" };

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

/**
 * A browser context acting as alice (the identity headers a proxy would set on the page
 * request) in which every request to another host is refused and recorded (`blocked`),
 * and so is every answer of chatql's own with an error status (`failed`: a missing
 * asset, a favicon, a refused request). `headers: {}` sets no identity (a page that
 * sends its own); `origin` is the one allowed host's address (default chatql's).
 */
export async function context(browser, { headers = ALICE, origin = base } = {}) {
  const host = new URL(origin).host;
  const ctx = await browser.newContext({ extraHTTPHeaders: headers, viewport: { width: 1280, height: 800 } });
  const blocked = [];
  const failed = [];
  ctx.on("response", (response) => {
    if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
  });
  await ctx.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.host !== host) {
      blocked.push(url.href);
      return route.abort();
    }
    return route.continue();
  });
  // Sockets the page opens, so a test can cut them.
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
  return { ctx, blocked, failed };
}

/** The producer process; `send(command)` resolves to its answer. */
export function producer() {
  const child = spawn(process.execPath, [new URL("./producer.mjs", import.meta.url).pathname], {
    env: { ...process.env, CHATQL_URL: base },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async send(command) {
      child.stdin.write(`${JSON.stringify(command)}\n`);
      const { value } = await lines.next();
      return JSON.parse(value);
    },
    close() {
      child.stdin.end();
    },
  };
}

export const text = (messageId, content, extra = {}) => ({ messageId, type: "text", props: { content }, delta: true, ...extra });

/** How often `needle` occurs in `haystack`. */
export function occurrences(haystack, needle) {
  return haystack.split(needle).length - 1;
}

let shared = null;
/** The one browser of the run (every test file of the session shares it). */
export function sharedBrowser() {
  shared ??= launch();
  return shared;
}
export async function closeBrowser() {
  if (shared) await (await shared).close();
  shared = null;
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page) {
  const { createRequire } = await import("node:module");
  const axe = createRequire(import.meta.url)("axe-core");
  await page.addScriptTag({ content: axe.source });
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  return result.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(" ")).join(", ")})`);
}

/** Saves a screenshot under SCREENSHOT_DIR (when set) and prints its path. */
export async function snap(page, name) {
  if (!process.env.SCREENSHOT_DIR) return;
  const path = `${process.env.SCREENSHOT_DIR}/${name}.png`;
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);
}
