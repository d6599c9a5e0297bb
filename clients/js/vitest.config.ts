import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // test/live runs against a server the Python suite starts (tests/clients).
    exclude: ["test/live/**", "**/node_modules/**"],
    testTimeout: 20000,
  },
});
