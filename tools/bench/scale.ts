// Scale benchmark (issue 23): the gateway with N stored tasks, seeded through the store of the code under test
// (./scale-seed.ts: <BENCH_ROOT>/dist/src/storage, realistic tasks of 1.1–2.5 KB over many owners and contexts, 10% of
// them owner "bench", a few hundred unfinished). For each N and each store (SQLite, then PostgreSQL), measured:
//   - start → first successful agent card answer, BENCH_SCALE_STARTS starts, each after a start of the bare node:http
//     server of ./startup-probe.ts (the first gateway start also fails the unfinished tasks; reported apart);
//   - on one gateway (JSON-RPC 1.0, lean keep-alive connections, calls one at a time, BENCH_ROUNDS interleaved rounds):
//     GetTask of random ids (admin), and ListTasks as the read-only principal "bench" (its tasks) and as the admin
//     (all tasks): first page, page BENCH_SCALE_DEEP_PAGES+1 via pageToken, status FAILED, a random contextId, and
//     0.3 `tasks/list` with offset; p50 / p99 / max;
//   - the stall probe: GET agent card on a connection of its own every 5 ms, idle and while BENCH_SCALE_STALL_WORKERS
//     workers issue admin listings; the stall is the probe's max (p99) minus its idle p50; with prom-client's
//     nodejs_eventloop_lag_max / p99 of /metrics over the same window, the gateway's garbage collections in it, and
//     how long its main thread ran and how long it was runnable but waited for a CPU (/proc/<pid>/schedstat): on a
//     machine whose cores the database server and the load share, waiting counts in the stall as much as working;
//   - the gateway's /proc/<pid>/status VmRSS, RssAnon, RssShmem, RssFile after start and after the load.
// The report ends each measurement with one PASS/FAIL line per issue 23 target.
//
// The gateway is `node <BENCH_ROOT>/bin/opencode-a2a.js serve` with the stub OpenCode (tools/upstream/stub.ts, in this
// process), an admin bearer token (principal "admin") and a read-only credential of principal "bench"
// (A2A_CREDENTIALS), on a copy of the cached SQLite file (/tmp/opencode-a2a-scale/, keyed by BENCH_ROOT's git HEAD,
// a hash of its built storage code, N and the layout version) or on a PostgreSQL database seeded in this run (4
// concurrent transactions; the server BENCH_POSTGRES_URL names, else a throwaway cluster, tools/postgres/cluster.ts;
// BENCH_POSTGRES=off skips it and the report says why). Only 127.0.0.1; bounded by the counts below and a deadline;
// every child process is stopped and the throwaway cluster removed at the end.
//
//   npm run bench:scale      (node --expose-gc --import tsx tools/bench/scale.ts)
//
// Knobs: BENCH_SCALE_TASKS (N, or a list "100000,1000000"; default 1000000), BENCH_ROOT (repository under test, with
// dist/ built; default this one, built if stale), BENCH_SCALE_BACKENDS ("sqlite,postgres"), BENCH_ROUNDS (3),
// BENCH_SCALE_STARTS (5), BENCH_SCALE_GETS (GetTask calls over all rounds, 3000), BENCH_SCALE_LISTS (calls per
// listing and round, at most, 150), BENCH_SCALE_LIST_SECONDS (per listing and round, at most, 4), BENCH_SCALE_DEEP_PAGES
// (10), BENCH_SCALE_STALL_SECONDS (10), BENCH_SCALE_STALL_WORKERS (2), BENCH_SCALE_DEADLINE_SECONDS (3600),
// BENCH_POSTGRES_URL, BENCH_POSTGRES ("off").
import os from "node:os";
import { startStubUpstream } from "../upstream/stub.js";
import { measureScale, report, type ScaleResult } from "./scale-run.js";
import { codeKey, layout, seededPostgres, seededSqlite } from "./scale-seed.js";
import { benchRoot, cleanupSync, finish, loadNow, progress, ROOT, SIZES, t0, tmp } from "./scale-env.js";
import { benchPostgres, type BenchPostgres } from "./tasks-postgres.js";

const BACKENDS = (process.env.BENCH_SCALE_BACKENDS ?? "sqlite,postgres").split(",").map((s) => s.trim());
if (!BACKENDS.every((b) => b === "sqlite" || b === "postgres")) throw new Error('BENCH_SCALE_BACKENDS lists "sqlite" and/or "postgres"');

const lines: string[] = [];
let postgres: BenchPostgres | undefined;
let failed = false;
const loadAtStart = loadNow();
const stub = await startStubUpstream();
try {
  if (ROOT === benchRoot) {
    progress("building dist/ if stale (test/support/build.ts ensureBuilt)");
    (await import("../../test/support/build.js")).ensureBuilt();
  }
  const key = codeKey(ROOT);
  lines.push(`code under test: ${ROOT} at ${/^[0-9a-f]{40}$/.test(key.head) ? key.head.slice(0, 12) : key.head} (built storage code ${key.storage})`);
  const results: ScaleResult[] = [];
  if (BACKENDS.includes("sqlite")) {
    for (const n of SIZES) {
      const seeded = await seededSqlite(ROOT, layout(n), tmp, progress);
      progress(`sqlite ${n}: ${seeded.source}`);
      results.push(await measureScale("SQLite", layout(n), seeded, stub.url));
      lines.push("", ...report(results.at(-1)!));
    }
  }
  if (BACKENDS.includes("postgres")) {
    const pg = await benchPostgres();
    if ("skipped" in pg) {
      lines.push("", `PostgreSQL: skipped — ${pg.skipped}`);
    } else {
      postgres = pg;
      for (const n of SIZES) {
        const seeded = await seededPostgres(ROOT, layout(n), await pg.database(), progress);
        seeded.source = `${pg.source}; a fresh database ${seeded.source}`;
        results.push(await measureScale("PostgreSQL", layout(n), seeded, stub.url));
        lines.push("", ...report(results.at(-1)!));
      }
    }
  }
} catch (error) {
  failed = true;
  const describe = (e: unknown): string => (e instanceof Error ? `${e.stack ?? e.message}${e.cause === undefined ? "" : `\ncaused by: ${describe(e.cause)}`}` : String(e));
  process.stderr.write(`bench:scale failed: ${describe(error)}\n`);
} finally {
  await stub.close();
  cleanupSync();
  await postgres?.close().catch((error: unknown) => void process.stderr.write(`bench:scale: PostgreSQL cleanup failed: ${String(error)}\n`));
  finish();
}
const header = `bench:scale — Node ${process.version}, ${os.cpus().length} CPUs, load average ${loadAtStart} at start, ${loadNow()} at end, ${((Date.now() - t0) / 1000).toFixed(0)} s`;
process.stdout.write(`${[header, ...lines].join("\n")}\n`);
process.exit(failed ? 1 : 0);
