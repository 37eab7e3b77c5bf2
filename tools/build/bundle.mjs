// @ts-check
// Build step after tsc (`npm run build:bundle`, run by `build`, `prepare`, `prepack`): bundles dist/src/main.js and what it imports into
// dist/bundle/ with esbuild, so a start reads and compiles a few files instead of ~300 modules (bench:startup).
// Dynamic imports (the MCP endpoint, the PostgreSQL client, the CLI commands, yaml, each validator) stay separate
// chunks, loaded when first used. Native or file-resolved packages stay external: better-sqlite3 (a .node addon),
// pino-pretty (loaded by require for the terminal format only), opencode-ai (its binary is found by path).
// bin/opencode-a2a.js runs dist/bundle/main.js when it exists, else dist/src/main.js.
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";

const root = path.resolve(import.meta.dirname, "../..");
const outdir = path.join(root, "dist", "bundle");
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [path.join(root, "dist", "src", "main.js")],
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  external: ["better-sqlite3", "pino-pretty", "opencode-ai"],
  // Smaller text to read and scan at start; names are kept (error classes and logs use them).
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  sourcemap: "linked",
  legalComments: "linked",
  chunkNames: "chunks/[name]-[hash]",
  // CommonJS packages inside an ES module bundle call require(); give them the real one.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: "warning",
  absWorkingDir: root,
  // One copy of mime-db: koa's accepts@1 pins an older one, of which the top-level one is a superset (~150 kB less to
  // compile and evaluate at start). An alias resolves from absWorkingDir, so to the top-level package.
  alias: { "mime-db": "mime-db" },
  plugins: [
    {
      // JSON modules as JSON.parse of a string, not an object literal: V8 parses JSON faster than JavaScript, and
      // mime-db's 150 kB table is read at every start.
      name: "json-parse",
      setup(b) {
        b.onLoad({ filter: /\.json$/ }, (args) => ({
          contents: `module.exports = JSON.parse(${JSON.stringify(JSON.stringify(JSON.parse(readFileSync(args.path, "utf8"))))});`,
          loader: "js",
        }));
      },
    },
  ],
});
