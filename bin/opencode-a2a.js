#!/usr/bin/env node
// Entry of the `opencode-a2a` command: runs the built gateway. `npm run build` (run by `npm ci` via `prepare`) writes
// dist/src (tsc) and dist/bundle (tools/build/bundle.mjs: the same code bundled into a few files, which starts in
// about half the time); the bundle is run when present, else dist/src.
import { existsSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

// Node 22.1+ keeps the compiled code of the gateway's modules on disk (os.tmpdir()/node-compile-cache), so later
// starts skip compiling it; NODE_DISABLE_COMPILE_CACHE=1 turns that off. Node 20 has no such cache.
module.enableCompileCache?.();
const bundled = new URL("../dist/bundle/main.js", import.meta.url);
const entry = existsSync(fileURLToPath(bundled)) ? bundled : new URL("../dist/src/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write("opencode-a2a: dist/ is missing; run `npm run build` (or `npm ci`) first\n");
  process.exit(1);
}
const { main } = await import(entry.href);
const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
