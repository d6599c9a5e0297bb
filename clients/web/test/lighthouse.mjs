// Lighthouse (its Node API, the desktop preset: lighthouse/core/config/desktop-config.js,
// simulated throttling) on one page of the built app, in Debian's Chromium launched by
// chrome-launcher with --headless=new.
//
// Environment: CHATQL_URL (the server), LIGHTHOUSE_PATH (the page, e.g. "/?chat=ID"),
// LIGHTHOUSE_EXPECT (a text the page must show once loaded: the check that it is the
// chat and not an error or an empty state), CHROMIUM_PATH.
//
// First a playwright-core page, acting as the same identity, opens the address and waits
// for LIGHTHOUSE_EXPECT; then Lighthouse audits the address (performance, accessibility,
// best practices) LIGHTHOUSE_RUNS times (default 3) and keeps the run of the median
// performance score. Prints one JSON line: {"scores": {category: score}, "failing": [...
// {category, id, title, score, displayValue}], "diagnostics": [the unweighted audits under
// 0.9, alike], "metrics": {...}, "performanceRuns": [every run's score]}.
import * as chromeLauncher from "chrome-launcher";
import lighthouse, { desktopConfig } from "lighthouse";

import { ALICE, base, launch } from "./helpers.mjs";

const path = process.env.LIGHTHOUSE_PATH ?? "/";
const expected = process.env.LIGHTHOUSE_EXPECT;
const url = new URL(path, base).href;
const chromePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

if (expected) {
  const browser = await launch();
  try {
    const page = await (await browser.newContext({ extraHTTPHeaders: ALICE })).newPage();
    await page.goto(url);
    await page.getByText(expected, { exact: false }).first().waitFor({ timeout: 20000 });
  } finally {
    await browser.close();
  }
}

const runs = Number(process.env.LIGHTHOUSE_RUNS ?? 3);
const chrome = await chromeLauncher.launch({
  chromePath,
  chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  logLevel: "silent",
});
const reports = [];
try {
  for (let run = 0; run < runs; run += 1) {
    const result = await lighthouse(url, {
      port: chrome.port,
      logLevel: "error",
      output: "json",
      onlyCategories: ["performance", "accessibility", "best-practices"],
      // The identity a proxy in front would set on every request (dev auth).
      extraHeaders: ALICE,
    }, desktopConfig);
    if (result.lhr.runtimeError) {
      throw new Error(`Lighthouse: ${result.lhr.runtimeError.code} ${result.lhr.runtimeError.message}`);
    }
    reports.push(result.lhr);
  }
} finally {
  await chrome.kill();
}
// The run of the median performance score (Lighthouse's own advice: several runs, the
// median; a single run on a busy machine swings with its load).
reports.sort((a, b) => a.categories.performance.score - b.categories.performance.score);
const lhr = reports[Math.floor(reports.length / 2)];
const scores = {};
const failing = [];
const diagnostics = [];
for (const [name, category] of Object.entries(lhr.categories)) {
  scores[name] = category.score;
  for (const ref of category.auditRefs) {
    const audit = lhr.audits[ref.id];
    if (audit.score === null || audit.score >= 0.9) continue;
    // Weighted audits count in the score; the others (diagnostics, insights) explain it.
    (ref.weight > 0 ? failing : diagnostics).push({ category: name, id: ref.id, title: audit.title,
      score: audit.score, displayValue: audit.displayValue ?? "" });
  }
}
const metrics = {};
for (const id of ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time",
  "cumulative-layout-shift", "speed-index", "dom-size"]) {
  if (lhr.audits[id]) metrics[id] = lhr.audits[id].numericValue;
}
console.log(JSON.stringify({ scores, failing, diagnostics, metrics,
  performanceRuns: reports.map((report) => report.categories.performance.score), finalUrl: lhr.finalDisplayedUrl,
  lighthouse: lhr.lighthouseVersion, warnings: lhr.runWarnings }));
