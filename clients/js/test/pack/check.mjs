// The package as a user gets it: `npm pack`, install the tarball into an empty folder,
// import every entry point from Node (ESM), check the WebSocket lookup on this Node, and
// type-check a consumer against the shipped declarations. Run by `make js-test`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const here = resolve(import.meta.dirname, "..", "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const work = mkdtempSync(join(tmpdir(), "chatql-pack-"));
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
const fail = (message) => {
  console.error(`pack check failed: ${message}`);
  process.exit(1);
};

try {
  const [packed] = JSON.parse(run(npm, ["pack", "--json", "--pack-destination", work], here).split(/\n(?=\[)/).pop());
  const files = packed.files.map((file) => file.path);
  for (const need of ["README.md", "package.json", "dist/index.js", "dist/index.d.ts", "dist/ai-sdk.js", "dist/ai-sdk.d.ts",
    "dist/assistant-ui.js", "dist/assistant-ui.d.ts", "dist/react.js", "dist/generated/operations.js"]) {
    if (!files.includes(need)) fail(`${need} is not in the tarball`);
  }
  const app = join(work, "app");
  execFileSync("mkdir", ["-p", app]);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const install = (...names) => run(npm, ["install", "--no-audit", "--no-fund", "--prefer-offline", ...names], app);
  install(join(work, packed.filename));

  // Imports in Node; with no global WebSocket and no `ws`, following says what to install.
  writeFileSync(join(app, "no-ws.mjs"), `
    import { ChatqlClient, ChatsDocument, WebSocketMissingError, applyChunk, EMPTY_VIEW } from "@chatql/client";
    const client = new ChatqlClient({ url: "http://127.0.0.1:9/graphql" });
    if (!String(ChatsDocument).includes("query Chats")) throw new Error("documents are not exported");
    if (applyChunk(EMPTY_VIEW, { type: "text", messageId: "m", props: { content: "hi" } }).size !== 1) throw new Error("reducer");
    if (typeof globalThis.WebSocket === "function") { console.log("global WebSocket"); process.exit(0); }
    try { client.follow("c1").start(); throw new Error("no error without a WebSocket"); }
    catch (error) {
      if (!(error instanceof WebSocketMissingError) || !/npm install ws/.test(error.message)) throw error;
      console.log("missing: " + error.message);
    }`);
  console.log(run("node", ["no-ws.mjs"], app).trim());

  // With `ws` installed, the README's `client.follow(...)` runs on Node 20.
  install("ws@8");
  writeFileSync(join(app, "follow.mjs"), `
    import { ChatqlClient, findWebSocket } from "@chatql/client";
    import "@chatql/client/ai-sdk";
    import WebSocket from "ws";
    if (typeof globalThis.WebSocket !== "function" && findWebSocket() !== WebSocket) throw new Error("ws was not found");
    const client = new ChatqlClient({ url: "http://127.0.0.1:9/graphql" });
    const follower = client.follow("c1", { initialBackoffMs: 10 });
    follower.start();
    // Nothing listens on port 9: the socket it opened (through ws) fails to connect.
    await new Promise((resolve) => setTimeout(resolve, 200));
    follower.stop();
    await client.reset().catch(() => undefined);
    console.log("follow ok");`);
  console.log(run("node", ["follow.mjs"], app).trim());

  // The declarations resolve for a TypeScript consumer (nodenext resolution, the exports map).
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
    compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", strict: true, noEmit: true, skipLibCheck: true, types: [] },
    files: ["consumer.ts"],
  }));
  writeFileSync(join(app, "consumer.ts"), `
    import { ChatqlClient, ChatsDocument, StreamWriter } from "@chatql/client";
    export async function titles(client: ChatqlClient): Promise<(string | null)[]> {
      const data = await client.request(ChatsDocument, { first: 5 });
      // @ts-expect-error typed result: no such field
      void data.chats.nope;
      return data.chats.groups.flatMap((group) => group.chats.map((chat) => chat.title));
    }
    export type Writer = StreamWriter;
  `);
  run("node", [join(here, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app);
  console.log(`pack check ok: ${packed.filename} (${files.length} files)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
