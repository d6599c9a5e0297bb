// The reducer conformance suite shared with the Python service (conformance/reducer/*.json).
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

import {
  EMPTY_BATCH_STATE,
  ReducerError,
  applyBatch,
  applyChunk,
  type BatchState,
  type ChunkFields,
  type MessagesView,
} from "../src/reducer.js";

interface Step {
  batch: ChunkFields[];
  error?: string;
  accepted?: number;
  duplicates?: number;
  seq?: number;
}
interface ExpectedMessage {
  id: string | null;
  type: string;
  role?: string;
  props: unknown;
  blockId?: string | null;
  threadId?: string | null;
}
interface Case {
  name: string;
  steps: Step[];
  messages: ExpectedMessage[];
}

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "conformance", "reducer");
const files = readdirSync(dir).filter((name) => name.endsWith(".json")).sort();
const suites = files.map((file) => ({
  file,
  cases: (JSON.parse(readFileSync(join(dir, file), "utf8")) as { cases: Case[] }).cases,
}));

function shown(view: MessagesView, producerIds: ReadonlyMap<string, string>): unknown[] {
  return [...view.values()].map((m) => ({
    id: producerIds.get(m.id) ?? null,
    type: m.type,
    role: m.role,
    props: m.props,
    blockId: m.blockId,
    threadId: m.threadId,
  }));
}

it("the suite holds at least 200 cases", () => {
  expect(suites.reduce((total, suite) => total + suite.cases.length, 0)).toBeGreaterThanOrEqual(200);
});

for (const suite of suites) {
  describe(suite.file, () => {
    for (const testCase of suite.cases) {
      it(testCase.name, () => {
        let counter = 0;
        const makeId = () => `svc-${++counter}`;
        let state: BatchState = EMPTY_BATCH_STATE;
        let subscriber: MessagesView = new Map();
        for (const step of testCase.steps) {
          if (step.error !== undefined) {
            const before = state;
            let thrown: unknown;
            try {
              applyBatch(state, step.batch, makeId);
            } catch (error) {
              thrown = error;
            }
            expect(thrown).toBeInstanceOf(ReducerError);
            expect((thrown as ReducerError).code).toBe(step.error);
            expect(state).toBe(before);
            continue;
          }
          const outcome = applyBatch(state, step.batch, makeId);
          expect([outcome.accepted, outcome.duplicates]).toEqual([step.accepted, step.duplicates]);
          if (step.seq !== undefined) expect(outcome.state.seq).toBe(step.seq);
          // The subscriber side: the accepted chunks, with service ids, one at a time.
          const seen = new Set(state.seenChunks);
          const aliases = new Map(outcome.state.aliases);
          for (const chunk of step.batch) {
            if (chunk.chunkId != null) {
              if (seen.has(chunk.chunkId)) continue;
              seen.add(chunk.chunkId);
            }
            if (chunk.type === "event" || chunk.messageId == null) continue;
            subscriber = applyChunk(subscriber, { ...chunk, messageId: aliases.get(chunk.messageId) ?? null });
          }
          state = outcome.state;
        }
        const producerIds = new Map([...state.aliases].map(([producer, id]) => [id, producer]));
        const want = testCase.messages.map((m) => ({
          id: m.id,
          type: m.type,
          role: m.role ?? "ASSISTANT",
          props: m.props,
          blockId: m.blockId ?? null,
          threadId: m.threadId ?? null,
        }));
        expect(shown(state.messages, producerIds)).toEqual(want);
        const named = shown(subscriber, producerIds);
        expect(named).toEqual(want.filter((m) => m.id !== null));
      });
    }
  });
}
