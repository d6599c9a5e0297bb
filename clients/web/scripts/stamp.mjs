// Records (or with --check, verifies) the hash of the sources the shipped assets in
// gql/static/ were built from. tests/clients/test_web_assets.py recomputes it in Python,
// so the suite fails when a source changed and `npm run build` was not run.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const STAMP = join(root, "gql", "static", "SOURCES.sha256");
// Everything the build reads (besides node_modules, pinned by the lock file).
const INPUTS = [
  "clients/web/src", "clients/web/index.html", "clients/web/playground.html",
  "clients/web/vite.config.ts", "clients/web/package-lock.json", "clients/web/tsconfig.json",
  "clients/js/src",
];

function files(path) {
  const absolute = join(root, path);
  if (statSync(absolute).isDirectory()) {
    return readdirSync(absolute).flatMap((name) => files(`${path}/${name}`));
  }
  return [path];
}

export function sourceHash() {
  const hash = createHash("sha256");
  for (const path of INPUTS.flatMap(files).sort()) {
    hash.update(`${path}\0`);
    hash.update(readFileSync(join(root, path)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const hash = sourceHash();
if (process.argv.includes("--check")) {
  const recorded = readFileSync(STAMP, "utf8").trim();
  if (recorded !== hash) {
    console.error(`gql/static is stale: run \`npm run build\` in clients/web (${relative(process.cwd(), STAMP)})`);
    process.exit(1);
  }
} else {
  writeFileSync(STAMP, `${hash}\n`);
}
