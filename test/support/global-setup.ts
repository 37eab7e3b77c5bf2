// vitest globalSetup: runs once before any test file, so parallel files never rebuild dist/ at the same time. It also
// points A2A_TASK_STORE_DATABASE_URL of the test processes at a guard file in a fresh temp directory: every gateway a
// test starts must use a store of its own (test/support/gateway.ts gives one to the in-process ones; tests that spawn
// the CLI name one), or concurrently running files share tasks and each other's start-up sweep. The teardown fails the
// run when that guard file was created, i.e. when a test fell back to the environment's store. Only test processes
// see the guard, so a gateway someone starts from the checkout while the tests run is never blamed. Then it starts
// one throwaway PostgreSQL cluster for the run (./postgres.ts; A2A_TEST_POSTGRES_URL), unless the environment names
// one or A2A_TEST_POSTGRES=off: without PostgreSQL binaries its tests are skipped, except under CI=true.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { findPostgresBin, startCluster, type Cluster } from "../../tools/postgres/cluster.js";
import { ensureBuilt } from "./build.js";

async function postgres(): Promise<Cluster | undefined> {
  if (process.env.A2A_TEST_POSTGRES_URL || process.env.A2A_TEST_POSTGRES === "off") return undefined;
  if (findPostgresBin() === undefined) {
    if (process.env.CI === "true") throw new Error("CI=true but no PostgreSQL binaries (initdb, pg_ctl): .ci/postgres.sh installs them");
    console.warn("PostgreSQL binaries not found: the PostgreSQL store tests are skipped");
    return undefined;
  }
  const cluster = await startCluster();
  // A run that ends without its teardown (interrupted) still stops the server (stop() is synchronous and idempotent).
  process.once("exit", () => cluster.stop());
  process.env.A2A_TEST_POSTGRES_URL = cluster.url;
  return cluster;
}

export default async function setup(): Promise<() => void> {
  ensureBuilt();
  const cluster = await postgres();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-test-guard-"));
  const guard = path.join(dir, "shared-store-guard.db");
  process.env.A2A_TASK_STORE_DATABASE_URL = `sqlite:///${guard}`;
  return () => {
    const used = fs.existsSync(guard);
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      if (used) {
        // vitest reports an error thrown here but still exits 0: the exit code is set as well.
        process.exitCode = 1;
        throw new Error("a test opened the environment's task store (A2A_TASK_STORE_DATABASE_URL): give its gateway a store of its own");
      }
    } finally {
      cluster?.stop();
    }
  };
}
