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
 * request) in which every request to another host is refused and recorded.
 */
export async function context(browser) {
  const ctx = await browser.newContext({ extraHTTPHeaders: ALICE, viewport: { width: 1280, height: 800 } });
  const blocked = [];
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
  return { ctx, blocked };
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
