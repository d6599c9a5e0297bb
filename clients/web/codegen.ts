import type { CodegenConfig } from "@graphql-codegen/cli";

// The app's own operations beyond the client's (`npm run codegen`): typed documents
// generated from the service's schema.graphql, like @chatql/client's, so a renamed field
// fails type checking. `npm run check-codegen` fails when the generated file drifts.
const scalars = {
  ID: { input: "string", output: "string" },
  DateTime: { input: "string", output: "string" },
  JSON: { input: "unknown", output: "unknown" },
};

const config: CodegenConfig = {
  schema: "../../schema.graphql",
  generates: {
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
