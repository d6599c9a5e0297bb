import { defineConfig } from "vitest/config";

// Tests against a running chatql (CHATQL_LIVE_URL), started by the Python suite.
export default defineConfig({
  test: {
    include: ["test/live/**/*.test.ts"],
    testTimeout: 30000,
    fileParallelism: false,
  },
});
