// The CLI tests run what `npm start` runs (bin/opencode-a2a.js → dist/bundle, built from dist/src). `npm install` builds
// both (prepare); when a source file is newer than the build (local development), rebuild them first (tsc incrementally).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "../../src/contract/catalog.js";

function newest(dir: string): number {
  let latest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(full));
    else if (entry.name.endsWith(".ts") || entry.name.endsWith(".json") || entry.name.endsWith(".mjs")) latest = Math.max(latest, fs.statSync(full).mtimeMs);
  }
  return latest;
}

/** bin/opencode-a2a.js, which runs dist/bundle/main.js (what `npm start` runs). */
export const binPath = path.join(packageRoot, "bin", "opencode-a2a.js");

/** Makes sure dist/ is at least as new as src/ and generated/ (called once by test/support/global-setup.ts). */
export function ensureBuilt(): string {
  const main = path.join(packageRoot, "dist", "src", "main.js");
  const bundle = path.join(packageRoot, "dist", "bundle", "main.js");
  const built = Math.min(...[main, bundle].map((f) => (fs.existsSync(f) ? fs.statSync(f).mtimeMs : 0)));
  // tools/build: the bundler's own configuration (bundle.mjs) shapes dist/bundle too.
  const sources = Math.max(newest(path.join(packageRoot, "src")), newest(path.join(packageRoot, "generated")), newest(path.join(packageRoot, "tools", "build")));
  if (sources > built) {
    execFileSync(process.execPath, [path.join(packageRoot, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], {
      cwd: packageRoot,
      stdio: "inherit",
    });
    // tsc does not rewrite unchanged outputs; mark the build as current.
    const now = new Date();
    fs.utimesSync(main, now, now);
    execFileSync(process.execPath, [path.join(packageRoot, "tools", "build", "bundle.mjs")], { cwd: packageRoot, stdio: "inherit" });
  }
  return binPath;
}
