import type { CodegenConfig } from "@graphql-codegen/cli";

const scalars = {
  ID: { input: "string", output: "string" },
  DateTime: { input: "string", output: "string" },
  JSON: { input: "unknown", output: "unknown" },
};

// Generated from the service's schema.graphql (`npm run codegen`): a type for every schema
// type, and a typed document for every operation in src/operations (its result and
// variables types travel with it, so a renamed field fails type checking).
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
      documents: "src/operations/*.graphql",
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
