import { fileURLToPath } from "node:url";

import tailwindcss from "@tailwindcss/vite";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Two pages, built into the Python package so `chatql serve` needs no Node.js:
// index.html (the app, served at /) and playground.html (GraphiQL, at GET /graphql).
export default defineConfig({
  plugins: [react(), tailwindcss()],
  resolve: {
    // The app uses the TypeScript client from its sources.
    alias: [
      { find: "@chatql/client/react", replacement: here("../js/src/react.ts") },
      { find: "@chatql/client", replacement: here("../js/src/index.ts") },
    ],
    dedupe: ["react", "react-dom", "graphql", "graphql-ws"],
  },
  build: {
    outDir: here("../../gql/static"),
    emptyOutDir: true,
    assetsDir: "assets",
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: { index: here("index.html"), playground: here("playground.html") },
    },
  },
  server: {
    // `npm run dev` proxies the API to a local `chatql serve`.
    proxy: { "/graphql": { target: "http://127.0.0.1:8000", ws: true } },
  },
});
