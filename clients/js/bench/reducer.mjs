// Benchmark of the TypeScript reducer (run `npm run bench`, which builds dist/ first).
//
// 1. Appending 10,000 deltas to one message, timed per 1,000: the last 1,000 must cost
//    no more than 1.5x the first 1,000 (no rebuild of the whole message per delta).
// 2. Chunks/s applied on the shared conformance cases (their accepted batches), the same
//    chunks `python -m bench.client_reducer` applies with the Python reducer.
// `--quick` runs tiny sizes; `--json` prints one JSON line instead of text.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { EMPTY_BATCH_STATE, EMPTY_VIEW, applyBatch, applyChunk } from "../dist/reducer.js";

const quick = process.argv.includes("--quick");
const asJson = process.argv.includes("--json");
const here = dirname(fileURLToPath(import.meta.url));

function appendRun(total, block) {
  let view = applyChunk(EMPTY_VIEW, { type: "text", messageId: "m", props: { content: "" } });
  const times = [];
  let started = process.hrtime.bigint();
  for (let i = 1; i <= total; i += 1) {
    view = applyChunk(view, { type: "text", messageId: "m", delta: true, props: { content: "token " } });
    if (i % block === 0) {
      const now = process.hrtime.bigint();
      times.push(Number(now - started) / 1e6);
      started = now;
    }
  }
  if (view.get("m").props.content.length !== 6 * total) throw new Error("wrong result");
  return times;
}

function conformanceBatches() {
  const dir = join(here, "..", "..", "..", "conformance", "reducer");
  const cases = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".json")).sort()) {
    for (const testCase of JSON.parse(readFileSync(join(dir, file), "utf8")).cases) {
      cases.push(testCase.steps.filter((step) => step.error === undefined).map((step) => step.batch));
    }
  }
  return cases;
}

function chunksPerSecond(cases, seconds) {
  let chunks = 0;
  let counter = 0;
  const makeId = () => `svc-${++counter}`;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    for (const batches of cases) {
      let state = EMPTY_BATCH_STATE;
      for (const batch of batches) {
        state = applyBatch(state, batch, makeId).state;
        chunks += batch.length;
      }
    }
  }
  return chunks / ((performance.now() - started) / 1000);
}

const total = quick ? 1000 : 10000;
const block = total / 10;
appendRun(total, block); // warm-up: let the JIT settle before measuring
const times = appendRun(total, block);
const cases = conformanceBatches();
chunksPerSecond(cases, quick ? 0.05 : 0.5); // warm-up
const rate = chunksPerSecond(cases, quick ? 0.1 : 2);
const result = {
  appends: total,
  block,
  firstBlockMs: times[0],
  lastBlockMs: times[times.length - 1],
  lastOverFirst: times[times.length - 1] / times[0],
  chunksPerSecond: rate,
};
if (asJson) {
  console.log(JSON.stringify(result));
} else {
  console.log(`appending ${total} deltas to one message: first ${block} ${result.firstBlockMs.toFixed(2)} ms, ` +
    `last ${block} ${result.lastBlockMs.toFixed(2)} ms, ratio ${result.lastOverFirst.toFixed(2)} (target <= 1.5)`);
  console.log(`conformance cases: ${Math.round(rate).toLocaleString("en")} chunks/s applied`);
}
