import { defineConfig } from "vite";

// The page calls chatql on its own origin; `vite` and `vite preview` proxy it to a
// running `chatql serve` (CHATQL_URL, default http://127.0.0.1:8000), so no CORS setup.
const chatql = { target: process.env.CHATQL_URL ?? "http://127.0.0.1:8000" };
const proxy = { "/ag-ui": chatql, "/graphql": chatql };

export default defineConfig({
  server: { proxy },
  preview: { proxy },
});
