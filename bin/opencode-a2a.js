#!/usr/bin/env node
// Entry of the `opencode-a2a` command: runs the compiled gateway (dist/, built by `npm ci` via `prepare`).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const entry = new URL("../dist/src/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write("opencode-a2a: dist/ is missing; run `npm run build` (or `npm ci`) first\n");
  process.exit(1);
}
const { main } = await import(entry.href);
const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
