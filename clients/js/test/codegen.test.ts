// The generated types and typed documents must match schema.graphql (`npm run codegen`).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { generate } from "@graphql-codegen/cli";
import { expect, it } from "vitest";

import config from "../codegen.js";

it("src/generated is what `npm run codegen` writes from schema.graphql and src/operations", async () => {
  const outputs = await generate({ ...config, cwd: join(import.meta.dirname, ".."), silent: true }, false);
  expect(outputs.map((output: { filename: string }) => output.filename).sort()).toEqual(["src/generated/operations.ts", "src/generated/schema.ts"]);
  for (const output of outputs) {
    const onDisk = readFileSync(join(import.meta.dirname, "..", output.filename), "utf8");
    expect(onDisk, `${output.filename} is stale: run \`npm run codegen\` in clients/js`).toBe(output.content);
  }
});
