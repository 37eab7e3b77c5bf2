// bench:scale (./scale.ts), its settings (the BENCH_* knobs listed in scale.ts) and its processes: the gateways it
// spawns from BENCH_ROOT, the deadline, and the cleanup that stops every child process and the throwaway PostgreSQL
// cluster however the run ends.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { spawnListening, stopProcess } from "./listening.js";
import { benchRun } from "./run-guard.js";

export const benchRoot = path.resolve(import.meta.dirname, "../..");
/** The repository under test (its dist/ and bin/). */
export const ROOT = path.resolve(process.env.BENCH_ROOT ?? benchRoot);
const num = (name: string, def: number): number => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer`);
  return v;
};
export const SIZES = (process.env.BENCH_SCALE_TASKS ?? "1000000").split(",").map((s) => Number(s.trim().replaceAll("_", "")));
if (!SIZES.every((n) => Number.isInteger(n) && n >= 1000)) throw new Error("BENCH_SCALE_TASKS must list integers ≥ 1000");
export const ROUNDS = num("BENCH_ROUNDS", 3);
export const STARTS = num("BENCH_SCALE_STARTS", 5);
export const GET_REQUESTS = num("BENCH_SCALE_GETS", 3000);
export const LIST_REQUESTS = num("BENCH_SCALE_LISTS", 150);
export const LIST_SECONDS = num("BENCH_SCALE_LIST_SECONDS", 4);
export const DEEP_PAGES = num("BENCH_SCALE_DEEP_PAGES", 10);
export const PAGE_SIZE = 50;
export const STALL_SECONDS = num("BENCH_SCALE_STALL_SECONDS", 10);
export const STALL_WORKERS = num("BENCH_SCALE_STALL_WORKERS", 2);
export const PROBE_MS = 5;
const DEADLINE_MS = num("BENCH_SCALE_DEADLINE_SECONDS", 3600) * 1000;
export const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString("hex")}`;
export const OWNER_TOKEN = `bench-owner-${randomBytes(12).toString("hex")}`;
export const t0 = Date.now();

const run = benchRun("bench:scale", DEADLINE_MS);
const children = run.children;
export const tmp = run.tmp;
export const cleanupSync = run.cleanupSync;
export const finish = run.finish;

const load = (): string => os.loadavg().map((x) => x.toFixed(2)).join(" ");
export const progress = (line: string): void => void process.stderr.write(`  [${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}   (load ${load()})\n`);
export const loadNow = load;

/** The environment of a gateway on `storeUrl`: an admin token (principal "admin") and a read-only "bench" principal. */
export function gatewayEnv(storeUrl: string, stubUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    A2A_BEARER_TOKEN: ADMIN_TOKEN,
    A2A_CREDENTIALS: JSON.stringify([{ id: "bench-owner", principal: "bench", scheme: "bearer", secret: OWNER_TOKEN, trust_level: "read_only" }]),
    A2A_RATE_LIMIT_MAX_REQUESTS: "100000000",
    // The stall probe asks the public card every 5 ms without credentials: the per-address limit must not answer 429.
    A2A_UNAUTHENTICATED_RATE_LIMIT: "100000000",
    A2A_HOST: "127.0.0.1",
    A2A_PORT: "0",
    A2A_LOG_LEVEL: "silent",
    OPENCODE_BASE_URL: stubUrl,
    OPENCODE_WORKSPACE_ROOT: ROOT,
    A2A_TASK_STORE_BACKEND: "database",
    A2A_TASK_STORE_DATABASE_URL: storeUrl,
  };
}

/** BENCH_SCALE_NODE_FLAGS: node flags for the gateway's process (space-separated; for A/B runs of V8 settings). */
const NODE_FLAGS = (process.env.BENCH_SCALE_NODE_FLAGS ?? "").split(" ").filter(Boolean);
export const gatewayArgs = (): string[] => [...NODE_FLAGS, path.join(ROOT, "bin", "opencode-a2a.js"), "serve"];

/** A gateway of BENCH_ROOT on `storeUrl`, kept until stop(). */
export async function startGateway(storeUrl: string, stubUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const { child, url } = await spawnListening(process.execPath, gatewayArgs(), { cwd: tmp, env: gatewayEnv(storeUrl, stubUrl), timeoutMs: 120_000 });
  children.add(child);
  return { child, url };
}

export async function stop(service: { child: ChildProcess }): Promise<void> {
  await stopProcess(service.child);
  children.delete(service.child);
}
