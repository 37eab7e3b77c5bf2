// What every benchmark run needs around its child processes: a scratch directory, the children it started, a
// synchronous cleanup (children killed, scratch removed, a throwaway PostgreSQL stopped) run on the deadline, on
// SIGINT/SIGTERM and by the caller at the end, and the deadline itself.
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { stopPostgresSync } from "./tasks-postgres.js";

export interface BenchRun {
  /** Scratch directory of the run (removed by cleanupSync). */
  tmp: string;
  /** The children to kill at cleanup: add each one started, delete it once stopped. */
  children: Set<ChildProcess>;
  cleanupSync(): void;
  /** The run is over: no deadline any more. */
  finish(): void;
}

/** Guards a run named `name` (e.g. "bench:tasks"), stopped after `deadlineMs`. */
export function benchRun(name: string, deadlineMs: number): BenchRun {
  const children = new Set<ChildProcess>();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `${name.replace(/[^a-z]+/g, "-")}-`));
  const cleanupSync = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    fs.rmSync(tmp, { recursive: true, force: true });
    stopPostgresSync();
  };
  const deadline = setTimeout(() => {
    process.stderr.write(`${name} exceeded ${deadlineMs / 1000} s; stopping\n`);
    cleanupSync();
    process.exit(1);
  }, deadlineMs);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      cleanupSync();
      process.exit(130);
    });
  }
  return { tmp, children, cleanupSync, finish: () => clearTimeout(deadline) };
}
