// The generated types must match schema.graphql (regenerate with `npm run codegen`).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { generate } from "@graphql-codegen/cli";
import { expect, it } from "vitest";

import config from "../codegen.js";

it("src/generated/schema.ts is what `npm run codegen` writes from schema.graphql", async () => {
  const outputs = await generate({ ...config, cwd: join(import.meta.dirname, ".."), silent: true }, false);
  expect(outputs).toHaveLength(1);
  const [output] = outputs;
  const onDisk = readFileSync(join(import.meta.dirname, "..", "src", "generated", "schema.ts"), "utf8");
  expect(onDisk, "stale: run `npm run codegen` in clients/js").toBe(output?.content);
});
