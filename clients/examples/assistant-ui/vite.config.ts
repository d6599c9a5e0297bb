import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The page calls chatql on its own origin; `vite` and `vite preview` proxy it to a
// running `chatql serve` (CHATQL_URL, default http://127.0.0.1:8000), so no CORS setup.
const chatql = { target: process.env.CHATQL_URL ?? "http://127.0.0.1:8000", ws: true };
const proxy = { "/ai": chatql, "/graphql": chatql };

export default defineConfig({
  plugins: [react()],
  build: { chunkSizeWarningLimit: 2048 },
  server: { proxy },
  preview: { proxy },
});
