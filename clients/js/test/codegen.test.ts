// The generated types and typed documents must match schema.graphql (`npm run codegen`).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { generate } from "@graphql-codegen/cli";
import { buildSchema, getNamedType, isLeafType, isObjectType, Kind, parse } from "graphql";
import { expect, it } from "vitest";

import config from "../codegen.js";
import { MessageFieldsFragmentDoc } from "../src/generated/operations.js";

it("src/generated is what `npm run codegen` writes from schema.graphql and src/operations", async () => {
  const outputs = await generate({ ...config, cwd: join(import.meta.dirname, ".."), silent: true }, false);
  expect(outputs.map((output: { filename: string }) => output.filename).sort()).toEqual(["src/generated/operations.ts", "src/generated/schema.ts"]);
  for (const output of outputs) {
    const onDisk = readFileSync(join(import.meta.dirname, "..", output.filename), "utf8");
    expect(onDisk, `${output.filename} is stale: run \`npm run codegen\` in clients/js`).toBe(output.content);
  }
});

it("a message is selected by every scalar and enum field of Message, as schema.graphql has them", () => {
  const schema = buildSchema(readFileSync(join(import.meta.dirname, "..", "..", "..", "schema.graphql"), "utf8"));
  const message = schema.getType("Message");
  if (!isObjectType(message)) throw new Error("no Message type");
  const leaves = Object.values(message.getFields())
    .filter((field) => isLeafType(getNamedType(field.type)) && field.args.length === 0 && !field.deprecationReason)
    .map((field) => field.name);
  expect(leaves).toContain("tokensEstimated");
  // The fields selected directly on Message, by MessageFields and the fragments it spreads.
  const selected = new Set<string>();
  for (const definition of parse(MessageFieldsFragmentDoc.toString()).definitions) {
    if (definition.kind !== Kind.FRAGMENT_DEFINITION || definition.typeCondition.name.value !== "Message") continue;
    for (const selection of definition.selectionSet.selections) {
      if (selection.kind === Kind.FIELD) selected.add(selection.name.value);
    }
  }
  for (const name of leaves) expect(selected, `MessageFields lacks ${name}`).toContain(name);
});
