import { readFileSync } from "node:fs";

import type { CodegenConfig } from "@graphql-codegen/cli";
import { buildSchema, getNamedType, isLeafType, isObjectType } from "graphql";

const schemaPath = new URL("../../schema.graphql", import.meta.url);

/**
 * `fragment <Type>Leaves on <Type>`: every field of the type that is a scalar or an enum,
 * takes no argument and is not deprecated, in the schema's order. The operations select
 * a message through it, so a field added to `Message` in schema.graphql reaches the
 * client's types and requests with `npm run codegen` alone.
 */
function leavesFragment(typeName: string): string {
  const type = buildSchema(readFileSync(schemaPath, "utf8")).getType(typeName);
  if (!isObjectType(type)) throw new Error(`schema.graphql has no object type ${typeName}`);
  const fields = Object.values(type.getFields())
    .filter((field) => isLeafType(getNamedType(field.type)) && field.args.length === 0 && !field.deprecationReason)
    .map((field) => field.name);
  return `fragment ${typeName}Leaves on ${typeName} {\n  ${fields.join("\n  ")}\n}\n`;
}

const scalars = {
  ID: { input: "string", output: "string" },
  DateTime: { input: "string", output: "string" },
  JSON: { input: "unknown", output: "unknown" },
};

// Generated from the service's schema.graphql (`npm run codegen`): a type for every schema
// type, and a typed document for every operation in src/operations and for the generated
// leaves fragments (its result and variables types travel with it, so a renamed field
// fails type checking).
const config: CodegenConfig = {
  schema: "../../schema.graphql",
  generates: {
    "src/generated/schema.ts": {
      plugins: ["typescript"],
      config: {
        enumsAsTypes: true,
        useTypeImports: true,
        avoidOptionals: { field: true, inputValue: false, object: true },
        scalars,
      },
    },
    "src/generated/operations.ts": {
      documents: ["src/operations/*.graphql", leavesFragment("Message")],
      plugins: ["typescript-operations", "typed-document-node"],
      config: {
        enumsAsTypes: true,
        useTypeImports: true,
        documentMode: "string",
        avoidOptionals: { field: true, inputValue: false, object: true },
        scalars,
      },
    },
  },
};

export default config;
