import type { CodegenConfig } from "@graphql-codegen/cli";

// Types for every schema type, generated from the service's schema.graphql.
const config: CodegenConfig = {
  schema: "../../schema.graphql",
  generates: {
    "src/generated/schema.ts": {
      plugins: ["typescript"],
      config: {
        enumsAsTypes: true,
        useTypeImports: true,
        avoidOptionals: { field: true, inputValue: false, object: true },
        scalars: {
          ID: { input: "string", output: "string" },
          DateTime: { input: "string", output: "string" },
          JSON: { input: "unknown", output: "unknown" },
        },
      },
    },
  },
};

export default config;
