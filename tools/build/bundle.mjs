// @ts-check
// Build step after tsc (`npm run build:bundle`, run by `build`, `prepare`, `prepack`): bundles dist/src/main.js and what it imports into
// dist/bundle/ with esbuild, so a start reads and compiles a few files instead of ~300 modules (bench:startup).
// Dynamic imports (the MCP endpoint, the PostgreSQL client, the CLI commands, yaml, each validator) stay separate
// chunks, loaded when first used. Native or file-resolved packages stay external: better-sqlite3 (a .node addon),
// pino-pretty (loaded by require for the terminal format only), opencode-ai (its binary is found by path).
// bin/opencode-a2a.js runs dist/bundle/main.js when it exists, else dist/src/main.js.
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
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
  // Smaller text to read and scan at start. Identifiers are not minified, and keepNames is off: it wraps every
  // function and class in a name-setting call run at load (~1,700 of them, ~40 ms of start-up). Without it, a
  // top-level name that collides with another module's is renamed (`Foo` → `Foo2`), which its `name` then shows
  // (stack traces, logged error types): the check below keeps the gateway's own classes out of that.
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: false,
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
      // Node's built-in modules by require(), not by an ES import. An ES import of a built-in builds its module
      // namespace, which reads every export, getters included: on Node 22+ `node:http` has getters that load undici
      // (its WebSocket and fetch classes), so `import http from "node:http"` took ~85 ms on Node 24 against ~9 ms for
      // require("node:http"). Required, a built-in is wrapped by esbuild's CommonJS interop, whose exports read the
      // module's properties only when used.
      name: "builtins-by-require",
      setup(b) {
        const builtin = new RegExp(`^(node:)?(${builtinModules.join("|")})$`);
        b.onResolve({ filter: builtin }, (args) => (args.kind === "import-statement" || args.kind === "dynamic-import" ? { path: args.path, namespace: "builtin-require" } : undefined));
        b.onLoad({ filter: /.*/, namespace: "builtin-require" }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: "js" }));
      },
    },
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

// The gateway's own classes keep their names in the bundle (their `name` is logged, e.g. as an error's type): a
// class esbuild had to rename fails the build, naming it, so that the collision is resolved in the source.
/** @param {string} dir */
const jsFiles = (dir) => readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js")).map((f) => path.join(dir, f));
const own = new Set(jsFiles(path.join(root, "dist", "src")).flatMap((f) => [...readFileSync(f, "utf8").matchAll(/^(?:export )?(?:default )?class (\w+)/gm)].map((m) => m[1])));
const bundled = jsFiles(outdir).map((f) => readFileSync(f, "utf8")).join("\n");
// Renamed, a class reads `class Foo2 {` or, hoisted, `var Foo2=class{` (its name is then taken from the binding).
const renamed = [...own].filter((name) => new RegExp(`\\bclass ${name}\\d+\\b|\\b${name}\\d+=class\\b`).test(bundled));
if (renamed.length > 0) {
  console.error(`bundle: renamed classes (a name collides with another module's; rename it in src/): ${renamed.join(", ")}`);
  process.exit(1);
}
