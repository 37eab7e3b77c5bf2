// bench:tasks (./tasks.ts), its settings (the BENCH_* knobs listed in tasks.ts) and its processes: the services it
// spawns (stub OpenCode, gateways, floor, SDK servers), the 300 s deadline, and the cleanup that stops every child
// process and the throwaway PostgreSQL cluster however the run ends.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { spawnListening, stopProcess } from "./listening.js";
import { benchRun } from "./run-guard.js";

export const root = path.resolve(import.meta.dirname, "../..");
const num = (name: string, def: number): number => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer`);
  return v;
};
export const SEQUENTIAL = num("BENCH_SEQUENTIAL", 600);
export const CONCURRENCY = num("BENCH_CONCURRENCY", 16);
export const THROUGHPUT = num("BENCH_THROUGHPUT", 1000);
export const STEADY = num("BENCH_STEADY", 300);
export const ROUNDS = num("BENCH_ROUNDS", 3);
export const GET_REQUESTS = num("BENCH_GET_REQUESTS", 7500);
export const GET_CONCURRENCY = (process.env.BENCH_GET_CONCURRENCY ?? "8,32").split(",").map(Number);
if (!GET_CONCURRENCY.every((c) => Number.isInteger(c) && c > 0)) throw new Error("BENCH_GET_CONCURRENCY must list positive integers");
export const GET_CLIENT = process.env.BENCH_GET_CLIENT ?? "lean";
if (GET_CLIENT !== "lean" && GET_CLIENT !== "node") throw new Error('BENCH_GET_CLIENT must be "lean" or "node"');
export const TASKS = num("BENCH_TASKS", 10_000);
const DEADLINE_MS = 300_000;
export const WARMUP = 200;
export const TOKEN = `bench-${randomBytes(12).toString("hex")}`;
export const t0 = Date.now();
export const loadAtStart = os.loadavg()[0]!;

// ---------------------------------------------------------------------------------------------------------------
// Processes and the deadline

const run = benchRun("bench:tasks", DEADLINE_MS);
const children = run.children;
export const tmp = run.tmp;
export const cleanupSync = run.cleanupSync;
export const finish = run.finish;

export const progress = (line: string): void => void process.stderr.write(`  [${((Date.now() - t0) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);

async function spawnService(name: string, args: string[], env: NodeJS.ProcessEnv, cwd = root): Promise<{ name: string; url: string; child: ChildProcess }> {
  const { child, url } = await spawnListening(process.execPath, args, { cwd, env: { ...process.env, ...env }, timeoutMs: 60_000 });
  children.add(child);
  return { name, url, child };
}

/** Stops a service (once: a service already stopped is left alone). */
export async function stop(service: { child: ChildProcess }): Promise<void> {
  if (!children.has(service.child)) return;
  await stopProcess(service.child);
  children.delete(service.child);
}

export const startStub = (name: string) =>
  spawnService(name, ["--import", "tsx", path.join(root, "tools/upstream/stub.ts"), "--port", "0", "--heartbeat-ms", "10000"], {});

/** A gateway process; `url` of a database store: sqlite:///<file> or postgres://… */
export function startGateway(name: string, stubUrl: string, store: { backend: "memory" } | { backend: "database"; url: string }, env: Record<string, string> = {}) {
  return spawnService(
    name,
    [path.join(root, "bin/opencode-a2a.js"), "serve"],
    {
      A2A_BEARER_TOKEN: TOKEN,
      // The limiter stays on (its cost is measured) with a limit the bench cannot reach; the audit log keeps its default (on).
      A2A_RATE_LIMIT_MAX_REQUESTS: "100000000",
      // Likewise the open-stream limit per credential (default 10; the stream throughput run keeps 16 open).
      A2A_RATE_LIMIT_MAX_STREAMS: "1000000",
      A2A_HOST: "127.0.0.1",
      A2A_PORT: "0",
      A2A_LOG_LEVEL: "silent",
      OPENCODE_BASE_URL: stubUrl,
      OPENCODE_WORKSPACE_ROOT: root,
      OPENCODE_MAX_CONCURRENT_REQUESTS: "0",
      OPENCODE_MAX_CONCURRENT_STREAMS: "0",
      A2A_TASK_STORE_BACKEND: store.backend,
      ...(store.backend === "database" ? { A2A_TASK_STORE_DATABASE_URL: store.url } : {}),
      ...env,
    },
    tmp, // no ./.env of the repository, no default database file in it
  );
}

export const startFloor = (name: string, args: string[]) => spawnService(name, ["--import", "tsx", path.join(root, "tools/bench/floor.ts"), ...args], {});

export const startSdk = (name: string, env: Record<string, string>) =>
  spawnService(name, ["--import", "tsx", path.join(root, "tools/bench/sdk-server.ts")], { SDK_TASKS: String(TASKS), ...env });

