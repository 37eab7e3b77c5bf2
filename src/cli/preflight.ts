// Start-up checks of what the installation must provide before `serve` starts anything: the native SQLite binding of
// better-sqlite3 (built by its install script, which npm skips with --ignore-scripts, an allowScripts denial or a strict
// allow-scripts policy) when the store is SQLite, and the
// OpenCode platform binary (an optional dependency of opencode-ai) in managed mode. Each failure says what is missing
// and the command that fixes it; main() exits with 78 (EX_CONFIG: restarting cannot help).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import type { Config } from "../config/index.js";
import { packageRoot, packageVersion } from "../contract/catalog.js";
import { resolveOpencodeBinary } from "../upstream/binary.js";
import type BetterSqlite3 from "better-sqlite3";
import { pinDatabase } from "../storage/pin.js";

const require = createRequire(import.meta.url);

export class InstallationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InstallationError";
  }
}

/** Running from a source checkout (npm ci / npm install there) rather than from an installed package. */
function fromCheckout(): boolean {
  return fs.existsSync(path.join(packageRoot, "src", "main.ts"));
}

/** The command that reinstalls this package with the install scripts it needs allowed. */
export function reinstallCommand(): string {
  return `npm install -g --allow-scripts=better-sqlite3,opencode-ai opencode-a2a-${packageVersion}.tgz (or the same --allow-scripts for npx)`;
}

/** Loads better-sqlite3's native binding by opening an in-memory database; the error message when it cannot. */
export function sqliteBindingProblem(): string | undefined {
  try {
    const Database = require("better-sqlite3") as new (file: string) => BetterSqlite3.Database;
    // pinned: on Node 24 a collected better-sqlite3 12 object aborts the process (src/storage/pin.ts)
    pinDatabase(new Database(":memory:")).close();
    return undefined;
  } catch (err) {
    const detail = err instanceof Error ? err.message.split("\n")[0]! : String(err);
    const fix = fromCheckout()
      ? "run `npm rebuild better-sqlite3` (or `npm ci`) in the checkout"
      : `reinstall allowing its build script: ${reinstallCommand()}`;
    return (
      `the native SQLite module of better-sqlite3 cannot be loaded (${detail}). Its install script builds it (for this ` +
      `Node.js), and npm skips dependency install scripts that are not allowed. Fix: ${fix}. ` +
      "Or run without a durable store: A2A_TASK_STORE_BACKEND=memory."
    );
  }
}

/** The OpenCode binary of managed mode; the error message when it is missing. */
export function opencodeBinaryProblem(config: Pick<Config, "opencodeBaseUrl" | "opencodeBinary">): string | undefined {
  if (config.opencodeBaseUrl !== undefined) return undefined; // an external OpenCode: nothing to start
  try {
    resolveOpencodeBinary(config.opencodeBinary);
    return undefined;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    const fix = fromCheckout()
      ? "run `npm ci` (optional dependencies included) in the checkout"
      : `reinstall with optional dependencies (no --omit=optional): ${reinstallCommand()}`;
    return (
      `managed mode needs the OpenCode binary, which the opencode-ai dependency installs as a per-platform optional ` +
      `package: ${detail}. Fix: ${fix}; or set OPENCODE_BINARY to an opencode binary, or OPENCODE_BASE_URL to a ` +
      "running `opencode serve`."
    );
  }
}

/** Throws an InstallationError naming everything the installation lacks for this configuration. */
export function checkInstallation(config: Config): void {
  const problems = [
    // The memory backend is an in-memory SQLite database too; only a PostgreSQL store runs without the module.
    config.taskStoreBackend !== "memory" && /^postgres(ql)?:\/\//i.test(config.taskStoreUrl.trim()) ? undefined : sqliteBindingProblem(),
    opencodeBinaryProblem(config),
  ].filter((p): p is string => p !== undefined);
  if (problems.length) throw new InstallationError(`incomplete installation:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}
