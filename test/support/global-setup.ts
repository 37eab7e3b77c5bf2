// vitest globalSetup: runs once before any test file, so parallel files never rebuild dist/ at the same time. Its
// teardown fails the run when a test left the default task store (./opencode-a2a.db) in the repository: every
// gateway a test starts must use a store of its own (test/support/gateway.ts gives one to the in-process ones; tests
// that spawn the CLI name one), or concurrently running files share tasks and each other's start-up sweep.
import fs from "node:fs";
import path from "node:path";
import { ensureBuilt } from "./build.js";

const DEFAULT_STORE = path.resolve(import.meta.dirname, "../../opencode-a2a.db");

export default function setup(): () => void {
  ensureBuilt();
  const existed = fs.existsSync(DEFAULT_STORE);
  return () => {
    if (!existed && fs.existsSync(DEFAULT_STORE)) {
      // vitest reports an error thrown here but still exits 0: the exit code is set as well.
      process.exitCode = 1;
      throw new Error(`a test created the default task store ${DEFAULT_STORE}: give its gateway a store of its own (A2A_TASK_STORE_DATABASE_URL)`);
    }
  };
}
