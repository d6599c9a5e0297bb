import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

// The live file parts of ChatqlChatTransport against a running chatql (CHATQL_LIVE_URL),
// started by the Python suite (tests/clients/test_live_file_parts.py). Kept apart from
// test/live (whose count tests/clients/test_js_live.py checks) and from the unit run
// (its file does not end in .test.ts).
export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/live-files/**/*.live.ts"],
    testTimeout: 30000,
    fileParallelism: false,
  },
});
